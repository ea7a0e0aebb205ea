#include "hip/isa_report.hpp"

#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "asynctp/error.hpp"

namespace asynctp::hip::isa {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int to_int(const std::string& value) {
  try {
    return std::stoi(value);
  } catch (const std::exception&) {
    return -1;
  }
}

// One `.key: value` line of a kernel's metadata map.
void set_field(KernelIsa& k, const std::string& key, const std::string& value) {
  static const std::map<std::string, int KernelIsa::*> ints = {
      {"vgpr_count", &KernelIsa::vgpr_count},
      {"agpr_count", &KernelIsa::agpr_count},
      {"sgpr_count", &KernelIsa::sgpr_count},
      {"vgpr_spill_count", &KernelIsa::vgpr_spill_count},
      {"sgpr_spill_count", &KernelIsa::sgpr_spill_count},
      {"private_segment_fixed_size", &KernelIsa::private_segment_fixed_size},
      {"group_segment_fixed_size", &KernelIsa::group_segment_fixed_size},
      {"max_flat_workgroup_size", &KernelIsa::max_flat_workgroup_size}};
  if (key == "name") {
    k.name = value;
  } else if (key == "uses_dynamic_stack") {
    k.uses_dynamic_stack = value == "true";
  } else if (const auto it = ints.find(key); it != ints.end()) {
    k.*(it->second) = to_int(value);
  }
}

// The .amdgpu_metadata block: amdhsa.kernels (a list of maps, each begun by
// "  - .key: value", its keys at indent 4, nested lists deeper) and
// amdhsa.target.
IsaFile parse_metadata(const std::vector<std::string>& lines) {
  IsaFile file;
  bool in_block = false, in_kernels = false, seen_block = false;
  for (const std::string& line : lines) {
    const std::string t = trim(line);
    if (t == ".amdgpu_metadata") {
      in_block = seen_block = true;
      continue;
    }
    if (t == ".end_amdgpu_metadata") in_block = false;
    if (!in_block) continue;
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == 0) {
      in_kernels = starts_with(line, "amdhsa.kernels:");
      if (starts_with(line, "amdhsa.target:")) {
        std::string target = trim(line.substr(line.find(':') + 1));
        if (const auto dashes = target.rfind("--"); dashes != std::string::npos) {
          target = target.substr(dashes + 2);
        }
        file.target = target.substr(0, target.find(':'));
      }
      continue;
    }
    if (!in_kernels) continue;
    std::string entry;
    if (indent == 2 && starts_with(t, "- .")) {
      file.kernels.emplace_back();
      entry = t.substr(2);
    } else if (indent == 4 && starts_with(t, ".") && !file.kernels.empty()) {
      entry = t;
    } else {
      continue;  // nested: the kernel's argument list
    }
    const std::size_t colon = entry.find(':');
    if (colon == std::string::npos) continue;
    set_field(file.kernels.back(), entry.substr(1, colon - 1), trim(entry.substr(colon + 1)));
  }
  if (!seen_block) {
    throw Error(ErrorCode::invalid_argument,
                "ISA: no .amdgpu_metadata block (not clang's AMDGPU assembly?)");
  }
  if (file.kernels.empty()) throw Error(ErrorCode::invalid_argument, "ISA: no kernel in metadata");
  return file;
}

struct Instruction {
  std::string mnemonic;
  std::vector<std::string> operands;
};

// A basic block and the loop LLVM's comments place it in.
struct Block {
  std::string name;  // "BB1_3" for .LBB1_3; "" for an unlabelled "; %bb.N"
  std::string loop;  // header of the innermost loop holding it; "" outside loops
  int depth = 0;
  std::string parent;  // for a loop header: the header of the loop around it
  std::vector<Instruction> instructions;
};

bool is_mfma(const std::string& mnemonic) { return starts_with(mnemonic, "v_mfma_"); }

bool is_scratch(const Instruction& in) {
  if (starts_with(in.mnemonic, "scratch_")) return true;
  // The private segment through a buffer descriptor (older code objects).
  return starts_with(in.mnemonic, "buffer_") &&
         std::any_of(in.operands.begin(), in.operands.end(),
                     [](const std::string& op) { return op == "s[0:3]"; });
}

