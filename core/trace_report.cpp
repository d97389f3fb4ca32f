#include "core/trace_report.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>

#include "core/case_result.hpp"
#include "core/printers.hpp"

namespace bench {

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

namespace {

// Index of the '(' that opens a trailing parameter list "(...)", or npos.
std::size_t parameter_list_start(const std::string& s) {
  if (s.empty() || s.back() != ')') return std::string::npos;
  int parens = 0, angles = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == ')') ++parens;
    if (c == '(') --parens;
    if (c == '>') ++angles;
    if (c == '<') --angles;
    if (parens == 0 && angles == 0) return i;
  }
  return std::string::npos;
}

void erase_all(std::string& s, const std::string& what) {
  for (std::size_t at; (at = s.find(what)) != std::string::npos;) s.erase(at, what.size());
}

}  // namespace

std::string short_kernel_name(const std::string& name, std::size_t max_chars) {
  std::string s = demangle(name);
  erase_all(s, "(anonymous namespace)::");
  for (std::size_t at; (at = s.find("> >")) != std::string::npos;) s.erase(at + 1, 1);
  if (const std::size_t p = parameter_list_start(s); p != std::string::npos && p > 0) s.erase(p);
  // The return type ends at the last space outside template arguments and parentheses.
  int depth = 0;
  std::size_t name_start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ' ' && depth == 0) name_start = i + 1;
  }
  s.erase(0, name_start);
  // Template arguments below the first level become "...".
  std::string out;
  depth = 0;
  for (const char c : s) {
    if (c == '<') {
      if (++depth == 2) out += "<...";
      if (depth >= 2) continue;
    } else if (c == '>') {
      if (depth-- >= 2) {
        if (depth == 1) out += '>';
        continue;
      }
    } else if (depth >= 2) {
      continue;
    }
    out += c;
  }
  if (out.size() > max_chars && max_chars > 3) out = out.substr(0, max_chars - 3) + "...";
  return out;
}

namespace {

double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

TraceSummary summarize_trace(const Trace& trace) {
  TraceSummary s;
  s.total_events = trace.events.size();
  s.calls = static_cast<int>(trace.calls.size());
  std::map<std::uint32_t, const TraceEvent*> launches;  // correlation id -> API call
  for (const TraceEvent& e : trace.events)
    if (e.kind == EventKind::cuda_api && e.correlation) launches[e.correlation] = &e;
  auto launch_of = [&](const TraceEvent& e) -> const TraceEvent* {
    const auto l = e.correlation ? launches.find(e.correlation) : launches.end();
    return l == launches.end() ? nullptr : l->second;
  };
  // The traced call that device work belongs to, or -1.
  auto call_of = [&](const TraceEvent& e) {
    const TraceEvent* launch = launch_of(e);
    const std::int64_t t = launch ? launch->start_ns : e.start_ns;
    for (std::size_t i = 0; i < trace.calls.size(); ++i)
      if (t >= trace.calls[i].start_ns && t <= trace.calls[i].end_ns) return static_cast<int>(i);
    return -1;
  };

  std::map<std::string, KernelStats> kernels;
  std::map<std::string, TransferStats> transfers;
  std::vector<double> launch_latency;
  std::vector<std::optional<std::int64_t>> first_start(trace.calls.size());
  int kernels_in_calls = 0;
  double kernel_us_in_calls = 0;
  for (const TraceEvent& e : trace.events) {
    const bool timed = e.duration_ns() > 0;
    if (!on_device(e.kind)) {
      s.host_events_with_time += timed;
      continue;
    }
    s.device_events_with_time += timed;
    const int call = call_of(e);
    if (!trace.calls.empty() && call < 0) {
      ++s.device_events_outside_calls;
      continue;
    }
    s.device_time_us += us(e.duration_ns());
    if (call >= 0) {
      auto& first = first_start[std::size_t(call)];
      if (!first || e.start_ns < *first) first = e.start_ns;
    }
    if (e.kind == EventKind::kernel) {
      KernelStats& k = kernels[e.name];
      k.name = e.name;
      ++k.calls;
      k.total_us += us(e.duration_ns());
      if (const TraceEvent* launch = launch_of(e))
        launch_latency.push_back(us(e.start_ns - launch->start_ns));
      if (call >= 0) {
        ++kernels_in_calls;
        kernel_us_in_calls += us(e.duration_ns());
      }
    } else {
      TransferStats& t = transfers[e.name];
      t.name = e.name;
      ++t.count;
      t.bytes += e.bytes;
      t.total_us += us(e.duration_ns());
    }
  }
  for (auto& [name, k] : kernels) {
    k.short_name = short_kernel_name(name);
    k.mean_us = k.total_us / k.calls;
    k.share = s.device_time_us > 0 ? k.total_us / s.device_time_us : 0;
    s.kernels.push_back(k);
  }
  std::stable_sort(
      s.kernels.begin(), s.kernels.end(),
      [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
  for (auto& [name, t] : transfers) s.transfers.push_back(t);
  std::stable_sort(
      s.transfers.begin(), s.transfers.end(),
      [](const TransferStats& a, const TransferStats& b) { return a.total_us > b.total_us; });

  if (s.calls > 0) {
    s.kernels_per_call = static_cast<double>(kernels_in_calls) / s.calls;
    s.kernel_time_per_call_us = kernel_us_in_calls / s.calls;
  }
  std::vector<double> to_first;
  for (std::size_t i = 0; i < trace.calls.size(); ++i)
    if (first_start[i]) to_first.push_back(us(*first_start[i] - trace.calls[i].start_ns));
  if (!to_first.empty()) s.call_to_first_kernel_us = median(to_first);
  if (!launch_latency.empty()) s.launch_to_kernel_us = median(launch_latency);

  std::vector<const TraceEvent*> phases;
  std::vector<double> run_us, sync_us;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::host_range) continue;
    if (e.depth <= 1) phases.push_back(&e);
    if (e.name == "run") run_us.push_back(us(e.duration_ns()));
    if (e.name == "sync") sync_us.push_back(us(e.duration_ns()));
  }
  std::stable_sort(phases.begin(), phases.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->start_ns < b->start_ns;
  });
  for (const TraceEvent* e : phases) s.phases_ms.emplace_back(e->name, e->duration_ns() / 1e6);
  if (!run_us.empty()) s.run_median_us = median(run_us);
  if (!sync_us.empty()) s.sync_median_us = median(sync_us);
  return s;
}

