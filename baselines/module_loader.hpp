// The backends that live in a module of their own (libmyconv_onednn.so, libmyconv_libtorch.so),
// found and opened the same way: $<ENV>, the install tree's place beside the program
// (PREFIX/bin/myconv -> PREFIX/lib/myconv/), the build tree's path, then beside the program's
// build folder (build/experiments/myconv -> build/baselines/). Opened once, never closed: the
// backends' code lives in it.
#pragma once

#include <string>
#include <vector>

namespace bench {

struct ModuleLocation {
  const char* env;          // e.g. "MYCONV_ONEDNN_MODULE": a path that overrides the others
  const char* install_dir;  // relative to the install prefix, e.g. "lib/myconv"
  const char* build_path;   // the module's path in the build tree
  const char* file_name;    // e.g. "libmyconv_onednn.so"
};

// Where to look for the module, in order.
std::vector<std::string> module_candidates(const ModuleLocation& where);

// The first candidate that exists as a file; "" where none does.
std::string find_module(const ModuleLocation& where);

// dlopen(flags) of the first candidate that opens; null, with every candidate's dlerror() in
// *errors ("; "-separated), where none does.
void* open_module(const ModuleLocation& where, int flags, std::string* errors);

}  // namespace bench
