// mytransformer: decoder-only transformers (GPT-2, Qwen2, Llama) written on LibTorch, timed per
// phase: prefill (time to first token), each decode step from a static KV cache, memory; or a
// training step (--task train). Weights from a Hugging Face checkpoint folder, or random from a
// built-in config. docs/mytransformer.md has the full reference.
//
//   mytransformer --model gpt2 --device auto                 the default preset
//   mytransformer --model gpt2 --preset quick_test --device cpu
//   mytransformer --model ./qwen2-ckpt --dtype bf16 --backend libtorch_graph --output-file out/run
//   mytransformer --model gpt2,qwen2-0.5b --preset small_scale --list-cases
//   mytransformer --model gpt2,qwen2-0.5b --problem 'mb1in128out64:n"qwen2-0.5b"' --backend
//       libtorch_cuda       one case, as scripts/run_all_experiments.sh --suite transformer runs it
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>
#include <CLI/CLI.hpp>

#include "core/driver.hpp"
#if MYCONV_HAVE_TORCH_CUDA
#include "core/cuda/cuda_peak.hpp"
#endif
#include "core/error.hpp"
#include "core/option_checks.hpp"
#include "core/paths.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
#include "core/torch/libtorch_common.hpp"
#include "models/transformer/bench.hpp"
#include "models/transformer/config.hpp"
#include "models/transformer/registry.hpp"
#include "models/transformer/safetensors.hpp"
#include "models/transformer/settings.hpp"

namespace {

using bench::UsageError;
using namespace transformer;

struct Options {
  bench::DriverOptions common;
  std::vector<std::string> models = {"gpt2"}, problems;
  std::string device = "auto", preset, config_file, task = "generate";
  std::string sdpa_backend = "auto";
  std::vector<std::int64_t> batch_sizes, input_lengths;
  std::int64_t output_length = 0, max_batch_input_product = 0;
  int num_runs = 0;
  double temperature = -1, top_p = -1;
  std::vector<std::string> dtypes, impls;
  std::string output_prefix, create, create_output, dump_logits;
  bool show_presets = false, show_config = false;
};

// --device: auto, cpu, cuda (device 0), or the CUDA device's index N (also cuda:N), as the
// other programs' --device N.
at::Device resolve_device(const std::string& d) {
  if (d == "cpu") return at::Device(at::kCPU);
  std::string index = d;
  if (d.rfind("cuda:", 0) == 0) index = d.substr(5);
  const bool numeric =
      !index.empty() && index.size() <= 4 &&
      std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (d == "cuda" || d == "gpu" || numeric) {
    if (!cuda_available())
      throw UsageError("--device " + d + ": LibTorch " TORCH_VERSION " finds no CUDA device" +
                       std::string(MYCONV_HAVE_TORCH_CUDA ? "" : " (this build is CPU-only)"));
    const int n = numeric ? std::stoi(index) : 0;
    const int count = static_cast<int>(at::getNumGPUs());
    if (n >= count)
      throw UsageError("--device " + d + ": no CUDA device " + std::to_string(n) + " (" +
                       std::to_string(count) + " here)");
    bench::select_cuda_device(n);  // the core's device facts, memory gate and services too
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(n));
  }
  if (d == "auto") return cuda_available() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  throw UsageError("--device: '" + d + "' is not a device (auto, cpu, cuda, or a CUDA index N)");
}

void print_presets(const std::vector<Grid>& presets, const std::string& path) {
  bench::Table t({"preset", "batch sizes", "input lengths", "output", "runs", "description"});
  auto list = [](const std::vector<std::int64_t>& v) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  for (const auto& g : presets)
    t.add_row({g.name, list(g.batch_sizes), list(g.input_lengths), std::to_string(g.output_length),
               std::to_string(g.num_runs), g.description});
  t.print(std::cout);
  std::cout << "from " << path
            << " (our values, to be replaced by the seed's exact ones when known)\n";
}

std::string timestamp() {
  return bench::format_now("%Y%m%d_%H%M%S", false);
}

// A model's record in system.models (and system.model: the first).
nlohmann::ordered_json model_record(const ModelSource& m) {
  return {{"name", m.config.name},
          {"source", m.description},
          {"arch", to_string(m.config.arch)},
          {"parameters", m.config.parameter_count()},
          {"config", to_hf_config(m.config)},
          {"attention", Model::attention_kind()}};
}

