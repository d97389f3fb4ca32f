// Backend "im2col_gemm_cuda": our im2col + GEMM kernels, FP32, nchw and nhwc, any groups,
// stride, dilation and padding. The kernel variants and their trade-offs are described in
// conv/cuda/im2col_gemm_kernels.cu; BackendOptions::variant picks one.
#include "conv/cuda/im2col_gemm_cuda.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/im2col_index.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

enum class Variant { im2col_gemm = 1, implicit_gemm = 2, implicit_gemm_precomp = 3 };

// The default: the fastest variant on the problems measured (see the header of the .cu file).
constexpr Variant kDefaultVariant = Variant::implicit_gemm_precomp;

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::im2col_gemm:
      return "v1 im2col + GEMM (column buffer)";
    case Variant::implicit_gemm:
      return "v2 implicit GEMM";
    case Variant::implicit_gemm_precomp:
      return "v3 implicit GEMM, precomputed rows";
  }
  return "unknown";
}

Variant parse_variant(const std::string& text) {
  if (text.empty()) return kDefaultVariant;
  if (text == "1") return Variant::im2col_gemm;
  if (text == "2") return Variant::implicit_gemm;
  if (text == "3") return Variant::implicit_gemm_precomp;
  throw bench::UsageError("--variant '" + text +
                          "': im2col_gemm_cuda has variants 1 (im2col + GEMM), 2 (implicit GEMM), "
                          "3 (implicit GEMM, precomputed rows; the default)");
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

class Im2colGemmInstance final : public Instance {
 public:
  Im2colGemmInstance(const Problem& p, const HostData& data, Variant variant)
      : p_(p),
        variant_(variant),
        g_(make_im2col_geometry(p)),
        tile_(choose_gemm_tile(g_)),
        src_(data.src.size()),
        wei_(data.wei.size()),
        dst_(static_cast<std::size_t>(p.dst_elements())),
        timer_(stream_.get()) {
    src_.upload_async(data.src.data(), stream_.get());
    wei_.upload_async(data.wei.data(), stream_.get());
    if (variant_ == Variant::im2col_gemm) {
      const std::size_t bytes = im2col_buffer_elements(g_) * sizeof(float);
      std::size_t free = 0, total = 0;
      CUDA_CHECK(cudaMemGetInfo(&free, &total));
      if (bytes > free)
        throw bench::Unsupported("variant 1's column buffer needs " + gib(double(bytes)) +
                                 ", more than the " + gib(double(free)) + " free on the device");
      col_ = bench::DeviceBuffer<float>(im2col_buffer_elements(g_));
    }
    stream_.synchronize();
  }

  // Variant 3 builds its row table here, the only planning any variant does.
  void compile() override {
    if (variant_ == Variant::implicit_gemm_precomp) {
      const std::vector<Im2colRow> rows = im2col_row_table(g_);
      rows_ = bench::DeviceBuffer<Im2colRow>(rows.size());
      rows_.upload_async(rows.data(), stream_.get());
      stream_.synchronize();
    }
  }

  void poison_output() override { dst_.fill_bytes_async(0xFF, stream_.get()); }

  void run() override {
    switch (variant_) {
      case Variant::im2col_gemm:
        launch_im2col(g_, src_.data(), col_.data(), stream_.get());
        launch_gemm_from_columns(g_, tile_, wei_.data(), col_.data(), dst_.data(), stream_.get());
        break;
      case Variant::implicit_gemm:
        launch_implicit_gemm(g_, tile_, src_.data(), wei_.data(), dst_.data(), stream_.get());
        break;
      case Variant::implicit_gemm_precomp:
        launch_implicit_gemm_precomp(g_, tile_, src_.data(), wei_.data(), rows_.data(), dst_.data(),
                                     stream_.get());
        break;
    }
  }

  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override {
    dst_.download_async(dst, stream_.get());
    stream_.synchronize();
  }

  std::vector<std::int64_t> output_dims() const override {
    return {p_.mb, p_.oc, p_.oh(), p_.ow()};
  }

  std::string algorithm() const override {
    return std::string(variant_name(variant_)) + ", " + gemm_tile_name(tile_) + ", gather along " +
           (g_.nhwc ? "k" : "m");
  }

  std::optional<std::int64_t> workspace_bytes() const override {
    return static_cast<std::int64_t>(col_.bytes() + rows_.bytes());
  }

  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    return {{"variant", static_cast<int>(variant_)},
            {"tile", gemm_tile_name(tile_)},
            {"kernels_built_with", im2col_gemm_build_info()}};
  }

 private:
  Problem p_;
  Variant variant_;
  Im2colGeometry g_;
  GemmTile tile_;
  bench::Stream stream_;
  bench::DeviceBuffer<float> src_, wei_, dst_;
  bench::DeviceBuffer<float> col_;       // variant 1: G*K*M column matrices
  bench::DeviceBuffer<Im2colRow> rows_;  // variant 3: K row entries
  bench::CudaEventTimer timer_;
};

class Im2colGemmCudaBackend final : public Backend {
 public:
  explicit Im2colGemmCudaBackend(Variant variant) : variant_(variant) {}

  std::string name() const override { return "im2col_gemm_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override {
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    return "CUDA runtime " + bench::cuda_version_string(runtime) + ", kernels by " +
           im2col_gemm_build_info();
  }

  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }

  Support check_support(const Problem& p) const override {
    if (p.dtype != DataType::fp32)
      return Support::no(
          "not implemented yet: " + bench::to_string(p.dtype) +
          " (im2col_gemm_cuda has FP32 CUDA-core kernels only; no tensor-core path)");
    if (const std::string why = im2col_index_limits(p); !why.empty()) return Support::no(why);
    if (p.g > 65535) return Support::no("more than 65535 groups (one grid z index per group)");
    return Support::yes();
  }

  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<Im2colGemmInstance>(p, data, variant_);
  }

 private:
  Variant variant_;
};

}  // namespace

std::unique_ptr<Backend> make_im2col_gemm_cuda_backend(const BackendOptions& options) {
  return std::make_unique<Im2colGemmCudaBackend>(parse_variant(options.variant));
}

}  // namespace conv
