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
// This file: the legacy API's instance, the options (--cudnn-api, --cudnn-algo) and the backend;
// cudnn_graph.cpp: the graph API's instance; cudnn_instance.hpp: what the two share.
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/cudnn_instance.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/error.hpp"

// ---- Legacy API: cudnnConvolutionForward --------------------------------------------------------

namespace conv::cudnn {
namespace {

using TensorDesc =
    CudnnObject<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    CudnnObject<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = CudnnObject<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                             cudnnDestroyConvolutionDescriptor>;

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "UNKNOWN";
  }
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH:
      return "TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH:
      return "FMA_MATH";
  }
  return "UNKNOWN";
}

cudnnMathType_t math_type(DataType dt) {
  return dt == DataType::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// Whether an algorithm's math respects the dtype: strict FP32 takes no tensor-core math.
bool math_allowed(DataType dt, cudnnMathType_t m) {
  return dt != DataType::fp32 ||
         (m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

class LegacyInstance final : public CudnnInstance {
 public:
  using CudnnInstance::CudnnInstance;

  // Descriptors, algorithm choice and workspace: the work cuDNN users do once per shape.
  void compile() override {
    CUDNN_CHECK(cudnnSetStream(handle_.get(), stream_.get()));
    const cudnnTensorFormat_t format =
        p_.layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t dt = data_type(p_.dtype);
    CUDNN_CHECK_SUPPORTED(cudnnSetTensor4dDescriptor(x_.get(), format, dt, int(p_.mb), int(p_.ic),
                                                     int(p_.ih), int(p_.iw)));
    // nhwc filters are KRSC: [OC][KH][KW][IC/G], our nhwc weight layout.
    CUDNN_CHECK_SUPPORTED(cudnnSetFilter4dDescriptor(w_.get(), dt, format, int(p_.oc),
                                                     int(p_.ic / p_.g), int(p_.kh), int(p_.kw)));
    CUDNN_CHECK_SUPPORTED(cudnnSetConvolution2dDescriptor(
        conv_.get(), int(p_.ph), int(p_.pw), int(p_.sh), int(p_.sw), int(p_.dilation_h()),
        int(p_.dilation_w()), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK_SUPPORTED(cudnnSetConvolutionGroupCount(conv_.get(), int(p_.g)));
    math_ = math_type(p_.dtype);
    CUDNN_CHECK_SUPPORTED(cudnnSetConvolutionMathType(conv_.get(), math_));
    int n = 0, c = 0, h = 0, w = 0;
    CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(conv_.get(), x_.get(), w_.get(), &n, &c, &h, &w));
    dims_ = {n, c, h, w};
    if (dims_ != std::vector<std::int64_t>{p_.mb, p_.oc, p_.oh(), p_.ow()})
      throw std::runtime_error("cuDNN computes a different output shape");
    CUDNN_CHECK_SUPPORTED(cudnnSetTensor4dDescriptor(y_.get(), format, dt, n, c, h, w));

    switch (selection_.mode) {
      case AlgoSelection::Mode::heuristic:
        choose_by_heuristic();
        break;
      case AlgoSelection::Mode::search:
        choose_by_search();
        break;
      case AlgoSelection::Mode::fixed:
        algo_ = cudnnConvolutionFwdAlgo_t(selection_.number);
        break;
    }
    // The workspace of the chosen algorithm under the final math type; "not supported" here
    // means the algorithm cannot run this problem.
    std::size_t bytes = 0;
    CUDNN_CHECK_SUPPORTED(cudnnGetConvolutionForwardWorkspaceSize(
        handle_.get(), x_.get(), w_.get(), conv_.get(), y_.get(), algo_, &bytes));
    workspace_ = bench::DeviceBuffer<unsigned char>(bytes);
  }

  void run() override {
    const float alpha = 1.0f, beta = 0.0f;  // float scaling for every non-double data type
    CUDNN_CHECK_SUPPORTED(cudnnConvolutionForward(
        handle_.get(), &alpha, x_.get(), src_.data(), w_.get(), wei_.data(), conv_.get(), algo_,
        workspace_.data(), workspace_.bytes(), &beta, y_.get(), dst_.data()));
  }

  std::string algorithm() const override { return algo_name(algo_); }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json j = {{"cudnn_api", api_name(Api::legacy)},
                                {"cudnn_algo_selection", selection_.text()},
                                {"cudnn_algo_number", int(algo_)},
                                {"cudnn_math_type", math_name(math_)}};
    if (selection_.mode == AlgoSelection::Mode::search) {
      j["cudnn_search_workspace_bytes"] = search_workspace_bytes_;
      j["cudnn_search_time_ms"] = search_time_ms_;
    }
    return j;
  }

 private:
  // The first candidate (best first) that succeeded, respects the dtype's math and fits memory.
  // For the reduced-precision dtypes the descriptor takes the candidate's math type, as the
  // heuristics and the search rank each algorithm under its own.
  void take_first(const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf, int returned,
                  std::size_t max_workspace, const char* how) {
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& r = perf[std::size_t(i)];
      if (r.status != CUDNN_STATUS_SUCCESS || !math_allowed(p_.dtype, r.mathType) ||
          r.memory > max_workspace)
        continue;
      algo_ = r.algo;
      if (p_.dtype != DataType::fp32 && r.mathType != math_) {
        math_ = r.mathType;
        CUDNN_CHECK(cudnnSetConvolutionMathType(conv_.get(), math_));
      }
      search_time_ms_ = double(r.time);
      return;
    }
    throw bench::Unsupported(std::string("cuDNN ") + how + " found no algorithm for this problem");
  }

  void choose_by_heuristic() {
    int max_count = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_.get(), &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::size_t(std::max(max_count, 1)));
    int returned = 0;
    CUDNN_CHECK_SUPPORTED(
        cudnnGetConvolutionForwardAlgorithm_v7(handle_.get(), x_.get(), w_.get(), conv_.get(),
                                               y_.get(), int(perf.size()), &returned, perf.data()));
    take_first(perf, returned, free_device_bytes(), "heuristics");
  }

  // cuDNN times every algorithm on our buffers; the workspace offered is the largest any
  // algorithm asks for, capped at half the free device memory.
  void choose_by_search() {
    int max_count = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_.get(), &max_count));
    std::size_t want = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
      std::size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(handle_.get(), x_.get(), w_.get(), conv_.get(),
                                                  y_.get(), cudnnConvolutionFwdAlgo_t(a),
                                                  &bytes) == CUDNN_STATUS_SUCCESS)
        want = std::max(want, bytes);
    }
    const std::size_t limit = std::min(want, free_device_bytes() / 2);
    bench::DeviceBuffer<unsigned char> scratch(limit);
    search_workspace_bytes_ = std::int64_t(limit);
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::size_t(std::max(max_count, 1)));
    int returned = 0;
    CUDNN_CHECK_SUPPORTED(cudnnFindConvolutionForwardAlgorithmEx(
        handle_.get(), x_.get(), src_.data(), w_.get(), wei_.data(), conv_.get(), y_.get(),
        dst_.data(), int(perf.size()), &returned, perf.data(), scratch.data(), scratch.bytes()));
    take_first(perf, returned, limit, "search");
  }

  TensorDesc x_, y_;
  FilterDesc w_;
  ConvDesc conv_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;
  double search_time_ms_ = 0;
  std::int64_t search_workspace_bytes_ = 0;
};

}  // namespace
}  // namespace conv::cudnn

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
    if (api_ == Api::legacy) return std::make_unique<cudnn::LegacyInstance>(p, data, selection_);
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