Instruction parse_instruction(const std::string& t) {
  Instruction in;
  const std::size_t space = t.find_first_of(" \t");
  in.mnemonic = t.substr(0, space);
  if (space == std::string::npos) return in;
  std::string rest = t.substr(space);
  if (const auto comment = rest.find(';'); comment != std::string::npos) rest.resize(comment);
  std::istringstream operands(rest);
  for (std::string op; std::getline(operands, op, ',');) {
    op = trim(op);
    in.operands.push_back(op.substr(0, op.find_first_of(" \t")));  // drop modifiers
  }
  return in;
}

// Applies one loop comment of LLVM's block annotations to `b`.
void read_loop_comment(const std::string& comment, Block& b) {
  static const std::regex in_loop(R"(Loop: Header=(BB\d+_\d+) Depth=(\d+))");
  static const std::regex header(R"(This\s+(Inner\s+)?Loop Header: Depth=(\d+))");
  static const std::regex parent(R"(Parent Loop (BB\d+_\d+) Depth=(\d+))");
  std::smatch m;
  if (std::regex_search(comment, m, header)) {
    b.loop = b.name;
    b.depth = std::stoi(m[2]);
  } else if (std::regex_search(comment, m, in_loop)) {
    b.loop = m[1];
    b.depth = std::stoi(m[2]);
  }
  if (std::regex_search(comment, m, parent)) b.parent = m[1];
}

// Every kernel's blocks, from its label to its .Lfunc_end.
std::map<std::string, std::vector<Block>> kernel_blocks(const std::vector<std::string>& lines,
                                                        const std::set<std::string>& names) {
  static const std::regex label(R"(^\.L(BB\d+_\d+):(.*)$)");
  static const std::regex unlabelled(R"(^; %bb\.\d+:(.*)$)");
  std::map<std::string, std::vector<Block>> blocks;
  std::vector<Block>* kernel = nullptr;
  bool in_header_comments = false;
  for (const std::string& line : lines) {
    if (line.empty()) continue;
    std::smatch m;
    const std::size_t colon = line.find(':');
    if (line[0] != '.' && line[0] != ';' && line[0] != '\t' && line[0] != ' ' &&
        colon != std::string::npos && names.count(line.substr(0, colon))) {
      kernel = &blocks[line.substr(0, colon)];
      kernel->push_back({});  // the entry block
      in_header_comments = true;
      continue;
    }
    if (!kernel) continue;
    if (starts_with(line, ".Lfunc_end")) {
      kernel = nullptr;
      continue;
    }
    if (std::regex_match(line, m, label) || std::regex_match(line, m, unlabelled)) {
      Block b;
      if (m.size() == 3) b.name = m[1];
      read_loop_comment(m[m.size() - 1], b);
      kernel->push_back(b);
      in_header_comments = true;
      continue;
    }
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (t[0] == ';') {
      if (in_header_comments) read_loop_comment(t, kernel->back());
      continue;
    }
    if (t[0] == '.') continue;  // a directive
    in_header_comments = false;
    kernel->back().instructions.push_back(parse_instruction(t));
  }
  return blocks;
}

