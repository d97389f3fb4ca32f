#include "models/transformer/report.hpp"

#include "core/printers.hpp"

namespace transformer {

void print_presets(std::ostream& os, const std::vector<Grid>& presets, const std::string& path) {
  bench::Table t({"preset", "batch sizes", "input lengths", "output", "runs", "description"});
  auto list = [](const std::vector<std::int64_t>& v) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  for (const auto& g : presets)
    t.add_row({g.name, list(g.batch_sizes), list(g.input_lengths), std::to_string(g.output_length),
               std::to_string(g.num_runs), g.description});
  t.print(os);
  os << "from " << path << " (our values, to be replaced by the seed's exact ones when known)\n";
}

void print_generation_figures(std::ostream& os, const std::vector<bench::Result>& results,
                              bool train) {
  using Row = std::vector<std::string>;
  auto join = [](Row a, const Row& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const Row times = train ? Row{"forward ms", "backward ms", "step ms", "tokens/s"}
                          : Row{"TTFT ms",   "ms/token (median)", "decode tok/s",
                                "e2e tok/s", "decode GB/s",       "weights/copy"};
  bench::Table t(join(join({"model", "backend", "dtype", "case", "status"}, times),
                      {"peak MiB", "predicted MiB", "peak/pred"}));
  for (const auto& r : results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, int digits, double scale = 1) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() / scale, digits)
                             : std::string("-");
    };
    const Row figures = train ? Row{num("forward_ms", 2), num("backward_ms", 2),
                                    num("train_step_ms", 2), num("train_tokens_per_s", 1)}
                              : Row{num("ttft_ms", 2),
                                    num("decode_ms_per_token_median", 3),
                                    num("decode_tokens_per_s", 1),
                                    num("e2e_tokens_per_s", 1),
                                    num("decode_bandwidth_gbs", 1),
                                    num("decode_weight_bandwidth_vs_copy", 3)};
    const double mib = double(1 << 20);
    t.add_row(
        join(join({r.name, r.backend, r.dtype, r.problem, bench::to_string(r.status)}, figures),
             {num("peak_allocated_bytes", 1, mib), num("predicted_peak_bytes", 1, mib),
              num("peak_vs_prediction", 3)}));
  }
  t.print(os);
}

}  // namespace transformer
