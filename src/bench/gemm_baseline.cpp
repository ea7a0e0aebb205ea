#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"

#if !defined(ASYNCTP_GPU_HIP)
#include "cuda/cublas_gemm.hpp"
#include "cuda/cuda_check.hpp"
#endif

namespace asynctp::bench {

#if defined(ASYNCTP_GPU_HIP)
// hipBLAS is found (or not) only when the HIP backend is built, and no AMD
// GPU has run this yet: the baseline stays CUDA's until one can check it.
struct GemmBaseline::Impl {};

GemmBaseline::GemmBaseline(const std::vector<TensorView>&, const TensorView&) {
  throw Error(ErrorCode::unsupported, "the library GEMM baseline is the CUDA backend's (cuBLAS)");
}

verify::Verdict GemmBaseline::check(const std::vector<double>&) { return {}; }

std::vector<double> GemmBaseline::time(int, const std::function<void(void*, int)>&) { return {}; }
#else
struct GemmBaseline::Impl {
  Impl(const TensorView& a_shape, const TensorView& device_b)
      : b(device_b),
        a(a_shape, device_b.device.index, "the GEMM baseline's A"),
        c(TensorView::row_major(nullptr, a_shape.dtype, a_shape.rows, device_b.cols),
          device_b.device.index, "the GEMM baseline's C") {}
  void run() {
    cublas.run(static_cast<cudaStream_t>(stream.get()), a.view().data, a.view().rows, b,
               c.view().data);
  }

  const TensorView b;
  Stream stream;
  DeviceTensor a;
  DeviceTensor c;
  cuda::CublasGemm cublas;
};

GemmBaseline::GemmBaseline(const std::vector<TensorView>& a_blocks, const TensorView& device_b) {
  std::int64_t rows = 0;
  for (const TensorView& block : a_blocks) {
    if (!block.is_row_major() || block.cols != device_b.rows || block.dtype != device_b.dtype) {
      throw Error(ErrorCode::invalid_argument,
                  "GemmBaseline: needs row-major A blocks (rows x k) and a B (k x n) of their "
                  "dtype");
    }
    rows += block.rows;
  }
  impl_ = std::make_unique<Impl>(
      TensorView::row_major(nullptr, device_b.dtype, rows, device_b.rows), device_b);
  const auto stream = static_cast<cudaStream_t>(impl_->stream.get());
  auto* at = static_cast<char*>(impl_->a.view().data);
  for (const TensorView& block : a_blocks) {
    const std::size_t bytes = static_cast<std::size_t>(block.numel()) * element_size(block.dtype);
    cuda::check_cuda(cudaMemcpyAsync(at, block.data, bytes, cudaMemcpyHostToDevice, stream),
                     "copying the GEMM baseline's A to the device");
    at += bytes;
  }
  impl_->stream.synchronize();
}

verify::Verdict GemmBaseline::check(const std::vector<double>& reference) {
  const TensorView& c = impl_->c.view();
  // 4-byte words: aligned for every dtype.
  std::vector<std::uint32_t> words(static_cast<std::size_t>(c.numel()) * element_size(c.dtype) / 4 +
                                   1);
  const TensorView host_c = TensorView::row_major(words.data(), c.dtype, c.rows, c.cols);
  verify::poison(host_c);
  impl_->c.upload(host_c, impl_->stream.get());
  impl_->run();
  impl_->c.download(host_c, impl_->stream.get());
  impl_->stream.synchronize();
  return verify::check_all_gather_matmul(host_c, nullptr, {}, reference);
}

std::vector<double> GemmBaseline::time(int count,
                                       const std::function<void(void*, int)>& after_each) {
  std::vector<Event> begin(static_cast<std::size_t>(count));
  std::vector<Event> end(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < begin.size(); ++i) {
    begin[i].record(impl_->stream.get());
    impl_->run();
    end[i].record(impl_->stream.get());
    if (after_each) after_each(impl_->stream.get(), static_cast<int>(i));
  }
  impl_->stream.synchronize();
  std::vector<double> ms;
  for (std::size_t i = 0; i < begin.size(); ++i) ms.push_back(end[i].ms_since(begin[i]));
  return ms;
}
#endif

GemmBaseline::~GemmBaseline() = default;

}  // namespace asynctp::bench
