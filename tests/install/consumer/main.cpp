// A user's program against the installed package: the fused all-gather +
// matmul on CPU ranks, every rank's result checked against a float64
// reference. Exits non-zero on any mismatch or error.
#include <asynctp/asynctp.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

namespace {

// bf16 is the upper half of a float; the inputs are small integers, which
// bf16 holds exactly, so only the output's rounding separates C from the reference.
std::uint16_t to_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t h) {
  std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Runs the op with `algorithm` on every rank and counts the wrong elements of C.
int run_and_check(asynctp::cpu::Group& group, asynctp::Algorithm algorithm, std::int64_t m,
                  std::int64_t n, std::int64_t k, const std::vector<double>& a_full,
                  const std::vector<double>& b, const std::vector<double>& reference) {
  using asynctp::DType;
  using asynctp::TensorView;
  const int world = group.world_size();
  const std::int64_t rows = world * m;
  std::vector<std::vector<std::uint16_t>> a_shard(world), b_local(world), c_out(world);
  for (int r = 0; r < world; ++r) {
    for (std::int64_t i = 0; i < m * k; ++i)
      a_shard[r].push_back(to_bf16(static_cast<float>(a_full[r * m * k + i])));
    for (double x : b) b_local[r].push_back(to_bf16(static_cast<float>(x)));
    c_out[r].assign(rows * n, 0);
  }
  asynctp::Options options;
  options.algorithm = algorithm;
  asynctp::RunInfo info;
  group.run([&](asynctp::Comm& comm) {
    const int r = comm.rank();
    auto a = TensorView::row_major(a_shard[r].data(), DType::bf16, m, k);
    auto bv = TensorView::row_major(b_local[r].data(), DType::bf16, k, n);
    auto c = TensorView::row_major(c_out[r].data(), DType::bf16, rows, n);
    asynctp::RunInfo mine = asynctp::fused_all_gather_matmul(comm, a, bv, c, nullptr, options);
    if (r == 0) info = mine;
  });

  int wrong = 0;
  for (int r = 0; r < world; ++r) {
    for (std::int64_t i = 0; i < rows * n; ++i) {
      const double got = from_bf16(c_out[r][i]);
      // bf16 keeps 8 significant bits: rounding to nearest is within 2^-8
      // relative; the fp32 accumulation of small integers is exact.
      if (std::fabs(got - reference[i]) > std::ldexp(std::fabs(reference[i]), -7)) {
        if (wrong < 5) {
          std::fprintf(stderr, "asynctp_consumer: rank %d C[%lld] = %g, expected %g\n", r,
                       static_cast<long long>(i), got, reference[i]);
        }
        ++wrong;
      }
    }
  }
  std::printf("asynctp_consumer: asked %s, ran %s: %d wrong\n", asynctp::to_string(algorithm),
              asynctp::to_string(info.algorithm), wrong);
  return wrong;
}

}  // namespace

int main() {
  // Chunks of 256 rows: large enough for every algorithm on the CPU backend.
  constexpr int kWorld = 2;
  constexpr std::int64_t m = 256, n = 64, k = 64;
  constexpr std::int64_t rows = kWorld * m;

  // Rank r's A shard holds rows r*m .. r*m+m-1 of the whole A; B is the same on every rank.
  std::vector<double> a_full(rows * k), b(k * n);
  for (std::int64_t i = 0; i < rows * k; ++i) a_full[i] = static_cast<double>((i * 7) % 9) - 4;
  for (std::int64_t i = 0; i < k * n; ++i) b[i] = static_cast<double>((i * 5) % 7) - 3;
  std::vector<double> reference(rows * n, 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) reference[i * n + j] += a_full[i * k + p] * b[p * n + j];

  int wrong = 0;
  try {
    asynctp::cpu::Group group({/*world_size=*/kWorld});
    for (auto algorithm : {asynctp::Algorithm::automatic, asynctp::Algorithm::native,
                           asynctp::Algorithm::pipelined, asynctp::Algorithm::decomposed}) {
      wrong += run_and_check(group, algorithm, m, n, k, a_full, b, reference);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asynctp_consumer: %s\n", e.what());
    return 1;
  }
  return wrong == 0 ? 0 : 1;
}
