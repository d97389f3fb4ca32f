#include "baselines/module_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "core/system_info.hpp"

namespace bench {

std::vector<std::string> module_candidates(const ModuleLocation& where) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(where.env)) candidates.emplace_back(env);
  const std::string name = where.file_name;
  candidates.push_back(executable_dir() + "/../" + where.install_dir + "/" + name);
  candidates.emplace_back(where.build_path);
  candidates.push_back(executable_dir() + "/../baselines/" + name);
  return candidates;
}

std::string find_module(const ModuleLocation& where) {
  for (const std::string& path : module_candidates(where))
    if (access(path.c_str(), R_OK) == 0) return path;
  return "";
}

void* open_module(const ModuleLocation& where, int flags, std::string* errors) {
  errors->clear();
  for (const std::string& path : module_candidates(where)) {
    if (void* h = dlopen(path.c_str(), flags)) return h;
    const char* e = dlerror();
    *errors += std::string(errors->empty() ? "" : "; ") + (e ? e : path + ": dlopen failed");
  }
  return nullptr;
}

}  // namespace bench
