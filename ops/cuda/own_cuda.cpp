// Backend "own_cuda": our op kernels (ops/cuda/kernels.hpp), one family per category, each with
// numbered variants; BackendOptions::variant picks one ("" = the family's best for the problem).
#include "ops/cuda/own_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "ops/cuda/kernels.hpp"

namespace ops {
namespace {

const cuda::KernelFamily& family_of(const Problem& p) {
  switch (p.category()) {
    case Category::element:
    case Category::activation:
      return cuda::elementwise_family();
    case Category::reduction:
      return cuda::reduction_family();
    case Category::normalization:
      return cuda::normalization_family();
    case Category::memory:
      return cuda::memory_family();
    case Category::matmul:
      break;
  }
  return cuda::matmul_family();
}

std::string ints_text(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

class OwnCudaInstance final : public Instance {
 public:
  OwnCudaInstance(const Problem& p, const HostData& data, int variant)
      : p_(p),
        family_(family_of(p)),
        variant_(variant),
        out_(std::size_t(p.output_elements()) * std::size_t(bench::storage_bytes(p.dtype))),
        timer_(stream_.get()) {
    for (const auto& in : data.inputs)
      inputs_.push_back(bench::upload_as_storage(in, p.dtype, stream_.get()));
    if (const std::size_t w = family_.workspace_bytes(p_, variant_); w > 0)
      workspace_ = bench::DeviceBuffer<unsigned char>(w);
    args_.p = &p_;
    for (const auto& b : inputs_) args_.inputs.push_back(b.data());
    args_.output = out_.data();
    args_.workspace = workspace_.size() ? workspace_.data() : nullptr;
    args_.stream = stream_.get();
  }

  void compile() override {}  // nothing to plan: the launch configuration is computed per call
  void poison_output() override { out_.fill_bytes_async(0xFF, stream_.get()); }  // NaN in all
  void run() override { family_.launch(args_, variant_); }
  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override {
    bench::read_as_float(out_, std::size_t(p_.output_elements()), p_.dtype, stream_.get(), dst);
  }

  std::string algorithm() const override { return family_.describe(p_, variant_); }
  std::optional<std::int64_t> workspace_bytes() const override {
    return std::int64_t(workspace_.bytes());
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

 private:
  Problem p_;
  const cuda::KernelFamily& family_;
  int variant_;
  bench::Stream stream_;
  std::vector<bench::DeviceBuffer<unsigned char>> inputs_;
  bench::DeviceBuffer<unsigned char> out_, workspace_;
  bench::CudaEventTimer timer_;
  cuda::OpArgs args_;
};

class OwnCudaBackend final : public Backend {
 public:
  explicit OwnCudaBackend(std::optional<int> variant) : variant_(variant) {}

  std::string name() const override { return "own_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override { return bench::own_kernels_version(); }
  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }
  Support check_support(const Problem& p) const override {
    const std::vector<int> v = family_of(p).variants(p);
    if (v.empty()) return Support::no("no kernel of ours takes " + p.str());
    if (variant_ && std::find(v.begin(), v.end(), *variant_) == v.end())
      return Support::no("variant " + std::to_string(*variant_) + " does not run " + p.str() +
                         " (its variants: " + ints_text(v) + ")");
    return Support::yes();
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<OwnCudaInstance>(p, data,
                                             variant_.value_or(family_of(p).variants(p).front()));
  }

 private:
  std::optional<int> variant_;
};

}  // namespace

std::unique_ptr<Backend> make_own_cuda_backend(const BackendOptions& options) {
  std::optional<int> variant;
  if (!options.variant.empty()) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(options.variant, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != options.variant.size() || v < 1)
      throw bench::UsageError("--variant: '" + options.variant + "' is not a variant number");
    variant = v;
  }
  return std::make_unique<OwnCudaBackend>(variant);
}

}  // namespace ops
