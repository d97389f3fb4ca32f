#include "core/cpu_threads.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace bench {
namespace {
int g_cpu_threads = 0;
}  // namespace

void set_cpu_threads(int n) {
  g_cpu_threads = n > 0 ? n : 0;
  if (g_cpu_threads == 0) return;
  const std::string count = std::to_string(g_cpu_threads);
  setenv("OMP_NUM_THREADS", count.c_str(), 1);  // an OpenMP runtime loaded after this
  setenv("HL_NUM_THREADS", count.c_str(), 1);   // Halide's JIT thread pool
  // An OpenMP runtime already loaded (LibTorch's, which oneDNN's module shares): its setting for
  // the parallel regions this (the main) thread starts. No link dependency on OpenMP here.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads")))
    set(g_cpu_threads);
}

int cpu_threads() {
  return g_cpu_threads;
}

}  // namespace bench
