// The ISA reader behind the AMD kernel's ISA check (src/hip/isa_report), on
// samples written the way clang-22 writes AMDGPU assembly:
//
//   HipIsaReport.ReadsMetadataAndTheKLoop
//       register counts, spills, scratch, LDS from .amdgpu_metadata; the
//       matrix instructions of the whole kernel and of the innermost loop
//       holding them (found through LLVM's loop comments), by mnemonic.
//   HipIsaReport.CleanKernelPasses
//   HipIsaReport.EachBrokenRuleIsNamed
//       spills, scratch, a dynamic stack, LDS beyond 64 KiB, the wrong
//       instruction for the target, accumulators copied in the K loop, no K
//       loop: each one a violation that says what and how much.
//   HipIsaReport.Occupancy
//       waves per SIMD from registers (512 per lane) and LDS (64 KiB per CU,
//       160 KiB on gfx950), for the old and the new kernel's figures.
//   HipIsaReport.NotAssemblyIsAnError
#include "hip/isa_report.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"

namespace asynctp::hip {
namespace {

// A kernel with a loop nest: the outer tile loop (BB0_1), an inner loop
// without matrix instructions (BB0_2, a poll), and the K loop (BB0_4).
std::string sample(const std::string& k_loop_body, const std::string& fields,
                   const std::string& target = "gfx942") {
  return R"(	.amdgcn_target "amdgcn-amd-amdhsa--)" + target + R"("
	.text
	.protected	kern
	.globl	kern
	.p2align	8
	.type	kern,@function
kern:                                   ; @kern
; %bb.0:
	s_load_dwordx2 s[0:1], s[0:1], 0x0
	v_accvgpr_write_b32 a0, 0
.LBB0_1:                                ; =>This Loop Header: Depth=1
	s_sleep 2
.LBB0_2:                                ;   Parent Loop BB0_1 Depth=1
                                        ; =>  This Inner Loop Header: Depth=2
	global_load_dword v0, v1, s[2:3] sc0 sc1
	s_cbranch_scc1 .LBB0_2
; %bb.3:                                ;   in Loop: Header=BB0_1 Depth=1
	ds_write_b128 v2, v[4:7]
.LBB0_4:                                ;   Parent Loop BB0_1 Depth=1
                                        ; =>  This Inner Loop Header: Depth=2
)" + k_loop_body +
         R"(	s_cbranch_scc0 .LBB0_4
; %bb.5:                                ;   in Loop: Header=BB0_1 Depth=1
	v_accvgpr_read_b32 v0, a0
	global_store_short v1, v0, s[4:5]
	s_cbranch_scc1 .LBB0_1
; %bb.6:
	s_endpgm
.Lfunc_end0:
	.size	kern, .Lfunc_end0-kern
	.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .args:
      - .offset:         0
        .size:           104
        .value_kind:     by_value
    .group_segment_fixed_size: 65536
    .kernarg_segment_align: 8
    .max_flat_workgroup_size: 512
    .name:           kern
)" + fields +
         R"(    .symbol:         kern.kd
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--)" +
         target + R"(
amdhsa.version:
  - 1
  - 2
...

	.end_amdgpu_metadata
)";
}

const std::string kCleanFields = R"(    .private_segment_fixed_size: 0
    .sgpr_count:     80
    .sgpr_spill_count: 0
    .uses_dynamic_stack: false
    .vgpr_count:     220
    .vgpr_spill_count: 0
)";

const std::string kCleanLoop = R"(	ds_read_b128 v[180:183], v154
	ds_read_b128 v[184:187], v155 offset:16384
	s_waitcnt lgkmcnt(0)
	v_mfma_f32_32x32x8_bf16 v[0:15], v[180:181], v[184:185], v[0:15]
	v_mfma_f32_32x32x8_bf16 v[16:31], v[182:183], v[186:187], v[16:31]
	ds_write_b128 v151, v[128:131] offset:32768
	global_load_dwordx4 v[128:131], v128, s[40:41]
	s_waitcnt lgkmcnt(0)
	s_barrier
)";

