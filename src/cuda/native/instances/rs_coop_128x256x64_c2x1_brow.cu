// Native reduce-scatter kernel instantiation rs_coop_128x256x64_c2x1_brow (one CUTLASS kernel per
// translation unit).
#include "../kernel/native_instance.cuh"

ASYNCTP_NATIVE_DEFINE_OUTPUT_INSTANCE(rs_coop_128x256x64_c2x1_brow, kCooperative, 128, 256, 64, 2,
                                      1, false)
