#include "core/cost_table.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "asynctp/error.hpp"

namespace asynctp::core {

// The embedded tables: generated at build time from data/cost/*.txt
// (cmake/embed_cost_tables.cmake).
extern const char* const kBuiltinCostTables[];
extern const char* const kBuiltinCostTableNames[];
extern const int kBuiltinCostTableCount;

namespace {

int op_index(OpKind op) { return op == OpKind::matmul_reduce_scatter ? 1 : 0; }

int algorithm_index(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::native:
      return 0;
    case Algorithm::pipelined:
      return 1;
    default:
      return 2;
  }
}

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The rest of a line after its first word, trimmed.
std::string rest_of(const std::string& line) {
  const std::size_t first = line.find_first_not_of(" \t");
  const std::size_t gap = line.find_first_of(" \t", first);
  if (gap == std::string::npos) return "";
  const std::size_t start = line.find_first_not_of(" \t", gap);
  if (start == std::string::npos) return "";
  const std::size_t end = line.find_last_not_of(" \t\r");
  return line.substr(start, end - start + 1);
}

class LineParser {
 public:
  LineParser(const std::string& origin, int line) : origin_(origin), line_(line) {}

  [[noreturn]] void fail(const std::string& rule) const {
    throw Error(ErrorCode::invalid_argument,
                origin_ + ": line " + std::to_string(line_) + ": " + rule);
  }

  double number(const std::string& word, const char* what, bool allow_zero) const {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || !std::isfinite(v) || v < 0 || (!allow_zero && v == 0)) {
      fail(std::string(what) + " must be a " + (allow_zero ? "non-negative" : "positive") +
           " number, got '" + word + "'");
    }
    return v;
  }

  std::int64_t dimension(const std::string& word, const char* what) const {
    const std::optional<std::int64_t> v = parse_integer(word);
    if (!v || *v <= 0) fail(std::string(what) + " must be a positive integer, got '" + word + "'");
    return *v;
  }

 private:
  const std::string& origin_;
  int line_;
};

void expect_words(const LineParser& p, const std::vector<std::string>& w, std::size_t count,
                  const char* form) {
  if (w.size() != count) p.fail(std::string("expected '") + form + "'");
}

LinkCost parse_link(const LineParser& p, const std::vector<std::string>& w) {
  expect_words(p, w, 4, "link <pcie|arrival|nccl> <GB/s or -> <latency us>");
  LinkCost link;
  if (w[2] != "-") link.gbps = p.number(w[2], "link bandwidth (GB/s)", false);
  link.latency_us = p.number(w[3], "link latency (us)", true);
  return link;
}

}  // namespace

const FixedCost& CostTable::fixed_cost(OpKind op, Algorithm algorithm) const {
  return fixed[op_index(op)][algorithm_index(algorithm)];
}

