// The options several suites' command lines share in the same words, written once: list options,
// --problem with its file of problems, --backend (which backends run, older names read as the
// current ones) and --dtype's names as data types.
// Each suite's options add them among their own (conv/options.hpp, ops/options.hpp,
// models/mlp/options.hpp); the shared measurement and output options are core/driver.hpp's.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/dtype.hpp"
#include "core/registry.hpp"

namespace bench {

// NAME VALUE,VALUE,... (comma-separated, repeatable) into values, the default shown in --help.
template <class T>
CLI::Option* add_list_option(CLI::App& app, const std::string& name, std::vector<T>& values,
                             const std::string& description) {
  return app.add_option(name, values, description)->capture_default_str()->delimiter(',');
}

// The problems named instead of the suite's own set: --problem DESCRIPTOR (repeatable) into
// descriptors, and file_option FILE (repeatable: one descriptor a line) into files.
inline void add_problem_sources(CLI::App& app, std::vector<std::string>& descriptors,
                                const std::string& descriptor_help, const std::string& file_option,
                                std::vector<std::string>& files, const std::string& file_help) {
  app.add_option("--problem", descriptors, descriptor_help);
  app.add_option(file_option, files, file_help);
}

inline constexpr const char* kBackendOptionHelp = "Backend to run (repeatable; default: all built)";

// --backend NAME, a list (comma-separated, repeatable) into names; finish_backend_names after
// parsing.
inline CLI::Option* add_backend_option(CLI::App& app, std::vector<std::string>& names,
                                       const std::string& description = kBackendOptionHelp) {
  return app.add_option("--backend", names, description)->delimiter(',');
}

// After parsing: --backend's older names replaced by the current ones (canonical_backend_names).
inline void finish_backend_names(std::vector<std::string>& names) {
  names = canonical_backend_names(names);
}

// --dtype's names as data types, in order (parse_data_type: UsageError for an unknown one).
inline std::vector<DataType> parse_data_types(const std::vector<std::string>& names) {
  std::vector<DataType> out;
  for (const auto& n : names) out.push_back(parse_data_type(n));
  return out;
}

}  // namespace bench
