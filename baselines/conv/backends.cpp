// No code of its own: it keeps conv_baselines a valid library in a build where none of the
// baseline libraries (LibTorch, oneDNN, Halide, cuDNN) was found.
#include "baselines/conv/backends.hpp"
