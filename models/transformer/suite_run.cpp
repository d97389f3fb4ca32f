#include "models/transformer/suite_run.hpp"

#include <iostream>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#if MYCONV_HAVE_TORCH_CUDA
#include "core/cuda/cuda_peak.hpp"
#endif
#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/printers.hpp"
#include "core/registry.hpp"
#include "models/transformer/config.hpp"
#include "models/transformer/safetensors.hpp"

namespace transformer {

using bench::UsageError;

bool SuiteRun::list(std::ostream& os) const {
  if (s_.show_presets) print_presets(os, load_presets(presets_path_), presets_path_);
  if (!s_.create.empty()) {
    if (s_.create_output.empty()) throw UsageError("--create needs --output FILE");
    bench::check_output_file("--output", s_.create_output);
    const Grid g = find_preset(load_presets(presets_path_), s_.create);
    bench::write_file_atomic(s_.create_output, to_json(g).dump(2) + "\n");
    os << "wrote preset " << g.name << " to " << s_.create_output << "\n";
  }
  if (s_.show_config) {
    const auto m = resolve_models(s_.models, s_.model_given, s_.problems, seed_);
    if (m.size() != 1) throw UsageError("--show-config prints one model: give one --model");
    os << to_hf_config(m.front().config).dump(2) << "\n";
  }
  return s_.show_presets || !s_.create.empty() || s_.show_config;
}

std::vector<ModelProblem> SuiteRun::problems(const std::string& timing,
                                             const std::function<void(int)>& select_cuda,
                                             const std::function<void()>& check_common) {
  if (timing != "real")
    throw UsageError("--timing " + timing +
                     ": mytransformer times generations as they run (real); pure mode does not "
                     "apply (libtorch_graph replays the decode steps from a CUDA graph)");
  std::vector<std::string> ignored;
  grid_ = resolve_grid(s_, presets_path_, &ignored);
  for (const auto& k : ignored)
    std::cerr << "mytransformer: note: --config-file key '" << k << "' is not used\n";
  device_ = resolve_device(s_.device, select_cuda);
  device_name_ = device_.is_cuda() ? "cuda" : "cpu";
  s_.impls = bench::canonical_backend_names(s_.impls, device_name_);  // older names too
  const std::vector<bench::DataType> dtypes = resolve_dtypes(s_.dtypes, device_.is_cuda());
  models_ = resolve_models(s_.models, s_.model_given, s_.problems, seed_);
  const CaseList cases =
      expand_cases(models_, s_.problems, grid_, s_.task_given ? s_.task : "", dtypes);
  task_ = cases.task;
  bench::check_output_file("--dump-logits", s_.dump_logits);
  if (!s_.dump_logits.empty() && models_.size() != 1)
    throw UsageError("--dump-logits writes one model's logits: give one --model");
  settings_text_ = command_text(grid_, task_);
  check_common();
  // A bad checkpoint is bad input (exit 2, no partial files).
  std::vector<ModelProblem> problems;
  for (const auto& mc : cases.by_model) {
    const ModelSource& m = models_[mc.model];
    if (!m.checkpoint_dir.empty()) Model::check_checkpoint(m.config, Checkpoint(m.checkpoint_dir));
    for (const auto& p : mc.problems) problems.push_back({mc.model, p});
    used_models_.push_back(mc.model);
  }
  first_ = problems.at(0);
  return problems;
}

std::vector<const RegistryEntry*> SuiteRun::select(const std::vector<RegistryEntry>& registry,
                                                   bool available_only) {
  registry_ = &registry;
  return select_implementations(registry, s_.impls, device_name_, available_only, elsewhere_);
}

std::string SuiteRun::name_of(const ModelProblem& p) const {
  return str_with_name(p.p, models_[p.model].config.name);
}

bench::MemoryNeed SuiteRun::case_need(const ModelProblem& p, const RegistryEntry& e) const {
  Sampling sampling;
  sampling.temperature = grid_.temperature;
  sampling.top_p = grid_.top_p;
  return memory_need(models_[p.model].config, p.p,
                     memory_context(e.backend->mode(), sampling, device_));
}

bool SuiteRun::gated(const ModelProblem& p) const {
  return p.p.mb * p.p.in <= grid_.max_batch_input_product;
}

bench::Result SuiteRun::identity(const RegistryEntry& e, const ModelProblem& p,
                                 const bench::CaseOptions& options) const {
  return make_result(e.name, device_name_, p.p, models_[p.model].config, options);
}

std::string SuiteRun::command_head(const ModelProblem& p) const {
  return "mytransformer --model " + models_[p.model].spec + settings_text_;
}

bool SuiteRun::before_session(std::ostream& os, bool list_cases) {
  cache_ = std::make_unique<ModelCache>(models_, device_, seed_);
  if (s_.dump_logits.empty() || list_cases) return false;
  Model* m = cache_->get(first_.model, first_.p.dtype);
  if (!m) throw std::runtime_error(cache_->error(first_.model, first_.p.dtype));
  // The tokens of the graph and own decode steps too, through their backends' captures.
  DecodeCapture graph, own;
  if (registry_)
    for (const auto& e : *registry_) {
      if (!e.backend) continue;
      if (e.backend->mode() == DecodeMode::graph) graph = e.backend->decode_capture();
      if (e.backend->mode() == DecodeMode::own) own = e.backend->decode_capture();
    }
  dump_logits(s_.dump_logits, *m, first_.p, seed_, graph, own);
  os << "wrote the prefill logits and greedy tokens of " << first_.p.str() << " to "
     << s_.dump_logits << "\n";
  return true;
}

std::string SuiteRun::banner_tail() const {
  return ", device " + device_.str() + ", LibTorch " TORCH_VERSION;
}

void SuiteRun::before_cases(std::ostream& os, nlohmann::ordered_json& system) {
  system["libraries"]["torch_threads"] = at::get_num_threads();
  nlohmann::ordered_json records = nlohmann::ordered_json::array();
  for (const auto m : used_models_) records.push_back(model_record(models_[m]));
  system["model"] = records.front();
  system["models"] = records;
  system["grid"] = to_json(grid_);
  system["grid"]["name"] = grid_.name;
  if (!s_.problems.empty()) {  // the cases are the descriptors', not the grid's
    for (const char* k : {"batch_sizes", "input_lengths", "output_length"}) system["grid"].erase(k);
    system["grid"]["problems"] = s_.problems;
  }
  system["task"] = to_string(task_);
  settings_.sampling.temperature = grid_.temperature;
  settings_.sampling.top_p = grid_.top_p;
  settings_.sampling.seed = seed_;
  settings_.num_runs = grid_.num_runs;
  settings_.max_batch_input_product = grid_.max_batch_input_product;
  settings_.seed = seed_;
#if MYCONV_HAVE_TORCH_CUDA
  if (device_.is_cuda() && task_ == Task::generate) {  // the decode step's bandwidth against it
    const int index = device_.has_index() ? device_.index() : 0;
    os << "measuring device " << index << "'s copy bandwidth (device-to-device copy)...\n";
    const nlohmann::ordered_json bw = bench::measure_cuda_copy_bandwidth(index);
    system["bandwidth"]["cuda"] = nlohmann::ordered_json::array({bw});
    if (bw.contains("measured_copy_gbs"))
      settings_.copy_bandwidth_gbs = bw["measured_copy_gbs"].get<double>();
  }
#else
  (void)os;
#endif
}

void SuiteRun::print_count(std::ostream& os, std::size_t problems, std::size_t backends) {
  for (const auto m : used_models_) {
    const ModelConfig& cfg = models_[m].config;
    os << "model " << cfg.name << " (" << to_string(cfg.arch) << ", "
       << bench::format_fixed(double(cfg.parameter_count()) / 1e6, 1)
       << "M parameters): " << models_[m].description << "\n";
  }
  total_ = problems * backends;
  os << (s_.problems.empty() ? "grid " + grid_.name : std::string("--problem")) << ": " << problems
     << " config(s) x " << backends << " implementation(s), " << grid_.num_runs << " run(s) each\n";
  started_ = std::chrono::steady_clock::now();
}

// The runner's progress line (core/printers.hpp): case, then backend.
void SuiteRun::before_case(std::ostream& os, const RegistryEntry& e, const ModelProblem& p) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  os << "\n"
     << bench::progress_line(done_++, total_, elapsed,
                             p.p.str() + " " + models_[p.model].config.name + " " + e.name + " " +
                                 device_name_ + " " + bench::to_string(p.p.dtype))
     << std::endl;
}

CaseOutput SuiteRun::run(const RegistryEntry& e, const ModelProblem& p,
                         const bench::CaseOptions& options) {
  Model* model = e.backend ? cache_->get(p.model, p.p.dtype) : nullptr;
  const std::string why =
      e.backend ? (model ? "" : cache_->error(p.model, p.p.dtype)) : e.why_missing;
  return run_case(model, e.backend.get(), e.name, device_name_, why, p.p, models_[p.model].config,
                  settings_, options);
}

void SuiteRun::after_case(std::ostream& os, const bench::Result& r) const {
  const std::string memory_line = memory_text(r);
  if (!memory_line.empty()) os << "    memory        " << memory_line << "\n";
}

void SuiteRun::report(std::ostream& os, const std::vector<bench::Result>& results) const {
  os << "\n== Generation figures (means over " << grid_.num_runs << " run(s)) ==\n";
  print_generation_figures(os, results, task_ == Task::train);
}

}  // namespace transformer
