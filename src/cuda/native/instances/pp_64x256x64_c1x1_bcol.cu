// Native kernel instantiation pp_64x256x64_c1x1_bcol (one CUTLASS kernel per translation unit).
#include "../kernel/native_instance.cuh"

ASYNCTP_NATIVE_DEFINE_INSTANCE(pp_64x256x64_c1x1_bcol, kPingpong, 64, 256, 64, 1, 1, true)
