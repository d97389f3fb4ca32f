#include "conv/settings.hpp"

#include <fstream>
#include <map>
#include <set>

#include "core/error.hpp"

namespace conv {

namespace {

std::string join_options(std::int64_t mb, std::int64_t ic, std::int64_t oc, std::int64_t in,
                         std::int64_t k, std::int64_t st, std::int64_t pad, std::int64_t dil,
                         std::int64_t g) {
  return "--batch-size " + std::to_string(mb) + " --in-channels " + std::to_string(ic) +
         " --out-channels " + std::to_string(oc) + " --input-size " + std::to_string(in) +
         " --kernel-size " + std::to_string(k) + " --stride " + std::to_string(st) + " --padding " +
         std::to_string(pad) + " --dilation " + std::to_string(dil) + " --groups " +
         std::to_string(g);
}

}  // namespace

std::vector<Problem> expand(const Settings& s, std::vector<std::string>* notes) {
  std::vector<Problem> out;
  std::set<std::string> seen;
  auto add = [&](const Problem& p) {
    if (seen.insert(p.str_with_name()).second) out.push_back(p);
  };

  // Descriptors with their origin ("--problem" or "file:line"), so that errors can point at it.
  std::vector<ShapeEntry> descriptors;
  for (const auto& d : s.descriptors) descriptors.push_back({"", d});
  for (const auto& f : s.shape_files) {
    ShapeFile file = read_shape_file(f);
    if (notes) notes->insert(notes->end(), file.notes.begin(), file.notes.end());
    if (notes && file.entries.empty()) notes->push_back(f + ": no problem in this file");
    for (auto& e : file.entries) descriptors.push_back(std::move(e));
  }

  bool first_pass = true;
  for (DataType dt : s.dtypes)
    for (Layout layout : s.layouts) {
      Problem defaults;
      defaults.dtype = dt;
      defaults.layout = layout;
      if (!s.descriptors.empty() || !s.shape_files.empty()) {
        std::map<std::string, std::string> origin_of;  // a repeated line is noted once
        for (const auto& entry : descriptors) {
          Problem p;
          try {
            p = parse_problem(entry.descriptor, defaults);
          } catch (const bench::UsageError& e) {
            if (entry.origin.empty())
              throw bench::UsageError(std::string("--problem: ") + e.what());
            throw bench::UsageError(entry.origin + ": " + e.what());
          }
          const auto [it, fresh] = origin_of.emplace(p.str_with_name(), entry.origin);
          if (!fresh && first_pass && notes && !entry.origin.empty())
            notes->push_back(entry.origin + ": the same problem as " +
                             (it->second.empty() ? std::string("--problem") : it->second) +
                             "; run once");
          add(p);
        }
        first_pass = false;
        continue;
      }
      for (auto mb : s.batch_size)
        for (auto ic : s.in_channels)
          for (auto oc : s.out_channels)
            for (auto in : s.input_size)
              for (auto k : s.kernel_size)
                for (auto st : s.stride)
                  for (auto pad : s.padding)
                    for (auto dil : s.dilation)
                      for (auto g : s.groups) {
                        auto invalid = [&](const std::string& why) {
                          return bench::UsageError(
                              "invalid problem from " +
                              join_options(mb, ic, oc, in, k, st, pad, dil, g) + ": " + why);
                        };
                        if (dil < 1) throw invalid("--dilation must be at least 1 (1 = dense)");
                        Problem p = defaults;
                        p.mb = mb, p.ic = ic, p.oc = oc, p.ih = p.iw = in, p.kh = p.kw = k;
                        p.sh = p.sw = st, p.ph = p.pw = pad, p.dh = p.dw = dil - 1, p.g = g;
                        if (const std::string why = p.validate(); !why.empty()) throw invalid(why);
                        add(p);
                      }
    }
  return out;
}

std::string command_text(const BackendOptions& o) {
  std::string s;
  if (o.halide_schedule != "manual") s += " --halide-schedule " + o.halide_schedule;
  if (!o.halide_tile.empty()) s += " --halide-tile " + o.halide_tile;
  if (!o.variant.empty()) s += " --variant " + o.variant;
  if (o.cudnn_api != BackendOptions{}.cudnn_api) s += " --cudnn-api " + o.cudnn_api;
  if (o.cudnn_algo != "heuristic") s += " --cudnn-algo " + o.cudnn_algo;
  if (o.torch_cudnn_benchmark) s += " --torch-cudnn-benchmark";
  return s;
}

}  // namespace conv