bool mentions(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& line : lines) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(HipIsaReport, ReadsMetadataAndTheKLoop) {
  const isa::IsaFile file = isa::parse_isa(sample(kCleanLoop, kCleanFields));
  EXPECT_EQ("gfx942", file.target);
  ASSERT_EQ(1u, file.kernels.size());
  const isa::KernelIsa& k = file.kernels[0];
  EXPECT_EQ("kern", k.name);
  EXPECT_EQ(220, k.vgpr_count);
  EXPECT_EQ(0, k.agpr_count);
  EXPECT_EQ(80, k.sgpr_count);
  EXPECT_EQ(0, k.vgpr_spill_count);
  EXPECT_EQ(0, k.private_segment_fixed_size);
  EXPECT_EQ(65536, k.group_segment_fixed_size);
  EXPECT_EQ(512, k.max_flat_workgroup_size);
  EXPECT_EQ(2, k.mfma.at("v_mfma_f32_32x32x8_bf16"));
  ASSERT_TRUE(k.k_loop.found);
  EXPECT_EQ(2, k.k_loop.mfma);
  EXPECT_EQ(0, k.k_loop.mfma_agpr_accumulator);
  EXPECT_EQ(0, k.k_loop.mfma_not_in_place);
  EXPECT_EQ(2, k.k_loop.mnemonics.at("ds_read_b128"));
  EXPECT_EQ(1, k.k_loop.mnemonics.at("global_load_dwordx4"));  // not the poll loop's load
  EXPECT_EQ(0u, k.k_loop.mnemonics.count("global_load_dword"));
  EXPECT_EQ(0, k.k_loop.accvgpr_moves);  // the tile loop's copies are outside it
  const std::string line = isa::summary(k, file.target);
  EXPECT_NE(std::string::npos, line.find("2 waves/SIMD")) << line;
  EXPECT_NE(std::string::npos, line.find("accumulators in VGPRs")) << line;
}

TEST(HipIsaReport, CleanKernelPasses) {
  const isa::IsaFile file = isa::parse_isa(sample(kCleanLoop, kCleanFields));
  const auto why = isa::violations(file.kernels[0], file.target);
  EXPECT_TRUE(why.empty()) << why.front();
  // In AGPRs, accumulating in place, is clean too.
  std::string agpr_loop = kCleanLoop;
  for (const char* from : {"v[0:15]", "v[16:31]"}) {
    const std::string to = std::string("a") + (from + 1);
    for (std::size_t at; (at = agpr_loop.find(from)) != std::string::npos;) {
      agpr_loop.replace(at, std::string(from).size(), to);
    }
  }
  const isa::IsaFile agpr = isa::parse_isa(sample(agpr_loop, kCleanFields));
  EXPECT_EQ(2, agpr.kernels[0].k_loop.mfma_agpr_accumulator);
  EXPECT_TRUE(isa::violations(agpr.kernels[0], agpr.target).empty());
}

