// What every op's verify problem shares: host memory, drawing, poisoning,
// references and checks, spread over the host's threads.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <new>
#include <thread>

#include "asynctp/verify.hpp"

namespace asynctp::verify {
namespace {

// fn(i) for i in [0, count) on `threads` threads; rethrows the
// first exception once all have joined.
template <typename Fn>
void parallel_for(int threads, int count, Fn&& fn) {
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
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

struct Problem::State {
  ProblemShape shape;
  std::vector<RankTensors> ranks;
  std::vector<std::unique_ptr<void, void (*)(void*)>> memory;
  std::vector<std::vector<double>> references;

  template <typename Fn>
  void for_each_rank(Fn&& fn) const {
    parallel_for(host_threads(shape.world_size), shape.world_size, fn);
  }
};

Problem::Problem(const ProblemShape& shape) : state_(std::make_unique<State>()) {
  state_->shape = shape;
  state_->references.resize(static_cast<std::size_t>(shape.world_size));
}

Problem::~Problem() = default;

int Problem::host_threads(int world_size) {
  return std::max(1, std::min(world_size, hardware_threads()));
}

std::uint64_t Problem::bytes_of(std::int64_t rows, std::int64_t cols, DType dtype) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * element_size(dtype);
}

std::uint64_t Problem::host_bytes_of(const ProblemShape& shape, bool with_references,
                                     std::int64_t tensor_elements, std::int64_t reference_elements,
                                     std::int64_t scratch_elements) {
  const auto world = static_cast<std::uint64_t>(shape.world_size);
  std::uint64_t total = world * bytes_of(tensor_elements, 1, shape.dtype);
  if (!with_references) return total;
  const auto threads = static_cast<std::uint64_t>(host_threads(shape.world_size));
  return total + (world * static_cast<std::uint64_t>(reference_elements) +
                  threads * static_cast<std::uint64_t>(scratch_elements)) *
                     sizeof(double);
}

// A cache line's alignment (the library demands 16 bytes; a line keeps ranks
// from sharing one).
TensorView Problem::allocate(std::int64_t rows, std::int64_t cols, bool col_major) {
  constexpr std::size_t kAlignment = 64;
  const DType dtype = state_->shape.dtype;
  const std::size_t bytes = bytes_of(rows, cols, dtype);
  void* p = std::aligned_alloc(kAlignment, (bytes / kAlignment + 1) * kAlignment);
  if (p == nullptr) throw std::bad_alloc();
  state_->memory.emplace_back(p, std::free);
  return col_major ? TensorView::col_major(p, dtype, rows, cols)
                   : TensorView::row_major(p, dtype, rows, cols);
}

void Problem::add_rank(RankTensors tensors) { state_->ranks.push_back(std::move(tensors)); }

// Every rank's inputs in blocks on every hardware thread: drawing is most of
// a large run's setup, and a block's draws depend on its place in its
// rank's stream alone, so the values are those of one thread per rank.
void Problem::fill_inputs(std::uint64_t seed) {
  constexpr std::int64_t kBlock = std::int64_t{1} << 20;
  struct Block {
    const TensorView* view;
    Random stream;  // its rank's, at the tensor's first draw
    std::int64_t begin, end;
  };
  std::vector<Block> blocks;
  for (int r = 0; r < state_->shape.world_size; ++r) {
    Random random(seed, static_cast<std::uint64_t>(r));
    for (const RankTensors::Named& input : tensors(r).inputs) {
      const std::int64_t count = input.view.numel();
      for (std::int64_t begin = 0; begin < count; begin += kBlock) {
        blocks.push_back({&input.view, random, begin, std::min(count, begin + kBlock)});
      }
      random.skip(count);
    }
  }
  const int count = static_cast<int>(blocks.size());
  parallel_for(std::min(hardware_threads(), count), count, [&](int i) {
    const Block& block = blocks[static_cast<std::size_t>(i)];
    block.stream.fill_normal_part(*block.view, block.begin, block.end);
  });
}

const ProblemShape& Problem::shape() const noexcept { return state_->shape; }

const RankTensors& Problem::tensors(int rank) const {
  return state_->ranks.at(static_cast<std::size_t>(rank));
}

std::uint64_t Problem::tensor_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const RankTensors& rank : state_->ranks) {
    for (const auto* list : {&rank.inputs, &rank.outputs}) {
      for (const RankTensors::Named& t : *list)
        total += bytes_of(t.view.rows, t.view.cols, t.view.dtype);
    }
  }
  return total;
}

void Problem::compute_references(const std::function<bool(int)>& wanted) {
  state_->for_each_rank([&](int r) {
    if (!wanted || wanted(r))
      state_->references[static_cast<std::size_t>(r)] = compute_reference(r);
  });
}

const std::vector<double>& Problem::reference(int r) const {
  return state_->references.at(static_cast<std::size_t>(r));
}

void Problem::poison_outputs() {
  state_->for_each_rank([&](int r) noexcept {
    for (const RankTensors::Named& output : tensors(r).outputs) poison(output.view);
  });
}

std::vector<Verdict> Problem::check() const {
  std::vector<Verdict> verdicts(state_->ranks.size());
  state_->for_each_rank([&](int r) {
    const std::vector<double>& ref = reference(r);
    if (!ref.empty()) verdicts[static_cast<std::size_t>(r)] = check_rank(r, ref);
  });
  return verdicts;
}

std::vector<double> Problem::gemm_reference() const {
  return reference_all_gather_matmul(gemm_a_blocks(), tensors(0).inputs.at(1).view);
}

}  // namespace asynctp::verify
