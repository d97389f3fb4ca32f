#include "conv/bench.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "core/case_result.hpp"
#include "core/compare.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"

namespace conv {

bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options) {
  return bench::case_result("conv", "myconv", backend, device, p, options);
}

// Single calls timed with their phases apart, after the sampling of a passed case.
constexpr int kPhaseCalls = 20;

// The phase split as the MLP suite records its forward/backward one: the median of each phase in
// metrics.<name>_ms, how it was taken in extra.phase_split.
static void record_phases(const PhaseTimes& t, bench::Result& r) {
  if (t.names.empty()) return;
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    std::vector<double> ms = t.ms[i];
    std::sort(ms.begin(), ms.end());
    r.metrics[t.names[i] + "_ms"] = bench::quantile_sorted(ms, 0.5);
  }
  r.extra["phase_split"] = {{"calls", t.ms.front().size()},
                            {"phases", t.names},
                            {"clock", t.clock},
                            {"statistic", "median per call"}};
}

static std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

// The check of the output on the device (data.device_check): "" with r.correctness filled, or why
// it was not done there (then the caller checks on the host).
static std::string check_on_device(Instance& inst, const HostData& data,
                                   const bench::Tolerance& tol, bool keep_output,
                                   bench::Result& r) {
  if (keep_output) return "--save-tensors reads the output to the host";
  static const bool host_forced = host_check_forced(std::getenv("MYCONV_CHECK"));
  if (host_forced) return "MYCONV_CHECK=host";
  if (!data.device_check)
    return data.device_check_none.empty() ? "the float64 reference is on the host only"
                                          : data.device_check_none;
  const std::optional<bench::DeviceValues> out = inst.device_output();
  if (!out) return "the backend's output is not on the device in the problem's layout and type";
  bench::Correctness c;
  const std::string why = data.device_check->compare(*out, tol, &c);
  if (why.empty()) r.correctness = std::move(c);
  return why;
}

CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options, bool keep_output) {
  CaseOutput out;
  bench::CaseHooks hooks = bench::backend_hooks(backend, why_missing);
  if (backend) {
    // What no backend here runs (3D, asymmetric padding) is the problem's to say, not each
    // backend's.
    hooks.check_support = [backend, &p] {
      if (const std::string why = p.unsupported_reason(); !why.empty()) return Support::no(why);
      return backend->check_support(p);
    };
    hooks.prepare = [backend, &p, &data]() -> std::unique_ptr<bench::Instance> {
      return backend->prepare(p, data);
    };
    hooks.check = [&p, &data, &out, keep_output](bench::Instance& base, bench::Result& r,
                                                 bool after_sampling) {
      auto& inst = static_cast<Instance&>(base);  // prepare() made it
      const std::vector<std::int64_t> expected = {p.mb, p.oc, p.oh(), p.ow()};
      r.shape_ok = inst.output_dims() == expected;
      const bench::Tolerance tol =
          bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms);
      const std::string on_device = *r.shape_ok ? check_on_device(inst, data, tol, keep_output, r)
                                                : "the output's shape is wrong";
      if (!on_device.empty()) {
        std::vector<float> got(static_cast<std::size_t>(p.dst_elements()), 0.0f);
        inst.read_output(got.data());
        r.correctness = bench::compare(got.data(), data.ref.data(), got.size(), tol);
        if (keep_output && !after_sampling) out.output = std::move(got);
      }
      if (!after_sampling) {
        r.extra["check_device"] = on_device.empty() ? "cuda" : "cpu";
        if (!on_device.empty() && r.device == "cuda") r.extra["check_fallback"] = on_device;
      }
      if (!*r.shape_ok)
        return bench::CheckOutcome{false, "output shape " + dims_text(inst.output_dims()) +
                                              ", expected " + dims_text(expected)};
      return bench::CheckOutcome{r.correctness->passed, r.correctness->message};
    };
    hooks.after_sampling = [](bench::Instance& base, bench::Result& r) {
      record_phases(static_cast<Instance&>(base).time_phases(kPhaseCalls), r);
    };
  }
  bench::Result record = make_result(backend_name, device, p, options);
  // Where the float64 reference this case is checked against ran (results/README.md).
  if (!data.ref.empty()) {
    record.extra["reference_device"] = data.ref_device;
    if (!data.ref_fallback.empty()) record.extra["reference_fallback"] = data.ref_fallback;
  }
  bench::CaseRun run = bench::run_case(std::move(record), hooks, options);
  out.result = std::move(run.result);
  out.trace = std::move(run.trace);
  return out;
}

void SuiteRun::check_reference(bool gpu) const {
  try {
    (void)conv::choose_reference(reference_env_, gpu, device_);
    (void)host_check_forced(check_env_);
  } catch (const std::invalid_argument& e) {
    throw bench::UsageError(e.what());
  }
}

void SuiteRun::choose_reference(bool device_usable) {
  reference_ = conv::choose_reference(reference_env_, device_usable, device_);
}

bool SuiteRun::make_inputs(const Problem& p, bool host_fits) {
  // A problem no backend here runs gets no inputs or reference: its cases are unsupported.
  const bool make = p.unsupported_reason().empty() && host_fits;
  data_ = make ? make_host_data(p, seed_, reference_) : HostData{};
  return make;
}

void SuiteRun::after_inputs(std::ostream& err, const Problem& p, bool made) {
  // The GPU reference failed (each record says why in extra.reference_fallback): said once.
  if (!data_.ref_fallback.empty() && !said_fallback_) {
    err << "myconv: note: float64 reference on the CPU: the GPU one failed: "
        << data_.ref_fallback << "\n";
    said_fallback_ = true;
  }
  if (made && !save_dir_.empty()) save_tensors(save_dir_, p, data_);
}

CaseOutput SuiteRun::run(const Entry& e, const Problem& p, const CaseOptions& options) const {
  const bool keep = !save_dir_.empty();
  CaseOutput out =
      run_case(e.backend.get(), e.name, e.device, e.why_missing, p, data_, options, keep);
  if (keep && !out.output.empty()) save_output(save_dir_, p, e.name, out.output);
  return out;
}

}  // namespace conv
