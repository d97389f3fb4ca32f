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
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
#include "core/paths.hpp"
#include "core/system_info.hpp"
#include "core/torch/libtorch_common.hpp"
#include "experiments/registry/transformer.hpp"
#include "models/transformer/options.hpp"
#include "models/transformer/suite_run.hpp"

namespace {

using bench::UsageError;
using namespace transformer;

struct Options {
  bench::DriverOptions common;
  RunSettings run;
  std::string output_prefix;
};

int run(Options& o, CLI::App& app) {
  bench::DriverOptions& c = o.common;
  bench::libtorch::apply_cpu_threads();  // --threads
  Model::select_sdpa_backend(o.run.sdpa_backend);
  SuiteRun suite(o.run, presets_path(), c.seed);
  bench::Suite<ModelProblem, RegistryEntry> s;
  s.program = "mytransformer";
  s.backends = bench::canonical_backend_names(o.run.impls);
  s.known_backends = known_implementation_names();
  s.own_listing = [&] { return suite.list(std::cout); };
  s.make_registry = [] { return make_registry(); };
  s.problems = [&](std::vector<std::string>*) {
    if (!o.output_prefix.empty()) {
      const std::string stamp = bench::format_now("%Y%m%d_%H%M%S", false);
      c.json_path = o.output_prefix + "_" + stamp + ".json";
      c.csv_path = o.output_prefix + "_" + stamp + ".csv";
    }
    return suite.problems(c.timing, bench::select_cuda_device,
                          [&] { (void)bench::check_common_options(app, c); });
  };
  s.select = [&](const std::vector<RegistryEntry>& registry) {
    return suite.select(registry, c.available_only);
  };
  s.name_of = [&](const ModelProblem& p) { return suite.name_of(p); };
  s.case_need = [&](const ModelProblem& p, const RegistryEntry& e) {
    return suite.case_need(p, e);
  };
  s.gated = [&](const ModelProblem& p) { return suite.gated(p); };
  s.identity = [&](const RegistryEntry& e, const ModelProblem& p, const bench::CaseOptions& opt) {
    return suite.identity(e, p, opt);
  };
  s.command_head_of = [&](const ModelProblem& p) { return suite.command_head(p); };
  s.before_session = [&](const std::vector<const RegistryEntry*>&, const bench::MemoryGate&) {
    return suite.before_session(std::cout, c.list_cases);
  };
  s.banner_tail = [&] { return suite.banner_tail(); };
  s.before_cases = [&](bench::Session& session, const std::vector<const RegistryEntry*>&,
                       const std::vector<ModelProblem>&) {
    suite.before_cases(std::cout, session.set.system);
  };
  s.print_count = [&](std::size_t n, std::size_t m) { suite.print_count(std::cout, n, m); };
  s.before_case = [&](bench::Session&, const RegistryEntry& e, const ModelProblem& p) {
    suite.before_case(std::cout, e, p);
  };
  s.run = [&](bench::Session&, const RegistryEntry& e, const ModelProblem& p,
              const bench::CaseOptions& options) {
    CaseOutput out = suite.run(e, p, options);
    return std::optional<bench::CaseRun>({std::move(out.result), out.trace});
  };
  s.after_case = [&](bench::Session&, const bench::Result& r) { suite.after_case(std::cout, r); };
  s.report = [&](bench::Session& session) { suite.report(std::cout, session.set.results); };
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "mytransformer: prefill, per-token decode, memory and training steps of decoder-only "
      "transformers (GPT-2, Qwen2, Llama) on LibTorch"};
  bench::add_version_flag(app);
  add_run_options(app, o.run);
  app.add_option("--output-file", o.output_prefix,
                 "Write PREFIX_YYYYMMDD_HHMMSS.json and .csv (instead of --json/--csv)");
  app.add_option("--dump-logits", o.run.dump_logits,
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
        o.run.model_given = app.count("--model") > 0;
        o.run.task_given = app.count("--task") > 0;
        if (!o.output_prefix.empty() && (!o.common.json_path.empty() || !o.common.csv_path.empty()))
          throw UsageError("--output-file replaces --json and --csv; give one or the other");
        if (!o.output_prefix.empty())  // the folder PREFIX_YYYYMMDD_HHMMSS.json and .csv go into
          bench::check_output_file("--output-file", o.output_prefix + "_x.json");
        return run(o, app);
      },
      {{"--impl", "--backend"}});
}
