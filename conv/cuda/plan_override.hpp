// The BN:S overrides of a plan's tile width and split-K count that experiments set in the
// environment (MYCONV_WGMMA_PLAN for variant 10, MYCONV_GEMM_1X1_PLAN for variant 11), parsed one
// way. Host-only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

namespace conv {

struct PlanOverride {
  int bn = 0;      // tile width; 0 leaves it to the plan's rule
  int splits = 0;  // split-K count; 0 leaves it to the plan's rule
};

// The environment variable `name` as BN:S, BN one of `widths` (0 among them) and S 0 to
// max_splits; nullopt where it is unset or empty. Throws std::invalid_argument otherwise.
inline std::optional<PlanOverride> plan_override(const char* name,
                                                 std::initializer_list<int> widths,
                                                 int max_splits) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  PlanOverride o;
  char end = 0;
  bool width_ok = false;
  std::string list;
  for (int w : widths) {
    if (w == 0) continue;
    list += (list.empty() ? "0, " : ", ") + std::to_string(w);
  }
  const bool parsed = std::sscanf(v, "%d:%d%c", &o.bn, &o.splits, &end) == 2;
  for (int w : widths) width_ok = width_ok || o.bn == w;
  if (!parsed || !width_ok || o.splits < 0 || o.splits > max_splits)
    throw std::invalid_argument(std::string(name) + "='" + v + "': expected BN:S with BN " + list +
                                " and S 0 to " + std::to_string(max_splits));
  return o;
}

}  // namespace conv
