#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <new>
#include <thread>

#include "asynctp/verify.hpp"

namespace asynctp::verify {
namespace {

std::uint64_t bytes_of(std::int64_t rows, std::int64_t cols, DType dtype) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * element_size(dtype);
}

int host_parallelism(int tasks) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(tasks, hardware));
}

// fn(i) for i in [0, count) on host_parallelism(count) threads; rethrows the
// first exception once all have joined.
template <typename Fn>
void parallel_for(int count, Fn&& fn) {
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  auto worker = [&] {
    for (int i = next++; i < count && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < host_parallelism(count); ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

struct AllGatherMatmulProblem::State {
  AllGatherMatmulShape shape;
  std::vector<Rank> ranks;
  std::vector<std::unique_ptr<void, void (*)(void*)>> memory;
  std::vector<std::vector<double>> references;

  // A cache line's alignment (the library demands 16 bytes; a line keeps
  // ranks from sharing one), untouched until the rank's thread fills it.
  TensorView allocate(std::int64_t rows, std::int64_t cols, bool col_major = false) {
    constexpr std::size_t kAlignment = 64;
    const std::size_t bytes = bytes_of(rows, cols, shape.dtype);
    void* p = std::aligned_alloc(kAlignment, (bytes / kAlignment + 1) * kAlignment);
    if (p == nullptr) throw std::bad_alloc();
    memory.emplace_back(p, std::free);
    return col_major ? TensorView::col_major(p, shape.dtype, rows, cols)
                     : TensorView::row_major(p, shape.dtype, rows, cols);
  }
};

AllGatherMatmulProblem::AllGatherMatmulProblem(const AllGatherMatmulShape& shape,
                                               std::uint64_t seed)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.shape = shape;
  const std::int64_t rows = shape.world_size * shape.m;
  for (int r = 0; r < shape.world_size; ++r) {
    s.ranks.push_back({s.allocate(shape.m, shape.k),
                       s.allocate(shape.k, shape.n, shape.b_col_major), s.allocate(rows, shape.n),
                       s.allocate(rows, shape.k)});
  }
  s.references.resize(s.ranks.size());
  parallel_for(shape.world_size, [&](int r) {
    Random random(seed, static_cast<std::uint64_t>(r));
    random.fill_normal(s.ranks[static_cast<std::size_t>(r)].a_shard);
    random.fill_normal(s.ranks[static_cast<std::size_t>(r)].b);
  });
}

AllGatherMatmulProblem::~AllGatherMatmulProblem() = default;

std::uint64_t AllGatherMatmulProblem::host_bytes(const AllGatherMatmulShape& shape,
                                                 bool with_references) {
  const std::int64_t rows = shape.world_size * shape.m;
  const auto world = static_cast<std::uint64_t>(shape.world_size);
  std::uint64_t total =
      world * (bytes_of(shape.m, shape.k, shape.dtype) + bytes_of(shape.k, shape.n, shape.dtype) +
               bytes_of(rows, shape.n, shape.dtype) + bytes_of(rows, shape.k, shape.dtype));
  if (with_references) {
    // One float64 C per rank is kept; building one also needs the float64
    // gathered A and B while its GEMM runs, on each host thread at once.
    const auto concurrent = static_cast<std::uint64_t>(host_parallelism(shape.world_size));
    total += world * bytes_of(rows, shape.n, DType::fp32) * 2 +
             concurrent *
                 (bytes_of(rows, shape.k, DType::fp32) + bytes_of(shape.k, shape.n, DType::fp32)) *
                 2;
  }
  return total;
}

const AllGatherMatmulShape& AllGatherMatmulProblem::shape() const noexcept { return state_->shape; }

const AllGatherMatmulProblem::Rank& AllGatherMatmulProblem::rank(int r) const {
  return state_->ranks.at(static_cast<std::size_t>(r));
}

const std::vector<double>& AllGatherMatmulProblem::reference(int r) const {
  return state_->references.at(static_cast<std::size_t>(r));
}

void AllGatherMatmulProblem::compute_references(const std::function<bool(int)>& wanted) {
  std::vector<TensorView> shards;
  for (const Rank& rank : state_->ranks) shards.push_back(rank.a_shard);
  parallel_for(state_->shape.world_size, [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    if (!wanted || wanted(r)) {
      state_->references[i] = reference_all_gather_matmul(shards, state_->ranks[i].b);
    }
  });
}

void AllGatherMatmulProblem::poison_outputs() {
  parallel_for(state_->shape.world_size, [&](int r) noexcept {
    poison(state_->ranks[static_cast<std::size_t>(r)].c);
    poison(state_->ranks[static_cast<std::size_t>(r)].a_gathered);
  });
}

std::vector<Verdict> AllGatherMatmulProblem::check() const {
  std::vector<TensorView> shards;
  for (const Rank& rank : state_->ranks) shards.push_back(rank.a_shard);
  std::vector<Verdict> verdicts(state_->ranks.size());
  parallel_for(state_->shape.world_size, [&](int r) {
    const auto i = static_cast<std::size_t>(r);
    if (state_->references[i].empty()) return;
    verdicts[i] = check_all_gather_matmul(state_->ranks[i].c, &state_->ranks[i].a_gathered, shards,
                                          state_->references[i]);
  });
  return verdicts;
}

}  // namespace asynctp::verify
