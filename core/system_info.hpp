// Facts about the machine and the build, recorded with every result set.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace bench {

// Host name, UTC time, CPU model and logical cores, OS, kernel, compiler, project version and git
// commit. Library and GPU facts are added by the code that owns them (under "libraries", "gpus").
nlohmann::ordered_json collect_system_info();

// Project version and the git commit the binary was built from, short ("unknown" when not
// known; "-dirty" appended when the tree differed from it at build time, "-modified" when a stamped
// tree was changed after its stamp).
std::string project_version();
std::string git_commit();

// The source the binary was built from (cmake/BuildInfo.cmake), as the result sets record it under
// system.source: commit (full), commit_short, dirty, origin (git, stamp, cmake_option, unknown),
// diff_sha256, diff_bytes, diff_file (null here: set by whoever writes the difference beside a
// result file) and, for a stamped tree, modified_since_stamp.
nlohmann::ordered_json source_info();
// The tree's difference from the commit at build time (git diff --binary; empty when none).
std::string_view source_diff();
// Writes source_diff() to path (an empty file when there is none). Throws on an I/O error.
void write_source_diff(const std::string& path);

// Host memory available to new allocations, in bytes (MemAvailable), or 0 when unknown.
unsigned long long available_host_memory_bytes();

// The folder of the running program (/proc/self/exe without the program's name), or "" where
// /proc cannot say. The programs find what they ship beside them from it (the op lists, the
// transformer presets, the oneDNN module of an install).
std::string executable_dir();

// Current UTC time as ISO 8601, e.g. "2026-11-21T22:44:00Z".
std::string utc_now_iso8601();

// The current time as strftime writes it with format: UTC where utc, else local time.
std::string format_now(const char* format, bool utc);

}  // namespace bench
