#include "core/matmul_ceiling.hpp"

#include <algorithm>
#include <exception>
#include <limits>

namespace bench {

nlohmann::ordered_json measure_matmul_ceiling(
    const std::string& method, const std::vector<CeilingMatmul>& matmuls, CeilingSampling sampling,
    const std::function<void(const CeilingMatmul&)>& before) {
  nlohmann::ordered_json out = {{"method", method}};
  for (const CeilingMatmul& m : matmuls) {
    const std::string dt = to_string(m.dtype);
    try {
      if (before) before(m);
      const std::function<double()> call = m.prepare();
      for (int i = 0; i < sampling.warmups; ++i) (void)call();
      double best_ms = std::numeric_limits<double>::infinity();
      for (int i = 0; i < sampling.timed; ++i) best_ms = std::min(best_ms, call());
      const double tflops = m.flop / (best_ms * 1e-3) / 1e12;
      out["by_backend"][m.backend][dt] = tflops;
      auto& cur = out["tflops"][m.device][dt];
      if (cur.is_null() || cur.get<double>() < tflops) cur = tflops;
    } catch (const std::exception& e) {
      out["failed"][m.backend][dt] = e.what();
    }
  }
  return out;
}

}  // namespace bench
