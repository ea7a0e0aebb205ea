# cmake -P script (tests/install/CMakeLists.txt passes the variables): install
# the build, build the consumer against the installed package only, run it.
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "install test: `${command}` failed (${status})")
  endif()
endfunction()

set(config_args)
if(ASYNCTP_CONFIG)
  set(config_args --config ${ASYNCTP_CONFIG})
endif()
step(${CMAKE_COMMAND} --install ${ASYNCTP_BUILD_DIR} --prefix ${prefix} ${config_args})

# Only the prefix: the consumer must not see the source or build tree.
set(configure_args -G ${CMAKE_GENERATOR} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
if(CMAKE_CXX_COMPILER_LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
if(CUDAToolkit_ROOT)
  list(APPEND configure_args -DCUDAToolkit_ROOT=${CUDAToolkit_ROOT})
endif()
if(ASYNCTP_CONFIG)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${ASYNCTP_CONFIG})
endif()
step(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build} ${configure_args})
step(${CMAKE_COMMAND} --build ${consumer_build} ${config_args})
find_program(consumer asynctp_consumer PATHS ${consumer_build} ${consumer_build}/${ASYNCTP_CONFIG}
             NO_DEFAULT_PATH REQUIRED)
step(${consumer})