CostTable parse_cost_table(std::string_view text, const std::string& origin) {
  CostTable table;
  table.origin = origin;
  bool header = false, reduce = false, status_seen = false;
  bool fixed_seen[2][3] = {};
  std::istringstream in{std::string(text)};
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    const std::string line = raw.substr(0, raw.find('#'));
    const std::vector<std::string> w = words_of(line);
    if (w.empty()) continue;
    const LineParser p(origin, number);
    if (!header) {
      if (w.size() != 2 || w[0] != "asynctp-cost-table") {
        p.fail("the first line must be 'asynctp-cost-table 1'");
      }
      if (w[1] != "1") p.fail("format version " + w[1] + " is not known (this build reads 1)");
      header = true;
      continue;
    }
    const std::string& key = w[0];
    if (key == "device") {
      table.device = rest_of(line);
      if (table.device.empty()) p.fail("device needs a name");
    } else if (key == "source") {
      table.source = rest_of(line);
    } else if (key == "status") {
      expect_words(p, w, 2, "status <calibrated|seeded>");
      if (w[1] != "calibrated" && w[1] != "seeded") {
        p.fail("status must be 'calibrated' or 'seeded', got '" + w[1] + "'");
      }
      table.calibrated = w[1] == "calibrated";
      status_seen = true;
    } else if (key == "sms") {
      expect_words(p, w, 2, "sms <processors>");
      table.sms = static_cast<int>(p.dimension(w[1], "sms"));
    } else if (key == "link") {
      if (w.size() < 2) p.fail("expected 'link <pcie|arrival|nccl> <GB/s or -> <latency us>'");
      const LinkCost link = parse_link(p, w);
      if (w[1] == "pcie") {
        table.pcie = link;
      } else if (w[1] == "arrival") {
        table.arrival = link;
      } else if (w[1] == "nccl") {
        table.nccl = link;
      } else {
        p.fail("link must be pcie, arrival or nccl, got '" + w[1] + "'");
      }
    } else if (key == "reduce") {
      expect_words(p, w, 2, "reduce <GB/s>");
      table.reduce_gbps = p.number(w[1], "reduce bandwidth (GB/s)", false);
      reduce = true;
    } else if (key == "fixed") {
      expect_words(p, w, 5, "fixed <op> <algorithm> <us per call> <us per chunk>");
      int op = 0;
      if (w[1] == "all-gather-matmul") {
        op = 0;
      } else if (w[1] == "matmul-reduce-scatter") {
        op = 1;
      } else {
        p.fail("fixed: op must be all-gather-matmul or matmul-reduce-scatter, got '" + w[1] + "'");
      }
      int a = 0;
      if (w[2] == "native") {
        a = 0;
      } else if (w[2] == "pipelined") {
        a = 1;
      } else if (w[2] == "decomposed") {
        a = 2;
      } else {
        p.fail("fixed: algorithm must be native, pipelined or decomposed, got '" + w[2] + "'");
      }
      table.fixed[op][a] = {p.number(w[3], "fixed us per call", true),
                            p.number(w[4], "fixed us per chunk", true)};
      fixed_seen[op][a] = true;
    } else if (key == "gemm") {
      expect_words(p, w, 7, "gemm <kernel> <row|col> <M> <N> <K> <ms>");
      GemmSample s;
      s.kernel = w[1];
      if (w[2] != "row" && w[2] != "col") p.fail("gemm: B layout must be row or col");
      s.b_layout = w[2] == "row" ? Layout::row_major : Layout::col_major;
      s.m = p.dimension(w[3], "gemm M");
      s.n = p.dimension(w[4], "gemm N");
      s.k = p.dimension(w[5], "gemm K");
      s.ms = p.number(w[6], "gemm ms", false);
      table.gemms.push_back(s);
    } else {
      p.fail("unknown key '" + key +
             "' (known: device, source, status, sms, link, reduce, fixed, gemm)");
    }
  }
  const auto missing = [&](const std::string& what) {
    throw Error(ErrorCode::invalid_argument, origin + ": " + what);
  };
  if (!header) missing("empty: the first line must be 'asynctp-cost-table 1'");
  if (table.device.empty()) missing("no 'device' line");
  if (!status_seen) missing("no 'status' line (calibrated or seeded)");
  if (table.sms == 0) missing("no 'sms' line");
  if (!table.pcie) missing("no 'link pcie' line");
  if (!table.arrival) missing("no 'link arrival' line");
  if (!reduce) missing("no 'reduce' line");
  const char* ops[] = {"all-gather-matmul", "matmul-reduce-scatter"};
  const char* algorithms[] = {"native", "pipelined", "decomposed"};
  for (int op = 0; op < 2; ++op) {
    for (int a = 0; a < 3; ++a) {
      if (!fixed_seen[op][a]) {
        missing(std::string("no 'fixed ") + ops[op] + " " + algorithms[a] + "' line");
      }
    }
  }
  for (const Layout layout : {Layout::row_major, Layout::col_major}) {
    bool found = false;
    for (const GemmSample& s : table.gemms) {
      found = found || (s.kernel == kLibraryGemmKernel && s.b_layout == layout);
    }
    if (!found) {
      missing(std::string("no 'gemm cublas ") + to_string(layout) + "' line (B " +
              to_string(layout) + "-major)");
    }
  }
  return table;
}

const std::vector<CostTable>& builtin_cost_tables() {
  static const std::vector<CostTable> tables = [] {
    std::vector<CostTable> out;
    for (int i = 0; i < kBuiltinCostTableCount; ++i) {
      out.push_back(parse_cost_table(kBuiltinCostTables[i], kBuiltinCostTableNames[i]));
    }
    return out;
  }();
  return tables;
}

const CostTable* cost_table_for(const std::string& device_name, const EnvLookup& env) {
  if (const std::optional<std::string> path = env("ASYNCTP_COST_TABLE"); path && !path->empty()) {
    static std::mutex mutex;
    static std::map<std::string, CostTable> by_path;  // entries are never erased: stable
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = by_path.find(*path); it != by_path.end()) return &it->second;
    std::ifstream file(*path);
    if (!file) {
      throw Error(ErrorCode::invalid_argument,
                  "ASYNCTP_COST_TABLE: cannot read the cost table '" + *path + "'");
    }
    std::stringstream text;
    text << file.rdbuf();
    CostTable table = parse_cost_table(text.str(), "ASYNCTP_COST_TABLE (" + *path + ")");
    return &by_path.emplace(*path, std::move(table)).first->second;
  }
  for (const CostTable& table : builtin_cost_tables()) {
    if (!device_name.empty() && device_name.rfind(table.device, 0) == 0) return &table;
  }
  return nullptr;
}

}  // namespace asynctp::core
