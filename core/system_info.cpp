#include "core/system_info.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace bench {

// Defined in the generated build_info.cpp (see cmake/BuildInfo.cmake).
extern const char* const kBuildGitCommit;
extern const char* const kBuildVersion;
extern const char* const kSourceCommit;
extern const char* const kSourceOrigin;
extern const char* const kSourceDiffSha256;
extern const char* const kSourceModified;
extern const unsigned long long kSourceDiffBytes;
}  // namespace bench
extern "C" const char myconv_source_diff_begin[];  // kSourceDiffBytes bytes (build_info.cpp)
namespace bench {

std::string project_version() {
  return kBuildVersion;
}
std::string git_commit() {
  return kBuildGitCommit;
}

std::string_view source_diff() {
  return {myconv_source_diff_begin, static_cast<std::size_t>(kSourceDiffBytes)};
}

void write_source_diff(const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string_view diff = source_diff();
  out.write(diff.data(), static_cast<std::streamsize>(diff.size()));
  if (!out) throw std::runtime_error("cannot write the source difference to '" + path + "'");
}

nlohmann::ordered_json source_info() {
  const std::string commit = kSourceCommit;
  nlohmann::ordered_json j;
  j["commit"] = commit.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(commit);
  j["commit_short"] = git_commit();
  j["dirty"] = kSourceDiffBytes > 0 || *kSourceModified != '\0';
  j["origin"] = kSourceOrigin;
  j["diff_sha256"] = kSourceDiffBytes > 0 ? nlohmann::ordered_json(kSourceDiffSha256) : nullptr;
  j["diff_bytes"] = kSourceDiffBytes;
  j["diff_file"] = nullptr;
  if (std::string(kSourceOrigin) == "stamp") {
    nlohmann::ordered_json modified = nlohmann::ordered_json::array();
    std::istringstream lines(kSourceModified);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) modified.push_back(line);
    j["modified_since_stamp"] = modified;
  }
  return j;
}

static std::string first_line_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    auto pos = line.find_first_of(":=", key.size());
    if (pos == std::string::npos) continue;
    std::string v = line.substr(pos + 1);
    v.erase(0, v.find_first_not_of(" \t\""));
    while (!v.empty() && (v.back() == '"' || v.back() == ' ')) v.pop_back();
    return v;
  }
  return "unknown";
}

unsigned long long available_host_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  unsigned long long kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024ULL;
  return 0;
}

std::string format_now(const char* format, bool utc) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  if (utc)
    gmtime_r(&t, &tm);
  else
    localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string utc_now_iso8601() {
  return format_now("%Y-%m-%dT%H:%M:%SZ", true);
}

static std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

nlohmann::ordered_json collect_system_info() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  utsname un{};
  uname(&un);
  nlohmann::ordered_json j;
  j["host"] = host;
  j["utc_time"] = utc_now_iso8601();
  j["project_version"] = project_version();
  j["git_commit"] = git_commit();
  j["source"] = source_info();
  j["cpu_model"] = first_line_value("/proc/cpuinfo", "model name");
  j["cpu_logical_cores"] = std::thread::hardware_concurrency();
  j["host_memory_bytes"] = static_cast<unsigned long long>(sysconf(_SC_PHYS_PAGES)) *
                           static_cast<unsigned long long>(sysconf(_SC_PAGE_SIZE));
  j["os"] = first_line_value("/etc/os-release", "PRETTY_NAME");
  j["kernel"] = std::string(un.sysname) + " " + un.release + " " + un.machine;
  j["compiler"] = compiler();
  // Load and thread settings explain noisy CPU timings: a busy host deschedules worker threads.
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) j["load_average_1_5_15min"] = {load[0], load[1], load[2]};
  for (const char* var : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES"})
    if (const char* v = std::getenv(var)) j["env"][var] = v;
  j["libraries"] = nlohmann::ordered_json::object();
  j["gpus"] = nlohmann::ordered_json::array();
  return j;
}

std::string executable_dir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  const std::string p(path, static_cast<std::size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

}  // namespace bench
