# What `cmake --install` puts in place: the public headers, the static
# archives the public `asynctp` target links, and a CMake package (exported
# targets asynctp::*, asynctpConfig.cmake, its version file), so that a user
# writes find_package(asynctp) and links asynctp::asynctp.
#
# The archives are found by walking asynctp's link closure rather than listed
# here, so a library added to (or split out of) src/ installs without a change
# in this file; the backend headers and the package's dependencies follow from
# what that walk finds.
include(CMakePackageConfigHelpers)
set(asynctp_install_config_in ${CMAKE_CURRENT_LIST_DIR}/asynctpConfig.cmake.in)

# A function, so that its working variables stay out of the project's scope.
function(asynctp_install)
  set(asynctp_install_libraries)
  set(asynctp_install_imported)  # imported targets the installed archives need
  set(asynctp_install_defines)   # the ASYNCTP_HAVE_*_BACKEND the library defines
  set(queue asynctp)
  while(queue)
    list(POP_FRONT queue lib)
    if(lib IN_LIST asynctp_install_libraries)
      continue()
    endif()
    list(APPEND asynctp_install_libraries ${lib})
    get_target_property(defines ${lib} INTERFACE_COMPILE_DEFINITIONS)
    if(defines)
      list(APPEND asynctp_install_defines ${defines})
    endif()
    # LINK_LIBRARIES holds PRIVATE and PUBLIC items: a static archive needs both
    # at the user's link. Items under a generator expression are build-only
    # ($<BUILD_INTERFACE:asynctp_internal>); "::@" marks the directory of a link
    # made outside the target's own CMakeLists.txt.
    get_target_property(items ${lib} LINK_LIBRARIES)
    # Imported targets (Pkg::name) are told by their name: those a
    # subdirectory found (CUDA::) are not visible from here.
    foreach(item IN LISTS items)
      if(item MATCHES "^[A-Za-z0-9_]+::[A-Za-z0-9_]")
        list(APPEND asynctp_install_imported ${item})
      elseif(item AND NOT item MATCHES "^(\\$<|::@)" AND TARGET ${item})
        get_target_property(type ${item} TYPE)
        if(type MATCHES "^(STATIC|SHARED)_LIBRARY$")
          list(APPEND queue ${item})
        endif()
      endif()
    endforeach()
  endwhile()
  list(REMOVE_DUPLICATES asynctp_install_imported)

  # Exported as asynctp::core, asynctp::cpu, asynctp::cuda, ... and asynctp::asynctp.
  foreach(lib IN LISTS asynctp_install_libraries)
    string(REGEX REPLACE "^asynctp_" "" export_name ${lib})
    set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
  endforeach()
  install(TARGETS ${asynctp_install_libraries} EXPORT asynctpTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

  # A backend's header is installed only with its backend, so that a user's
  # #include fails at compile time rather than at link time.
  file(GLOB asynctp_public_headers CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/include/asynctp/*.hpp ${PROJECT_SOURCE_DIR}/include/asynctp/*.h)
  set(gpu_backend OFF)
  foreach(backend_header IN ITEMS CUDA:cuda HIP:hip NCCL:nccl)
    string(REPLACE ":" ";" pair ${backend_header})
    list(GET pair 0 backend)
    list(GET pair 1 header)
    if("ASYNCTP_HAVE_${backend}_BACKEND=1" IN_LIST asynctp_install_defines)
      if(NOT backend STREQUAL "NCCL")
        set(gpu_backend ON)
      endif()
    else()
      list(REMOVE_ITEM asynctp_public_headers ${PROJECT_SOURCE_DIR}/include/asynctp/${header}.hpp)
    endif()
  endforeach()
  if(NOT gpu_backend)
    list(REMOVE_ITEM asynctp_public_headers ${PROJECT_SOURCE_DIR}/include/asynctp/loopback.hpp)
  endif()
  install(FILES ${asynctp_public_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/asynctp)

  # The package finds what the exported targets name: Threads::, BLAS:: (as
  # OpenBLAS, like the build), CUDA:: where the CUDA backend is in.
  set(asynctp_config_dependencies)
  foreach(prefix_package IN ITEMS Threads:Threads BLAS:BLAS CUDA:CUDAToolkit)
    string(REPLACE ":" ";" pair ${prefix_package})
    list(GET pair 0 prefix)
    list(GET pair 1 package)
    if(asynctp_install_imported MATCHES "(^|;)${prefix}::")
      list(APPEND asynctp_config_dependencies ${package})
    endif()
  endforeach()

  # The C ABI's shared library (asynctp/c_api.h, asynctp::c): the archives
  # above are linked inside it, so it needs none of them at the user's link.
  if(TARGET asynctp_c)
    set_target_properties(asynctp_c PROPERTIES EXPORT_NAME c)
    install(TARGETS asynctp_c EXPORT asynctpTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()

  set(asynctp_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/asynctp)
  install(EXPORT asynctpTargets NAMESPACE asynctp:: DESTINATION ${asynctp_cmake_dir})
  configure_package_config_file(${asynctp_install_config_in}
    ${PROJECT_BINARY_DIR}/asynctpConfig.cmake INSTALL_DESTINATION ${asynctp_cmake_dir})
  # 0.x: a minor version may change the API.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/asynctpConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/asynctpConfig.cmake
    ${PROJECT_BINARY_DIR}/asynctpConfigVersion.cmake DESTINATION ${asynctp_cmake_dir})

  list(JOIN asynctp_install_libraries " " shown)
  message(STATUS "asynctp: install: ${shown}; package needs ${asynctp_config_dependencies}")
endfunction()
asynctp_install()
