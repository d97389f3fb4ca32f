// Shared by the baseline backends (kept so that the library exists even with none built).
#include "baselines/backends.hpp"