// The model of each (model, dtype) the cases ask for, made when first asked; one at a time: the
// previous one is released before the next is made, so that one model's weights are in memory.
// Training makes the weights require gradients, so a model serves one task.
class ModelCache {
 public:
  ModelCache(const std::vector<ModelSource>& models, at::Device device, std::uint64_t seed)
      : models_(models), device_(device), seed_(seed) {}

  // The model, or nullptr with error() saying why it could not be made. A bad checkpoint is bad
  // input (UsageError).
  Model* get(std::size_t index, bench::DataType dt) {
    const Key key{index, dt};
    if (current_ && key_ == key) return current_.get();
    if (errors_.count(key)) return nullptr;
    if (current_) {
      current_.reset();
      release_cached_memory(device_);
    }
    const ModelSource& source = models_[index];
    try {
      const at::ScalarType st = dt == bench::DataType::fp16   ? at::kHalf
                                : dt == bench::DataType::bf16 ? at::kBFloat16
                                                              : at::kFloat;
      if (dt == bench::DataType::tf32) throw bench::Unsupported("tf32 is not a storage dtype");
      if (source.checkpoint_dir.empty()) {
        current_ = std::make_unique<Model>(Model::random(source.config, seed_, st, device_));
      } else {
        const Checkpoint ckpt(source.checkpoint_dir);
        current_ =
            std::make_unique<Model>(Model::from_checkpoint(source.config, ckpt, st, device_));
      }
      key_ = key;
      return current_.get();
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      std::string what = e.what();
      errors_[key] = "model not made: " + what.substr(0, what.find('\n'));
      return nullptr;
    }
  }
  const std::string& error(std::size_t index, bench::DataType dt) { return errors_[{index, dt}]; }

 private:
  using Key = std::pair<std::size_t, bench::DataType>;
  const std::vector<ModelSource>& models_;
  at::Device device_;
  std::uint64_t seed_;
  std::unique_ptr<Model> current_;
  Key key_{};
  std::map<Key, std::string> errors_;
};

