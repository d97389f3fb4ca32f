// The functions that answer a CUDA failure as text instead of an exception (the float64 reference
// on the device, the comparison on the device) end the same way: call caught_error_text() in a
// catch (...) handler.
#pragma once

#include <exception>
#include <string>

#include <cuda_runtime_api.h>

namespace bench {

// The text of the exception being handled ("unknown error" where it is no std::exception), with
// the CUDA error a failed allocation or copy leaves pending cleared, so that it does not surface
// in the next backend's launch check. Only inside a catch handler.
inline std::string caught_error_text() {
  (void)cudaGetLastError();
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace bench
