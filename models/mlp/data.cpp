#include "models/mlp/data.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/random.hpp"

namespace mlp {

std::string to_string(Gelu g) {
  return g == Gelu::erf ? "erf" : "tanh";
}

MlpData make_data(const MlpProblem& p, std::uint64_t user_seed) {
  const std::string sizes = "mlp:d" + std::to_string(p.dim) + "l" + std::to_string(p.num_layers) +
                            "b" + std::to_string(p.batch_size);
  const std::uint64_t seed = bench::descriptor_seed(sizes, user_seed);
  const auto D = static_cast<std::size_t>(p.dim);
  const float bound = 1.0f / std::sqrt(static_cast<float>(p.dim));
  // Random in [-1, 1) at fp32, scaled, then rounded once to the dtype.
  auto make = [&](std::size_t n, std::uint64_t stream, float scale) {
    std::vector<float> v(n);
    bench::fill_random(v, bench::splitmix64(seed + stream), bench::DataType::fp32);
    for (float& f : v) f = bench::round_to(p.dtype, f * scale);
    return v;
  };
  MlpData d;
  d.x = make(static_cast<std::size_t>(p.batch_size) * D, 0, 1.0f);
  for (std::int64_t l = 0; l < p.num_layers; ++l) {
    d.weight.push_back(make(D * D, 1 + 2 * std::uint64_t(l), bound));
    d.bias.push_back(make(D, 2 + 2 * std::uint64_t(l), bound));
  }
  return d;
}

std::vector<std::string> parameter_names(const MlpProblem& p) {
  std::vector<std::string> names;
  for (std::int64_t l = 0; l < p.num_layers; ++l) {
    names.push_back("layers." + std::to_string(l) + ".weight");
    names.push_back("layers." + std::to_string(l) + ".bias");
  }
  return names;
}

double gradient_tolerance(const MlpProblem& p) {
  const double k = p.dtype == DataType::bf16 ? 5e-3 : p.dtype == DataType::tf32 ? 5e-4 : 2.5e-6;
  return k * std::sqrt(static_cast<double>(p.num_layers));
}

GradientCheck check_gradients(const MlpProblem& p, double loss,
                              const std::vector<std::vector<float>>& gradients,
                              const Reference& ref) {
  GradientCheck out;
  bench::Correctness& c = out.correctness;
  const double tol = gradient_tolerance(p);
  c.tolerance = {0.0, tol};
  const std::vector<std::string> names = parameter_names(p);
  if (gradients.size() != ref.gradients.size()) {
    c.message = "the implementation returned " + std::to_string(gradients.size()) +
                " gradients, expected " + std::to_string(ref.gradients.size());
    return out;
  }
  const double loss_err =
      std::abs(loss - ref.loss) / std::max({std::abs(ref.loss), ref.loss_scale, 1e-30});
  nlohmann::ordered_json per = nlohmann::ordered_json::object();
  std::size_t worst = 0;
  double worst_err = -1;
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const auto& g = gradients[i];
    const auto& r = ref.gradients[i];
    if (g.size() != r.size()) {
      c.message = names[i] + ": " + std::to_string(g.size()) + " gradient elements, expected " +
                  std::to_string(r.size());
      return out;
    }
    double diff2 = 0, ref2 = 0;
    std::size_t bad = 0;
    for (std::size_t j = 0; j < g.size(); ++j) {
      const double d = double(g[j]) - r[j];
      if (!std::isfinite(g[j])) ++bad;
      diff2 += d * d;
      ref2 += r[j] * r[j];
      c.max_abs_err = std::max(c.max_abs_err, std::isfinite(d) ? std::abs(d) : INFINITY);
    }
    c.non_finite += bad;
    c.elements += g.size();
    const double err = bad ? INFINITY : std::sqrt(diff2 / std::max(ref2, 1e-300));
    per[names[i]] = std::isfinite(err) ? nlohmann::ordered_json(err) : nlohmann::ordered_json();
    if (!(err <= tol)) ++c.mismatches;
    if (!(err <= worst_err)) {
      worst_err = err;
      worst = i;
    }
  }
  c.rel_l2_err = worst_err;
  const bool loss_ok = loss_err <= tol;
  c.passed = loss_ok && c.mismatches == 0 && c.non_finite == 0;
  // The five largest differences of the worst parameter, for the report of a failed check.
  if (!c.passed) {
    const auto& g = gradients[worst];
    const auto& r = ref.gradients[worst];
    std::vector<std::size_t> idx(g.size());
    for (std::size_t j = 0; j < idx.size(); ++j) idx[j] = j;
    const std::size_t k = std::min<std::size_t>(5, idx.size());
    auto err_at = [&](std::size_t j) {
      const double d = std::abs(double(g[j]) - r[j]);
      return std::isfinite(d) ? d : INFINITY;
    };
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](std::size_t a, std::size_t b) { return err_at(a) > err_at(b); });
    for (std::size_t j = 0; j < k; ++j)
      c.first_mismatches.push_back({idx[j], g[idx[j]], r[idx[j]]});
  }
  std::ostringstream msg;
  msg.precision(3);
  if (c.passed) {
    msg << "ok: loss rel err " << loss_err << ", worst gradient " << names[worst] << " rel L2 err "
        << worst_err << " <= " << tol;
  } else if (!loss_ok) {
    msg << "loss " << loss << " vs float64 " << ref.loss << ": rel err " << loss_err << " > "
        << tol;
  } else {
    msg << c.mismatches << " of " << gradients.size() << " gradients off; worst " << names[worst]
        << ": rel L2 err " << worst_err << " > " << tol;
    if (c.non_finite) msg << " (" << c.non_finite << " NaN/Inf)";
  }
  c.message = msg.str();
  out.detail = {{"loss", loss},
                {"reference_loss", ref.loss},
                {"loss_rel_err", loss_err},
                {"tolerance_rel_l2", tol},
                {"worst_parameter", names[worst]},
                {"gradient_rel_l2_err", per},
                {"reference", ref.how}};
  return out;
}

