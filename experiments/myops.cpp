// myops: runs tensor ops (elementwise, activation, reduction, normalization, matmul, memory)
// through our CUDA kernels, PyTorch (LibTorch), CUB, cuBLASLt and oneDNN, and reports per case the
// GPU, CPU and total time, the bandwidth against the machine's measured copy bandwidth, the
// speed-up against PyTorch with Genesis's score band, and the correctness against float64.
//
//   myops                                   every op, size class medium, fp32
//   myops --category reduction --size all --dtype fp32,bf16
//   myops --problem sum:4x512x896:axis=2 --backend own_cuda --backend libtorch_cuda
#include <algorithm>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/peak.hpp"
#include "experiments/registry/ops.hpp"
#include "ops/bench.hpp"
#include "ops/score.hpp"
#include "ops/settings.hpp"
#if MYCONV_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "baselines/ops/matmul_ceiling.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_peak.hpp"
#endif

namespace {

using bench::UsageError;

struct Options {
  bench::DriverOptions common;  // measurement, timing, seed, outputs, listing, source, tracing
  ops::Settings settings;
  std::vector<std::string> dtypes = {"fp32"};
  std::vector<std::string> backends;
  ops::BackendOptions backend_options;
  std::string markdown_path;
  bool fast = false, list_ops = false, no_peaks = false;
};

// The machine's measured limits, once, for the devices the selected backends run on.
void measure_limits(bench::ResultSet& set, bool cpu, bool gpu,
                    const std::vector<bench::DataType>& matmul_dtypes) {
  if (cpu) {
    std::cout << "measuring the host's copy bandwidth (STREAM copy)...\n";
    set.system["bandwidth"]["cpu"] = bench::measure_cpu_copy_bandwidth();
  }
#if MYCONV_HAVE_CUDA
  if (gpu && bench::cuda_device_available().ok) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) device = 0;
    std::cout << "measuring device " << device << "'s copy bandwidth (device-to-device copy)...\n";
    set.system["bandwidth"]["cuda"] =
        nlohmann::ordered_json::array({bench::measure_cuda_copy_bandwidth(device)});
    if (!matmul_dtypes.empty()) {
      std::cout << "measuring the matmul ceiling (cuBLASLt)...\n";
      set.system["matmul_ceiling"] = ops::measure_matmul_ceiling(matmul_dtypes);
    }
  }
#else
  (void)gpu;
  (void)matmul_dtypes;
