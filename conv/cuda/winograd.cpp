#include "conv/cuda/winograd.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conv/cuda/device_facts.hpp"
#include "conv/cuda/device_instance.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/variant_choice.hpp"
#include "conv/cuda/winograd_config.hpp"
#include "conv/cuda/winograd_kernels.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

class WinogradInstance final : public DeviceOutputInstance<WinogradInstance> {
  friend class DeviceOutputInstance<WinogradInstance>;

 public:
  WinogradInstance(const Problem& p, const HostData& data, int sub)
      : p_(p),
        fused_(sub == 2),
        g_(make_winograd_geometry(p)),
        gemm_(winograd_gemm_geometry(g_)),
        tile_(choose_gemm_tile(gemm_)),
        splits_(fused_ ? 1 : choose_fp32_splits(gemm_, tile_, sm_count())),
        src_(data.src.size() * sizeof(float)),
        wei_(data.wei.size() * sizeof(float)),
        dst_(std::size_t(p.dst_elements()) * sizeof(float)),
        timer_(stream_.get()) {
    const std::size_t u = 16 * std::size_t(g_.oc) * std::size_t(g_.ic);
    const std::size_t v = fused_ ? 0 : 16 * std::size_t(g_.ic) * std::size_t(g_.p);
    const std::size_t m = fused_ ? 0 : 16 * std::size_t(g_.oc) * std::size_t(g_.p);
    const std::size_t partial = splits_ > 1 ? std::size_t(splits_) * m : 0;
    const std::size_t bytes = (u + v + m + partial) * sizeof(float);
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    if (bytes > free)
      throw bench::Unsupported("variant 12's transformed tensors (U, V, M) need " +
                               gib(double(bytes)) + ", more than the " + gib(double(free)) +
                               " free on the device");
    u_ = bench::DeviceBuffer<float>(u);
    v_ = bench::DeviceBuffer<float>(v);
    m_ = bench::DeviceBuffer<float>(m);
    if (partial > 0) partial_ = bench::DeviceBuffer<float>(partial);
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
  }

  void compile() override {}  // the plan is host arithmetic, made with the instance

  // The workspace too (NaN): each step must read only what this call's previous step wrote.
  void poison_output() override {
    dst_.fill_bytes_async(0xFF, stream_.get());
    for (bench::DeviceBuffer<float>* b : {&u_, &v_, &m_, &partial_})
      if (b->bytes() > 0) b->fill_bytes_async(0xFF, stream_.get());
  }

  void run() override {
    filter_transform();
    if (fused_) return fused();
    input_transform();
    gemm();
    output_transform();
  }

