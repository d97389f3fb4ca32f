// What every suite's backend registry shares (experiments/registry/*.cpp,
// models/transformer/registry.cpp): the table of known backends, each with its factory where it
// is built and the reason where it is not, turned into entries in report order; and the
// --list-backends table. Typed on the suite's Backend and its options; the table itself stays in
// the suite's registry, with its #if guards.
#pragma once

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/printers.hpp"

namespace bench {

template <class Backend>
struct RegistryEntry {
  std::string name;
  std::string device;  // "cpu" or "cuda"
  std::string summary;
  std::unique_ptr<Backend> backend;  // null when not built into this binary
  std::string why_missing;           // set when backend is null
};

template <class Backend, class Options>
struct KnownBackend {
  const char* name;
  const char* device;
  const char* summary;
  std::unique_ptr<Backend> (*factory)(const Options&);  // null: not built
  const char* why_missing;
};

// The entries of `known`, in its order: built backends made with `options`.
template <class Backend, class Options, std::size_t N>
std::vector<RegistryEntry<Backend>> make_entries(const KnownBackend<Backend, Options> (&known)[N],
                                                 const Options& options) {
  std::vector<RegistryEntry<Backend>> r;
  for (const auto& k : known) {
    RegistryEntry<Backend> e{k.name, k.device, k.summary, nullptr, ""};
    if (k.factory)
      e.backend = k.factory(options);
    else
      e.why_missing = k.why_missing;
    r.push_back(std::move(e));
  }
  return r;
}

template <class Backend, class Options, std::size_t N>
std::vector<std::string> names_of(const KnownBackend<Backend, Options> (&known)[N]) {
  std::vector<std::string> names;
  for (const auto& k : known) names.push_back(k.name);
  return names;
}

// --backend's names, each one of `known`; else bench::UsageError naming the ones allowed.
inline void check_backend_names(const std::vector<std::string>& asked,
                                const std::vector<std::string>& known) {
  for (const auto& b : asked)
    if (std::find(known.begin(), known.end(), b) == known.end()) {
      std::string allowed;
      for (std::size_t i = 0; i < known.size(); ++i) allowed += (i ? ", " : "") + known[i];
      throw UsageError("--backend: unknown backend '" + b + "' (allowed: " + allowed + ")");
    }
}

// --list-backends: name, device, built, available here, and the library's version or why not.
template <class Backend>
void print_backend_list(std::ostream& os, const std::vector<RegistryEntry<Backend>>& registry) {
  Table t({"backend", "device", "built", "available", "library / why not"});
  for (const auto& e : registry) {
    std::string avail = "-", info = e.why_missing;
    if (e.backend) {
      const auto a = e.backend->available();
      avail = a.ok ? "yes" : "no";
      info = a.ok ? e.backend->library_version() : a.reason;
    }
    t.add_row({e.name, e.device, e.backend ? "yes" : "no", avail, info});
  }
  t.print(os);
}

}  // namespace bench
