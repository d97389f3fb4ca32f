#include "core/shape_file.hpp"

#include <fstream>

#include "core/error.hpp"
#include "core/paths.hpp"

namespace bench {

ShapeFile read_shape_file(const std::string& path, const std::string& option) {
  check_input_file(option, path);  // a folder or a FIFO is refused, never opened
  std::ifstream in(path);
  if (!in) throw UsageError(option + ": cannot read " + quote_input(path));
  ShapeFile out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string origin = path + ":" + std::to_string(number);
    // Tokens split at whitespace outside quotes; '#' outside quotes ends the line.
    std::vector<std::string> tokens;
    std::string token;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (!quoted && c == '#') break;
      if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
        if (!token.empty()) tokens.push_back(std::move(token));
        token.clear();
        continue;
      }
      token += c;
    }
    if (!token.empty()) tokens.push_back(std::move(token));
    for (auto& t : tokens) {
      if (t.compare(0, 2, "--") == 0)
        out.notes.push_back(origin + ": benchdnn option " + quote_input(t) +
                            " is not supported; ignored");
      else
        out.entries.push_back({origin, std::move(t)});
    }
  }
  return out;
}

}  // namespace bench
