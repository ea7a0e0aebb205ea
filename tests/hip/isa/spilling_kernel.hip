// A kernel built to fail the ISA check (tests/hip/CMakeLists.txt): more
// live values than its register budget allows (VGPR spills) and a local
// array indexed at run time (scratch), so the check is seen to fail.
#include <hip/hip_runtime.h>

typedef float floatx4 __attribute__((ext_vector_type(4)));

__global__ void __launch_bounds__(256) __attribute__((amdgpu_num_vgpr(24)))
    spilling_kernel(const floatx4* in, float* out, int pick) {
  const int thread = static_cast<int>(__builtin_amdgcn_workitem_id_x());
  floatx4 live[16];
  for (int i = 0; i < 16; ++i) live[i] = in[thread + 256 * i];
  float sum = 0.0f;
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) sum += live[i][j % 4] * live[j][i % 4];
  }
  float indexed[64];
  for (int i = 0; i < 64; ++i) indexed[i] = sum * static_cast<float>(i) + live[i % 16][i % 4];
  out[thread] = indexed[(pick + thread) & 63];
}