// The innermost loop holding matrix instructions, and what it runs.
LoopMix k_loop_mix(const std::vector<Block>& blocks) {
  std::map<std::string, std::string> parent_of;
  for (const Block& b : blocks) {
    if (!b.name.empty() && b.loop == b.name) parent_of[b.name] = b.parent;
  }
  std::string loop;
  int depth = 0;
  for (const Block& b : blocks) {
    const bool has_mfma = std::any_of(b.instructions.begin(), b.instructions.end(),
                                      [](const Instruction& in) { return is_mfma(in.mnemonic); });
    if (has_mfma && !b.loop.empty() && b.depth > depth) {
      loop = b.loop;
      depth = b.depth;
    }
  }
  LoopMix mix;
  if (loop.empty()) return mix;
  mix.found = true;
  const auto inside = [&](std::string header) {
    for (int guard = 0; !header.empty() && guard < 64; ++guard) {
      if (header == loop) return true;
      const auto it = parent_of.find(header);
      header = it == parent_of.end() ? "" : it->second;
    }
    return false;
  };
  for (const Block& b : blocks) {
    if (!inside(b.loop)) continue;
    for (const Instruction& in : b.instructions) {
      ++mix.mnemonics[in.mnemonic];
      if (starts_with(in.mnemonic, "v_accvgpr_")) ++mix.accvgpr_moves;
      if (is_scratch(in)) ++mix.scratch;
      if (!is_mfma(in.mnemonic)) continue;
      ++mix.mfma;
      if (!in.operands.empty() && starts_with(in.operands[0], "a")) ++mix.mfma_agpr_accumulator;
      if (in.operands.size() < 4 || in.operands[0] != in.operands[3]) ++mix.mfma_not_in_place;
    }
  }
  return mix;
}

int round_up(int value, int granule) { return (value + granule - 1) / granule * granule; }

}  // namespace

IsaFile parse_isa(const std::string& assembly) {
  const std::vector<std::string> lines = lines_of(assembly);
  IsaFile file = parse_metadata(lines);
  std::set<std::string> names;
  for (const KernelIsa& k : file.kernels) names.insert(k.name);
  const auto blocks = kernel_blocks(lines, names);
  for (KernelIsa& k : file.kernels) {
    const auto it = blocks.find(k.name);
    if (it == blocks.end()) continue;
    for (const Block& b : it->second) {
      for (const Instruction& in : b.instructions) {
        if (is_mfma(in.mnemonic)) ++k.mfma[in.mnemonic];
        if (is_scratch(in)) ++k.scratch_instructions;
      }
    }
    k.k_loop = k_loop_mix(it->second);
  }
  return file;
}

std::string expected_mfma(const std::string& target) {
  if (target == "gfx950") return "v_mfma_f32_32x32x16_bf16";
  if (target == "gfx940" || target == "gfx941" || target == "gfx942") {
    return "v_mfma_f32_32x32x8_bf16";
  }
  if (target == "gfx90a") return "v_mfma_f32_32x32x8bf16_1k";
  return "";
}

int waves_per_simd(const KernelIsa& kernel, const std::string& target) {
  constexpr int kRegistersPerLane = 512, kMaxWaves = 8, kSimds = 4, kGranule = 8;
  const int lds_per_cu = target == "gfx950" ? 160 * 1024 : 64 * 1024;
  const int by_registers =
      std::min(kMaxWaves, kRegistersPerLane / round_up(std::max(kernel.vgpr_count, 1), kGranule));
  const int workgroup_waves =
      kernel.max_flat_workgroup_size > 0 ? round_up(kernel.max_flat_workgroup_size, 64) / 64 : 4;
  const int per_simd = round_up(workgroup_waves, kSimds) / kSimds;  // one workgroup's waves
  int workgroups = by_registers / per_simd;
  if (kernel.group_segment_fixed_size > 0) {
    workgroups = std::min(workgroups, lds_per_cu / kernel.group_segment_fixed_size);
  }
  return workgroups * per_simd;
}

