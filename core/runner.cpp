#include "core/runner.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"

namespace bench {
namespace {

// Adds ms to the phase `key` of the case's slot (Result::slot_ms).
void add_slot(Result& r, const char* key, double ms) {
  if (!r.slot_ms.is_object()) r.slot_ms = nlohmann::ordered_json::object();
  r.slot_ms[key] = r.slot_ms.value(key, 0.0) + ms;
}

// Runs `run` once from a poisoned output and lets the suite judge the output. The time beside the
// run (poisoning, reading and comparing the output) goes to the slot's `check`.
CheckOutcome check_once(Instance& inst, const std::function<void()>& run, const CaseHooks& hooks,
                        Result& r, bool after_sampling, double* run_ms) {
  WallTimer all;
  inst.poison_output();
  inst.sync();
  WallTimer t;
  run();
  inst.sync();
  const double ran = t.elapsed().count();
  if (run_ms) *run_ms = ran;
  CheckOutcome outcome = hooks.check(inst, r, after_sampling);
  add_slot(r, "check", all.elapsed().count() - ran);
  return outcome;
}

// Calls per sample in pure mode: enough for about 2 ms of work per sample, from the fastest of
// three synchronized calls, between 1 and 1000.
int pure_runs_for(Instance& inst) {
  double fastest = 1e30;
  for (int i = 0; i < 3; ++i) {
    WallTimer t;
    inst.run();
    inst.sync();
    fastest = std::min(fastest, t.elapsed().count());
  }
  return static_cast<int>(std::clamp(std::ceil(2.0 / std::max(fastest, 1e-6)), 1.0, 1000.0));
}

// " (known issue: ...)" when the backend named a library defect for this case, else "".
std::string known_issue_suffix(const nlohmann::ordered_json& extra) {
  const auto it = extra.find("known_issue");
  if (it == extra.end() || !it->is_string()) return "";
  return " (known issue: " + it->get<std::string>() + ")";
}

// The timed part of a case whose first check passed: sampling, clocks, the second check, the
// traced calls. Fills r; returns false when the second check failed.
bool sample(Instance& inst, const CaseHooks& hooks, const CaseOptions& options, Tracer* tracer,
            Result& r) {
  const std::function<void()> single = [&] { inst.run(); };
  Workload w;
  w.run = single;
  w.sync = [&] { inst.sync(); };
  w.device_timer = inst.device_timer();
  const bool on_device = r.device == "cuda";
  DeviceServices* dev = on_device ? options.device_services : nullptr;

  std::optional<HostCacheFlusher> host_flush;
  if (options.cold_cache) {
    if (on_device) {
      if (!dev) throw std::runtime_error("--cold-cache: no device services to flush the L2");
      w.before_sample = [dev] { dev->flush_cache(); };
      r.extra["cache_flush_bytes"] = dev->cache_flush_bytes();
    } else {
      host_flush.emplace();
      w.before_sample = [&] { host_flush->flush(); };
      r.extra["cache_flush_bytes"] = host_flush->bytes();
    }
    r.cold_cache = true;
  }

  std::unique_ptr<Replay> replay;
  r.timing_mode = "real";
  WallTimer sizing_timer;
  if (options.timing == TimingMode::pure) {
    // A flush before every sample only means something when a sample is one call.
    const int runs = options.cold_cache      ? 1
                     : options.pure_runs > 0 ? options.pure_runs
                                             : pure_runs_for(inst);
    if (on_device && dev && options.use_graph) {
      std::string why;
      replay = inst.make_replay(*dev, runs, &why);
      if (replay)
        w.run = [&] { replay->launch(); };
      else
        r.extra["graph_not_used"] = why;
    }
    if (!replay)
      w.run = [&inst, runs] {
        for (int i = 0; i < runs; ++i) inst.run();
      };
    r.timing_mode = replay ? "pure:graph" : "pure:back-to-back";
    w.runs_per_call = runs;
  }
  r.runs_per_sample = w.runs_per_call;
  const double sizing_ms = sizing_timer.elapsed().count();

  // Clocks right after the warm-up (the device is busy, not idling after the reference
  // computation) and right after the last sample.
  std::optional<ClockSample> clocks_before;
  std::string clocks_why;
  if (dev) w.after_warmup = [&] { clocks_before = dev->clocks(&clocks_why); };
  WallTimer sampling_timer;
  const Measurement m =
      in_range(tracer, "warm-up and sampling", [&] { return measure(options.measure, w); });
  if (dev) {
    const std::optional<ClockSample> clocks_after = dev->clocks(&clocks_why);
    if (clocks_before && clocks_after) {
      r.clocks = clocks_json(*clocks_before, *clocks_after);
      r.throttled = is_throttled(*clocks_before, *clocks_after);
    } else {
      r.extra["clocks_not_read"] = clocks_why;
    }
  }
  r.cpu_time_ms = m.host;
  r.total_time_ms = m.total;
  r.thread_cpu_time_ms = m.thread_cpu;
  if (m.has_device) r.gpu_time_ms = m.device;
  r.stop_reason = m.stop_reason;
  // Warm-up, the calls that size a pure-mode sample, graph capture and the clock reads included.
  add_slot(r, "sampling", sampling_timer.elapsed().count() + sizing_ms);

  // A second check after the timed runs, of what was timed (the loop or the replayed graph),
  // catches outputs that go wrong only when repeated or only in that form.
  Result recheck = r;
  const CheckOutcome again = in_range(tracer, "check after sampling", [&] {
    return check_once(inst, w.run, hooks, recheck, true, nullptr);
  });
  r.slot_ms = recheck.slot_ms;  // the second check's time
  if (!again.passed) {
    r.status = Status::incorrect;
    r.correctness = recheck.correctness;
    r.reason = "output wrong after the timed runs: " + again.reason + known_issue_suffix(r.extra);
    return false;
  }
  r.status = Status::passed;
  WallTimer after_timer;
  if (hooks.after_sampling)
    in_range(tracer, "after sampling", [&] { hooks.after_sampling(inst, r); });

  // A few traced calls after all timed runs, so that tracing never touches a recorded time. A
  // failure here is the trace's, not the case's.
  if (tracer) {
    try {
      trace_calls(*tracer, single, [&] { inst.sync(); });
    } catch (const std::exception& e) {
      r.extra["trace_error"] = e.what();
    }
  }
  add_slot(r, "after_sampling", after_timer.elapsed().count());
  return true;
}

}  // namespace

CaseRun run_case(Result identity, const CaseHooks& hooks, const CaseOptions& options) {
  CaseRun out;
  Result& r = out.result;
  r = std::move(identity);
  if (!hooks.built) {
    r.status = Status::skipped;
    r.reason = "not built: " + hooks.why_missing;
    return out;
  }
  if (hooks.available) {
    if (const Support a = hooks.available(); !a.ok) {
      r.status = Status::skipped;
      r.reason = a.reason;
      return out;
    }
  }
  if (hooks.check_support) {
    if (const Support s = hooks.check_support(); !s.ok) {
      r.status = Status::unsupported;
      r.reason = s.reason;
      return out;
    }
  }
  // Tracing is off unless asked: then tracer is null and each range below is one pointer test
  // (plus an NVTX range, a null function pointer test without a tool), outside every timer.
  std::optional<Tracer> tracer_storage;
  Tracer* tracer = nullptr;
  if (options.trace) {
    out.trace = std::make_shared<Trace>();
    tracer = &tracer_storage.emplace(out.trace, *options.trace, r.device == "cuda");
  }
  const TraceRange case_range(tracer, r.backend + " " + r.problem);
  try {
    WallTimer prepare_timer;
    std::unique_ptr<Instance> inst = in_range(tracer, "prepare", [&] { return hooks.prepare(); });
    add_slot(r, "prepare", prepare_timer.elapsed().count());
    in_range(tracer, "compile", [&] {
      WallTimer compile_timer;
      inst->compile();
      r.compile_time_ms = compile_timer.elapsed().count();
      add_slot(r, "compile", *r.compile_time_ms);
    });
    r.algorithm = inst->algorithm();
    r.workspace_bytes = inst->workspace_bytes();

    double first_ms = 0;
    const CheckOutcome first = in_range(tracer, "first run and check", [&] {
      return check_once(
          *inst, [&] { inst->run(); }, hooks, r, false, &first_ms);
    });
    r.first_run_ms = first_ms;
    add_slot(r, "first_run", first_ms);
    // The backend's facts, then what the suite's check recorded (kept: it ran first).
    nlohmann::ordered_json extra = inst->extra();
    for (const auto& [key, value] : r.extra.items())
      if (!extra.contains(key)) extra[key] = value;
    r.extra = std::move(extra);
    if (!first.passed) {
      r.status = Status::incorrect;
      r.reason = first.reason + known_issue_suffix(r.extra);
      return out;
    }
    sample(*inst, hooks, options, tracer, r);
  } catch (const Unsupported& e) {
    r.status = Status::unsupported;
    r.reason = e.what();
  } catch (const std::bad_alloc&) {
    r.status = Status::failed;
    r.reason = "out of memory";
  } catch (const std::exception& e) {
    r.status = Status::failed;
    r.reason = e.what();
  } catch (...) {
    r.status = Status::failed;
    r.reason = "unknown exception";
  }
  return out;
}

}  // namespace bench
