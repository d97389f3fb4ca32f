// A run of the transformer suite's cases as the driver loop (core/driver_loop.hpp) calls them:
// the listings (--show-presets, --create, --show-config), the run's grid, device, models and
// cases, the implementations on the device, each case's memory need and identity, the models
// (made when first asked), --dump-logits, the run's record in the result file (models, grid,
// task, the copy bandwidth the decode step is held against), the progress lines, each case and
// the closing table.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory_fit.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"
#include "models/transformer/backend.hpp"
#include "models/transformer/bench.hpp"
#include "models/transformer/model.hpp"
#include "models/transformer/settings.hpp"

namespace transformer {

// One case's problem: the model (an index into the run's models) and its problem.
struct ModelProblem {
  std::size_t model = 0;
  Problem p;
};

class SuiteRun {
 public:
  SuiteRun(RunSettings settings, std::string presets_path, std::uint64_t seed)
      : s_(std::move(settings)), presets_path_(std::move(presets_path)), seed_(seed) {}

  // --show-presets, --create and --show-config: does what they ask; true where any was given.
  bool list(std::ostream& os) const;
  // The run's grid, device, models and cases. UsageError on bad input (timing: --timing, real
  // only); check_common (the shared options' checks) runs once the suite's own have passed,
  // before the checkpoints are read. A config file's keys not used are notes on stderr.
  std::vector<ModelProblem> problems(const std::string& timing,
                                     const std::function<void(int)>& select_cuda,
                                     const std::function<void()>& check_common);
  // The implementations asked (or every one built for the device), each on the device; one
  // asked that runs only on the other device is recorded skipped. The registry is kept (for
  // --dump-logits) and must outlive the run.
  std::vector<const RegistryEntry*> select(const std::vector<RegistryEntry>& registry,
                                           bool available_only);
  std::string name_of(const ModelProblem& p) const;
  // The suite's own peak prediction (memory.hpp).
  bench::MemoryNeed case_need(const ModelProblem& p, const RegistryEntry& e) const;
  // Whether the memory gate judges p: a case past max_batch_input_product is skipped instead.
  bool gated(const ModelProblem& p) const;
  bench::Result identity(const RegistryEntry& e, const ModelProblem& p,
                         const bench::CaseOptions& options) const;
  // Every case's reproducing command: the model, then the settings that are not the case's own.
  std::string command_head(const ModelProblem& p) const;
  // The models' cache; with --dump-logits (unless listing) the first case's logits written:
  // true where it did (the run ends there).
  bool before_session(std::ostream& os, bool list_cases);
  std::string banner_tail() const;
  // The run's record in system (models, grid, task, LibTorch's threads) and the cases' settings;
  // on CUDA, the copy bandwidth the decode step is held against (a "measuring" line).
  void before_cases(std::ostream& os, nlohmann::ordered_json& system);
  // The models' lines and the grid's line instead of the loop's count line.
  void print_count(std::ostream& os, std::size_t problems, std::size_t backends);
  void before_case(std::ostream& os, const RegistryEntry& e, const ModelProblem& p);
  CaseOutput run(const RegistryEntry& e, const ModelProblem& p, const bench::CaseOptions& options);
  void after_case(std::ostream& os, const bench::Result& r) const;
  void report(std::ostream& os, const std::vector<bench::Result>& results) const;

 private:
  RunSettings s_;
  std::string presets_path_;
  std::uint64_t seed_;
  Grid grid_;
  c10::Device device_{c10::kCPU};
  std::string device_name_, settings_text_;
  std::vector<ModelSource> models_;
  Task task_ = Task::generate;
  std::vector<std::size_t> used_models_;  // the models with cases, in order
  ModelProblem first_;
  std::deque<RegistryEntry> elsewhere_;
  const std::vector<RegistryEntry>* registry_ = nullptr;  // select()'s, which outlives the run
  std::unique_ptr<ModelCache> cache_;
  CaseSettings settings_;
  std::size_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace transformer
