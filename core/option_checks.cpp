#include "core/option_checks.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace bench {

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);  // 1e+308, not 309 digits
  return buf;
}

bool parse_double(const std::string& s, double& v) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

}  // namespace

CLI::Validator finite_number(double min, double max, bool min_exclusive) {
  std::string range = min_exclusive ? "above " + number_text(min) : "at least " + number_text(min);
  if (std::isfinite(max)) range += " and at most " + number_text(max);
  const std::string description = "finite number " + range;
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        double v = 0;
        if (!parse_double(input, v)) return "expected a number, got " + quote_input(input, 40);
        if (!std::isfinite(v) || errno == ERANGE)
          return "must be a finite number " + range + ", got " + quote_input(input, 40);
        const bool below = min_exclusive ? !(v > min) : !(v >= min);
        if (below || v > max) return "must be " + range + ", got " + quote_input(input, 40);
        return "";
      },
      description);
}

CLI::Validator positive_number() {
  return finite_number(0, std::numeric_limits<double>::infinity(), true);
}

CLI::Validator non_negative_number() {
  return finite_number(0);
}

CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        const std::size_t digits_at = !input.empty() && input[0] == '-' ? 1 : 0;
        bool ok = input.size() > digits_at;
        for (std::size_t i = digits_at; i < input.size() && ok; ++i)
          ok = std::isdigit(static_cast<unsigned char>(input[i])) != 0;
        if (!ok) return "expected an integer, got " + quote_input(input, 40);
        errno = 0;
        const long long v = std::strtoll(input.c_str(), nullptr, 10);
        if (errno == ERANGE || v < min || v > max)
          return "must be an integer " + range + ", got " + quote_input(input, 40);
        return "";
      },
      "integer " + range);
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        bool ok = !input.empty();
        for (char c : input) ok = ok && std::isdigit(static_cast<unsigned char>(c)) != 0;
        if (!ok) return "expected an unsigned integer (digits only), got " + quote_input(input, 40);
        errno = 0;
        (void)std::strtoull(input.c_str(), nullptr, 10);
        if (errno == ERANGE)
          return "must be at most " + std::to_string(std::numeric_limits<std::uint64_t>::max()) +
                 ", got " + quote_input(input, 40);
        return "";
      },
      "unsigned integer");
}

void check_list_items(const CLI::App& app, int argc, const char* const* argv) {
  // A value token: anything but an option ("--x", "-x"); a negative number is a value.
  auto is_value = [](const std::string& t) {
    return t.empty() || t[0] != '-' || t.size() == 1 ||
           std::isdigit(static_cast<unsigned char>(t[1])) || t[1] == '.';
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const auto eq = arg.find('=');
    const CLI::Option* opt = app.get_option_no_throw(arg.substr(0, eq));
    if (!opt || opt->get_delimiter() == '\0') continue;
    const char delim = opt->get_delimiter();
    std::vector<std::string> values;
    if (eq != std::string::npos) {
      values.push_back(arg.substr(eq + 1));
    } else {
      for (int j = i + 1; j < argc && is_value(argv[j]); ++j) values.emplace_back(argv[j]);
    }
    for (const auto& v : values) {
      const std::string padded = delim + v + delim;
      if (padded.find(std::string(2, delim)) != std::string::npos)
        throw CLI::ValidationError(opt->get_name(),
                                   v.empty() ? std::string("an empty value (a list needs items)")
                                             : "an empty item in the list " + quote_input(v, 40));
    }
  }
}

}  // namespace bench
