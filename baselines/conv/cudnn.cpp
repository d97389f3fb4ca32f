// cuDNN backend, through either of cuDNN's two APIs (BackendOptions::cudnn_api):
//
// graph (the default): the graph ("backend") API the way PyTorch uses it. compile() describes the
// convolution once as an operation graph, takes engine configs from the heuristics (mode A; the
// fallback list where mode A has none that runs), finalizes one execution plan, allocates its
// workspace and prebuilds the variant pack (src, wei, dst and workspace pointers fixed), so that
// run() is one cudnnBackendExecute(). Engine choice (cudnn_algo): heuristic = the first config
// that the dtype's math allows and cuDNN can build; search = time the first kSearchPlans such
// plans with CUDA events and keep the fastest (compile time); N = the Nth (from 0) allowed config.
//
// legacy: cudnnConvolutionForward through the legacy convolution API, which cuDNN 9 still ships
// (deprecated, implemented over its graph engines, with 25-100 us of host work per call). The
// algorithm comes from the heuristics (cudnnGetConvolutionForwardAlgorithm_v7), from a timed
// search (cudnnFindConvolutionForwardAlgorithmEx, counted as compile time), or is given by number
// (cudnn_algo = heuristic | search | 0..7).
//
// Math per dtype, set explicitly. Legacy: fp32 -> CUDNN_FMA_MATH (strict FP32: CUDNN_DEFAULT_MATH
// would let cuDNN run FP32 data as TF32 on Ampere and newer); tf32 -> CUDNN_TENSOR_OP_MATH on FP32
// data; fp16, bf16 -> CUDNN_TENSOR_OP_MATH with FP32 accumulation (compute type float). Graph:
// compute type float for every dtype; engines are filtered by their numerical notes as PyTorch
// does: fp32 rejects TENSOR_CORE (TF32) engines, no dtype takes DOWN_CONVERT_INPUTS or
// REDUCED_PRECISION_REDUCTION (either would break the FP32 accumulation the compute type promises).
//
// This file: the options (--cudnn-api, --cudnn-algo) and the backend; cudnn_instance.hpp: what
// the two APIs share; cudnn_legacy.cpp and cudnn_graph.cpp: one API each.
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/cudnn_instance.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

using cudnn::AlgoSelection;
using cudnn::Api;

Api parse_api(const std::string& text) {
  if (text == "legacy") return Api::legacy;
  if (text == "graph") return Api::graph;
  throw bench::UsageError("--cudnn-api '" + text + "': expected legacy or graph");
}

// Graph API: the most engine configs a fixed number may pick.
constexpr int kMaxGraphConfigNumber = 999;

AlgoSelection parse_algo_selection(const std::string& text, Api api) {
  AlgoSelection s;
  if (text.empty() || text == "heuristic") return s;
  if (text == "search") {
    s.mode = AlgoSelection::Mode::search;
    return s;
  }
  const int limit =
      api == Api::legacy ? CUDNN_CONVOLUTION_FWD_ALGO_COUNT - 1 : kMaxGraphConfigNumber;
  const bool digits =
      !text.empty() && text.size() <= 3 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits && std::stoi(text) <= limit) {
    s.mode = AlgoSelection::Mode::fixed;
    s.number = std::stoi(text);
    return s;
  }
  if (api == Api::legacy)
    throw bench::UsageError("--cudnn-algo '" + text +
                            "': expected heuristic, search, or an algorithm number 0.." +
                            std::to_string(limit) + " (--cudnn-api legacy)");
  throw bench::UsageError("--cudnn-algo '" + text +
                          "': expected heuristic, search, or the number of an engine config 0.." +
                          std::to_string(limit) + " (--cudnn-api graph)");
}

// ---- The backend --------------------------------------------------------------------------------

std::string version_text(std::size_t v) {
  // cuDNN 9 numbers versions major * 10000 + minor * 100 + patch (cuDNN 8: major * 1000 + ...).
  const std::size_t major = v >= 90000 ? v / 10000 : v / 1000;
  const std::size_t minor = v >= 90000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

class CudnnBackend final : public Backend {
 public:
  CudnnBackend(Api api, AlgoSelection selection) : api_(api), selection_(selection) {}
  std::string name() const override { return "cudnn"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override {
    return "cuDNN " + version_text(cudnnGetVersion()) + " (built against " +
           version_text(CUDNN_VERSION) + ")";
  }
  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }
  Support check_support(const Problem& p) const override {
    if (p.mb > INT32_MAX || p.ic > INT32_MAX || p.ih > INT32_MAX || p.iw > INT32_MAX ||
        p.oc > INT32_MAX)
      return Support::no("dimensions beyond int (cuDNN's 4-d descriptors take int)");
    return Support::yes();
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    if (api_ == Api::legacy) return cudnn::make_legacy_instance(p, data, selection_);
    return cudnn::make_graph_instance(p, data, selection_);
  }

 private:
  Api api_;
  AlgoSelection selection_;
};

}  // namespace

std::unique_ptr<Backend> make_cudnn_backend(const BackendOptions& options) {
  const Api api = parse_api(options.cudnn_api);
  return std::make_unique<CudnnBackend>(api, parse_algo_selection(options.cudnn_algo, api));
}

}  // namespace conv
