// --threads N: how many threads the CPU backends use, set once after the command line is parsed
// and before any backend is made. Who honours it: LibTorch (at::set_num_threads, by
// libtorch::apply_cpu_threads in core/torch/libtorch_common.hpp), oneDNN (its OpenMP runtime:
// omp_set_num_threads on the loaded OpenMP runtime, and OMP_NUM_THREADS for one loaded later),
// Halide's JIT runtime (HL_NUM_THREADS, read when its thread pool starts: before the first
// halide_cpu case).
#pragma once

namespace bench {

// n > 0: the count above; 0: each library's own default (nothing is changed).
void set_cpu_threads(int n);

// The count --threads asked for; 0 when not given.
int cpu_threads();

}  // namespace bench
