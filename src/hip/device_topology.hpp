// How large the AMD native kernel's persistent grid may be on a device: the
// reference's rule, occupancy x (CUs per shader
// engine - 1) x shader engines, i.e. one CU per shader engine left free for
// the signal writes and small copies HIP runs as kernels. HIP does not report
// shader engines, so they come from the architecture: CDNA3 (gfx942) and
// CDNA4 (gfx950) build a GPU from XCDs of 4 shader engines each, an XCD
// holding 38 active CUs on CDNA3 and 32 on CDNA4 (MI300X: 304 CUs, 8 XCDs;
// MI300A: 228, 6; MI355X: 256, 8). Pure, tested on the CPU.
#pragma once

#include <optional>
#include <string>

namespace asynctp::hip {

// Workgroups of the native kernel one CU holds at once: one workgroup of 8
// waves, 2 per SIMD (about 220 registers per lane each, of the 512 a SIMD
// lane has), with 64 KiB of LDS (a gfx942 CU's whole LDS). The ISA check
// (tests/hip/CMakeLists.txt) prints the figures per target.
inline constexpr int kNativeOccupancy = 1;

// Shader engines of a device with `cus` CUs of target `gfx` ("gfx942"), or
// nullopt when the target is not one the native kernel runs on or `cus` is
// not a whole number of XCDs.
std::optional<int> shader_engines(const std::string& gfx, int cus);

// The persistent grid (workgroups) for `cus` CUs of target `gfx`, or nullopt
// (shader_engines unknown).
std::optional<int> native_grid(const std::string& gfx, int cus);

}  // namespace asynctp::hip
