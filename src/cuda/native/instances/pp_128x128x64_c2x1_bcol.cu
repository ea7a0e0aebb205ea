// Native kernel instantiation pp_128x128x64_c2x1_bcol (one CUTLASS kernel per translation unit).
#include "../kernel/native_instance.cuh"

ASYNCTP_NATIVE_DEFINE_INSTANCE(pp_128x128x64_c2x1_bcol, kPingpong, 128, 128, 64, 2, 1, true)
