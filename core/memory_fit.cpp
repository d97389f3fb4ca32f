#include "core/memory_fit.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/error.hpp"
#include "core/system_info.hpp"

namespace bench {

namespace {

// MYCONV_MEMORY_LIMIT_BYTES, or 0 when unset.
double memory_limit() {
  const char* env = std::getenv("MYCONV_MEMORY_LIMIT_BYTES");
  if (!env || !*env) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (*env == '-' || *end != '\0' || errno == ERANGE || v == 0)
    throw UsageError("MYCONV_MEMORY_LIMIT_BYTES: expected a positive number of bytes, got " +
                     quote_input(env));
  return static_cast<double>(v);
}

}  // namespace

MemoryAvailable host_memory_available() {
  MemoryAvailable a;
  a.host_bytes = static_cast<double>(available_host_memory_bytes());
  if (const double limit = memory_limit();
      limit > 0 && (a.host_bytes == 0 || limit < a.host_bytes)) {
    a.host_bytes = limit;
    a.host_source = "MYCONV_MEMORY_LIMIT_BYTES";
  }
  return a;
}

void apply_memory_limit_to_device(MemoryAvailable& a) {
  if (const double limit = memory_limit(); limit > 0 && a.device_bytes > limit) {
    a.device_bytes = limit;
    a.device_source = "MYCONV_MEMORY_LIMIT_BYTES";
  }
}

std::string bytes_text(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);  // 1.5e+06 TiB: an exponent
  else if (u == 0 || bytes >= 100)
    std::snprintf(buf, sizeof buf, "%.0f %s", bytes, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
  return buf;
}

std::string memory_shortfall(const MemoryNeed& need, const MemoryAvailable& available) {
  auto side = [](double need_bytes, double have, const char* what, const std::string& source) {
    return "needs about " + bytes_text(need_bytes) + " of " + what + " memory (estimate), " +
           bytes_text(have) + " available (" + source + ")";
  };
  if (available.host_bytes > 0 && need.host_bytes > available.host_bytes)
    return side(need.host_bytes, available.host_bytes, "host", available.host_source);
  if (available.device_bytes > 0 && need.device_bytes > available.device_bytes)
    return side(need.device_bytes, available.device_bytes, "device", available.device_source);
  return "";
}

nlohmann::ordered_json memory_json(const MemoryNeed& need, const MemoryAvailable& available) {
  nlohmann::ordered_json j = {{"host_bytes_estimate", need.host_bytes},
                              {"host_bytes_available", available.host_bytes}};
  if (need.device_bytes > 0) {
    j["device_bytes_estimate"] = need.device_bytes;
    j["device_bytes_available"] = available.device_bytes;
  }
  return j;
}

Result memory_unsupported(Result identity, const std::string& shortfall, const MemoryNeed& need,
                          const MemoryAvailable& available) {
  identity.status = Status::unsupported;
  identity.reason = "does not fit in memory: " + shortfall;
  identity.extra["memory"] = memory_json(need, available);
  return identity;
}

std::string MemoryGate::check(const std::string& case_name, const MemoryNeed& need) {
  const std::string why = memory_shortfall(need, available_);
  ++checked_;
  if (why.empty()) {
    ++fitting_;
  } else {
    const double total = need.host_bytes + need.device_bytes;
    if (least_case_.empty() || total < least_need_) {
      least_case_ = case_name;
      least_shortfall_ = why;
      least_need_ = total;
    }
  }
  return why;
}

void MemoryGate::refuse_if_nothing_fits() const {
  if (checked_ > 0 && fitting_ == 0)
    throw UsageError(quote_input(least_case_, 48) + " does not fit in memory: " + least_shortfall_ +
                     (checked_ > 1 ? "; no case of this invocation fits" : ""));
}

}  // namespace bench
