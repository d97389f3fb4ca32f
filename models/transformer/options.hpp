// mytransformer's own command-line options (--model to --sdpa-backend), in --help's order: the
// suite's part of the settings room (the settings themselves and their expansion into problems
// are models/transformer/settings.hpp). Inline, for the driver alone: it parses CLI11 already, so
// these add no translation unit that would parse it again (a few seconds per build, twice in CI).
#pragma once

#include <cstdint>
#include <limits>

#include <CLI/CLI.hpp>

#include "core/option_checks.hpp"
#include "models/transformer/settings.hpp"

namespace transformer {

// mytransformer's own options on app, filling s; the driver adds the shared ones
// (core/driver.hpp), --output-file and --dump-logits.
inline void add_run_options(CLI::App& app, RunSettings& s) {
  app.add_option("--model", s.models,
                 "Built-in config (gpt2, gpt2-medium, gpt2-large, distilgpt2, qwen2-0.5b, "
                 "qwen2.5-0.5b, qwen2-1.5b, llama-3.2-1b; random weights), a Hugging Face "
                 "checkpoint folder, or a config.json alone (random weights); a list runs each")
      // The list as given ("gpt2"), not CLI11's container form ("[gpt2]").
      ->default_str(CLI::detail::join(s.models, ","))
      ->delimiter(',');
  app.add_option("--problem", s.problems,
                 "A case instead of the grid, e.g. mb4in512out128 or train_mb4in512, with "
                 ":n\"MODEL\" for one model's (as --list-cases prints them; repeatable)");
  app.add_option("--device", s.device, "auto, cpu, cuda, or the CUDA device index N (cuda:N)")
      ->capture_default_str();
  app.add_option("--preset", s.preset,
                 "Grid preset: default quick_test small_scale medium_scale large_scale "
                 "batch_size_study input_length_study (--show-presets)");
  app.add_option("--config-file", s.config_file,
                 "JSON with the keys batch_sizes, input_lengths, output_length, num_runs, "
                 "temperature, top_p, max_batch_input_product (over the preset)");
  app.add_flag("--show-presets", s.show_presets, "List the presets and exit");
  app.add_flag("--show-config", s.show_config,
               "Print the model's config.json (as transformers writes it) and exit");
  app.add_option("--create", s.create, "Write preset PRESET as a config file (with --output)");
  app.add_option("--output", s.create_output, "File --create writes");
  // Sizes of at most 9 digits, as the descriptors write them (models/transformer/problem.hpp).
  const auto size = bench::integer_in(1, 999999999);
  app.add_option("--batch-size", s.batch_sizes, "Batch sizes (list)")->delimiter(',')->check(size);
  app.add_option("--input-length", s.input_lengths, "Prompt lengths (list)")
      ->delimiter(',')
      ->check(size);
  app.add_option("--output-length", s.output_length, "Tokens generated per row")->check(size);
  app.add_option("--num-runs", s.num_runs, "Timed repetitions per config")
      ->check(bench::integer_in(1, 1000000));
  app.add_option("--temperature", s.temperature, "Sampling temperature (0: greedy)")
      ->check(bench::non_negative_number());
  app.add_option("--top-p", s.top_p, "Nucleus sampling mass (with --temperature)")
      ->check(bench::finite_number(0, 1, /*min_exclusive=*/true));
  app.add_option("--max-batch-input-product", s.max_batch_input_product,
                 "Configs with batch x input length above this are skipped (default 131072)")
      ->check(bench::integer_in(1, std::numeric_limits<std::int64_t>::max()));
  app.add_option("--dtype", s.dtypes, "fp32 fp16 bf16 (list; default fp16 on cuda, fp32 on cpu)")
      ->delimiter(',');
  app.add_option(
         "--backend", s.impls,
         "Implementations: libtorch_cpu libtorch_cuda libtorch_graph own_cuda hf_transformers "
         "(list; "
         "default every one built for the device)")
      ->delimiter(',');
  app.add_option("--task", s.task, "generate (default) or train")->capture_default_str();
  app.add_option("--sdpa-backend", s.sdpa_backend,
                 "scaled_dot_product_attention's kernels: auto (LibTorch picks), or only cudnn, "
                 "flash, efficient or math")
      ->capture_default_str();
}

}  // namespace transformer
