#include "conv/settings.hpp"

#include <fstream>
#include <set>

#include "core/error.hpp"

namespace conv {

static std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> read_shape_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw bench::UsageError("--shapes: cannot read '" + path + "'");
  std::vector<std::string> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    // "label: descriptor" is the same as descriptor n"label".
    if (const auto colon = line.find(':'); colon != std::string::npos)
      line = trim(line.substr(colon + 1)) + "n\"" + trim(line.substr(0, colon)) + "\"";
    if (line.find_first_of(" \t") != std::string::npos)
      throw bench::UsageError(path + ":" + std::to_string(number) +
                              ": one descriptor per line expected, got '" + line + "'");
    out.push_back(path + ":" + std::to_string(number) + "\t" + line);
  }
  return out;
}

std::vector<Problem> expand(const Settings& s) {
  std::vector<Problem> out;
  std::set<std::string> seen;
  auto add = [&](const Problem& p) {
    if (seen.insert(p.str_with_name()).second) out.push_back(p);
  };

  // Descriptors carry their origin ("file:line\t") so that errors can point at it.
  std::vector<std::string> descriptors = s.descriptors;
  for (const auto& f : s.shape_files)
    for (auto& d : read_shape_file(f)) descriptors.push_back(std::move(d));

  for (DataType dt : s.dtypes)
    for (Layout layout : s.layouts) {
      Problem defaults;
      defaults.dtype = dt;
      defaults.layout = layout;
      if (!descriptors.empty()) {
        for (const auto& entry : descriptors) {
          const auto tab = entry.find('\t');
          const std::string text = tab == std::string::npos ? entry : entry.substr(tab + 1);
          try {
            add(parse_problem(text, defaults));
          } catch (const bench::UsageError& e) {
            if (tab == std::string::npos)
              throw bench::UsageError(std::string("--problem: ") + e.what());
            throw bench::UsageError(entry.substr(0, tab) + ": " + e.what());
          }
        }
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
                        Problem p = defaults;
                        p.mb = mb, p.ic = ic, p.oc = oc, p.ih = p.iw = in, p.kh = p.kw = k;
                        p.sh = p.sw = st, p.ph = p.pw = pad, p.dh = p.dw = dil, p.g = g;
                        if (const std::string why = p.validate(); !why.empty())
                          throw bench::UsageError(
                              "invalid problem from --batch_size " + std::to_string(mb) +
                              " --in_channels " + std::to_string(ic) + " --out_channels " +
                              std::to_string(oc) + " --input_size " + std::to_string(in) +
                              " --kernel_size " + std::to_string(k) + " --stride " +
                              std::to_string(st) + " --padding " + std::to_string(pad) +
                              " --dilation " + std::to_string(dil) + " --groups " +
                              std::to_string(g) + ": " + why);
                        add(p);
                      }
    }
  return out;
}

}  // namespace conv
