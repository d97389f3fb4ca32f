#include "core/error.hpp"

namespace bench {

std::string quote_input(const std::string& text, std::size_t max) {
  if (text.size() <= max || max < 16) return "'" + text + "'";
  const std::size_t tail = max / 4, head = max - tail - 3;
  return "'" + text.substr(0, head) + "..." + text.substr(text.size() - tail) + "' (" +
         std::to_string(text.size()) + " characters)";
}

std::string one_line(const std::string& text, std::size_t max) {
  std::string s = text;
  for (char& c : s)  // control characters (line breaks, tabs, escapes) would break the line
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() > max && max > 3) s = s.substr(0, max - 3) + "...";
  return s;
}

void throw_check_failure(const char* expr, const std::string& message, const char* file, int line) {
  throw std::runtime_error(message + " (check `" + expr + "` failed at " + file + ":" +
                           std::to_string(line) + ")");
}

}  // namespace bench
