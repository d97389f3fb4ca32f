#include "conv/cuda/variant_search.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

// Median GPU time of kSearchTimedCalls calls of an instance (ms), each between two events on its
// stream, after one warm-up call.
double time_candidate(Instance& instance) {
  instance.run();
  instance.sync();
  cudaStream_t stream = static_cast<cudaStream_t>(instance.cuda_stream());
  std::vector<float> ms;
  for (int i = 0; i < kSearchTimedCalls; ++i) {
    bench::Event start, stop;
    CUDA_CHECK(cudaEventRecord(start.get(), stream));
    instance.run();
    CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    instance.sync();
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, start.get(), stop.get()));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g ms", ms);
  return buf;
}

class ChosenInstance final : public Instance {
 public:
  ChosenInstance(std::vector<SearchCandidate> candidates, std::string label, bool search,
                 std::string skipped)
      : candidates_(std::move(candidates)),
        label_(std::move(label)),
        search_(search),
        skipped_(std::move(skipped)) {
    candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                     [](const SearchCandidate& c) { return !c.instance; }),
                      candidates_.end());
    if (candidates_.empty()) throw bench::Unsupported("no candidate variant could be prepared");
    if (!search_ && candidates_.size() != 1)
      throw std::logic_error("make_chosen_instance: one candidate unless searching");
    if (!search_) chosen_ = std::move(candidates_.front());
  }

  // The search: every candidate compiled and timed; the fastest kept, the rest released. A
  // candidate that fails is skipped (and said), as long as one remains.
  void compile() override {
    if (!search_) return chosen_.instance->compile();
    double best = 0;
    for (SearchCandidate& c : candidates_) {
      const std::string v = search_candidate_name(c);
      try {
        c.instance->compile();
        const double ms = time_candidate(*c.instance);
        timings_[v] = ms;
        if (!chosen_.instance || ms < best) {
          best = ms;
          chosen_ = std::move(c);
        }
      } catch (const std::exception& e) {
        skipped_ += std::string(skipped_.empty() ? "" : "; ") + v + ": " + e.what();
      }
      c.instance.reset();  // the losers' (and the moved-from) buffers go now
    }
    candidates_.clear();
    if (!chosen_.instance) throw std::runtime_error("search: no candidate ran (" + skipped_ + ")");
    std::string list;
    for (const auto& [v, ms] : timings_.items())
      list += (list.empty() ? "" : ", ") + v + " " + ms_text(ms.get<double>());
    label_ = "search (" + list + "): ";
  }

  void poison_output() override { chosen_.instance->poison_output(); }
  void run() override { chosen_.instance->run(); }
  void sync() override { chosen_.instance->sync(); }
  void read_output(float* dst) override { chosen_.instance->read_output(dst); }
  std::optional<bench::DeviceValues> device_output() override {
    return chosen_.instance->device_output();
  }
  std::vector<std::int64_t> output_dims() const override { return chosen_.instance->output_dims(); }
  PhaseTimes time_phases(int calls) override { return chosen_.instance->time_phases(calls); }
  std::string algorithm() const override {
    return label_ + (chosen_.instance ? chosen_.instance->algorithm() : std::string());
  }
  std::optional<std::int64_t> workspace_bytes() const override {
    return chosen_.instance->workspace_bytes();
  }
  bench::DeviceTimer* device_timer() override { return chosen_.instance->device_timer(); }
  void* cuda_stream() override { return chosen_.instance->cuda_stream(); }
  std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices& services, int calls,
                                             std::string* why) override {
    return chosen_.instance->make_replay(services, calls, why);
  }
  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e = chosen_.instance->extra();
    e["variant_choice"] = search_ ? "search" : label_.empty() ? "fixed" : "auto";
    if (search_) e["search_median_ms"] = timings_;
    if (!skipped_.empty()) e["variants_skipped"] = skipped_;
    return e;
  }

 private:
  std::vector<SearchCandidate> candidates_;
  SearchCandidate chosen_{Variant::implicit_gemm_precomp, nullptr};
  std::string label_;
  bool search_;
  std::string skipped_;
  nlohmann::ordered_json timings_ = nlohmann::ordered_json::object();
};

}  // namespace

std::unique_ptr<Instance> make_chosen_instance(std::vector<SearchCandidate> candidates,
                                               std::string label, bool search,
                                               std::string skipped) {
  return std::make_unique<ChosenInstance>(std::move(candidates), std::move(label), search,
                                          std::move(skipped));
}

}  // namespace conv
