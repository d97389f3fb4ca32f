// No code of its own: it keeps ops_baselines a valid library in a build where none of the
// baseline libraries (LibTorch, oneDNN, CUDA) was found.
#include "baselines/ops/backends.hpp"
