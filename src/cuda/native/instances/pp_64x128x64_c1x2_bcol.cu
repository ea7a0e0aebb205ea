// Native kernel instantiation pp_64x128x64_c1x2_bcol (one CUTLASS kernel per translation unit).
#include "../kernel/native_instance.cuh"

ASYNCTP_NATIVE_DEFINE_INSTANCE(pp_64x128x64_c1x2_bcol, kPingpong, 64, 128, 64, 1, 2, true)
