// Plain result records. Measurement fills them; printers (console, JSON, CSV) only read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare.hpp"
#include "core/stats.hpp"

namespace bench {

// passed: ran and matched the reference. skipped: not attempted (reason says why, e.g. no GPU).
// unsupported: the backend cannot run this case (reason). incorrect: ran, output wrong.
// failed: threw or crashed while running (reason holds the error). timeout: did not finish within
// the runner's per-case time limit (written by scripts/run_all_experiments.sh).
enum class Status { passed, skipped, unsupported, incorrect, failed, timeout };

std::string to_string(Status s);
Status parse_status(const std::string& text);

struct Result {
  std::string suite;    // "conv", later "matmul", "mlp", ...
  std::string backend;  // registry name, e.g. "onednn_cpu"
  std::string device;   // "cpu" or "cuda"
  std::string problem;  // canonical descriptor of the problem
  std::string name;     // optional label from a shape file, e.g. "resnet50_res2_3x3"
  std::string dtype;
  Status status = Status::skipped;
  std::string reason;
  std::string algorithm;  // implementation the backend ran (oneDNN impl, cuDNN algo, schedule)
  std::optional<std::int64_t> workspace_bytes;

  std::optional<double> compile_time_ms;      // JIT, plan, primitive creation, algorithm search
  std::optional<double> first_run_ms;         // first run after setup (module load, lazy init)
  std::optional<Summary> cpu_time_ms;         // host time inside the call
  std::optional<Summary> gpu_time_ms;         // device time; empty on a CPU backend
  std::optional<Summary> total_time_ms;       // call to synchronized result
  std::optional<Summary> thread_cpu_time_ms;  // CPU time of the calling thread per call
  std::string stop_reason;                    // why sampling ended (see MeasureConfig)
  // How samples were taken: "real" (each call synchronized), "pure:back-to-back" (runs_per_sample
  // calls between one timer pair) or "pure:graph" (a captured graph of runs_per_sample calls).
  std::string timing_mode;
  int runs_per_sample = 1;
  bool cold_cache = false;  // caches flushed before every sample
  // Device clocks before and after sampling (core/device.hpp clocks_json), null when not read.
  nlohmann::ordered_json clocks = nullptr;
  std::optional<bool> throttled;  // SM clock below kThrottledFraction of its maximum

  std::optional<Correctness> correctness;
  std::optional<bool> shape_ok;  // output shape the backend produced equals the expected one

  double flop = 0;   // arithmetic work of one call
  double bytes = 0;  // fewest bytes one call must move (inputs read once, output written once)
  nlohmann::ordered_json params = nlohmann::ordered_json::object();  // problem fields, flat
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();   // backend-specific facts
  // Suite-specific figures derived from the measurement, units in their names (results/README.md),
  // e.g. the op suite's bandwidth_gbs, bandwidth_efficiency, speedup_vs_pytorch, score_band.
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  std::string command;  // command line that reproduces this case alone
  // Where the wall time of the case's slot went, in ms (results/README.md `slot_ms`): the slot
  // runs from the end of the previous case's record (for an invocation's first case, from its
  // process start) to the end of this one's. The case runner fills prepare, compile, first_run,
  // check, sampling and after_sampling; the driver's finish_case adds process_start,
  // session, device_context, reference (the problem's inputs and float64 reference, on its first
  // case), writing (printing and rewriting the result files), other (the rest) and total. null
  // where no case ran (a record the runner synthesized).
  nlohmann::ordered_json slot_ms = nullptr;

  // The time that ranks backends: median GPU time when measured, else median total time.
  std::optional<double> primary_time_ms() const;
};

struct ResultSet {
  nlohmann::ordered_json system = nlohmann::ordered_json::object();
  std::vector<Result> results;
  // Suite-level blocks written at the top level after `results`, each under its key (the MLP
  // suite's `studies`: fits over several cases). Empty for the conv and op suites.
  nlohmann::ordered_json blocks = nlohmann::ordered_json::object();
};

inline constexpr int kSchemaVersion = 2;  // results/README.md: what changed from 1

nlohmann::ordered_json to_json(const Summary& s);
nlohmann::ordered_json to_json(const Correctness& c);
nlohmann::ordered_json to_json(const Result& r);
nlohmann::ordered_json to_json(const ResultSet& set);

}  // namespace bench