int run(Options& o, CLI::App& app) {
  bench::DriverOptions& c = o.common;
  if (bench::handle_source_options(c)) return 0;
  bench::libtorch::apply_cpu_threads();  // --threads
  Model::select_sdpa_backend(o.sdpa_backend);
  const std::string ppath = presets_path();
  if (o.show_presets) {
    print_presets(load_presets(ppath), ppath);
    return 0;
  }
  if (!o.create.empty()) {
    if (o.create_output.empty()) throw UsageError("--create needs --output FILE");
    bench::check_output_file("--output", o.create_output);
    const Grid g = find_preset(load_presets(ppath), o.create);
    bench::write_file_atomic(o.create_output, to_json(g).dump(2) + "\n");
    std::cout << "wrote preset " << g.name << " to " << o.create_output << "\n";
    return 0;
  }
  std::vector<RegistryEntry> registry = make_registry();
  if (c.list_backends) {
    bench::print_backend_list(std::cout, registry);
    return 0;
  }

  // Everything is validated before the first case runs.
  if (c.timing != "real")
    throw UsageError(
        "--timing: mytransformer times generations as they run (real); pure mode "
        "does not apply (libtorch_graph replays the decode steps from a CUDA graph)");
  try {
    bench::check_backend_names(bench::canonical_backend_names(o.impls),
                               known_implementation_names());
  } catch (const UsageError& e) {  // --impl is --backend's other name (the seed tool's word)
    std::string what = e.what();
    throw UsageError("--backend" + what.substr(what.find(':')));
  }
  if (!o.problems.empty() &&
      (!o.batch_sizes.empty() || !o.input_lengths.empty() || app.count("--output-length")))
    throw UsageError(
        "--problem gives the cases themselves: give it or --batch-size, --input-length, "
        "--output-length, not both");
  Grid grid = find_preset(load_presets(ppath), o.preset.empty() ? "default" : o.preset);
  if (!o.config_file.empty()) {
    std::vector<std::string> ignored;
    grid = read_grid_file(o.config_file, grid, &ignored);
    for (const auto& k : ignored)
      std::cerr << "mytransformer: note: --config-file key '" << k << "' is not used\n";
  }
  if (!o.batch_sizes.empty()) grid.batch_sizes = o.batch_sizes;
  if (!o.input_lengths.empty()) grid.input_lengths = o.input_lengths;
  if (app.count("--output-length")) grid.output_length = o.output_length;
  if (app.count("--num-runs")) grid.num_runs = o.num_runs;
  if (app.count("--temperature")) grid.temperature = o.temperature;
  if (app.count("--top-p")) grid.top_p = o.top_p;
  if (app.count("--max-batch-input-product"))
    grid.max_batch_input_product = o.max_batch_input_product;
  check_grid(grid);
  if (!o.output_prefix.empty()) {
    const std::string stamp = timestamp();
    c.json_path = o.output_prefix + "_" + stamp + ".json";
    c.csv_path = o.output_prefix + "_" + stamp + ".csv";
  }
  const at::Device device = resolve_device(o.device);
  const std::string device_name = device.is_cuda() ? "cuda" : "cpu";
  o.impls = bench::canonical_backend_names(o.impls, device_name);  // older names too
  std::vector<bench::DataType> dtypes;
  if (o.dtypes.empty()) o.dtypes = {device.is_cuda() ? "fp16" : "fp32"};
  for (const auto& d : o.dtypes) {
    dtypes.push_back(bench::parse_data_type(d));
    if (dtypes.back() == bench::DataType::tf32)
      throw UsageError(
          "--dtype: tf32 is a math mode of fp32 matmuls, not a storage type; "
          "mytransformer runs fp32, fp16, bf16");
  }
  const std::vector<ModelSource> models =
      resolve_models(o.models, app.count("--model") > 0, o.problems, c.seed);
  if (o.show_config) {
    if (models.size() != 1) throw UsageError("--show-config prints one model: give one --model");
    std::cout << to_hf_config(models.front().config).dump(2) << "\n";
    return 0;
  }
  const CaseList cases =
      expand_cases(models, o.problems, grid, app.count("--task") ? o.task : "", dtypes);
  const Task task = cases.task;
  bench::check_output_file("--dump-logits", o.dump_logits);
  if (!o.dump_logits.empty() && models.size() != 1)
    throw UsageError("--dump-logits writes one model's logits: give one --model");

  // The implementations: those asked (or every one built for the device), each on the device.
  struct Selected {
    std::string name;
    const Implementation* impl = nullptr;
    std::string why_missing;
  };
  std::vector<Selected> selected;
  for (const auto& name : known_implementation_names()) {
    const bool asked = std::find(o.impls.begin(), o.impls.end(), name) != o.impls.end();
    const RegistryEntry* entry = nullptr;
    bool other_device = false;
    for (const auto& e : registry)
      if (e.name == name) {
        if (e.device == device_name)
          entry = &e;
        else
          other_device = true;
      }
    if (o.impls.empty() ? !(entry && entry->backend) : !asked) continue;
    if (c.available_only && !(entry && bench::runnable_here(*entry))) continue;
    if (entry)
      selected.push_back({name, entry->backend.get(), entry->why_missing});
    else if (other_device)
      selected.push_back({name, nullptr, name + " does not run on " + device_name});
  }

  if (c.available_only && selected.empty())
    throw UsageError("--available-only: none of the implementations asked can run on " +
                     device_name + " here (--list-backends says why)");

  // Every case's reproducing command: the model, then the settings that are not the case's own.
  std::string settings_text;
  if (task == Task::train) settings_text += " --task train";
  if (grid.temperature > 0)
    settings_text += " --temperature " + bench::format_fixed(grid.temperature, 3) + " --top-p " +
                     bench::format_fixed(grid.top_p, 3);
  settings_text += " --num-runs " + std::to_string(grid.num_runs);
  if (grid.max_batch_input_product != kDefaultMaxBatchInputProduct)
    settings_text += " --max-batch-input-product " + std::to_string(grid.max_batch_input_product);
  settings_text += bench::check_common_options(app, c);
  auto prefix_of = [&](const ModelSource& m) {
    return "mytransformer --model " + m.spec + settings_text;
  };

  // Checked before anything is written: a bad checkpoint is bad input (exit 2, no partial files).
  for (const auto& mc : cases.by_model) {
    const ModelSource& m = models[mc.model];
    if (!m.checkpoint_dir.empty()) Model::check_checkpoint(m.config, Checkpoint(m.checkpoint_dir));
  }

  // Every case that would run against the memory here (core/memory_fit.hpp), by the suite's own
  // peak prediction (memory.hpp): when none fits, exit 2; the others' cases are recorded
  // unsupported below. Listing runs nothing; a case past max_batch_input_product is skipped.
  Sampling sampling;
  sampling.temperature = grid.temperature;
  sampling.top_p = grid.top_p;
  bench::MemoryGate memory(c.list_cases ? bench::MemoryAvailable{}
                                        : bench::memory_available(device.is_cuda()));
  auto need_of = [&](const ModelSource& m, const Problem& p, const Implementation& impl) {
    return memory_need(m.config, p, memory_context(impl.mode(), sampling, device));
  };
  for (const auto& mc : cases.by_model)
    for (const auto& p : mc.problems)
      for (const auto& s : selected)
        if (s.impl && p.mb * p.in <= grid.max_batch_input_product)
          memory.check(str_with_name(p, models[mc.model].config.name) + " " + s.name,
                       need_of(models[mc.model], p, *s.impl));
  memory.refuse_if_nothing_fits();

  bench::Session session;
  bench::start_session(session, c, device.is_cuda(), prefix_of(models[cases.by_model.at(0).model]));
  auto options_of = [&](const ModelSource& m) {
    bench::CaseOptions options = session.case_options;
    options.command_prefix = prefix_of(m);
    return options;
  };
  if (c.list_cases) {
    for (const auto& mc : cases.by_model) {
      const bench::CaseOptions options = options_of(models[mc.model]);
      for (const auto& p : mc.problems)
        for (const auto& s : selected)
          std::cout << bench::to_json(
                           make_result(s.name, device_name, p, models[mc.model].config, options))
                           .dump()
                    << "\n";
    }
    return 0;
  }
  bench::ResultSet& set = session.set;
  for (const auto& s : selected)
    if (s.impl) set.system["libraries"][s.name] = s.impl->library_version();
  set.system["libraries"]["torch_threads"] = at::get_num_threads();
  nlohmann::ordered_json model_records = nlohmann::ordered_json::array();
  for (const auto& mc : cases.by_model) model_records.push_back(model_record(models[mc.model]));
  set.system["model"] = model_records.front();
  set.system["models"] = model_records;
  set.system["grid"] = to_json(grid);
  set.system["grid"]["name"] = grid.name;
  if (!o.problems.empty()) {  // the cases are the descriptors', not the grid's
    for (const char* k : {"batch_sizes", "input_lengths", "output_length"})
      set.system["grid"].erase(k);
    set.system["grid"]["problems"] = o.problems;
  }
  set.system["task"] = to_string(task);
  double copy_gbs = 0;  // the decode step's bandwidth is also given against it
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda() && task == Task::generate) {
    const int index = device.has_index() ? device.index() : 0;
    std::cout << "measuring device " << index << "'s copy bandwidth (device-to-device copy)...\n";
    const nlohmann::ordered_json bw = bench::measure_cuda_copy_bandwidth(index);
    set.system["bandwidth"]["cuda"] = nlohmann::ordered_json::array({bw});
    if (bw.contains("measured_copy_gbs")) copy_gbs = bw["measured_copy_gbs"].get<double>();
  }
