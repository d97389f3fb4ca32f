#include "core/grammar.hpp"

#include <algorithm>

namespace bench {

std::string canonical_option_name(const CLI::App& app, const std::string& name,
                                  const OptionAliases& aliases) {
  auto known = [&](const std::string& n) { return app.get_option_no_throw(n) != nullptr; };
  if (known(name)) return name;
  std::string dashed = name;
  std::replace(dashed.begin() + 2, dashed.end(), '_', '-');
  if (known(dashed)) return dashed;
  for (const auto& [other, documented] : aliases) {
    std::string other_dashed = other;
    std::replace(other_dashed.begin(), other_dashed.end(), '_', '-');
    if (other_dashed == dashed && known(documented)) return documented;
  }
  auto ends_with = [&](const std::string& tail) {
    return dashed.size() > tail.size() + 2 &&
           dashed.compare(dashed.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::vector<std::string> candidates;
  if (ends_with("ies")) candidates.push_back(dashed.substr(0, dashed.size() - 3) + "y");
  if (ends_with("s")) candidates.push_back(dashed.substr(0, dashed.size() - 1));
  if (ends_with("y")) candidates.push_back(dashed.substr(0, dashed.size() - 1) + "ies");
  candidates.push_back(dashed + "s");
  for (const auto& c : candidates)
    if (known(c)) return c;
  return "";
}

std::vector<std::string> canonical_arguments(const CLI::App& app, int argc, const char* const* argv,
                                             const OptionAliases& aliases) {
  std::vector<std::string> out;
  bool options_end = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && !options_end && arg == "--") options_end = true;
    if (i > 0 && !options_end && arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      const auto eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      if (const std::string c = canonical_option_name(app, name, aliases); !c.empty() && c != name)
        arg = c + (eq == std::string::npos ? "" : arg.substr(eq));
    }
    out.push_back(std::move(arg));
  }
  return out;
}

}  // namespace bench
