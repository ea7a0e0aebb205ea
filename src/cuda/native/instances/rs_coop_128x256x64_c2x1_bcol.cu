// Native reduce-scatter kernel instantiation rs_coop_128x256x64_c2x1_bcol (one CUTLASS kernel per
// translation unit).
#include "../kernel/native_instance.cuh"

ASYNCTP_NATIVE_DEFINE_OUTPUT_INSTANCE(rs_coop_128x256x64_c2x1_bcol, kCooperative, 128, 256, 64, 2,
                                      1, true)