#endif

  std::size_t total = 0;
  for (const auto& mc : cases.by_model) total += mc.problems.size() * selected.size();
  std::cout << "mytransformer " << bench::project_version() << " (" << bench::git_commit()
            << ") on " << set.system["host"].get<std::string>() << ", device " << device.str()
            << ", LibTorch " TORCH_VERSION << "\n";
  for (const auto& mc : cases.by_model) {
    const ModelSource& m = models[mc.model];
    std::cout << "model " << m.config.name << " (" << to_string(m.config.arch) << ", "
              << bench::format_fixed(double(m.config.parameter_count()) / 1e6, 1)
              << "M parameters): " << m.description << "\n";
  }
  std::cout << (o.problems.empty() ? "grid " + grid.name : std::string("--problem")) << ": "
            << total / std::max<std::size_t>(selected.size(), 1) << " config(s) x "
            << selected.size() << " implementation(s), " << grid.num_runs << " run(s) each\n";
  bench::write_results(session);

  ModelCache cache(models, device, c.seed);
  if (!o.dump_logits.empty()) {
    const Problem& p = cases.by_model.front().problems.front();
    Model* m = cache.get(0, p.dtype);
    if (!m) throw std::runtime_error(cache.error(0, p.dtype));
    dump_logits(o.dump_logits, *m, p, c.seed);
    std::cout << "wrote the prefill logits and greedy tokens of " << p.str() << " to "
              << o.dump_logits << "\n";
    return 0;
  }

  CaseSettings settings;
  settings.sampling.temperature = grid.temperature;
  settings.sampling.top_p = grid.top_p;
  settings.sampling.seed = c.seed;
  settings.num_runs = grid.num_runs;
  settings.max_batch_input_product = grid.max_batch_input_product;
  settings.seed = c.seed;
  settings.copy_bandwidth_gbs = copy_gbs;

  std::size_t done = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const auto& mc : cases.by_model) {
    const ModelSource& source = models[mc.model];
    const bench::CaseOptions options = options_of(source);
    for (const auto& p : mc.problems)
      for (const auto& s : selected) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        // The runner's progress line (core/printers.hpp): case, then backend.
        std::cout << "\n"
                  << bench::progress_line(done, total, elapsed,
                                          p.str() + " " + source.config.name + " " + s.name + " " +
                                              device_name + " " + bench::to_string(p.dtype))
                  << std::endl;
        const bench::MemoryNeed need = s.impl ? need_of(source, p, *s.impl) : bench::MemoryNeed{};
        if (const std::string why = bench::memory_shortfall(need, memory.available());
            !why.empty() && p.mb * p.in <= grid.max_batch_input_product) {
          bench::finish_case(
              std::cout, session,
              bench::memory_unsupported(make_result(s.name, device_name, p, source.config, options),
                                        why, need, memory.available()),
              nullptr);
          ++done;
          continue;
        }
        Model* model = s.impl ? cache.get(mc.model, p.dtype) : nullptr;
        const std::string why =
            s.impl ? (model ? "" : cache.error(mc.model, p.dtype)) : s.why_missing;
        CaseOutput out =
            run_case(model, s.impl, s.name, device_name, why, p, source.config, settings, options);
        bench::finish_case(std::cout, session, std::move(out.result), out.trace);
        const std::string memory_line = memory_text(set.results.back());
        if (!memory_line.empty()) std::cout << "    memory        " << memory_line << "\n";
        ++done;
      }
  }

  bench::print_summary_section(std::cout, set.results);
  std::cout << "\n== Generation figures (means over " << grid.num_runs << " run(s)) ==\n";
  const bool train = task == Task::train;
  // Per case its times (a generation's: with the decode step's bandwidth, GB/s of its bytes and
  // its weight bytes' fraction of the measured copy bandwidth), then memory: the allocator's peak
  // (CUDA) beside the prediction from the config (memory.hpp).
  using Row = std::vector<std::string>;
  auto join = [](Row a, const Row& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const Row times = train ? Row{"forward ms", "backward ms", "step ms", "tokens/s"}
                          : Row{"TTFT ms", "ms/token (median)", "decode tok/s", "e2e tok/s",
                                "decode GB/s", "weights/copy"};
  bench::Table t(join(join({"model", "backend", "dtype", "case", "status"}, times),
                      {"peak MiB", "predicted MiB", "peak/pred"}));
  for (const auto& r : set.results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, int digits, double scale = 1) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() / scale, digits)
                             : std::string("-");
    };
    const Row figures = train ? Row{num("forward_ms", 2), num("backward_ms", 2),
                                    num("train_step_ms", 2), num("train_tokens_per_s", 1)}
                              : Row{num("ttft_ms", 2), num("decode_ms_per_token_median", 3),
                                    num("decode_tokens_per_s", 1), num("e2e_tokens_per_s", 1),
                                    num("decode_bandwidth_gbs", 1),
                                    num("decode_weight_bandwidth_vs_copy", 3)};
    const double mib = double(1 << 20);
    t.add_row(
        join(join({r.name, r.backend, r.dtype, r.problem, bench::to_string(r.status)}, figures),
             {num("peak_allocated_bytes", 1, mib), num("predicted_peak_bytes", 1, mib),
              num("peak_vs_prediction", 3)}));
  }
  t.print(std::cout);
  return bench::finish_run(std::cout, session, c.strict);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "mytransformer: prefill, per-token decode, memory and training steps of decoder-only "
      "transformers (GPT-2, Qwen2, Llama) on LibTorch"};
  bench::add_version_flag(app);
  app.add_option("--model", o.models,
                 "Built-in config (gpt2, gpt2-medium, gpt2-large, distilgpt2, qwen2-0.5b, "
                 "qwen2.5-0.5b, qwen2-1.5b, llama-3.2-1b; random weights), a Hugging Face "
                 "checkpoint folder, or a config.json alone (random weights); a list runs each")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--problem", o.problems,
                 "A case instead of the grid, e.g. mb4in512out128 or train_mb4in512, with "
                 ":n\"MODEL\" for one model's (as --list-cases prints them; repeatable)");
  app.add_option("--device", o.device, "auto, cpu, cuda, or the CUDA device index N (cuda:N)")
      ->capture_default_str();
  app.add_option("--preset", o.preset,
                 "Grid preset: default quick_test small_scale medium_scale large_scale "
                 "batch_size_study input_length_study (--show-presets)");
  app.add_option("--config-file", o.config_file,
                 "JSON with the keys batch_sizes, input_lengths, output_length, num_runs, "
                 "temperature, top_p, max_batch_input_product (over the preset)");
  app.add_flag("--show-presets", o.show_presets, "List the presets and exit");
  app.add_flag("--show-config", o.show_config,
               "Print the model's config.json (as transformers writes it) and exit");
  app.add_option("--create", o.create, "Write preset PRESET as a config file (with --output)");
  app.add_option("--output", o.create_output, "File --create writes");
  // Sizes of at most 9 digits, as the descriptors write them (models/transformer/problem.hpp).
  const auto size = bench::integer_in(1, 999999999);
  app.add_option("--batch-size", o.batch_sizes, "Batch sizes (list)")->delimiter(',')->check(size);
  app.add_option("--input-length", o.input_lengths, "Prompt lengths (list)")
      ->delimiter(',')
      ->check(size);
  app.add_option("--output-length", o.output_length, "Tokens generated per row")->check(size);
  app.add_option("--num-runs", o.num_runs, "Timed repetitions per config")
      ->check(bench::integer_in(1, 1000000));
  app.add_option("--temperature", o.temperature, "Sampling temperature (0: greedy)")
      ->check(bench::non_negative_number());
  app.add_option("--top-p", o.top_p, "Nucleus sampling mass (with --temperature)")
      ->check(bench::finite_number(0, 1, /*min_exclusive=*/true));
  app.add_option("--max-batch-input-product", o.max_batch_input_product,
                 "Configs with batch x input length above this are skipped (default 131072)")
      ->check(bench::integer_in(1, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--dtype", o.dtypes, "fp32 fp16 bf16 (list; default fp16 on cuda, fp32 on cpu)")
      ->delimiter(',');
  app.add_option(
         "--backend", o.impls,
         "Implementations: libtorch_cpu libtorch_cuda libtorch_graph own_cuda hf_transformers "
         "(list; "
         "default every one built for the device)")
      ->delimiter(',');
  app.add_option("--task", o.task, "generate (default) or train")->capture_default_str();
  app.add_option("--sdpa-backend", o.sdpa_backend,
                 "scaled_dot_product_attention's kernels: auto (LibTorch picks), or only cudnn, "
                 "flash, efficient or math")
      ->capture_default_str();
  app.add_option("--output-file", o.output_prefix,
                 "Write PREFIX_YYYYMMDD_HHMMSS.json and .csv (instead of --json/--csv)");
  app.add_option("--dump-logits", o.dump_logits,
                 "Write the first config's prompt, prefill logits and greedy tokens as JSON and "
                 "exit (scripts/references/hf_agreement.py)");
  // A generation is long: one warm-up run unless asked otherwise.
  o.common.measure.warmup_iters = 1;
  bench::add_common_options(app, o.common, /*allow_both=*/false, /*device_index=*/false);

  return bench::run_main(
      app, argc, argv, "mytransformer",
      [&] {
        if (app.count("--num-runs") && o.num_runs < 1)
          throw UsageError("--num-runs must be positive");
        if (!o.output_prefix.empty() && (!o.common.json_path.empty() || !o.common.csv_path.empty()))
          throw UsageError("--output-file replaces --json and --csv; give one or the other");
        if (!o.output_prefix.empty())  // the folder PREFIX_YYYYMMDD_HHMMSS.json and .csv go into
          bench::check_output_file("--output-file", o.output_prefix + "_x.json");
        return run(o, app);
      },
      {{"--impl", "--backend"}});
}