TEST(HipIsaReport, EachBrokenRuleIsNamed) {
  const std::string spilling_fields = R"(    .private_segment_fixed_size: 2112
    .sgpr_count:     106
    .sgpr_spill_count: 10
    .uses_dynamic_stack: true
    .vgpr_count:     512
    .vgpr_spill_count: 455
)";
  const std::string spilling_loop = kCleanLoop +
                                    "\tscratch_store_dwordx4 off, v[76:79], off offset:96\n"
                                    "\tv_accvgpr_write_b32 a102, v234\n"
                                    "\tv_accvgpr_mov_b32 a245, a197\n";
  const isa::IsaFile file = isa::parse_isa(sample(spilling_loop, spilling_fields));
  const auto why = isa::violations(file.kernels[0], file.target);
  EXPECT_TRUE(mentions(why, "vgpr_spill_count 455 (must be 0)"));
  EXPECT_TRUE(mentions(why, "sgpr_spill_count 10 (must be 0)"));
  EXPECT_TRUE(mentions(why, "scratch 2112 bytes per lane"));
  EXPECT_TRUE(mentions(why, "dynamic stack"));
  EXPECT_TRUE(mentions(why, "1 scratch accesses"));
  EXPECT_TRUE(mentions(why, "K loop: 2 AGPR/VGPR copies"));
  EXPECT_TRUE(mentions(why, "K loop: 1 scratch accesses"));
  // 512 registers a wave and 8 waves a workgroup: not even one fits a CU.
  EXPECT_EQ(0, isa::waves_per_simd(file.kernels[0], file.target));
  EXPECT_TRUE(mentions(why, "no workgroup fits a CU"));

  // LDS beyond 64 KiB.
  std::string big_lds = sample(kCleanLoop, kCleanFields);
  big_lds.replace(big_lds.find("65536"), 5, "65540");
  EXPECT_TRUE(
      mentions(isa::violations(isa::parse_isa(big_lds).kernels[0], "gfx942"), "LDS 65540 bytes"));

  // gfx950 must use its 32x32x16 instruction: the 32x32x8 one is named.
  const isa::IsaFile on_950 = isa::parse_isa(sample(kCleanLoop, kCleanFields, "gfx950"));
  EXPECT_EQ("gfx950", on_950.target);
  const auto why_950 = isa::violations(on_950.kernels[0], on_950.target);
  EXPECT_TRUE(mentions(why_950, "2 x v_mfma_f32_32x32x8_bf16: on gfx950"));
  EXPECT_TRUE(mentions(why_950, "no v_mfma_f32_32x32x16_bf16"));

  // An instruction whose result is not its accumulator input.
  std::string moved = kCleanLoop;
  moved.replace(moved.find("v[0:15], v[180:181]"), 7, "v[32:47]");
  EXPECT_TRUE(
      mentions(isa::violations(isa::parse_isa(sample(moved, kCleanFields)).kernels[0], "gfx942"),
               "1 matrix instructions not accumulating in place"));

  // No loop holds the matrix instructions.
  const isa::IsaFile no_mfma = isa::parse_isa(sample("\ts_nop 0\n", kCleanFields));
  const auto why_none = isa::violations(no_mfma.kernels[0], no_mfma.target);
  EXPECT_TRUE(mentions(why_none, "no v_mfma_f32_32x32x8_bf16"));
  EXPECT_TRUE(mentions(why_none, "no K loop found"));

  // A field missing from the metadata is itself a violation, not a pass.
  std::string missing = kCleanFields;
  missing.erase(missing.find("    .vgpr_spill_count"));
  EXPECT_TRUE(
      mentions(isa::violations(isa::parse_isa(sample(kCleanLoop, missing)).kernels[0], "gfx942"),
               "metadata lacks .vgpr_spill_count"));

  // A target with no rule.
  EXPECT_TRUE(mentions(isa::violations(file.kernels[0], "gfx1100"), "no rule for target"));
}

TEST(HipIsaReport, Occupancy) {
  isa::KernelIsa k;
  k.max_flat_workgroup_size = 256;  // the old kernel: 4 waves, 512 registers, 40 KiB
  k.vgpr_count = 512;
  k.group_segment_fixed_size = 40964;
  EXPECT_EQ(1, isa::waves_per_simd(k, "gfx942"));
  k.max_flat_workgroup_size = 512;  // the new one: 8 waves, 220 registers, 64 KiB
  k.vgpr_count = 220;
  k.group_segment_fixed_size = 65536;
  EXPECT_EQ(2, isa::waves_per_simd(k, "gfx942"));
  EXPECT_EQ(2, isa::waves_per_simd(k, "gfx950"));  // registers bound it there
  k.vgpr_count = 128;
  EXPECT_EQ(2, isa::waves_per_simd(k, "gfx942"));  // one 64 KiB workgroup per CU
  EXPECT_EQ(4, isa::waves_per_simd(k, "gfx950"));  // 160 KiB: two
  EXPECT_EQ("v_mfma_f32_32x32x8bf16_1k", isa::expected_mfma("gfx90a"));
  EXPECT_EQ("v_mfma_f32_32x32x8_bf16", isa::expected_mfma("gfx942"));
  EXPECT_EQ("v_mfma_f32_32x32x16_bf16", isa::expected_mfma("gfx950"));
}

TEST(HipIsaReport, NotAssemblyIsAnError) {
  for (const std::string& text :
       {std::string("int main() {}"), std::string("\t.amdgpu_metadata\n---\namdhsa.kernels: []\n"
                                                  "\t.end_amdgpu_metadata\n")}) {
    try {
      (void)isa::parse_isa(text);
      ADD_FAILURE() << "parsed: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::invalid_argument, e.code());
    }
  }
}

}  // namespace
}  // namespace asynctp::hip