namespace {

std::string fixed(double v, int decimals) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(decimals) << v;
  return os.str();
}

std::string byte_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20)) return fixed(bytes / double(1u << 20), 2) + " MiB";
  if (bytes >= (1u << 10)) return fixed(bytes / double(1u << 10), 2) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

void print_debug_block(std::ostream& os, const Trace& trace, const Result& r,
                       const std::string& trace_path, int top_kernels) {
  const TraceSummary s = summarize_trace(trace);
  const char* prefix = "    [DEBUG] ";
  auto line = [&](const std::string& text) { os << prefix << text << '\n'; };
  line("Total events: " + std::to_string(s.total_events));
  line("CUDA events with time > 0: " + std::to_string(s.device_events_with_time));
  line("CPU events with time > 0: " + std::to_string(s.host_events_with_time));
  line("algorithm: " + (r.algorithm.empty() ? std::string("(not reported)") : r.algorithm));
  if (r.compile_time_ms)
    line("setup: compile time " + format_ms(r.compile_time_ms) + " ms (JIT, primitive creation, " +
         "plan or search), first run " + format_ms(r.first_run_ms) + " ms");
  line("GPU activity: " +
       (trace.device_activity_source.empty()
            ? trace.device_activity_note
            : trace.device_activity_source + (trace.device_activity_note.empty()
                                                  ? ""
                                                  : " (" + trace.device_activity_note + ")")));
  const std::string call_noun = (r.suite.empty() ? "" : r.suite + " ") + "call";
  if (!trace.device_activity_source.empty()) {
    line("top GPU kernels over " + std::to_string(s.calls) + " traced calls (" +
         std::to_string(s.kernels.size()) + " distinct, " + fixed(s.device_time_us, 1) +
         " us of GPU work" +
         (s.device_events_outside_calls ? "; " + std::to_string(s.device_events_outside_calls) +
                                              " more outside them, of the set-up call, not counted"
                                        : std::string()) +
         "):");
    if (s.kernels.empty()) {
      line("  none");
    } else {
      Table t({"kernel", "calls", "total_us", "mean_us", "share"});
      const int n = std::min<int>(top_kernels, static_cast<int>(s.kernels.size()));
      for (int i = 0; i < n; ++i) {
        const KernelStats& k = s.kernels[std::size_t(i)];
        t.add_row({k.short_name, std::to_string(k.calls), fixed(k.total_us, 2), fixed(k.mean_us, 2),
                   fixed(100 * k.share, 1) + "%"});
      }
      std::ostringstream table;
      t.print(table);
      std::istringstream rows(table.str());
      for (std::string row; std::getline(rows, row);) line("  " + row);
      if (n < static_cast<int>(s.kernels.size()))
        line("  (" + std::to_string(s.kernels.size() - std::size_t(n)) + " more)");
    }
    if (s.transfers.empty()) {
      line("memcpy/memset: none");
    } else {
      for (const TransferStats& x : s.transfers)
        line("memcpy/memset: " + x.name + ": " + std::to_string(x.count) + " x, " +
             byte_text(x.bytes) + " in all, " + fixed(x.total_us, 2) + " us");
    }
    line("kernels per " + call_noun + ": " + fixed(s.kernels_per_call, 2) + " (kernel time " +
         fixed(s.kernel_time_per_call_us, 2) + " us per call" +
         (r.gpu_time_ms
              ? ", measured GPU time median " + fixed(r.gpu_time_ms->median * 1e3, 2) + " us"
              : std::string()) +
         ")");
    line("call -> first kernel start: " +
         (s.call_to_first_kernel_us ? fixed(*s.call_to_first_kernel_us, 2) + " us (median of " +
                                          std::to_string(s.calls) + " calls)"
                                    : std::string("n/a (no GPU work inside the calls)")) +
         "; launch API -> kernel start: " +
         (s.launch_to_kernel_us ? fixed(*s.launch_to_kernel_us, 2) + " us (median over kernels)"
                                : std::string("n/a")));
  }
  std::string phases;
  for (const auto& [name, ms] : s.phases_ms)
    phases += (phases.empty() ? "" : ", ") + name + " " + format_ms(ms) + " ms";
  line("host phases: " + (phases.empty() ? std::string("none") : phases));
  if (s.calls > 0)
    line("traced " + call_noun + "s: " + std::to_string(s.calls) + " after sampling, run " +
         fixed(s.run_median_us, 2) + " us + sync " + fixed(s.sync_median_us, 2) + " us (medians)");
  if (!trace_path.empty()) line("trace file: " + trace_path);
}

