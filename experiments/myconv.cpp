// myconv: runs conv problems through every available backend and reports, per backend, the
// GPU, CPU, total and compile times and the correctness against a float64 reference.
//
//   myconv --input_size 64 --kernel_size 5
//   myconv --problem mb32ic64ih56oc64kh3ph1 --dtype fp32 --dtype bf16 --json out.json
//   myconv --shapes experiments/shapes/resnet50.txt --backend onednn_cpu
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "conv/bench.hpp"
#include "conv/registry.hpp"
#include "conv/settings.hpp"
#include "core/error.hpp"
#include "core/npy.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
#include "core/trace_report.hpp"
#if MYCONV_HAVE_CUDA
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_services.hpp"
#endif
#if MYCONV_HAVE_CUPTI
#include "core/cuda/cupti_tracer.hpp"
#endif

namespace {

using bench::UsageError;

struct Options {
  conv::Settings settings;
  std::vector<std::string> dtypes = {"fp32"}, layouts = {"nchw"};
  std::vector<std::string> backends;
  conv::BackendOptions backend_options;
  bench::MeasureConfig measure;
  std::string timing = "real";
  bool no_graph = false, cold_cache = false;
  int pure_runs = 0;
  std::uint64_t seed = 1;
  std::string json_path, csv_path, save_tensors_dir;
  bool list_backends = false, strict = false;
  bool source_info = false;       // print the source record (system.source) and exit
  std::string write_source_diff;  // write the built tree's difference from its commit and exit
  bool no_source_diff = false;    // --json without the difference beside it (the runner's own)
  bool list_cases = false;  // print the cases as JSON lines instead of running them
  bool debug = false;       // a [DEBUG] block after each case's result block
  std::string trace_dir;    // one Chrome trace JSON per case
  int trace_calls = 3;      // traced calls per case, after the timed sampling
};

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// The output file's folder must exist before any case runs, so that a bad path fails at once.
void check_output_path(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw UsageError(option + ": folder '" + parent.string() + "' does not exist");
}

void print_backend_list(const std::vector<conv::RegistryEntry>& registry) {
  bench::Table t({"backend", "device", "built", "available", "library / why not"});
  for (const auto& e : registry) {
    std::string avail = "-", info = e.why_missing;
    if (e.backend) {
      const conv::Support a = e.backend->available();
      avail = a.ok ? "yes" : "no";
      info = a.ok ? e.backend->library_version() : a.reason;
    }
    t.add_row({e.name, e.device, e.backend ? "yes" : "no", avail, info});
  }
  t.print(std::cout);
}

void save_tensors(const std::string& dir, const conv::Problem& p, const conv::HostData& data) {
  const auto folder = std::filesystem::path(dir) / p.str();
  std::filesystem::create_directories(folder);
  bench::write_npy((folder / "src.npy").string(), data.src.data(), p.src_shape());
  bench::write_npy((folder / "wei.npy").string(), data.wei.data(), p.wei_shape());
  bench::write_npy((folder / "ref.npy").string(), data.ref.data(), p.dst_shape());
}

int run(const Options& o, const std::string& command_prefix) {
  if (o.source_info) {
    std::cout << bench::source_info().dump(2) << "\n";
    return 0;
  }
  if (!o.write_source_diff.empty()) {
    check_output_path("--write-source-diff", o.write_source_diff);
    bench::write_source_diff(o.write_source_diff);
    return 0;
  }
  std::vector<conv::RegistryEntry> registry = conv::make_registry(o.backend_options);
  if (o.list_backends) {
    print_backend_list(registry);
    return 0;
  }

  // Validate everything before the first case runs, so bad input leaves no partial output.
  const std::vector<std::string> known = conv::known_backend_names();
  for (const auto& b : o.backends)
    if (std::find(known.begin(), known.end(), b) == known.end())
      throw UsageError("--backend: unknown backend '" + b + "' (allowed: " + join(known) + ")");
  check_output_path("--json", o.json_path);
  check_output_path("--csv", o.csv_path);
  if (!o.trace_dir.empty() && !o.list_cases) {
    std::error_code ec;
    std::filesystem::create_directories(o.trace_dir, ec);
    if (ec || !std::filesystem::is_directory(o.trace_dir))
      throw UsageError("--trace-dir: cannot create folder '" + o.trace_dir + "'" +
                       (ec ? ": " + ec.message() : std::string()));
  }
  std::vector<std::string> notes;
  std::vector<conv::Problem> problems = conv::expand(o.settings, &notes);
  // Shape-file tokens not run as written (benchdnn options, repeats): one line each, on stderr so
  // that --list-cases output stays JSON.
  for (const auto& n : notes) std::cerr << "myconv: note: " << n << "\n";
  const double available = static_cast<double>(bench::available_host_memory_bytes());
  for (const auto& p : problems) {
    if (!p.unsupported_reason().empty()) continue;  // recorded as unsupported; no data is made
    const double need = conv::host_bytes_needed(p);
    // Listing runs nothing; a runner records the problem that does not fit when it runs it.
    if (!o.list_cases && available > 0 && need > available) {
      std::ostringstream msg;
      msg << "problem " << p.str() << " needs about " << need / (1 << 30) << " GiB of host memory; "
          << available / (1 << 30) << " GiB are available";
      throw UsageError(msg.str());
    }
  }

  std::vector<const conv::RegistryEntry*> selected;
  for (const auto& e : registry)
    if (o.backends.empty()
            ? e.backend != nullptr
            : std::find(o.backends.begin(), o.backends.end(), e.name) != o.backends.end())
      selected.push_back(&e);

  bench::ResultSet set;
  set.system = bench::collect_system_info();
#if MYCONV_HAVE_CUDA
  set.system["cuda"] = bench::cuda_system_info();
  if (set.system["cuda"].contains("devices")) set.system["gpus"] = set.system["cuda"]["devices"];
#endif
  for (const auto* e : selected)
    if (e->backend) set.system["libraries"][e->name] = e->backend->library_version();
  // A build from a tree that differed from its commit: the difference goes beside the JSON
  // (out.json -> out.source.diff), and the JSON names it.
  if (!o.json_path.empty() && !o.no_source_diff && !o.list_cases &&
      !bench::source_diff().empty()) {
    std::filesystem::path diff = o.json_path;
    diff.replace_extension(".source.diff");
    bench::write_source_diff(diff.string());
    set.system["source"]["diff_file"] = diff.filename().string();
  }

  conv::CaseOptions case_options;
  case_options.measure = o.measure;
  case_options.command_prefix = command_prefix;
  case_options.timing = o.timing == "pure" ? conv::TimingMode::pure : conv::TimingMode::real;
  case_options.use_graph = !o.no_graph;
  case_options.pure_runs = o.pure_runs;
  case_options.cold_cache = o.cold_cache;
  std::unique_ptr<bench::DeviceServices> device_services;
#if MYCONV_HAVE_CUDA
  const bool any_gpu_backend = std::any_of(selected.begin(), selected.end(), [](const auto* e) {
    return e->backend && e->device == "cuda";
  });
  if (any_gpu_backend && bench::cuda_device_available().ok) {
    device_services = bench::make_cuda_services();
    case_options.device_services = device_services.get();
  }
#endif

  // Tracing (--debug, --trace-dir) is off unless asked; GPU cases then record CUPTI activity.
  bench::TraceConfig trace_config;
  std::unique_ptr<bench::ActivitySource> device_activity;
  if (o.debug || !o.trace_dir.empty()) {
    trace_config.calls = o.trace_calls;
#if MYCONV_HAVE_CUPTI
    if (const bench::CudaAvailability a = bench::cuda_device_available(); a.ok) {
      device_activity = bench::make_cupti_activity_source();
      trace_config.device_activity = device_activity.get();
    } else {
      trace_config.why_no_device_activity = a.reason;
    }
#else
    trace_config.why_no_device_activity = "built without CUPTI: " MYCONV_WHY_NO_CUPTI;
#endif
    case_options.trace = &trace_config;
  }

  // --list-cases: one line per (problem, backend) case this command would run, the identity
  // of its result record as JSON (status skipped until run), for runners that track cases.
  if (o.list_cases) {
    for (const auto& p : problems)
      for (const auto* e : selected)
        std::cout << bench::to_json(conv::make_result(e->name, e->device, p, case_options)).dump()
                  << "\n";
    return 0;
  }

  std::cout << "myconv " << bench::project_version() << " (" << bench::git_commit() << ") on "
            << set.system["host"].get<std::string>() << ", "
            << set.system["cpu_model"].get<std::string>() << "\n";
  std::cout << problems.size() << " problem(s) x " << selected.size() << " backend(s)\n";
  for (const auto& p : problems) {
    // A problem no backend here runs gets no inputs or reference: its cases are unsupported.
    const bool runnable = p.unsupported_reason().empty();
    if (runnable) {
      const conv::GemmShape gm = p.gemm();
      std::cout << "\n== " << p.str_with_name() << ": " << bench::to_string(p.dtype) << " "
                << conv::to_string(p.layout) << ", input " << p.mb << "x" << p.ic << "x" << p.ih
                << "x" << p.iw << ", weights " << p.oc << "x" << p.ic / p.g << "x" << p.kh << "x"
                << p.kw << ", output " << p.mb << "x" << p.oc << "x" << p.oh() << "x" << p.ow()
                << ", " << p.flops() / 1e6 << " MFLOP, GEMM M=" << gm.m << " N=" << gm.n
                << " K=" << gm.k
                << (gm.groups > 1 ? " x" + std::to_string(gm.groups) + " groups" : "") << " ==\n";
    } else {
      std::cout << "\n== " << p.str_with_name() << ": " << bench::to_string(p.dtype) << " "
                << conv::to_string(p.layout) << ", " << p.flops() / 1e6 << " MFLOP ==\n";
    }
    const conv::HostData data = runnable ? conv::make_host_data(p, o.seed) : conv::HostData{};
    if (runnable && !o.save_tensors_dir.empty()) save_tensors(o.save_tensors_dir, p, data);
    for (const auto* e : selected) {
      conv::CaseOutput c = conv::run_case(e->backend.get(), e->name, e->device, e->why_missing, p,
                                          data, case_options);
      if (!o.save_tensors_dir.empty() && !c.output.empty())
        bench::write_npy(
            (std::filesystem::path(o.save_tensors_dir) / p.str() / (e->name + ".npy")).string(),
            c.output.data(), p.dst_shape());
      bench::print_result_block(std::cout, c.result);
      if (c.trace) {
        std::string trace_path;
        if (!o.trace_dir.empty()) {
          trace_path =
              (std::filesystem::path(o.trace_dir) / bench::trace_file_name(c.result)).string();
          bench::write_chrome_trace(trace_path, *c.trace, c.result);
          c.result.extra["trace_file"] = trace_path;
        }
        if (o.debug) bench::print_debug_block(std::cout, *c.trace, c.result, trace_path);
      }
      set.results.push_back(std::move(c.result));
      // Rewritten (atomically) after every case, so that a crash or a kill keeps the finished ones.
      if (!o.json_path.empty()) bench::write_json(o.json_path, set);
      if (!o.csv_path.empty()) bench::write_csv(o.csv_path, set.results);
    }
  }

  std::cout << "\n== Comparison (speed-up against LibTorch on the same device) ==\n";
  bench::print_comparison(std::cout, set.results, "libtorch_cpu", "libtorch_cuda");
  if (!o.json_path.empty()) bench::write_json(o.json_path, set);
  if (!o.csv_path.empty()) bench::write_csv(o.csv_path, set.results);

  int bad = 0;
  for (const auto& r : set.results)
    bad += r.status == bench::Status::incorrect || r.status == bench::Status::failed;
  if (bad) std::cout << "\n" << bad << " case(s) incorrect or failed\n";
  return o.strict && bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "myconv: which convolution implementation is fastest here, what it costs to get "
      "ready, and whether its answer is right"};
  app.set_version_flag("--version",
                       bench::project_version() + " (git " + bench::git_commit() + ")");
  auto& s = o.settings;
  app.add_option("--input_size,--input-size", s.input_size, "Input height = width (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--kernel_size,--kernel-size", s.kernel_size, "Kernel height = width (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--batch_size,--batch-size", s.batch_size, "Batch size (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--in_channels,--in-channels", s.in_channels, "Input channels (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--out_channels,--out-channels", s.out_channels, "Output channels (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--stride", s.stride, "Stride (list)")->capture_default_str()->delimiter(',');
  app.add_option("--padding", s.padding, "Zero padding on each side (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--dilation", s.dilation, "Dilation, 1 = dense kernel (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--groups", s.groups, "Groups; channels must divide by it (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--dtype", o.dtypes, "Data types: fp32 tf32 fp16 bf16 (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--layout", o.layouts, "Layouts: nchw nhwc (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--problem", s.descriptors,
                 "Problem descriptor, e.g. mb32ic64ih56oc64kh3ph1 (repeatable); replaces the "
                 "dimension options");
  app.add_option("--shapes", s.shape_files,
                 "Shape file: one descriptor per line, e.g. experiments/shapes/resnet50.txt");
  app.add_option("--backend", o.backends, "Backend to run (repeatable; default: all built)")
      ->delimiter(',');
  app.add_option("--halide-schedule", o.backend_options.halide_schedule,
                 "Halide schedule: manual adams2019 mullapudi2016 li2018")
      ->capture_default_str()
      ->check(CLI::IsMember({"manual", "adams2019", "mullapudi2016", "li2018"}));
  app.add_option("--variant", o.backend_options.variant,
                 "Kernel variant of im2col_gemm_cuda: fp32 1 im2col+GEMM, 2 implicit GEMM, 3 "
                 "implicit GEMM with a row table; tf32/fp16/bf16 tensor cores 4 implicit GEMM, 5 "
                 "im2col+GEMM, 6 nhwc repack + implicit GEMM; any dtype 7 direct small-OC "
                 "(default: 7 where output channels per group <= 32, else 3 for fp32, 6 for "
                 "the others)");
  app.add_option("--cudnn-api", o.backend_options.cudnn_api,
                 "cuDNN API: graph (a prebuilt execution plan run by cudnnBackendExecute, as "
                 "PyTorch does) or legacy (cudnnConvolutionForward)")
      ->capture_default_str()
      ->check(CLI::IsMember({"graph", "legacy"}));
  app.add_option("--cudnn-algo", o.backend_options.cudnn_algo,
                 "cuDNN algorithm: heuristic, search (timed as compile time) or a number (legacy: "
                 "algorithm 0-7; graph: the Nth engine config the dtype's math allows, from 0)")
      ->capture_default_str();
  app.add_flag("--torch-cudnn-benchmark", o.backend_options.torch_cudnn_benchmark,
               "libtorch_cuda: cudnn.benchmark on (the first call of a shape searches every "
               "plan, timed as compile time)");
  app.add_option(
         "--timing", o.timing,
         "real: every call synchronized, overheads included; pure: calls back to back "
         "between one timer pair, or a replayed CUDA graph where the backend allows capture")
      ->capture_default_str()
      ->check(CLI::IsMember({"real", "pure"}));
  app.add_flag("--no-graph", o.no_graph, "--timing pure: loop calls instead of replaying a graph");
  app.add_option("--pure-runs", o.pure_runs,
                 "--timing pure: calls per sample (default: enough for about 2 ms)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--cold-cache", o.cold_cache,
               "Flush the GPU's L2 (twice its size written) or the CPU caches before every sample");
  app.add_option("--warmup", o.measure.warmup_iters, "Warm-up runs before sampling")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-iters", o.measure.min_iters, "Samples needed before stopping early")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-iters", o.measure.max_iters, "Most samples per case")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--min-time-ms", o.measure.min_time_ms, "Least sampling time per case")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-time-ms", o.measure.max_time_ms, "Most sampling time per case")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--target-cv", o.measure.target_cv,
                 "Stop once the coefficient of variation is below this")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Seed of the random inputs")->capture_default_str();
  app.add_option("--json", o.json_path, "Write results as JSON (results/README.md has the schema)");
  app.add_option("--csv", o.csv_path, "Write results as CSV");
  app.add_option("--save-tensors", o.save_tensors_dir,
                 "Write input, weights, reference and each backend's output as .npy under DIR");
  app.add_flag("--list-backends", o.list_backends, "List the backends and exit");
  app.add_flag("--source-info", o.source_info,
               "Print the source this myconv was built from (commit, difference, origin) as "
               "JSON and exit");
  app.add_option("--write-source-diff", o.write_source_diff,
                 "Write the built tree's difference from its commit to FILE (empty when none) "
                 "and exit");
  app.add_flag("--no-source-diff", o.no_source_diff,
               "--json: do not write the source difference beside the JSON (a runner writes it "
               "once per run folder)");
  app.add_flag("--list-cases", o.list_cases,
               "Print the (problem, backend) cases that would run, one JSON record per line, "
               "and exit");
  app.add_flag("--strict", o.strict, "Exit 1 when any case is incorrect or failed");
  app.add_flag("--debug", o.debug,
               "After each case's result block, a [DEBUG] block from traced calls made after the "
               "timed sampling: events, top GPU kernels (CUPTI), copies, kernels per call, launch "
               "latency, host phases");
  app.add_option("--trace-dir", o.trace_dir,
                 "Write one Chrome trace JSON per backend and problem into DIR (Perfetto, "
                 "chrome://tracing): host phases, GPU kernels and copies, launch flows");
  app.add_option("--trace-calls", o.trace_calls,
                 "Traced calls per case for --debug and --trace-dir, after the timed sampling")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "myconv: error: " << e.what() << " (see --help)\n";
    return 2;
  }

  try {
    const bool dims_given =
        app.count("--input_size") + app.count("--kernel_size") + app.count("--batch_size") +
            app.count("--in_channels") + app.count("--out_channels") + app.count("--stride") +
            app.count("--padding") + app.count("--dilation") + app.count("--groups") >
        0;
    if (dims_given && !(s.descriptors.empty() && s.shape_files.empty()))
      throw UsageError("--problem/--shapes replace the dimension options; give one or the other");
    s.dtypes.clear();
    for (const auto& d : o.dtypes) s.dtypes.push_back(bench::parse_data_type(d));
    s.layouts.clear();
    for (const auto& l : o.layouts) s.layouts.push_back(conv::parse_layout(l));
    if (o.measure.min_time_ms > o.measure.max_time_ms)
      throw UsageError("--min-time-ms must not exceed --max-time-ms");

    std::string prefix = "myconv";
    if (app.count("--seed")) prefix += " --seed " + std::to_string(o.seed);
    if (o.backend_options.halide_schedule != "manual")
      prefix += " --halide-schedule " + o.backend_options.halide_schedule;
    if (!o.backend_options.variant.empty()) prefix += " --variant " + o.backend_options.variant;
    if (o.backend_options.cudnn_api != conv::BackendOptions{}.cudnn_api)
      prefix += " --cudnn-api " + o.backend_options.cudnn_api;
    if (o.backend_options.cudnn_algo != "heuristic")
      prefix += " --cudnn-algo " + o.backend_options.cudnn_algo;
    if (o.backend_options.torch_cudnn_benchmark) prefix += " --torch-cudnn-benchmark";
    if (o.timing != "real") prefix += " --timing " + o.timing;
    if (o.no_graph) prefix += " --no-graph";
    if (o.pure_runs > 0) prefix += " --pure-runs " + std::to_string(o.pure_runs);
    if (o.cold_cache) prefix += " --cold-cache";
    return run(o, prefix);
  } catch (const UsageError& e) {
    std::cerr << "myconv: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "myconv: internal error: " << e.what() << "\n";
    return 1;
  }
}
