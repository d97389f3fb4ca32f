#include "models/mlp/profile.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/printers.hpp"
#include "models/mlp/report.hpp"

namespace mlp {
namespace {

namespace tp = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

struct Ev {
  std::string name;
  std::uint64_t start = 0, dur = 0, tid = 0, corr = 0, linked = 0;
  bool device = false;
  int parent = -1;
  double self_cpu = 0, self_cuda = 0, total_cuda = 0;
  std::vector<int> children;
};

void write_own_trace(const std::string& path, const std::vector<Ev>& evs) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (const auto& e : evs)
    events.push_back({{"name", e.name},
                      {"ph", "X"},
                      {"cat", e.device ? "kernel" : "cpu_op"},
                      {"ts", e.start},
                      {"dur", e.dur},
                      {"pid", e.device ? 1 : 0},
                      {"tid", e.tid},
                      {"args", {{"correlation", e.corr}, {"linked_correlation", e.linked}}}});
  nlohmann::ordered_json doc = {{"traceEvents", events},
                                {"displayTimeUnit", "ms"},
                                {"otherData", {{"writer", "mymlp from LibTorch profiler events"}}}};
  bench::write_file_atomic(path, doc.dump() + "\n");
}

}  // namespace

ProfileOutput profile_libtorch(const std::function<void()>& run, const std::function<void()>& sync,
                               bool cuda, const std::string& dir, const std::string& stem,
                               int top_rows) {
  ProfileOutput out;
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true,
                              /*profile_memory=*/false, /*with_stack=*/true);
  std::set<ActivityType> activities = {ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  out.profiler = std::string("LibTorch ") + TORCH_VERSION +
                 " profiler (profiler_kineto.h, ProfilerState::KINETO, activities CPU" +
                 (cuda ? ", CUDA" : "") + ", shapes and stacks)";
  std::unique_ptr<tp::ProfilerResult> result;
  try {
    sync();
    tp::prepareProfiler(config, activities);
    tp::enableProfiler(config, activities);
    try {
      run();
      sync();
    } catch (...) {
      tp::disableProfiler();
      throw;
    }
    result = tp::disableProfiler();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw std::runtime_error("LibTorch profiler: " + what.substr(0, what.find('\n')));
  }

  std::vector<Ev> evs;
  for (const auto& k : result->events()) {
    Ev e;
    e.name = k.name();
#if TORCH_VERSION_MAJOR >= 2  // KinetoEvent counts nanoseconds from 2.x on (startNs/durationNs)
    e.start = k.startNs() / 1000;
    e.dur = k.durationNs() / 1000;
#else
    e.start = k.startUs();
    e.dur = k.durationUs();
#endif
    e.tid = k.startThreadId();
    e.corr = k.correlationId();
    e.linked = k.linkedCorrelationId();
    e.device = k.deviceType() != c10::DeviceType::CPU;
    evs.push_back(std::move(e));
  }
  out.events = static_cast<int>(evs.size());

  // Nesting of the CPU events per thread, from their intervals.
  std::vector<int> order;
  for (int i = 0; i < int(evs.size()); ++i)
    if (!evs[std::size_t(i)].device) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const Ev &x = evs[std::size_t(a)], &y = evs[std::size_t(b)];
    if (x.tid != y.tid) return x.tid < y.tid;
    if (x.start != y.start) return x.start < y.start;
    return x.dur > y.dur;
  });
  std::vector<int> stack;
  for (const int i : order) {
    Ev& e = evs[std::size_t(i)];
    while (!stack.empty()) {
      const Ev& top = evs[std::size_t(stack.back())];
      if (top.tid == e.tid && e.start >= top.start && e.start + e.dur <= top.start + top.dur) break;
      stack.pop_back();
    }
    if (!stack.empty()) {
      e.parent = stack.back();
      evs[std::size_t(stack.back())].children.push_back(i);
    }
    stack.push_back(i);
  }
  std::map<std::uint64_t, int> by_corr;
  for (const int i : order)
    if (evs[std::size_t(i)].corr) by_corr.emplace(evs[std::size_t(i)].corr, i);
  bool any_cuda = false;
  for (const auto& e : evs)
    if (e.device) {
      any_cuda = true;
      const auto it = by_corr.find(e.linked);
      if (it != by_corr.end()) evs[std::size_t(it->second)].self_cuda += double(e.dur);
    }
  for (auto& e : evs) {
    if (e.device) continue;
    double children = 0;
    for (const int c : e.children) children += double(evs[std::size_t(c)].dur);
    e.self_cpu = std::max(0.0, double(e.dur) - children);
  }
  // Total CUDA: own plus every descendant's (children come after their parent in `order`).
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Ev& e = evs[std::size_t(*it)];
    e.total_cuda += e.self_cuda;
    if (e.parent >= 0) evs[std::size_t(e.parent)].total_cuda += e.total_cuda;
  }

  struct Row {
    std::string name;
    int calls = 0;
    double self_cpu = 0, total_cpu = 0, self_cuda = 0, total_cuda = 0;
  };
  std::map<std::string, Row> rows;
  // An op nested in an op of its own name (recursion) counts once in the totals.
  auto inside_same = [&](const Ev& e) {
    for (int p = e.parent; p >= 0; p = evs[std::size_t(p)].parent)
      if (evs[std::size_t(p)].name == e.name) return true;
    return false;
  };
  for (const int i : order) {
    const Ev& e = evs[std::size_t(i)];
    Row& r = rows[e.name];
    r.name = e.name;
    ++r.calls;
    r.self_cpu += e.self_cpu;
    r.self_cuda += e.self_cuda;
    if (!inside_same(e)) {
      r.total_cpu += double(e.dur);
      r.total_cuda += e.total_cuda;
    }
  }
  std::vector<Row> sorted;
  for (auto& [name, r] : rows) sorted.push_back(r);
  out.sort_key = any_cuda ? "cuda_time_total" : "cpu_time_total";
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Row& a, const Row& b) {
    return any_cuda ? a.total_cuda > b.total_cuda : a.total_cpu > b.total_cpu;
  });
  double all_self_cpu = 0, all_self_cuda = 0;
  for (const auto& r : sorted) {
    all_self_cpu += r.self_cpu;
    all_self_cuda += r.self_cuda;
  }
  bench::Table t(
      {"Name", "Self CPU %", "Self CPU", "CPU total", "Self CUDA", "CUDA total", "# of Calls"});
  auto us = [](double v) {
    return v >= 1000 ? bench::format_fixed(v / 1000, 3) + "ms" : bench::format_fixed(v, 3) + "us";
  };
  for (std::size_t i = 0; i < sorted.size() && int(i) < top_rows; ++i) {
    const Row& r = sorted[i];
    t.add_row({r.name.size() > 48 ? r.name.substr(0, 45) + "..." : r.name,
               bench::format_fixed(all_self_cpu > 0 ? 100 * r.self_cpu / all_self_cpu : 0, 2) + "%",
               us(r.self_cpu), us(r.total_cpu), us(r.self_cuda), us(r.total_cuda),
               std::to_string(r.calls)});
    out.top_ops.push_back({{"name", r.name},
                           {"calls", r.calls},
                           {"self_cpu_us", r.self_cpu},
                           {"cpu_total_us", r.total_cpu},
                           {"self_cuda_us", r.self_cuda},
                           {"cuda_total_us", r.total_cuda}});
  }
  std::ostringstream table;
  t.print(table);
  table << "Self CPU time total: " << us(all_self_cpu)
        << (any_cuda ? "\nSelf CUDA time total: " + us(all_self_cuda) : std::string()) << "\n";
  out.table = table.str();

  // The files.
  std::filesystem::create_directories(dir);
  out.trace_path = (std::filesystem::path(dir) / (stem + ".trace.json")).string();
  try {
    result->save(out.trace_path);
    out.trace_writer = "kineto";
  } catch (const c10::Error&) {
    write_own_trace(out.trace_path, evs);
    out.trace_writer = "mymlp (LibTorch without Kineto: ProfilerResult::save needs it)";
  }
  out.stacks_metric = any_cuda ? "self_cuda_time_us" : "self_cpu_time_us";
  std::map<std::string, double> folded;
  for (const int i : order) {
    const Ev& e = evs[std::size_t(i)];
    const double v = any_cuda ? e.self_cuda : e.self_cpu;
    if (v <= 0) continue;
    std::vector<std::string> frames;
    for (int p = i; p >= 0; p = evs[std::size_t(p)].parent)
      frames.push_back(evs[std::size_t(p)].name);
    std::string path;
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
      std::string frame = *f;
      std::replace(frame.begin(), frame.end(), ';', ':');
      std::replace(frame.begin(), frame.end(), ' ', '_');
      path += (path.empty() ? "" : ";") + frame;
    }
    folded[path] += v;
  }
  std::ostringstream stacks;
  for (const auto& [path, v] : folded)
    stacks << path << " " << static_cast<long long>(v + 0.5) << "\n";
  out.stacks_path = (std::filesystem::path(dir) / (stem + ".stacks.txt")).string();
  bench::write_file_atomic(out.stacks_path, stacks.str());
  return out;
}

nlohmann::ordered_json to_json(const ProfileOutput& p) {
  return {{"profiler", p.profiler},       {"events", p.events},
          {"sort_by", p.sort_key},        {"top_ops", p.top_ops},
          {"trace_file", p.trace_path},   {"trace_writer", p.trace_writer},
          {"stacks_file", p.stacks_path}, {"stacks_metric", p.stacks_metric}};
}

std::string profile_case(Instance& inst, bench::Result& r, bool cuda, const std::string& dir) {
  const ProfileOutput po =
      profile_libtorch([&] { inst.run_for_profile(); }, [&] { inst.sync(); }, cuda, dir,
                       file_stem(r));
  r.extra["profile"] = to_json(po);
  return po.table;
}

}  // namespace mlp
