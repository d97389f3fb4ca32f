// No code of its own: it keeps mlp_baselines a valid library in a build where none of the
// baseline libraries (LibTorch, CUDA) was found.
#include "baselines/mlp/backends.hpp"
