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
#include <algorithm>
#include <chrono>
#include <deque>
#include <iostream>
#include <limits>
#include <memory>

#include <ATen/Parallel.h>
#include <torch/version.h>
#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
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

// One case's problem: the model (an index into the run's models) and its problem.
struct ModelProblem {
  std::size_t model = 0;
  Problem p;
};

int run(Options& o, CLI::App& app) {
  bench::DriverOptions& c = o.common;
  bench::libtorch::apply_cpu_threads();  // --threads
  Model::select_sdpa_backend(o.sdpa_backend);
  const std::string ppath = presets_path();
  bench::Suite<ModelProblem, RegistryEntry> s;
  s.program = "mytransformer";
  s.backends = bench::canonical_backend_names(o.impls);
  s.known_backends = known_implementation_names();
  s.own_listing = [&] {
    if (o.show_presets) print_presets(std::cout, load_presets(ppath), ppath);
    if (!o.create.empty()) {
      if (o.create_output.empty()) throw UsageError("--create needs --output FILE");
      bench::check_output_file("--output", o.create_output);
      const Grid g = find_preset(load_presets(ppath), o.create);
      bench::write_file_atomic(o.create_output, to_json(g).dump(2) + "\n");
      std::cout << "wrote preset " << g.name << " to " << o.create_output << "\n";
    }
    if (o.show_config) {
      const auto m = resolve_models(o.models, app.count("--model") > 0, o.problems, c.seed);
      if (m.size() != 1) throw UsageError("--show-config prints one model: give one --model");
      std::cout << to_hf_config(m.front().config).dump(2) << "\n";
    }
    return o.show_presets || !o.create.empty() || o.show_config;
  };
  s.make_registry = [] { return make_registry(); };

  // The run's settings, filled as the problems are expanded.
  Grid grid;
  at::Device device(at::kCPU);
  std::string device_name, settings_text;
  std::vector<ModelSource> models;
  Task task = Task::generate;
  std::vector<std::size_t> used_models;  // the models with cases, in order
  ModelProblem first;
  s.problems = [&](std::vector<std::string>*) {
    if (c.timing != "real")
      throw UsageError("--timing " + c.timing +
                       ": mytransformer times generations as they run (real); pure mode does not "
                       "apply (libtorch_graph replays the decode steps from a CUDA graph)");
    if (!o.problems.empty() &&
        (!o.batch_sizes.empty() || !o.input_lengths.empty() || app.count("--output-length")))
      throw UsageError(
          "--problem gives the cases themselves: give it or --batch-size, --input-length, "
          "--output-length, not both");
    grid = find_preset(load_presets(ppath), o.preset.empty() ? "default" : o.preset);
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
      const std::string stamp = bench::format_now("%Y%m%d_%H%M%S", false);
      c.json_path = o.output_prefix + "_" + stamp + ".json";
      c.csv_path = o.output_prefix + "_" + stamp + ".csv";
    }
    device = resolve_device(o.device);
    device_name = device.is_cuda() ? "cuda" : "cpu";
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
    models = resolve_models(o.models, app.count("--model") > 0, o.problems, c.seed);
    const CaseList cases =
        expand_cases(models, o.problems, grid, app.count("--task") ? o.task : "", dtypes);
    task = cases.task;
    bench::check_output_file("--dump-logits", o.dump_logits);
    if (!o.dump_logits.empty() && models.size() != 1)
      throw UsageError("--dump-logits writes one model's logits: give one --model");
    // Every case's reproducing command: the model, then the settings that are not the case's own.
    settings_text = command_text(grid, task);
    (void)bench::check_common_options(app, c);
    // A bad checkpoint is bad input (exit 2, no partial files).
    std::vector<ModelProblem> problems;
    for (const auto& mc : cases.by_model) {
      const ModelSource& m = models[mc.model];
      if (!m.checkpoint_dir.empty())
        Model::check_checkpoint(m.config, Checkpoint(m.checkpoint_dir));
      for (const auto& p : mc.problems) problems.push_back({mc.model, p});
      used_models.push_back(mc.model);
    }
    first = problems.at(0);
    return problems;
  };
  // The implementations asked (or every one built for the device), each on the device; one
  // asked that runs only on the other device is recorded skipped.
  std::deque<RegistryEntry> elsewhere;
  s.select = [&](const std::vector<RegistryEntry>& registry) {
    return select_implementations(registry, o.impls, device_name, c.available_only, elsewhere);
  };
  s.name_of = [&](const ModelProblem& p) {
    return str_with_name(p.p, models[p.model].config.name);
  };
  // The suite's own peak prediction (memory.hpp); a case past max_batch_input_product is skipped.
  s.case_need = [&](const ModelProblem& p, const RegistryEntry& e) {
    Sampling sampling;
    sampling.temperature = grid.temperature;
    sampling.top_p = grid.top_p;
    return memory_need(models[p.model].config, p.p,
                       memory_context(e.backend->mode(), sampling, device));
  };
  s.gated = [&](const ModelProblem& p) { return p.p.mb * p.p.in <= grid.max_batch_input_product; };
  s.identity = [&](const RegistryEntry& e, const ModelProblem& p,
                   const bench::CaseOptions& options) {
    return make_result(e.name, device_name, p.p, models[p.model].config, options);
  };
  s.command_head_of = [&](const ModelProblem& p) {
    return "mytransformer --model " + models[p.model].spec + settings_text;
  };
  std::unique_ptr<ModelCache> cache;
  s.before_session = [&](const std::vector<const RegistryEntry*>&, const bench::MemoryGate&) {
    cache = std::make_unique<ModelCache>(models, device, c.seed);
    if (o.dump_logits.empty() || c.list_cases) return false;
    Model* m = cache->get(first.model, first.p.dtype);
    if (!m) throw std::runtime_error(cache->error(first.model, first.p.dtype));
    dump_logits(o.dump_logits, *m, first.p, c.seed);
    std::cout << "wrote the prefill logits and greedy tokens of " << first.p.str() << " to "
              << o.dump_logits << "\n";
    return true;
  };
  s.banner_tail = [&] { return ", device " + device.str() + ", LibTorch " TORCH_VERSION; };
  CaseSettings settings;
  s.before_cases = [&](bench::Session& session, const std::vector<const RegistryEntry*>&,
                       const std::vector<ModelProblem>&) {
    auto& system = session.set.system;
    system["libraries"]["torch_threads"] = at::get_num_threads();
    nlohmann::ordered_json records = nlohmann::ordered_json::array();
    for (const auto m : used_models) records.push_back(model_record(models[m]));
    system["model"] = records.front();
    system["models"] = records;
    system["grid"] = to_json(grid);
    system["grid"]["name"] = grid.name;
    if (!o.problems.empty()) {  // the cases are the descriptors', not the grid's
      for (const char* k : {"batch_sizes", "input_lengths", "output_length"})
        system["grid"].erase(k);
      system["grid"]["problems"] = o.problems;
    }
    system["task"] = to_string(task);
    settings.sampling.temperature = grid.temperature;
    settings.sampling.top_p = grid.top_p;
    settings.sampling.seed = c.seed;
    settings.num_runs = grid.num_runs;
    settings.max_batch_input_product = grid.max_batch_input_product;
    settings.seed = c.seed;
#if MYCONV_HAVE_TORCH_CUDA
    if (device.is_cuda() && task == Task::generate) {  // the decode step's bandwidth against it
      const int index = device.has_index() ? device.index() : 0;
      std::cout << "measuring device " << index << "'s copy bandwidth (device-to-device copy)...\n";
      const nlohmann::ordered_json bw = bench::measure_cuda_copy_bandwidth(index);
      system["bandwidth"]["cuda"] = nlohmann::ordered_json::array({bw});
      if (bw.contains("measured_copy_gbs"))
        settings.copy_bandwidth_gbs = bw["measured_copy_gbs"].get<double>();
    }
#endif
  };
  std::size_t done = 0, total = 0;
  std::chrono::steady_clock::time_point started;
  s.print_count = [&](std::size_t problems, std::size_t backends) {
    for (const auto m : used_models) {
      const ModelConfig& cfg = models[m].config;
      std::cout << "model " << cfg.name << " (" << to_string(cfg.arch) << ", "
                << bench::format_fixed(double(cfg.parameter_count()) / 1e6, 1)
                << "M parameters): " << models[m].description << "\n";
    }
    total = problems * backends;
    std::cout << (o.problems.empty() ? "grid " + grid.name : std::string("--problem")) << ": "
              << problems << " config(s) x " << backends << " implementation(s), " << grid.num_runs
              << " run(s) each\n";
    started = std::chrono::steady_clock::now();
  };
  // The runner's progress line (core/printers.hpp): case, then backend.
  s.before_case = [&](bench::Session&, const RegistryEntry& e, const ModelProblem& p) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cout << "\n"
              << bench::progress_line(done++, total, elapsed,
                                      p.p.str() + " " + models[p.model].config.name + " " + e.name +
                                          " " + device_name + " " + bench::to_string(p.p.dtype))
              << std::endl;
  };
  s.run = [&](bench::Session&, const RegistryEntry& e, const ModelProblem& p,
              const bench::CaseOptions& options) {
    Model* model = e.backend ? cache->get(p.model, p.p.dtype) : nullptr;
    const std::string why =
        e.backend ? (model ? "" : cache->error(p.model, p.p.dtype)) : e.why_missing;
    CaseOutput out = run_case(model, e.backend.get(), e.name, device_name, why, p.p,
                              models[p.model].config, settings, options);
    return std::optional<bench::CaseRun>({std::move(out.result), out.trace});
  };
  s.after_case = [&](bench::Session&, const bench::Result& r) {
    const std::string memory_line = memory_text(r);
    if (!memory_line.empty()) std::cout << "    memory        " << memory_line << "\n";
  };
  s.report = [&](bench::Session& session) {
    std::cout << "\n== Generation figures (means over " << grid.num_runs << " run(s)) ==\n";
    print_generation_figures(std::cout, session.set.results, task == Task::train);
  };
  return bench::run_suite(app, c, s);
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
  bench::add_common_options(app, o.common, /*device_index=*/false);
  app.get_option("--timing")
      ->description(
          "real only: a generation is timed as it runs (the prefill, each decode step, a training "
          "step); pure and both: a usage error, exit 2 (libtorch_graph replays the decode steps "
          "from a CUDA graph instead)");

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
