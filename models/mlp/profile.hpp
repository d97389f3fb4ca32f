// --profile for the LibTorch implementations: one call of run_mlp under LibTorch's profiler
// (torch/csrc/autograd/profiler_kineto.h: the Kineto profiler API, CPU and, on a CUDA LibTorch,
// CUDA activities, with input shapes and stacks), turned into the lecture's three outputs:
//  - the top-ops table, key_averages().table(sort_by="cuda_time_total") in C++: events grouped by
//    name with calls, self and total CPU time, self and total CUDA time, sorted by CUDA total (CPU
//    total where no CUDA time was recorded). Self = the event's own time less its children's
//    (nesting from the events' intervals on each thread); a kernel's time belongs to the op whose
//    correlation id it links to, and counts in the totals of that op's ancestors;
//  - the Chrome trace (Perfetto): the profiler's own file where this LibTorch has Kineto, else one
//    written here from the same events (Debian's LibTorch 1.13 is built without Kineto);
//  - the stacks of self CUDA time for a flame graph, folded ("frame;frame;op self_us" per line,
//    as flamegraph.pl and speedscope read), the frames being the op nesting (forward/backward
//    ranges, modules' ops, ATen ops); self CPU time where no CUDA time was recorded.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "models/mlp/backend.hpp"

namespace mlp {

struct ProfileOutput {
  std::string table;  // the console table
  nlohmann::ordered_json top_ops = nlohmann::ordered_json::array();  // its rows
  std::string trace_path, stacks_path;
  std::string sort_key;        // "cuda_time_total" or "cpu_time_total"
  std::string stacks_metric;   // "self_cuda_time_us" or "self_cpu_time_us"
  std::string trace_writer;    // "kineto" or "mymlp (LibTorch without Kineto)"
  std::string profiler;        // what was enabled, e.g. "LibTorch 1.13.0 profiler, KINETO state"
  int events = 0;
};

// Profiles run() (then sync()) once; writes DIR/<stem>.trace.json and DIR/<stem>.stacks.txt.
// cuda: also record CUDA activity. Throws std::runtime_error when the profiler fails.
ProfileOutput profile_libtorch(const std::function<void()>& run, const std::function<void()>& sync,
                               bool cuda, const std::string& dir, const std::string& stem,
                               int top_rows = 20);

nlohmann::ordered_json to_json(const ProfileOutput& p);

// One case's --profile: profile_libtorch of one call of inst into dir, the files named by r
// (report.hpp file_stem); r.extra["profile"] gets the record (to_json). Returns the table.
std::string profile_case(Instance& inst, bench::Result& r, bool cuda, const std::string& dir);

}  // namespace mlp
