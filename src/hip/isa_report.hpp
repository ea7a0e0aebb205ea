// What the AMD kernel's ISA says about it, read from the assembly clang
// writes with -S: the code object metadata (.amdgpu_metadata, YAML: register
// counts, spills, scratch, LDS per kernel) and the instructions (which
// matrix instructions, and what the innermost loop holding them does). The
// rules it is held to (no spills, no scratch, LDS within 64 KiB, the
// target's bf16 instruction, accumulators kept in registers across the K
// loop) are checked here, so that CI fails when a compiler or a change makes
// the kernel spill. Pure text processing, tested on the CPU on samples.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace asynctp::hip::isa {

// The innermost loop that holds matrix instructions (the K loop): what runs
// there once per iteration.
struct LoopMix {
  bool found = false;
  std::map<std::string, int> mnemonics;  // every instruction, by mnemonic
  int mfma = 0;                          // matrix instructions
  int mfma_agpr_accumulator = 0;         // ... accumulating in AGPRs (a[..])
  int mfma_not_in_place = 0;             // ... whose result is not their accumulator input
  int accvgpr_moves = 0;                 // v_accvgpr_read / write / mov
  int scratch = 0;                       // scratch_* and private buffer_* accesses
};

struct KernelIsa {
  std::string name;  // .name, as mangled
  // From the metadata; -1 when absent.
  int vgpr_count = -1;  // on gfx90a+: architected VGPRs (aligned to 4) + AGPRs
  int agpr_count = -1;
  int sgpr_count = -1;
  int vgpr_spill_count = -1;
  int sgpr_spill_count = -1;
  int private_segment_fixed_size = -1;  // scratch, bytes per lane
  int group_segment_fixed_size = -1;    // LDS, bytes per workgroup
  int max_flat_workgroup_size = -1;
  bool uses_dynamic_stack = false;
  // From the instructions.
  std::map<std::string, int> mfma;  // matrix instructions of the whole kernel, by mnemonic
  int scratch_instructions = 0;
  LoopMix k_loop;
};

struct IsaFile {
  std::string target;  // amdhsa.target's processor, e.g. "gfx942"
  std::vector<KernelIsa> kernels;
};

// Parses clang's assembly output. Throws Error(invalid_argument) when it
// has no .amdgpu_metadata block or no kernel in it.
IsaFile parse_isa(const std::string& assembly);

// The matrix instruction the native kernel must be built on for `target`
// (its mnemonic as LLVM prints it), or "" for a target it does not know.
std::string expected_mfma(const std::string& target);

inline constexpr int kMaxLdsBytes = 64 * 1024;

// Waves per SIMD the kernel's registers and LDS allow on `target` (gfx9
// with a unified 512-register file per lane: gfx90a, gfx94x, gfx950).
int waves_per_simd(const KernelIsa& kernel, const std::string& target);

// What breaks the rules, one line each; empty when the kernel is clean.
std::vector<std::string> violations(const KernelIsa& kernel, const std::string& target);

// One line of figures: registers, spills, scratch, LDS, occupancy, the K loop's mix.
std::string summary(const KernelIsa& kernel, const std::string& target);

}  // namespace asynctp::hip::isa
