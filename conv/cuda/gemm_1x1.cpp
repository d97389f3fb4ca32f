#include "conv/cuda/gemm_1x1.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv/cuda/device_facts.hpp"
#include "conv/cuda/device_instance.hpp"
#include "conv/cuda/gemm_1x1_config.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"  // im2col_gemm_build_info
#include "conv/cuda/plan_override.hpp"
#include "conv/cuda/variant_choice.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

namespace gemm = bench::gemm;

// "nchw: a batch of 32 GEMMs m256 n3136 k64, the weights (A) shared by every image".
std::string mapping_text(const Problem& p, const gemm::GemmShape& s) {
  const std::string dims =
      "m" + std::to_string(s.m) + " n" + std::to_string(s.n) + " k" + std::to_string(s.k);
  if (p.layout == Layout::nchw)
    return "nchw: a batch of " + std::to_string(s.batch) + " GEMMs " + dims +
           ", the weights (A) shared by every image";
  return "nhwc: one GEMM " + dims + ", the weights as a K-major B";
}

// The engine's plan for s: gemm_1x1_plan, or with MYCONV_GEMM_1X1_PLAN=BN:S (tile width 128 or
// 256, split-K count 1 to gemm::kMaxSplits; 0 leaves a part to gemm_plan's rule) where set, for
// experiments; MYCONV_GEMM_1X1_REDUCE=kernel sums its splits in the GEMM's kernel where it can
// (gemm_can_sum_in_kernel: not on the 256-wide tile) instead of by a second kernel (=separate,
// or unset), for experiments: it measured slower (gemm_1x1_config.hpp).
gemm::GemmPlan plan_gemm_1x1(const gemm::GemmShape& s) {
  const std::optional<PlanOverride> o =
      plan_override("MYCONV_GEMM_1X1_PLAN", {0, 128, 256}, gemm::kMaxSplits);
  gemm::GemmPlan plan =
      o ? gemm::gemm_plan(s, sm_count(), o->bn, o->splits) : gemm_1x1_plan(s, sm_count());
  if (const char* v = std::getenv("MYCONV_GEMM_1X1_REDUCE"); v && *v) {
    const std::string text = v;
    if (text != "kernel" && text != "separate")
      throw std::invalid_argument("MYCONV_GEMM_1X1_REDUCE='" + text +
                                  "': expected kernel or separate");
    plan.reduce_in_kernel =
        plan.splits > 1 && text == "kernel" && gemm::gemm_can_sum_in_kernel(plan.schedule, plan.bn);
  }
  plan.pdl = pdl_launch();
  return plan;
}

class Gemm1x1Instance final : public DeviceOutputInstance<Gemm1x1Instance> {
  friend class DeviceOutputInstance<Gemm1x1Instance>;

 public:
  Gemm1x1Instance(const Problem& p, const HostData& data)
      : p_(p),
        shape_(gemm_1x1_shape(p)),
        plan_(plan_gemm_1x1(shape_)),
        bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        src_(data.src.size() * bytes_),
        wei_(data.wei.size() * bytes_),
        dst_(std::size_t(p.dst_elements()) * bytes_),
        workspace_(gemm::gemm_workspace_bytes(shape_, plan_)),
        timer_(stream_.get()) {
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
    if (workspace_.bytes() > 0)
      gemm::gemm_clear_counters(shape_, plan_, workspace_.data(), stream_.get());
  }

  void compile() override {}  // the plan is host arithmetic, made with the instance

  // Split-K's partials too (NaN): the sum must read only what this run's blocks wrote. The tile
  // counters after them (split-K summed in the kernel) are zeroed again.
  void poison_output() override {
    dst_.fill_bytes_async(0xFF, stream_.get());
    if (workspace_.bytes() > 0) {
      workspace_.fill_bytes_async(0xFF, stream_.get());
      gemm::gemm_clear_counters(shape_, plan_, workspace_.data(), stream_.get());
    }
  }

  void run() override {
    const bool nchw = p_.layout == Layout::nchw;
    gemm::gemm_sm90(p_.dtype == DataType::fp16 ? bench::MmaDtype::fp16 : bench::MmaDtype::bf16,
                    shape_, plan_, nchw ? wei_.data() : src_.data(),
                    nchw ? src_.data() : wei_.data(), dst_.data(), gemm::Epilogue{},
                    workspace_.bytes() > 0 ? workspace_.data() : nullptr, stream_.get());
  }

  // e.g. "v11 1x1 GEMM on the Hopper engine (wgmma + TMA), nhwc: one GEMM m100352 n256 k64, the
  // weights as a K-major B; 128x256x64 tile, 4 stages, 132 persistent blocks over 392 tiles".
  std::string algorithm() const override {
    return std::string(variant_name(Variant::gemm_1x1)) + " (wgmma + TMA), " +
           mapping_text(p_, shape_) + "; " + gemm::gemm_plan_name(plan_);
  }

  std::optional<std::int64_t> workspace_bytes() const override {
    return static_cast<std::int64_t>(workspace_.bytes());
  }

  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    return {{"variant", static_cast<int>(Variant::gemm_1x1)},
            {"tile", std::to_string(gemm::kBm) + "x" + std::to_string(plan_.bn) + "x" +
                         std::to_string(gemm::kBk)},
            {"tensor_cores", true},
            {"split_k", plan_.splits},
            {"programmatic_dependent_launch", plan_.pdl},
            {"split_k_summed", plan_.splits <= 1        ? "no split"
                               : plan_.reduce_in_kernel ? "in the kernel by each tile's last unit"
                                                        : "by a second kernel"},
            {"gemm_mapping", mapping_text(p_, shape_)},
            {"kernels_built_with", im2col_gemm_build_info()}};
  }

 private:
  Problem p_;
  gemm::GemmShape shape_;
  gemm::GemmPlan plan_;
  std::size_t bytes_;  // storage bytes per value: 2
  bench::Stream stream_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_;  // the storage type
  bench::DeviceBuffer<unsigned char> workspace_;        // split-K's FP32 partials
  bench::CudaEventTimer timer_;
};

}  // namespace

std::string gemm_1x1_unusable_reason(const Problem& p) {
  if (const std::string why = gemm_1x1_unsupported_reason(p); !why.empty())
    return "variant 11: " + why;
  try {
    if (const std::string why = gemm::gemm_sm90_unusable_reason(); !why.empty())
      return "variant 11: " + why;
  } catch (const std::exception& e) {
    return std::string("variant 11: cannot query the device for the GEMM engine: ") + e.what();
  }
  return "";
}

std::unique_ptr<Instance> make_gemm_1x1_instance(const Problem& p, const HostData& data) {
  return std::make_unique<Gemm1x1Instance>(p, data);
}

}  // namespace conv