#endif
}

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  bench::Suite<ops::Problem, ops::RegistryEntry> s;
  s.program = "myops";
  s.command_head = command_head;
  s.backends = o.backends;
  s.known_backends = ops::known_backend_names();
  s.own_listing = [&] {
    if (o.list_ops) ops::print_op_list(std::cout);
    return o.list_ops;
  };
  s.make_registry = [&] { return ops::make_registry(o.backend_options); };
  s.problems = [&](std::vector<std::string>* notes) {
    bench::check_output_file("--markdown", o.markdown_path);
    return ops::expand(o.settings, notes);
  };
  // Run order: PyTorch first on each device, so that every other backend's score is at hand
  // when its case ends.
  s.order = [](std::vector<const ops::RegistryEntry*>& selected) {
    std::stable_sort(selected.begin(), selected.end(), [](const auto* a, const auto* b) {
      auto key = [](const ops::RegistryEntry* e) {
        return 2 * (e->device == "cuda") + (e->name != ops::reference_backend(e->device));
      };
      return key(a) < key(b);
    });
  };
  s.name_of = [](const ops::Problem& p) { return p.str_with_name(); };
  s.memory_need = [](const ops::Problem& p, bool gpu) { return ops::memory_need(p, gpu); };
  s.identity = [](const ops::RegistryEntry& e, const ops::Problem& p,
                  const bench::CaseOptions& options) {
    return ops::make_result(e.name, e.device, p, options);
  };
  s.before_cases = [&](bench::Session& session, const std::vector<const ops::RegistryEntry*>& sel,
                       const std::vector<ops::Problem>& problems) {
    if (o.no_peaks) {
      session.set.system["bandwidth"] = {{"why", "not measured (--no-peaks)"}};
      return;
    }
    std::vector<bench::DataType> matmul_dtypes;
    for (const auto& p : problems)
      if (p.op == ops::Op::matmul &&
          std::find(matmul_dtypes.begin(), matmul_dtypes.end(), p.dtype) == matmul_dtypes.end())
        matmul_dtypes.push_back(p.dtype);
    auto uses = [&](const std::string& device) {
      return std::any_of(sel.begin(), sel.end(),
                         [&](const auto* e) { return e->backend && e->device == device; });
    };
    measure_limits(session.set, uses("cpu"), uses("cuda"), matmul_dtypes);
  };
  ops::HostData data;
  s.begin_problem = [&](bench::Session& session, const ops::Problem& p, bool host_fits) {
    ops::print_problem(std::cout, p);
    data = bench::timed_reference(
        session, [&] { return host_fits ? ops::make_host_data(p, c.seed) : ops::HostData{}; });
  };
  s.run = [&](bench::Session& session, const ops::RegistryEntry& e, const ops::Problem& p,
              const bench::CaseOptions& options) {
    ops::CaseOutput out =
        ops::run_case(e.backend.get(), e.name, e.device, e.why_missing, p, data, options);
    const auto& set = session.set;
    ops::fill_metrics(out.result, ops::reference_of(set.results, out.result), set.system);
    return std::optional<bench::CaseRun>({std::move(out.result), out.trace});
  };
  s.report = [&](bench::Session& session) {
    std::cout << "\n== Scores (bandwidth against the measured copy bandwidth; speed-up = PyTorch "
                 "time / backend time on the same device) ==\n";
    ops::print_scores(std::cout, session.set.results);
    if (!o.markdown_path.empty()) ops::write_markdown(o.markdown_path, session.set);
  };
  s.written = {{o.markdown_path, "results, Markdown"}};
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "myops: which implementation of a tensor op is fastest here, how close it comes to the "
      "machine's measured limits, and whether its answer is right"};
  bench::add_version_flag(app);
  auto& s = o.settings;
  app.add_option("--size", s.sizes,
                 "Size classes: small medium large xlarge batched, or all (every class but "
                 "xlarge); each is an op list in experiments/ops/ (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--category", s.categories,
                 "Only these categories: element activation reduction normalization matmul "
                 "memory (list)")
      ->delimiter(',');
  app.add_option("--op", s.ops, "Only these ops, e.g. add, softmax, transpose (list)")
      ->delimiter(',');
  app.add_option("--dtype", o.dtypes,
                 "Data types: fp32 fp16 bf16, tf32 (matmul only) (list); a descriptor naming one "
                 "keeps it")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--problem", s.descriptors,
                 "Op descriptor, e.g. add:4096x4096+1x4096:bf16 (repeatable); replaces --size");
  app.add_option("--ops-file", s.ops_files,
                 "Op list file: one descriptor per line (repeatable); replaces --size");
  app.add_option("--backend", o.backends, "Backend to run (repeatable; default: all built)")
      ->delimiter(',');
  app.add_option("--variant", o.backend_options.variant,
                 "Kernel variant of own_cuda (default: the best for each op; ops/cuda/*.cu list "
                 "them)");
  app.add_flag("--fast", o.fast,
               "Short sampling (1 warm-up, 10 to 100 ms per case) for a quick look");
  app.add_flag("--no-peaks", o.no_peaks,
               "Do not measure the copy bandwidth and matmul ceiling at the start (no "
               "efficiencies)");
  app.add_option("--markdown", o.markdown_path, "Write a Markdown table of the results to FILE");
  app.add_flag("--list-ops", o.list_ops, "List the ops and size classes and exit");
  bench::add_common_options(app, o.common);

  return bench::run_main(app, argc, argv, "myops", [&] {
    o.backends = bench::canonical_backend_names(o.backends);  // older names too
    if (app.count("--size") && !(s.descriptors.empty() && s.ops_files.empty()))
      throw UsageError("--problem/--ops-file replace --size; give one or the other");
    s.dtypes.clear();
    for (const auto& d : o.dtypes) s.dtypes.push_back(bench::parse_data_type(d));
    if (o.fast) {  // only what the user did not set
      auto& m = o.common.measure;
      if (!app.count("--warmup")) m.warmup_iters = 1;
      if (!app.count("--max-time-ms")) m.max_time_ms = 100;
      if (!app.count("--min-time-ms")) m.min_time_ms = std::min(10.0, m.max_time_ms);
      if (!app.count("--min-iters")) m.min_iters = 3;
    }
    std::string prefix = "myops";
    if (!o.backend_options.variant.empty()) prefix += " --variant " + o.backend_options.variant;
    if (o.fast) prefix += " --fast";
    (void)bench::check_common_options(app, o.common);
    return run(o, app, prefix);
  });
}
