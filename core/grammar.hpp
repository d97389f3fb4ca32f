// The command-line grammar the four programs share (myconv, myops, mymlp, mytransformer; the
// runner scripts/run_all_experiments.sh follows the same rules): every option has one documented
// spelling, words joined by '-' ("--batch-size"); "_" is accepted for "-" everywhere
// ("--batch_size"), and a list option's plural for its singular ("--batch-sizes", "--backends",
// "--categories") or the singular for a plural one. The drivers register the documented spelling
// only, so --help shows one name per option; run_main rewrites the command line to it before
// CLI11 parses it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace bench {

// A program's other names of an option (old name -> documented name, e.g. mytransformer's
// "--impl" -> "--backend"), each also taken with '_' for '-'.
using OptionAliases = std::vector<std::pair<std::string, std::string>>;

// The name `app` knows for option `name` ("--x", no value): `name` itself when known; else with
// '_' as '-'; else an alias's documented name; else its singular ("--sizes" -> "--size",
// "--categories" -> "--category") or plural ("--model" -> "--models"). "" when none is known
// (CLI11 then refuses the original as typed).
std::string canonical_option_name(const CLI::App& app, const std::string& name,
                                  const OptionAliases& aliases = {});

// argv with every option name ("--name" or "--name=value", before a bare "--") replaced by its
// canonical_option_name where one is known; values and everything after "--" untouched.
std::vector<std::string> canonical_arguments(const CLI::App& app, int argc, const char* const* argv,
                                             const OptionAliases& aliases = {});

}  // namespace bench
