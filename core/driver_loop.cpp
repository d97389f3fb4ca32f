#include "core/driver_loop.hpp"

#include <ostream>

#include "core/system_info.hpp"

namespace bench {

std::vector<CaseOptions> timing_mode_options(const CaseOptions& base, const CLI::App& app,
                                             const DriverOptions& o,
                                             const std::string& command_head) {
  std::vector<TimingMode> modes = {o.timing == "pure" ? TimingMode::pure : TimingMode::real};
  if (o.timing == "both") modes = {TimingMode::real, TimingMode::pure};
  std::vector<CaseOptions> out;
  for (const TimingMode mode : modes) {
    CaseOptions options = base;
    options.timing = mode;
    options.command_prefix = command_head + common_command_text(app, o, mode);
    out.push_back(std::move(options));
  }
  return out;
}

void print_banner(std::ostream& os, const std::string& program, const ResultSet& set,
                  const std::string& tail) {
  os << program << " " << project_version() << " (" << git_commit() << ") on "
     << set.system["host"].get<std::string>()
     << (tail.empty() ? ", " + set.system["cpu_model"].get<std::string>() : tail) << "\n";
}

void print_case_count(std::ostream& os, std::size_t problems, std::size_t backends,
                      std::size_t modes) {
  os << problems << " problem(s) x " << backends << " backend(s)"
     << (modes > 1 ? " x " + std::to_string(modes) + " timing modes" : "") << "\n";
}

}  // namespace bench
