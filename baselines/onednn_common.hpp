// What the oneDNN backends of both suites (baselines/conv/onednn_cpu.cpp,
// baselines/ops/onednn_cpu.cpp) share: the checking macro of every oneDNN call, the library's
// version and ISA names, the dtypes oneDNN runs on the CPU, and our dtypes as oneDNN's. Both live
// in the oneDNN module (baselines/onednn_loader.cpp), built with hidden visibility.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/runner.hpp"

// Evaluates a oneDNN C++ API expression and returns its value; a dnnl::error becomes
// bench::Unsupported (status unimplemented) or std::runtime_error naming the call, file and line.
#define ONEDNN_CALL(...)                                                                      \
  ::bench::onednn::onednn_call([&]() -> decltype(auto) { return __VA_ARGS__; }, #__VA_ARGS__, \
                               __FILE__, __LINE__)

namespace bench::onednn {

inline std::string cpu_isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all:
      return "all";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
  }
  return "unknown";
}

// "oneDNN 2.6.3", from the library actually loaded (not the headers).
inline std::string onednn_version() {
  const dnnl::version_t* v = dnnl::version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

inline std::string effective_isa() {
  return cpu_isa_name(dnnl::get_effective_cpu_isa());
}

// "oneDNN 2.6.3 (cpu isa: avx2)": the library_version() of every oneDNN backend.
inline std::string version_with_isa() {
  return onednn_version() + " (cpu isa: " + effective_isa() + ")";
}

// Whether oneDNN on the CPU can run dt, judged before asking it: no for tf32; yes otherwise (for
// fp16 and bf16 creating the primitive finds out whether oneDNN has a kernel).
inline Support cpu_dtype_support(DataType dt) {
  if (dt == DataType::tf32)
    return Support::no(
        "tf32 is a GPU tensor-core math mode; oneDNN 2.6 has no fpmath mode on the CPU");
  return Support::yes();
}

// Converts a dnnl::error thrown by the call `call` at file:line.
[[noreturn]] inline void throw_onednn_error(const dnnl::error& e, const char* call,
                                            const char* file, int line) {
  const std::string what = std::string(e.what()) + " (" + dnnl_status2str(e.status) + ")";
  if (e.status == dnnl_unimplemented)
    throw bench::Unsupported(onednn_version() + " (cpu isa " + effective_isa() +
                             ") has no implementation: " + what);
  throw std::runtime_error("oneDNN error: " + what + " in `" + call + "` at " + file + ":" +
                           std::to_string(line));
}

template <class F>
decltype(auto) onednn_call(F&& f, const char* call, const char* file, int line) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw_onednn_error(e, call, file, line);
  }
}

inline dnnl::memory::data_type onednn_type(DataType dt) {
  switch (dt) {
    case DataType::bf16:
      return dnnl::memory::data_type::bf16;
    case DataType::fp16:
      return dnnl::memory::data_type::f16;
    default:
      return dnnl::memory::data_type::f32;  // fp32 (tf32 is refused by check_support)
  }
}

// Fills dst with 0xFF bytes: NaN in f32, bf16 and f16 (the output poisoned before each run).
inline void poison(const dnnl::memory& dst) {
  std::memset(ONEDNN_CALL(dst.get_data_handle()), 0xFF, dst.get_desc().get_size());
}

// Runs a primitive oneDNN created. "unimplemented" from execute() is no missing implementation
// (the primitive exists): it is a failure (seen with pip's LibTorch in the process;
// baselines/onednn_loader.cpp says why).
inline void execute(const dnnl::primitive& primitive, const dnnl::stream& stream,
                    const std::unordered_map<int, dnnl::memory>& args) {
  try {
    ONEDNN_CALL(primitive.execute(stream, args));
  } catch (const bench::Unsupported& e) {
    throw std::runtime_error(std::string("oneDNN could not execute the primitive it created: ") +
                             e.what());
  }
}

}  // namespace bench::onednn
