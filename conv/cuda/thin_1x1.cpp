#include "conv/cuda/thin_1x1.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "conv/cuda/device_facts.hpp"
#include "conv/cuda/device_instance.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"  // im2col_gemm_build_info, MmaType
#include "conv/cuda/thin_1x1_config.hpp"
#include "conv/cuda/thin_1x1_kernels.hpp"
#include "conv/cuda/variant_choice.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"

namespace conv {
namespace {

MmaType mma_type_of(DataType dt) {
  return dt == DataType::tf32   ? MmaType::tf32
         : dt == DataType::fp16 ? MmaType::fp16
                                : MmaType::bf16;
}

class Thin1x1Instance final : public DeviceOutputInstance<Thin1x1Instance> {
  friend class DeviceOutputInstance<Thin1x1Instance>;

 public:
  Thin1x1Instance(const Problem& p, const HostData& data)
      : p_(p),
        type_(mma_type_of(p.dtype)),
        plan_(make_plan(p, type_)),
        bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        src_(data.src.size() * bytes_),
        wei_(data.wei.size() * bytes_),
        dst_(std::size_t(p.dst_elements()) * bytes_),
        timer_(stream_.get()) {
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
  }

  void compile() override {}  // the plan is host arithmetic, made with the instance

  void poison_output() override { dst_.fill_bytes_async(0xFF, stream_.get()); }

  void run() override {
    launch_thin_1x1(type_, plan_, src_.data(), wei_.data(), dst_.data(), stream_.get());
  }

  // e.g. "v13 thin 1x1 GEMM, mma.sync m16n8k16 fp16 from registers, nhwc: m401408 n16 k32: 1 chunk
  // of 64 bytes, 2 groups of 16 rows a warp, 1056 blocks of 256".
  std::string algorithm() const override {
    return std::string(variant_name(Variant::thin_1x1)) + ", " + mma_instruction_name(type_) +
           " from registers, nhwc: " + thin_1x1_plan_name(plan_);
  }

  std::optional<std::int64_t> workspace_bytes() const override { return 0; }

  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    return {{"variant", static_cast<int>(Variant::thin_1x1)},
            {"tensor_cores", true},
            {"chunks", plan_.chunks},
            {"rows_per_warp", kThinRowsPerGroup * plan_.groups_per_warp},
            {"blocks", plan_.blocks},
            {"programmatic_dependent_launch", plan_.pdl},
            {"kernels_built_with", im2col_gemm_build_info()}};
  }

 private:
  // MYCONV_THIN_1X1_GROUPS=1|2 forces the 16-row groups a warp takes, for experiments (2 only
  // up to 2 chunks).
  static Thin1x1Plan make_plan(const Problem& p, MmaType type) {
    int groups = 0;
    if (const char* v = std::getenv("MYCONV_THIN_1X1_GROUPS"); v && *v) {
      const std::string text = v;
      if (text != "1" && text != "2")
        throw std::invalid_argument("MYCONV_THIN_1X1_GROUPS='" + text + "': expected 1 or 2");
      groups = text[0] - '0';
    }
    const Thin1x1Plan first = thin_1x1_plan(p, 1, groups);
    const int per_sm =
        thin_1x1_blocks_per_sm(type, first.chunks, first.groups_per_warp, first.smem_bytes);
    Thin1x1Plan plan =
        thin_1x1_plan(p, std::int64_t(sm_count()) * (per_sm > 0 ? per_sm : 1), groups);
    plan.pdl = pdl_launch();
    return plan;
  }

  Problem p_;
  MmaType type_;
  Thin1x1Plan plan_;
  std::size_t bytes_;  // storage bytes per value
  bench::Stream stream_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_;  // the storage type
  bench::CudaEventTimer timer_;
};

}  // namespace

std::unique_ptr<Instance> make_thin_1x1_instance(const Problem& p, const HostData& data) {
  return std::make_unique<Thin1x1Instance>(p, data);
}

}  // namespace conv
