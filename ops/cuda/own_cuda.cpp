// Backend "own_cuda": our op kernels (ops/cuda/kernels.hpp), one family per category, each with
// numbered variants; BackendOptions::variant picks one ("" = the family's best for the problem;
// "search": compile() times each candidate, 3 runs after a warm-up, and keeps the fastest median,
// counted as compile time as conv's --variant search is).
#include "ops/cuda/own_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "ops/cuda/kernels.hpp"
#include "ops/cuda/matmul_plan.hpp"

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

// The variants --variant search times on p: all that run p (matmul: cuda::matmul_searchable's).
std::vector<int> search_candidates(const Problem& p) {
  std::vector<int> v = family_of(p).variants(p);
  if (p.category() == Category::matmul)
    v.erase(
        std::remove_if(v.begin(), v.end(), [&](int x) { return !cuda::matmul_searchable(p, x); }),
        v.end());
  return v;
}

class OwnCudaInstance final : public Instance {
 public:
  // variant 0: --variant search over search_candidates(p) at compile().
  OwnCudaInstance(const Problem& p, const HostData& data, int variant)
      : p_(p),
        family_(family_of(p)),
        variant_(variant),
        candidates_(variant == 0 ? search_candidates(p) : std::vector<int>{variant}),
        out_(std::size_t(p.output_elements()) * std::size_t(bench::storage_bytes(p.dtype))),
        timer_(stream_.get()) {
    if (variant_ == 0) variant_ = candidates_.front();
    for (const auto& in : data.inputs)
      inputs_.push_back(bench::upload_as_storage(in, p.dtype, stream_.get()));
    std::size_t w = 0;
    for (const int v : candidates_) w = std::max(w, family_.workspace_bytes(p_, v));
    if (w > 0) workspace_ = bench::DeviceBuffer<unsigned char>(w);
    args_.p = &p_;
    for (const auto& b : inputs_) args_.inputs.push_back(b.data());
    args_.output = out_.data();
    args_.workspace = workspace_.size() ? workspace_.data() : nullptr;
    args_.stream = stream_.get();
  }

  // --variant search: each candidate once (warm-up), then 3 timed runs; the fastest median wins.
  // Otherwise nothing to plan: the launch configuration is computed per call.
  void compile() override {
    if (candidates_.size() < 2) return;
    bench::Event start, stop;
    for (const int v : candidates_) {
      family_.launch(args_, v);
      std::vector<float> ms;
      for (int r = 0; r < 3; ++r) {
        start.record(stream_.get());
        family_.launch(args_, v);
        stop.record(stream_.get());
        stop.synchronize();
        float elapsed = 0;
        CUDA_CHECK(cudaEventElapsedTime(&elapsed, start.get(), stop.get()));
        ms.push_back(elapsed);
      }
      std::sort(ms.begin(), ms.end());
      search_ms_[v] = ms[1];
    }
    variant_ = std::min_element(search_ms_.begin(), search_ms_.end(), [](auto& a, auto& b) {
                 return a.second < b.second;
               })->first;
  }
  void poison_output() override { out_.fill_bytes_async(0xFF, stream_.get()); }  // NaN in all
  void run() override { family_.launch(args_, variant_); }
  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override {
    bench::read_as_float(out_, std::size_t(p_.output_elements()), p_.dtype, stream_.get(), dst);
  }

  std::string algorithm() const override {
    if (search_ms_.empty()) return family_.describe(p_, variant_);
    std::string of;
    for (const int v : candidates_) of += (of.empty() ? "" : ", ") + std::to_string(v);
    return family_.describe(p_, variant_) + " (the fastest of variants " + of +
           " by --variant search)";
  }
  nlohmann::ordered_json extra() const override {
    if (search_ms_.empty()) return nlohmann::ordered_json::object();
    nlohmann::ordered_json medians = nlohmann::ordered_json::object();
    for (const auto& [v, ms] : search_ms_) medians[std::to_string(v)] = ms;
    return {{"variant_choice", "search"}, {"search_median_ms", medians}};
  }
  std::optional<std::int64_t> workspace_bytes() const override {
    return std::int64_t(workspace_.bytes());
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

 private:
  Problem p_;
  const cuda::KernelFamily& family_;
  int variant_;
  std::vector<int> candidates_;
  std::map<int, float> search_ms_;  // --variant search: each candidate's median of 3 runs
  bench::Stream stream_;
  std::vector<bench::DeviceBuffer<unsigned char>> inputs_;
  bench::DeviceBuffer<unsigned char> out_, workspace_;
  bench::CudaEventTimer timer_;
  cuda::OpArgs args_;
};

class OwnCudaBackend final : public Backend {
 public:
  // variant: one variant; none: the family's best; 0: --variant search.
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
    if (variant_ == 0 && search_candidates(p).empty())
      return Support::no("--variant search: no candidate variant runs " + p.str());
    if (variant_ && *variant_ > 0 && std::find(v.begin(), v.end(), *variant_) == v.end())
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
  if (options.variant == "search") {
    variant = 0;
  } else if (!options.variant.empty()) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(options.variant, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != options.variant.size() || v < 1)
      throw bench::UsageError("--variant: '" + options.variant +
                              "' is neither a variant number nor 'search'");
    variant = v;
  }
  return std::make_unique<OwnCudaBackend>(variant);
}

}  // namespace ops
