// mytransformer: decoder-only transformers (GPT-2, Qwen2, Llama) written on LibTorch, timed per
// phase: prefill (time to first token), each decode step from a static KV cache, memory; or a
// training step (--task train). Weights from a Hugging Face checkpoint folder, or random from a
// built-in config. docs/mytransformer.md has the full reference.
//
//   mytransformer --model gpt2 --device auto                 the default preset
//   mytransformer --model gpt2 --preset quick_test --device cpu
//   mytransformer --model ./qwen2-ckpt --dtype bf16 --impl libtorch_graph --output-file out/run
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>
#include <CLI/CLI.hpp>

#include "core/driver.hpp"
#include "core/error.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
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
  std::string model = "gpt2", device = "auto", preset, config_file, task = "generate";
  std::string sdpa_backend = "auto";
  std::vector<std::int64_t> batch_sizes, input_lengths;
  std::int64_t output_length = 0, max_batch_input_product = 0;
  int num_runs = 0;
  double temperature = -1, top_p = -1;
  std::vector<std::string> dtypes, impls;
  std::string output_prefix, create, create_output, dump_logits;
  bool show_presets = false, show_config = false;
};

std::string clock_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  std::ostringstream o;
  o << s / 60 << ":" << std::setw(2) << std::setfill('0') << s % 60;
  return o.str();
}

// Where the model comes from: a checkpoint folder (config.json, and weights if present), a
// config.json alone, or a built-in name; the last two are random-initialized.
struct ModelSource {
  ModelConfig config;
  std::string checkpoint_dir;  // "" = random weights
  std::string description;
};

ModelSource resolve_model(const std::string& spec, std::uint64_t seed) {
  namespace fs = std::filesystem;
  ModelSource s;
  const std::string random = "random init (seed " + std::to_string(seed) + ")";
  if (fs::is_directory(spec)) {
    const fs::path cfg = fs::path(spec) / "config.json";
    if (!fs::is_regular_file(cfg)) throw UsageError("--model: '" + spec + "' has no config.json");
    s.config = load_config_file(cfg.string());
    s.config.name = fs::path(spec).filename().string();
    if (s.config.name.empty()) s.config.name = spec;
    if (fs::exists(fs::path(spec) / "model.safetensors") ||
        fs::exists(fs::path(spec) / "model.safetensors.index.json")) {
      s.checkpoint_dir = spec;
      s.description = "checkpoint " + spec;
    } else {
      s.description = random + " from " + cfg.string() + " (the folder has no safetensors)";
    }
  } else if (fs::is_regular_file(spec)) {
    s.config = load_config_file(spec);
    s.config.name = fs::path(spec).stem().string();
    s.description = random + " from " + spec;
  } else {
    s.config = builtin_config(spec);
    s.description = random + " from the built-in config " + spec;
  }
  return s;
}

at::Device resolve_device(const std::string& d) {
  if (d == "cpu") return at::Device(at::kCPU);
  if (d == "cuda" || d == "gpu") {
    if (!cuda_available())
      throw UsageError("--device cuda: LibTorch " TORCH_VERSION " finds no CUDA device" +
                       std::string(MYCONV_HAVE_TORCH_CUDA ? "" : " (this build is CPU-only)"));
    return at::Device(at::kCUDA, 0);
  }
  if (d == "auto") return cuda_available() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  throw UsageError("--device: '" + d + "' is not a device (auto, cpu, cuda)");
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
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

// --dump-logits: one greedy generation of the first case with libtorch_eager, written as JSON:
// the prompt, the prefill logits (every position of the first row, the last position of every
// row) and the generated tokens; where CUDA graphs can be captured, the tokens of the same
// generation through libtorch_graph's decode step too ("generated_graph"; its decode is written
// apart from the eager forward). scripts/hf_agreement.py compares them with transformers.
void dump_logits(const std::string& path, const Model& model, const Problem& p,
                 std::uint64_t seed) {
  const c10::NoGradGuard no_grad;
  Sampling greedy;
  Generator gen(model, p.mb, p.in, p.out, greedy, DecodeMode::eager, seed);
  gen.run();
  gen.finish();
  const at::Tensor full = model.forward(gen.prompt(), 0, nullptr, false).to(at::kFloat).cpu();
  auto rows = [](const at::Tensor& t) {
    nlohmann::json out = nlohmann::json::array();
    const at::Tensor c = t.contiguous();
    for (std::int64_t i = 0; i < c.size(0); ++i) {
      const at::Tensor row = c.select(0, i).contiguous();
      if (row.scalar_type() == at::kLong)
        out.push_back(std::vector<std::int64_t>(row.data_ptr<std::int64_t>(),
                                                row.data_ptr<std::int64_t>() + row.numel()));
      else
        out.push_back(
            std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + row.numel()));
    }
    return out;
  };
  nlohmann::json j;
  j["model"] = model.config().name;
  j["dtype"] = bench::to_string(p.dtype);
  j["device"] = model.device().str();
  j["attention"] = Model::attention_kind();
  j["prompt"] = rows(gen.prompt().cpu());
  j["prefill_logits_row0"] = rows(full.select(0, 0));
  j["prefill_last_logits"] = rows(full.select(1, p.in - 1));
  j["generated"] = rows(gen.generated().cpu());
  if (decode_graph_built(nullptr) && model.device().is_cuda()) {
    Generator graph(model, p.mb, p.in, p.out, greedy, DecodeMode::graph, seed);
    graph.prepare();
    graph.run();
    graph.finish();
    j["generated_graph"] = rows(graph.generated().cpu());
  }
  bench::write_file_atomic(path, j.dump());
}

