// Facts about the machine and the build, recorded with every result set.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace bench {

// Host name, UTC time, CPU model and logical cores, OS, kernel, compiler, project version and git
// commit. Library and GPU facts are added by the code that owns them (under "libraries", "gpus").
nlohmann::ordered_json collect_system_info();

// Project version and the git commit the binary was built from ("unknown" outside a checkout;
// "-dirty" appended when the tree had uncommitted changes at build time).
std::string project_version();
std::string git_commit();

// Host memory available to new allocations, in bytes (MemAvailable), or 0 when unknown.
unsigned long long available_host_memory_bytes();

// Current UTC time as ISO 8601, e.g. "2026-11-21T22:44:00Z".
std::string utc_now_iso8601();

}  // namespace bench
