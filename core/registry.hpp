// What every suite's backend registry shares (experiments/registry/*.cpp): the table of known
// backends, each with its factory where it is built and the reason where it is not, turned into
// entries in report order; and the --list-backends table. Typed on the suite's Backend and its
// options; the table itself stays in the suite's registry, with its #if guards.
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

// The names backends had before the suites shared one naming scheme (LibTorch's eager path is
// libtorch_<device> in every suite), each with the names it stands for: mymlp's
// libtorch_eager_cpu and libtorch_eager_cuda, mytransformer's libtorch_eager (either device).
// --backend accepts them; results written under them keep them (the readers take both).
struct BackendAlias {
  const char* old_name;
  const char* device;  // "" where the old name stood for one backend on every device
  const char* name;
};
inline constexpr BackendAlias kBackendAliases[] = {
    {"libtorch_eager_cpu", "cpu", "libtorch_cpu"},
    {"libtorch_eager_cuda", "cuda", "libtorch_cuda"},
    {"libtorch_eager", "cpu", "libtorch_cpu"},
    {"libtorch_eager", "cuda", "libtorch_cuda"},
};

// asked with every old name (kBackendAliases) replaced by the current names it stands for: on
// `device` only where one is given ("cpu", "cuda"), else on every device. Order kept, no
// duplicates.
inline std::vector<std::string> canonical_backend_names(const std::vector<std::string>& asked,
                                                        const std::string& device = "") {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const auto& b : asked) {
    bool alias = false;
    for (const auto& a : kBackendAliases)
      if (b == a.old_name) {
        alias = true;
        if (device.empty() || device == a.device) add(a.name);
      }
    if (!alias) add(b);
  }
  return out;
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

// Whether an entry's backend is built and available here (--available-only keeps only these).
template <class Entry>
bool runnable_here(const Entry& e) {
  return e.backend && e.backend->available().ok;
}

// The entries --backend selects, in registry order: those named, or every built one when none is
// named; with available_only only those runnable_here. UsageError (exit 2) when available_only
// leaves none.
template <class Entry>
std::vector<const Entry*> select_backends(const std::vector<Entry>& registry,
                                          const std::vector<std::string>& names,
                                          bool available_only) {
  std::vector<const Entry*> selected;
  for (const auto& e : registry) {
    const bool named = names.empty() ? e.backend != nullptr
                                     : std::find(names.begin(), names.end(), e.name) != names.end();
    if (named && (!available_only || runnable_here(e))) selected.push_back(&e);
  }
  if (available_only && selected.empty())
    throw UsageError(
        "--available-only: none of the backends asked can run here "
        "(--list-backends says why)");
  return selected;
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
