#include "conv/bench.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <new>
#include <optional>

#include "core/error.hpp"

namespace conv {

bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options) {
  bench::Result r;
  r.suite = "conv";
  r.backend = backend;
  r.device = device;
  r.problem = p.str();
  r.name = p.name;
  r.dtype = bench::to_string(p.dtype);
  r.flop = p.flops();
  r.bytes = p.bytes();
  r.params = p.params();
  r.command = options.command_prefix + " --problem " + p.str() + " --backend " + backend;
  return r;
}

// Runs `run` once from a poisoned output and checks the result; fills r.correctness and
// r.shape_ok.
static bool check_once(Instance& inst, const std::function<void()>& run, const Problem& p,
                       const HostData& data, bench::Result& r, std::vector<float>& out,
                       double* run_ms) {
  inst.poison_output();
  inst.sync();
  bench::WallTimer t;
  run();
  inst.sync();
  if (run_ms) *run_ms = t.elapsed().count();
  out.assign(static_cast<std::size_t>(p.dst_elements()), 0.0f);
  inst.read_output(out.data());
  const std::vector<std::int64_t> expected = {p.mb, p.oc, p.oh(), p.ow()};
  r.shape_ok = inst.output_dims() == expected;
  r.correctness = bench::compare(out.data(), data.ref.data(), out.size(),
                                 bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
  return *r.shape_ok && r.correctness->passed;
}

// Calls per sample in pure mode: enough for about 2 ms of work per sample, from the fastest of
// three synchronized calls, between 1 and 1000.
static int pure_runs_for(Instance& inst) {
  double fastest = 1e30;
  for (int i = 0; i < 3; ++i) {
    bench::WallTimer t;
    inst.run();
    inst.sync();
    fastest = std::min(fastest, t.elapsed().count());
  }
  return static_cast<int>(std::clamp(std::ceil(2.0 / std::max(fastest, 1e-6)), 1.0, 1000.0));
}

static std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

// " (known issue: ...)" when the backend named a library defect for this case, else "".
static std::string known_issue_suffix(const nlohmann::ordered_json& extra) {
  const auto it = extra.find("known_issue");
  if (it == extra.end() || !it->is_string()) return "";
  return " (known issue: " + it->get<std::string>() + ")";
}

CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options) {
  CaseOutput out;
  bench::Result& r = out.result;
  r = make_result(backend_name, device, p, options);
  if (!backend) {
    r.status = bench::Status::skipped;
    r.reason = "not built: " + why_missing;
    return out;
  }
  if (const Support a = backend->available(); !a.ok) {
    r.status = bench::Status::skipped;
    r.reason = a.reason;
    return out;
  }
  // What no backend here runs (3D, asymmetric padding) is the problem's to say, not each backend's.
  if (const std::string why = p.unsupported_reason(); !why.empty()) {
    r.status = bench::Status::unsupported;
    r.reason = why;
    return out;
  }
  if (const Support s = backend->check_support(p); !s.ok) {
    r.status = bench::Status::unsupported;
    r.reason = s.reason;
    return out;
  }
  // Tracing is off unless asked: then tracer is null and each range below is one pointer test
  // (plus an NVTX range, a null function pointer test without a tool), outside every timer.
  std::optional<bench::Tracer> tracer_storage;
  bench::Tracer* tracer = nullptr;
  if (options.trace) {
    out.trace = std::make_shared<bench::Trace>();
    tracer = &tracer_storage.emplace(out.trace, *options.trace, device == "cuda");
  }
  const bench::TraceRange case_range(tracer, backend_name + " " + p.str());
  try {
    std::unique_ptr<Instance> inst =
        bench::in_range(tracer, "prepare", [&] { return backend->prepare(p, data); });
    bench::in_range(tracer, "compile", [&] {
      bench::WallTimer compile_timer;
      inst->compile();
      r.compile_time_ms = compile_timer.elapsed().count();
    });
    r.algorithm = inst->algorithm();
    r.workspace_bytes = inst->workspace_bytes();

    const std::function<void()> single = [&] { inst->run(); };
    double first_ms = 0;
    const bool ok = bench::in_range(tracer, "first run and check", [&] {
      return check_once(*inst, single, p, data, r, out.output, &first_ms);
    });
    r.first_run_ms = first_ms;
    r.extra = inst->extra();
    if (!ok) {
      r.status = bench::Status::incorrect;
      r.reason = *r.shape_ok ? r.correctness->message
                             : "output shape " + dims_text(inst->output_dims()) + ", expected " +
                                   dims_text({p.mb, p.oc, p.oh(), p.ow()});
      r.reason += known_issue_suffix(r.extra);
      return out;
    }

    bench::Workload w;
    w.run = single;
    w.sync = [&] { inst->sync(); };
    w.device_timer = inst->device_timer();
    const bool on_device = device == "cuda";
    bench::DeviceServices* dev = on_device ? options.device_services : nullptr;

    std::optional<bench::HostCacheFlusher> host_flush;
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

    std::unique_ptr<bench::Replay> replay;
    r.timing_mode = "real";
    if (options.timing == TimingMode::pure) {
      // A flush before every sample only means something when a sample is one call.
      const int runs = options.cold_cache      ? 1
                       : options.pure_runs > 0 ? options.pure_runs
                                               : pure_runs_for(*inst);
      if (on_device && dev && options.use_graph) {
        std::string why;
        replay = inst->make_replay(*dev, runs, &why);
        if (replay)
          w.run = [&] { replay->launch(); };
        else
          r.extra["graph_not_used"] = why;
      }
      if (!replay)
        w.run = [&inst, runs] {
          for (int i = 0; i < runs; ++i) inst->run();
        };
      r.timing_mode = replay ? "pure:graph" : "pure:back-to-back";
      w.runs_per_call = runs;
    }
    r.runs_per_sample = w.runs_per_call;

    // Clocks right after the warm-up (the device is busy, not idling after the reference
    // computation) and right after the last sample.
    std::optional<bench::ClockSample> clocks_before;
    std::string clocks_why;
    if (dev) w.after_warmup = [&] { clocks_before = dev->clocks(&clocks_why); };
    const bench::Measurement m = bench::in_range(
        tracer, "warm-up and sampling", [&] { return bench::measure(options.measure, w); });
    if (dev) {
      const std::optional<bench::ClockSample> clocks_after = dev->clocks(&clocks_why);
      if (clocks_before && clocks_after) {
        r.clocks = bench::clocks_json(*clocks_before, *clocks_after);
        r.throttled = bench::is_throttled(*clocks_before, *clocks_after);
      } else {
        r.extra["clocks_not_read"] = clocks_why;
      }
    }
    r.cpu_time_ms = m.host;
    r.total_time_ms = m.total;
    r.thread_cpu_time_ms = m.thread_cpu;
    if (m.has_device) r.gpu_time_ms = m.device;
    r.stop_reason = m.stop_reason;

    // A second check after the timed runs, of what was timed (the loop or the replayed graph),
    // catches outputs that go wrong only when repeated or only in that form.
    std::vector<float> again;
    bench::Result recheck = r;
    if (!bench::in_range(tracer, "check after sampling", [&] {
          return check_once(*inst, w.run, p, data, recheck, again, nullptr);
        })) {
      r.status = bench::Status::incorrect;
      r.correctness = recheck.correctness;
      r.reason = "output wrong after the timed runs: " + recheck.correctness->message +
                 known_issue_suffix(r.extra);
      return out;
    }
    r.status = bench::Status::passed;

    // A few traced calls after all timed runs, so that tracing never touches a recorded time. A
    // failure here is the trace's, not the case's.
    if (tracer) {
      try {
        bench::trace_calls(*tracer, single, [&] { inst->sync(); });
      } catch (const std::exception& e) {
        r.extra["trace_error"] = e.what();
      }
    }
  } catch (const bench::Unsupported& e) {
    r.status = bench::Status::unsupported;
    r.reason = e.what();
  } catch (const std::bad_alloc&) {
    r.status = bench::Status::failed;
    r.reason = "out of memory";
  } catch (const std::exception& e) {
    r.status = bench::Status::failed;
    r.reason = e.what();
  } catch (...) {
    r.status = bench::Status::failed;
    r.reason = "unknown exception";
  }
  return out;
}

}  // namespace conv