int run(Options& o, CLI::App& app) {
  bench::DriverOptions& c = o.common;
  if (bench::handle_source_options(c)) return 0;
  Model::select_sdpa_backend(o.sdpa_backend);
  const std::string ppath = presets_path();
  if (o.show_presets) {
    print_presets(load_presets(ppath), ppath);
    return 0;
  }
  if (!o.create.empty()) {
    if (o.create_output.empty()) throw UsageError("--create needs --output FILE");
    bench::check_output_path("--output", o.create_output);
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
    bench::check_backend_names(o.impls, known_implementation_names());
  } catch (const UsageError& e) {  // the core names the option --backend; here it is --impl
    std::string what = e.what();
    throw UsageError("--impl" + what.substr(what.find(':')));
  }
  const Task task = parse_task(o.task);
  Grid grid = find_preset(load_presets(ppath), o.preset.empty() ? "default" : o.preset);
  if (!o.config_file.empty()) {
    std::vector<std::string> ignored;
    grid = read_grid_file(o.config_file, grid, &ignored);
    for (const auto& k : ignored)
      std::cerr << "mytransformer: note: --config-file key '" << k << "' is not used\n";
  }
  if (!o.batch_sizes.empty()) grid.batch_sizes = o.batch_sizes;
  if (!o.input_lengths.empty()) grid.input_lengths = o.input_lengths;
  if (app.count("--output_length")) grid.output_length = o.output_length;
  if (app.count("--num_runs")) grid.num_runs = o.num_runs;
  if (app.count("--temperature")) grid.temperature = o.temperature;
  if (app.count("--top_p")) grid.top_p = o.top_p;
  if (app.count("--max_batch_input_product"))
    grid.max_batch_input_product = o.max_batch_input_product;
  check_grid(grid);
  if (!o.output_prefix.empty()) {
    const std::string stamp = timestamp();
    c.json_path = o.output_prefix + "_" + stamp + ".json";
    c.csv_path = o.output_prefix + "_" + stamp + ".csv";
  }
  const at::Device device = resolve_device(o.device);
  const std::string device_name = device.is_cuda() ? "cuda" : "cpu";
  std::vector<bench::DataType> dtypes;
  if (o.dtypes.empty()) o.dtypes = {device.is_cuda() ? "fp16" : "fp32"};
  for (const auto& d : o.dtypes) dtypes.push_back(bench::parse_data_type(d));
  const ModelSource source = resolve_model(o.model, c.seed);
  const ModelConfig& cfg = source.config;
  if (o.show_config) {
    std::cout << to_hf_config(cfg).dump(2) << "\n";
    return 0;
  }
  const std::vector<Problem> problems = expand(grid, task, dtypes);
  bench::check_output_path("--dump-logits", o.dump_logits);

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
    if (entry)
      selected.push_back({name, entry->backend.get(), entry->why_missing});
    else if (other_device)
      selected.push_back({name, nullptr, name + " does not run on " + device_name});
  }

  std::string prefix = "mytransformer --model " + o.model;
  if (task == Task::train) prefix += " --task train";
  if (grid.temperature > 0)
    prefix += " --temperature " + bench::format_fixed(grid.temperature, 3) + " --top_p " +
              bench::format_fixed(grid.top_p, 3);
  prefix += " --num_runs " + std::to_string(grid.num_runs);
  if (grid.max_batch_input_product != kDefaultMaxBatchInputProduct)
    prefix += " --max_batch_input_product " + std::to_string(grid.max_batch_input_product);
  prefix += bench::check_common_options(app, c);

  // One model per dtype, made once (training makes the weights require gradients).
  std::map<bench::DataType, std::unique_ptr<Model>> models;
  std::map<bench::DataType, std::string> model_errors;
  // The cases run dtype by dtype: the previous dtype's model is released before the next is
  // made, so that one model's weights are in memory at a time.
  auto model_for = [&](bench::DataType dt) -> Model* {
    if (models.count(dt)) return models[dt].get();
    if (model_errors.count(dt)) return nullptr;
    for (auto it = models.begin(); it != models.end();) {
      const at::Device d = it->second->device();
      it = models.erase(it);
      release_cached_memory(d);
    }
    try {
      const at::ScalarType st = dt == bench::DataType::fp16   ? at::kHalf
                                : dt == bench::DataType::bf16 ? at::kBFloat16
                                                              : at::kFloat;
      if (dt == bench::DataType::tf32) throw bench::Unsupported("tf32 is not a storage dtype");
      if (source.checkpoint_dir.empty()) {
        models[dt] = std::make_unique<Model>(Model::random(cfg, c.seed, st, device));
      } else {
        const Checkpoint ckpt(source.checkpoint_dir);
        models[dt] = std::make_unique<Model>(Model::from_checkpoint(cfg, ckpt, st, device));
      }
      return models[dt].get();
    } catch (const UsageError&) {
      throw;  // a bad checkpoint is bad input
    } catch (const std::exception& e) {
      std::string what = e.what();
      model_errors[dt] = "model not made: " + what.substr(0, what.find('\n'));
      return nullptr;
    }
  };

  // Checked before anything is written: a bad checkpoint is bad input (exit 2, no partial files).
  if (!source.checkpoint_dir.empty())
    Model::check_checkpoint(cfg, Checkpoint(source.checkpoint_dir));

  bench::Session session;
  bench::start_session(session, c, device.is_cuda(), prefix);
  if (c.list_cases) {
    for (const auto& p : problems)
      for (const auto& s : selected)
        std::cout
            << bench::to_json(make_result(s.name, device_name, p, cfg, session.case_options)).dump()
            << "\n";
    return 0;
  }
  bench::ResultSet& set = session.set;
  for (const auto& s : selected)
    if (s.impl) set.system["libraries"][s.name] = s.impl->library_version();
  set.system["libraries"]["torch_threads"] = at::get_num_threads();
  set.system["model"] = {{"name", cfg.name},
                         {"source", source.description},
                         {"arch", to_string(cfg.arch)},
                         {"parameters", cfg.parameter_count()},
                         {"config", to_hf_config(cfg)},
                         {"attention", Model::attention_kind()}};
  set.system["grid"] = to_json(grid);
  set.system["grid"]["name"] = grid.name;
  set.system["task"] = to_string(task);

  std::cout << "mytransformer " << bench::project_version() << " (" << bench::git_commit()
            << ") on " << set.system["host"].get<std::string>() << ", device " << device.str()
            << ", LibTorch " TORCH_VERSION << "\nmodel " << cfg.name << " (" << to_string(cfg.arch)
            << ", " << bench::format_fixed(double(cfg.parameter_count()) / 1e6, 1)
            << "M parameters): " << source.description << "\ngrid " << grid.name << ": "
            << problems.size() << " config(s) x " << selected.size() << " implementation(s), "
            << grid.num_runs << " run(s) each\n";
  bench::write_results(session);

  if (!o.dump_logits.empty()) {
    Problem p = problems.front();
    Model* m = model_for(p.dtype);
    if (!m) throw std::runtime_error(model_errors[p.dtype]);
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

  const std::size_t total = problems.size() * selected.size();
  std::size_t done = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const auto& p : problems)
    for (const auto& s : selected) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::cout << "\n[" << done + 1 << "/" << total << "] " << s.name << " " << device_name << " "
                << bench::to_string(p.dtype) << " " << p.str() << "  elapsed "
                << clock_text(elapsed) << ", ETA "
                << (done ? clock_text(elapsed / double(done) * double(total - done)) : "?")
                << std::endl;
      Model* model = s.impl ? model_for(p.dtype) : nullptr;
      const std::string why = s.impl ? (model ? "" : model_errors[p.dtype]) : s.why_missing;
      CaseOutput out =
          run_case(model, s.impl, s.name, device_name, why, p, cfg, settings, session.case_options);
      bench::finish_case(std::cout, session, std::move(out.result), out.trace);
      const std::string memory = memory_text(set.results.back());
      if (!memory.empty()) std::cout << "    memory        " << memory << "\n";
      ++done;
    }

  std::cout << "\n== Summary (means over " << grid.num_runs << " run(s)) ==\n";
  const bool train = task == Task::train;
  // Per case its times, then memory: the allocator's peak (CUDA) beside the prediction from the
  // config (memory.hpp).
  using Row = std::vector<std::string>;
  auto join = [](Row a, const Row& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const Row times = train ? Row{"forward ms", "backward ms", "step ms", "tokens/s"}
                          : Row{"TTFT ms", "ms/token (median)", "decode tok/s", "e2e tok/s"};
  bench::Table t(join(join({"impl", "dtype", "case", "status"}, times),
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
                                    num("decode_tokens_per_s", 1), num("e2e_tokens_per_s", 1)};
    const double mib = double(1 << 20);
    t.add_row(join(join({r.backend, r.dtype, r.problem, bench::to_string(r.status)}, figures),
                   {num("peak_allocated_bytes", 1, mib), num("predicted_peak_bytes", 1, mib),
                    num("peak_vs_prediction", 3)}));
  }
  t.print(std::cout);
  bench::write_results(session);
  if (!c.json_path.empty()) std::cout << "results: " << c.json_path << "\n";
  if (!c.csv_path.empty()) std::cout << "results: " << c.csv_path << "\n";
  return bench::closing_status(std::cout, set, c.strict);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "mytransformer: prefill, per-token decode, memory and training steps of decoder-only "
      "transformers (GPT-2, Qwen2, Llama) on LibTorch"};
  app.set_version_flag("--version",
                       bench::project_version() + " (git " + bench::git_commit() + ")");
  app.add_option("--model", o.model,
                 "Built-in config (gpt2, gpt2-medium, gpt2-large, distilgpt2, qwen2-0.5b, "
                 "qwen2.5-0.5b, qwen2-1.5b, llama-3.2-1b; random weights), a Hugging Face "
                 "checkpoint folder, or a config.json alone (random weights)")
      ->capture_default_str();
  app.add_option("--device", o.device, "auto, cpu or cuda")->capture_default_str();
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
  app.add_option("--batch_sizes", o.batch_sizes, "Batch sizes (list)")->delimiter(',');
  app.add_option("--input_lengths", o.input_lengths, "Prompt lengths (list)")->delimiter(',');
  app.add_option("--output_length", o.output_length, "Tokens generated per row");
  app.add_option("--num_runs", o.num_runs, "Timed repetitions per config");
  app.add_option("--temperature", o.temperature, "Sampling temperature (0: greedy)");
  app.add_option("--top_p", o.top_p, "Nucleus sampling mass (with --temperature)");
  app.add_option("--max_batch_input_product", o.max_batch_input_product,
                 "Configs with batch x input length above this are skipped (default 131072)");
  app.add_option("--dtype", o.dtypes, "fp32 fp16 bf16 (list; default fp16 on cuda, fp32 on cpu)")
      ->delimiter(',');
  app.add_option("--impl", o.impls,
                 "Implementations: libtorch_eager libtorch_graph hf_transformers (list; default "
                 "every one built for the device)")
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
                 "exit (scripts/hf_agreement.py)");
  // A generation is long: one warm-up run unless asked otherwise.
  o.common.measure.warmup_iters = 1;
  bench::add_common_options(app, o.common);

  return bench::run_main(app, argc, argv, "mytransformer", [&] {
    if (app.count("--num_runs") && o.num_runs < 1) throw UsageError("--num_runs must be positive");
    if (!o.output_prefix.empty() && (!o.common.json_path.empty() || !o.common.csv_path.empty()))
      throw UsageError("--output-file replaces --json and --csv; give one or the other");
    if (!o.output_prefix.empty())
      bench::check_output_path("--output-file", o.output_prefix + "_x.json");
    return run(o, app);
  });
}