MatmulData make_matmul_data(const MatmulProblem& p, std::uint64_t user_seed) {
  const std::uint64_t seed = bench::descriptor_seed("mm:n" + std::to_string(p.n), user_seed);
  const auto nn = static_cast<std::size_t>(p.n * p.n);
  MatmulData d;
  d.a.resize(nn);
  d.b.resize(nn);
  bench::fill_random(d.a, bench::splitmix64(seed + 1), p.dtype);
  bench::fill_random(d.b, bench::splitmix64(seed + 2), p.dtype);
  const std::size_t k = std::min<std::size_t>(kMatmulCheckElements, nn);
  for (std::size_t i = 0; i < k; ++i) {
    // Spread over C, the first and the last element included.
    const auto e = k == 1 ? 0 : static_cast<std::int64_t>((nn - 1) * i / (k - 1));
    d.check_index.push_back(e);
    const std::int64_t r = e / p.n, c = e % p.n;
    double s = 0;
    for (std::int64_t j = 0; j < p.n; ++j)
      s += double(d.a[std::size_t(r * p.n + j)]) * double(d.b[std::size_t(j * p.n + c)]);
    d.check_ref.push_back(s);
  }
  return d;
}

bench::Tolerance matmul_tolerance(const MatmulProblem& p, double ref_rms) {
  return bench::dot_tolerance(p.dtype, p.n, ref_rms);
}

bench::MemoryNeed memory_need(const Problem& problem, bool on_gpu) {
  bench::MemoryNeed need;
  if (const auto* p = std::get_if<MlpProblem>(&problem)) {
    const double d = double(p->dim), params = double(p->num_layers) * (d * d + d),
                 acts = 3 * double(p->batch_size) * d * double(p->num_layers),
                 elem = bench::storage_bytes(p->dtype);
    need.host_bytes = 4 * (double(p->batch_size) * d + params) + 8 * (2 * params + acts) +
                      4 * params + (on_gpu ? 0 : 4 * (2 * params + acts));
    if (on_gpu) need.device_bytes = elem * (2 * params + acts);
  } else {
    const auto& m = std::get<MatmulProblem>(problem);
    const double n2 = double(m.n) * double(m.n);
    need.host_bytes = 3 * 4 * n2;
    if (on_gpu) need.device_bytes = 3 * n2 * bench::storage_bytes(m.dtype);
  }
  return need;
}

}  // namespace mlp
