#include "models/mlp/ceiling.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include "core/timer.hpp"
#include "models/mlp/data.hpp"

namespace mlp {

nlohmann::ordered_json measure_ceilings(
    const std::vector<const bench::RegistryEntry<Backend>*>& selected,
    const std::vector<Problem>& problems, std::int64_t n_cpu, std::int64_t n_cuda) {
  nlohmann::ordered_json out = {
      {"method", "best over the implementations' GEMMs (torch::mm, cuBLASLt) of a square " +
                     std::to_string(n_cpu) + "^3 (cpu) or " + std::to_string(n_cuda) +
                     "^3 (cuda) matmul, random inputs, best of 3 synchronized calls after one "
                     "warm-up, host clock"}};
  std::set<std::pair<std::string, std::string>> done;
  for (const auto& p : problems)
    for (const auto* e : selected) {
      if (!e->backend || !e->backend->available().ok) continue;
      const bench::DataType dt = dtype_of(p);
      const std::string d = bench::to_string(dt);
      MatmulProblem mm;
      mm.n = e->device == "cuda" ? n_cuda : n_cpu;
      mm.dtype = dt;
      if (!e->backend->check_matmul_support(mm).ok) continue;
      if (!done.insert({e->name, d}).second) continue;
      try {
        std::cout << "measuring the matmul ceiling: " << e->name << " " << mm.str() << "...\n";
        const MatmulData data = make_matmul_data(mm, 1);
        auto inst = e->backend->prepare_matmul(mm, data);
        inst->compile();
        inst->run();
        inst->sync();
        double best = 1e30;
        for (int i = 0; i < 3; ++i) {
          bench::WallTimer t;
          inst->run();
          inst->sync();
          best = std::min(best, t.elapsed().count());
        }
        const double tflops = mm.flops() / (best * 1e-3) / 1e12;
        out["by_backend"][e->name][d] = tflops;
        auto& cur = out["tflops"][e->device][d];
        if (cur.is_null() || cur.get<double>() < tflops) cur = tflops;
      } catch (const std::exception& ex) {
        out["failed"][e->name][d] = ex.what();
      }
    }
  return out;
}

std::optional<double> ceiling_of(const nlohmann::ordered_json& c, const bench::Result& r) {
  if (!c.contains("tflops") || !c["tflops"].contains(r.device) ||
      !c["tflops"][r.device].contains(r.dtype))
    return std::nullopt;
  return c["tflops"][r.device][r.dtype].get<double>();
}

}  // namespace mlp