  // The four steps of single calls, each between CUDA events (the launches are enqueued as the
  // stream runs: a step's time includes any wait for its own launch).
  PhaseTimes time_phases(int calls) override {
    PhaseTimes t{fused_ ? std::vector<std::string>{"filter_transform", "fused"}
                        : std::vector<std::string>{"filter_transform", "input_transform", "gemm",
                                                   "output_transform"},
                 {},
                 "CUDA events on the instance's stream around each step of single calls (one "
                 "untimed call first)"};
    const std::size_t steps = t.names.size();
    t.ms.resize(steps);
    run();
    bench::Event e[5];
    for (int i = 0; i < calls; ++i) {
      e[0].record(stream_.get());
      filter_transform();
      e[1].record(stream_.get());
      if (fused_) {
        fused();
        e[2].record(stream_.get());
      } else {
        input_transform();
        e[2].record(stream_.get());
        gemm();
        e[3].record(stream_.get());
        output_transform();
        e[4].record(stream_.get());
      }
      e[steps].synchronize();
      for (std::size_t s = 0; s < steps; ++s) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e[s].get(), e[s + 1].get()));
        t.ms[s].push_back(ms);
      }
    }
    return t;
  }

  // e.g. "v12 Winograd F(2x2,3x3), FP32 on CUDA cores: 12.1 filter, input (nhwc loads) and
  // output transforms around 16 GEMMs m128 n6272 k128 (128x128x8 tile, 8x8 per thread, 256
  // threads)".
  std::string algorithm() const override {
    const std::string head = std::string(variant_name(Variant::winograd)) +
                             (p_.dtype == DataType::tf32 ? " (tf32: fp32 storage, FP32 math)" : "");
    if (fused_)
      return head + ": 12.2 filter transform, then one kernel (" + (g_.nhwc ? "nhwc" : "nchw") +
             "): per block 32 output channels x 32 tiles x 16 transformed elements, input "
             "patches transformed into shared memory in chunks of 8 channels, 8x8 per thread, "
             "output transform in the epilogue; " +
             std::to_string(g_.p) + " tiles";
    std::string s = head + ": 12.1 filter, input (" + (g_.nhwc ? "nhwc" : "nchw") +
                    " loads) and output transforms around 16 GEMMs m" + std::to_string(g_.oc) +
                    " n" + std::to_string(g_.p) + " k" + std::to_string(g_.ic) + " (" +
                    gemm_tile_name(tile_);
    if (splits_ > 1) s += ", split-K " + std::to_string(splits_) + " (FP32 partials, ordered sum)";
    return s + ")";
  }

  std::optional<std::int64_t> workspace_bytes() const override {
    return static_cast<std::int64_t>(u_.bytes() + v_.bytes() + m_.bytes() + partial_.bytes());
  }

  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    return {{"variant", static_cast<int>(Variant::winograd)},
            {"sub_variant", fused_ ? 2 : 1},
            {"tile", fused_ ? std::string("32x32x16 fused") : gemm_tile_name(tile_)},
            {"tensor_cores", false},
            {"split_k", splits_},
            {"winograd_tiles", g_.p},
            {"kernels_built_with", im2col_gemm_build_info()}};
  }

 private:
  const float* src() const { return reinterpret_cast<const float*>(src_.data()); }
  const float* wei() const { return reinterpret_cast<const float*>(wei_.data()); }

  void filter_transform() { launch_winograd_filter_transform(g_, wei(), u_.data(), stream_.get()); }
  void input_transform() { launch_winograd_input_transform(g_, src(), v_.data(), stream_.get()); }
  void gemm() {
    launch_gemm_from_columns(gemm_, tile_, u_.data(), v_.data(), m_.data(), stream_.get(), splits_,
                             partial_.data());
    if (splits_ > 1)
      launch_fp32_split_reduce(gemm_, splits_, partial_.data(), m_.data(), stream_.get());
  }
  void fused() {
    launch_winograd_fused(g_, src(), u_.data(), reinterpret_cast<float*>(dst_.data()),
                          stream_.get());
  }
  void output_transform() {
    launch_winograd_output_transform(g_, m_.data(), reinterpret_cast<float*>(dst_.data()),
                                     stream_.get());
  }

  Problem p_;
  bool fused_;  // 12.2
  WinogradGeometry g_;
  Im2colGeometry gemm_;  // the 16 GEMMs as the conv SGEMM's geometry (winograd_gemm_geometry)
  GemmTile tile_;
  int splits_;  // split-K of the GEMMs (choose_fp32_splits)
  bench::Stream stream_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_;  // fp32 storage
  bench::DeviceBuffer<float> u_, v_, m_;                // U[16][OC][IC], V[16][IC][P], M[16][OC][P]
  bench::DeviceBuffer<float> partial_;                  // split-K: FP32 partials of M
  bench::CudaEventTimer timer_;
};

}  // namespace

std::unique_ptr<Instance> make_winograd_instance(const Problem& p, const HostData& data, int sub) {
  if (sub == 0) sub = winograd_sub_variant(make_winograd_geometry(p));
  return std::make_unique<WinogradInstance>(p, data, sub);
}

}  // namespace conv