namespace {

constexpr int kHostPid = 1;
constexpr int kDevicePidBase = 100;

double ts_us(const Trace& t, std::int64_t ns) {
  return static_cast<double>(ns - t.origin_ns) / 1e3;
}

nlohmann::ordered_json metadata(const char* what, int pid, std::optional<std::uint64_t> tid,
                                nlohmann::ordered_json args) {
  nlohmann::ordered_json m;
  m["ph"] = "M";
  m["name"] = what;
  m["pid"] = pid;
  m["tid"] = tid.value_or(0);
  m["ts"] = 0;
  m["args"] = std::move(args);
  return m;
}

}  // namespace

nlohmann::ordered_json chrome_trace_json(const Trace& trace, const Result& r) {
  using json = nlohmann::ordered_json;
  json events = json::array();
  const std::string case_name = r.backend + " " + r.problem;
  events.push_back(
      metadata("process_name", kHostPid, std::nullopt, {{"name", "host: " + case_name}}));
  events.push_back(metadata("process_labels", kHostPid, std::nullopt,
                            {{"labels", "algorithm: " + r.algorithm}}));
  events.push_back(metadata("process_sort_index", kHostPid, std::nullopt, {{"sort_index", 0}}));

  std::set<std::uint64_t> host_threads = {trace.host_thread};
  std::set<std::pair<int, std::uint32_t>> streams;
  std::map<std::uint32_t, const TraceEvent*> launches;
  for (const TraceEvent& e : trace.events)
    if (e.kind == EventKind::cuda_api && e.correlation) launches[e.correlation] = &e;

  for (const TraceEvent& e : trace.events) {
    json x;
    x["ph"] = "X";
    x["cat"] = to_string(e.kind);
    x["ts"] = ts_us(trace, e.start_ns);
    x["dur"] = static_cast<double>(e.duration_ns()) / 1e3;
    json args = json::object();
    if (on_device(e.kind)) {
      const int pid = kDevicePidBase + std::max(e.device, 0);
      streams.insert({pid, e.stream});
      x["name"] = e.kind == EventKind::kernel ? short_kernel_name(e.name) : e.name;
      x["pid"] = pid;
      x["tid"] = e.stream;
      if (e.kind == EventKind::kernel) args["name"] = demangle(e.name);
      if (!e.detail.empty()) args["detail"] = e.detail;
      if (e.bytes) args["bytes"] = e.bytes;
      args["device"] = e.device;
      args["stream"] = e.stream;
      args["correlation"] = e.correlation;
    } else {
      host_threads.insert(e.thread);
      x["name"] = e.name;
      x["pid"] = kHostPid;
      x["tid"] = e.thread;
      if (e.kind == EventKind::cuda_api) args["correlation"] = e.correlation;
    }
    x["args"] = std::move(args);
    const json pid = x["pid"], tid = x["tid"];
    events.push_back(std::move(x));

    // A flow arrow from the launching API call to the work it launched.
    if (!on_device(e.kind) || !e.correlation) continue;
    const auto l = launches.find(e.correlation);
    if (l == launches.end()) continue;
    events.push_back({{"ph", "s"},
                      {"cat", "launch"},
                      {"name", "launch"},
                      {"id", e.correlation},
                      {"pid", kHostPid},
                      {"tid", l->second->thread},
                      {"ts", ts_us(trace, l->second->start_ns)}});
    events.push_back({{"ph", "f"},
                      {"cat", "launch"},
                      {"name", "launch"},
                      {"id", e.correlation},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", ts_us(trace, e.start_ns)},
                      {"bp", "e"}});
  }
  for (const std::uint64_t tid : host_threads)
    events.push_back(
        metadata("thread_name", kHostPid, tid,
                 {{"name", tid == trace.host_thread ? "case thread " + std::to_string(tid)
                                                    : "thread " + std::to_string(tid)}}));
  std::set<int> device_pids;
  for (const auto& [pid, stream] : streams) {
    if (device_pids.insert(pid).second) {
      events.push_back(metadata("process_name", pid, std::nullopt,
                                {{"name", "GPU " + std::to_string(pid - kDevicePidBase)}}));
      events.push_back(metadata("process_sort_index", pid, std::nullopt, {{"sort_index", pid}}));
    }
    events.push_back(
        metadata("thread_name", pid, stream, {{"name", "GPU stream " + std::to_string(stream)}}));
  }

  json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ms";
  json other;
  put_identity(other, r);
  other["algorithm"] = r.algorithm;
  other["status"] = to_string(r.status);
  other["reason"] = r.reason;
  other["compile_time_ms"] = r.compile_time_ms ? json(*r.compile_time_ms) : json(nullptr);
  other["first_run_ms"] = r.first_run_ms ? json(*r.first_run_ms) : json(nullptr);
  other["gpu_time_ms_median"] = r.gpu_time_ms ? json(r.gpu_time_ms->median) : json(nullptr);
  other["total_time_ms_median"] = r.total_time_ms ? json(r.total_time_ms->median) : json(nullptr);
  other["timing_mode"] = r.timing_mode;
  other["traced_calls"] = trace.calls.size();
  other["device_activity"] = trace.device_activity_source.empty() ? trace.device_activity_note
                                                                  : trace.device_activity_source;
  other["clock"] = "steady_clock; ts in microseconds since tracing began";
  other["host_pid"] = static_cast<long long>(::getpid());
  other["command"] = r.command;
  doc["otherData"] = std::move(other);
  return doc;
}

void write_chrome_trace(const std::string& path, const Trace& trace, const Result& r) {
  write_file_atomic(path, chrome_trace_json(trace, r).dump() + "\n");
}

std::string trace_file_name(const Result& r) {
  std::string name = r.backend + "." + r.problem + (r.name.empty() ? "" : "." + r.name) + ".json";
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return name;
}

}  // namespace bench