std::vector<std::string> violations(const KernelIsa& kernel, const std::string& target) {
  std::vector<std::string> out;
  const auto need = [&](int value, const char* field) {
    if (value < 0) out.push_back(std::string("metadata lacks .") + field);
    return value >= 0;
  };
  if (need(kernel.vgpr_spill_count, "vgpr_spill_count") && kernel.vgpr_spill_count > 0) {
    out.push_back("vgpr_spill_count " + std::to_string(kernel.vgpr_spill_count) + " (must be 0)");
  }
  if (need(kernel.sgpr_spill_count, "sgpr_spill_count") && kernel.sgpr_spill_count > 0) {
    out.push_back("sgpr_spill_count " + std::to_string(kernel.sgpr_spill_count) + " (must be 0)");
  }
  if (need(kernel.private_segment_fixed_size, "private_segment_fixed_size") &&
      kernel.private_segment_fixed_size > 0) {
    out.push_back("scratch " + std::to_string(kernel.private_segment_fixed_size) +
                  " bytes per lane (private_segment_fixed_size; must be 0)");
  }
  if (kernel.uses_dynamic_stack) {
    out.push_back("uses a dynamic stack (scratch: a call or a variable-sized alloca)");
  }
  if (kernel.scratch_instructions > 0) {
    out.push_back(std::to_string(kernel.scratch_instructions) + " scratch accesses (must be none)");
  }
  if (need(kernel.group_segment_fixed_size, "group_segment_fixed_size") &&
      kernel.group_segment_fixed_size > kMaxLdsBytes) {
    out.push_back("LDS " + std::to_string(kernel.group_segment_fixed_size) +
                  " bytes (group_segment_fixed_size; at most " + std::to_string(kMaxLdsBytes) +
                  ")");
  }
  if (kernel.vgpr_count >= 0 && waves_per_simd(kernel, target) == 0) {
    out.push_back("no workgroup fits a CU (" + std::to_string(kernel.vgpr_count) +
                  " registers a lane, " + std::to_string(kernel.max_flat_workgroup_size) +
                  " threads a workgroup)");
  }
  const std::string want = expected_mfma(target);
  if (want.empty()) {
    out.push_back("no rule for target '" + target + "' (which matrix instruction?)");
  } else {
    for (const auto& [mnemonic, count] : kernel.mfma) {
      if (mnemonic != want) {
        out.push_back(std::to_string(count) + " x " + mnemonic + ": on " + target +
                      " the kernel uses " + want + " only");
      }
    }
    if (!kernel.mfma.count(want)) out.push_back("no " + want + " (the K loop's instruction)");
  }
  if (!kernel.k_loop.found) {
    out.push_back("no loop holds the matrix instructions (no K loop found)");
  } else {
    if (kernel.k_loop.accvgpr_moves > 0) {
      out.push_back("K loop: " + std::to_string(kernel.k_loop.accvgpr_moves) +
                    " AGPR/VGPR copies (the accumulators must stay in their registers)");
    }
    if (kernel.k_loop.mfma_not_in_place > 0) {
      out.push_back("K loop: " + std::to_string(kernel.k_loop.mfma_not_in_place) +
                    " matrix instructions not accumulating in place");
    }
    if (kernel.k_loop.scratch > 0) {
      out.push_back("K loop: " + std::to_string(kernel.k_loop.scratch) + " scratch accesses");
    }
  }
  return out;
}

std::string summary(const KernelIsa& kernel, const std::string& target) {
  std::ostringstream s;
  const int agpr = std::max(kernel.agpr_count, 0);
  s << kernel.name << " (" << target << "): VGPR " << kernel.vgpr_count << " (arch "
    << kernel.vgpr_count - agpr << ", AGPR " << agpr << "), SGPR " << kernel.sgpr_count
    << ", spills " << kernel.vgpr_spill_count << " VGPR / " << kernel.sgpr_spill_count
    << " SGPR, scratch " << kernel.private_segment_fixed_size << " B/lane, LDS "
    << kernel.group_segment_fixed_size << " B, " << waves_per_simd(kernel, target) << " waves/SIMD";
  const LoopMix& loop = kernel.k_loop;
  if (!loop.found) return s.str() + "; no K loop";
  s << "; K loop per iteration: " << loop.mfma << " MFMA (accumulators in "
    << (loop.mfma_agpr_accumulator == loop.mfma ? "AGPRs"
        : loop.mfma_agpr_accumulator == 0       ? "VGPRs"
                                                : "AGPRs and VGPRs")
    << ")";
  for (const auto& [mnemonic, count] : loop.mnemonics) {
    if (starts_with(mnemonic, "ds_") || starts_with(mnemonic, "global_") ||
        mnemonic == "s_barrier") {
      s << ", " << count << " " << mnemonic;
    }
  }
  s << ", " << loop.accvgpr_moves << " AGPR/VGPR copies";
  return s.str();
}

}  // namespace asynctp::hip::isa
