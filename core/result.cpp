#include "core/result.hpp"

#include <cmath>

#include "core/case_result.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"

namespace bench {

std::string to_string(Status s) {
  switch (s) {
    case Status::passed:
      return "passed";
    case Status::skipped:
      return "skipped";
    case Status::unsupported:
      return "unsupported";
    case Status::incorrect:
      return "incorrect";
    case Status::failed:
      return "failed";
    case Status::timeout:
      return "timeout";
  }
  return "?";
}

Status parse_status(const std::string& text) {
  for (Status s : {Status::passed, Status::skipped, Status::unsupported, Status::incorrect,
                   Status::failed, Status::timeout})
    if (to_string(s) == text) return s;
  throw UsageError("unknown status '" + text + "'");
}

std::optional<double> Result::primary_time_ms() const {
  if (gpu_time_ms) return gpu_time_ms->median;
  if (total_time_ms) return total_time_ms->median;
  return std::nullopt;
}

// JSON has no Inf or NaN: such numbers become null.
static nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

template <class T>
static nlohmann::ordered_json optional_json(const std::optional<T>& v) {
  return v ? to_json(*v) : nlohmann::ordered_json(nullptr);
}

static nlohmann::ordered_json optional_number(const std::optional<double>& v) {
  return v ? number(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json to_json(const Summary& s) {
  return {{"median", number(s.median)}, {"min", number(s.min)},        {"mean", number(s.mean)},
          {"max", number(s.max)},       {"p10", number(s.p10)},        {"p90", number(s.p90)},
          {"stddev", number(s.stddev)}, {"cv", number(s.cv)},          {"samples", s.samples},
          {"outliers", s.outliers},     {"outlier_rule", kOutlierRule}};
}

nlohmann::ordered_json to_json(const Correctness& c) {
  nlohmann::ordered_json first = nlohmann::ordered_json::array();
  for (const auto& m : c.first_mismatches)
    first.push_back({{"index", m.index}, {"got", number(m.got)}, {"expected", number(m.expected)}});
  return {{"passed", c.passed},
          {"max_abs_err", number(c.max_abs_err)},
          {"rel_l2_err", number(c.rel_l2_err)},
          {"tolerance", {{"atol", c.tolerance.atol}, {"rtol", c.tolerance.rtol}}},
          {"elements", c.elements},
          {"mismatches", c.mismatches},
          {"non_finite", c.non_finite},
          {"mistrusted", c.mistrusted},
          {"first_mismatches", first},
          {"message", c.message}};
}

nlohmann::ordered_json to_json(const Result& r) {
  nlohmann::ordered_json j;
  put_identity(j, r);
  j["status"] = to_string(r.status);
  j["reason"] = r.reason;
  j["algorithm"] = r.algorithm;
  j["workspace_bytes"] = r.workspace_bytes ? nlohmann::ordered_json(*r.workspace_bytes)
                                           : nlohmann::ordered_json(nullptr);
  j["compile_time_ms"] = optional_number(r.compile_time_ms);
  j["first_run_ms"] = optional_number(r.first_run_ms);
  j["cpu_time_ms"] = optional_json(r.cpu_time_ms);
  j["gpu_time_ms"] = optional_json(r.gpu_time_ms);
  j["total_time_ms"] = optional_json(r.total_time_ms);
  j["thread_cpu_time_ms"] = optional_json(r.thread_cpu_time_ms);
  j["stop_reason"] = r.stop_reason;
  j["timing_mode"] = r.timing_mode;
  j["runs_per_sample"] = r.runs_per_sample;
  j["cold_cache"] = r.cold_cache;
  j["clocks"] = r.clocks;
  j["throttled"] = r.throttled ? nlohmann::ordered_json(*r.throttled) : nullptr;
  j["correctness"] = optional_json(r.correctness);
  if (j["correctness"].is_object())
    j["correctness"]["shape_ok"] = r.shape_ok ? nlohmann::ordered_json(*r.shape_ok) : nullptr;
  j["flop"] = r.flop;
  j["bytes"] = r.bytes;
  const auto t = r.primary_time_ms();
  j["gflop_per_s"] = t && *t > 0 ? number(r.flop / (*t * 1e6)) : nlohmann::ordered_json(nullptr);
  j["gbyte_per_s"] = t && *t > 0 ? number(r.bytes / (*t * 1e6)) : nlohmann::ordered_json(nullptr);
  j["params"] = r.params;
  j["extra"] = r.extra;
  if (!r.metrics.empty()) j["metrics"] = r.metrics;
  if (!r.slot_ms.is_null()) j["slot_ms"] = r.slot_ms;
  j["command"] = r.command;
  return j;
}

nlohmann::ordered_json to_json(const ResultSet& set) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const auto& r : set.results) results.push_back(to_json(r));
  nlohmann::ordered_json out = {
      {"schema_version", kSchemaVersion}, {"system", set.system}, {"results", results}};
  for (const auto& [key, value] : set.blocks.items()) out[key] = value;
  return out;
}

}  // namespace bench
