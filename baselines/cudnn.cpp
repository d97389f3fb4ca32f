// cuDNN backend: cudnnConvolutionForward through the legacy convolution API, which cuDNN 9 still
// ships (deprecated, implemented over its graph engines). The algorithm comes from the
// heuristics (cudnnGetConvolutionForwardAlgorithm_v7), from a timed search
// (cudnnFindConvolutionForwardAlgorithmEx, counted as compile time), or is given by number
// (BackendOptions::cudnn_algo = heuristic | search | 0..7).
//
// Math per dtype, set explicitly: fp32 -> CUDNN_FMA_MATH (strict FP32: CUDNN_DEFAULT_MATH would
// let cuDNN run FP32 data as TF32 on Ampere and newer); tf32 -> CUDNN_TENSOR_OP_MATH on FP32
// data; fp16, bf16 -> CUDNN_TENSOR_OP_MATH with FP32 accumulation (compute type float).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "baselines/backends.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/cudnn_check.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

// Move-only owner of one cuDNN object (handle or descriptor).
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnObject {
 public:
  CudnnObject() { CUDNN_CHECK(Create(&object_)); }
  ~CudnnObject() {
    if (object_) CUDNN_CHECK_NOTHROW(Destroy(object_));
  }
  CudnnObject(CudnnObject&& o) noexcept : object_(std::exchange(o.object_, nullptr)) {}
  CudnnObject& operator=(CudnnObject&& o) noexcept {
    std::swap(object_, o.object_);
    return *this;
  }
  CudnnObject(const CudnnObject&) = delete;
  CudnnObject& operator=(const CudnnObject&) = delete;
  T get() const { return object_; }

 private:
  T object_ = nullptr;
};

using Handle = CudnnObject<cudnnHandle_t, cudnnCreate, cudnnDestroy>;
using TensorDesc =
    CudnnObject<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    CudnnObject<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = CudnnObject<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                             cudnnDestroyConvolutionDescriptor>;

// A cuDNN "not supported" answer is the case's status "unsupported", not a failure.
bool is_not_supported(cudnnStatus_t s) {
  return s == CUDNN_STATUS_NOT_SUPPORTED || (s / 1000) * 1000 == CUDNN_STATUS_NOT_SUPPORTED;
}
#define CUDNN_CHECK_SUPPORTED(call)                                                          \
  do {                                                                                       \
    const cudnnStatus_t status_ = (call);                                                    \
    if (is_not_supported(status_))                                                           \
      throw bench::Unsupported("cuDNN: " +                                                   \
                               bench::cudnn_error_text(#call, status_, __FILE__, __LINE__)); \
    CUDNN_CHECK(status_);                                                                    \
  } while (0)

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

cudnnDataType_t data_type(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return CUDNN_DATA_HALF;
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;  // fp32, and tf32 (FP32 storage)
  }
}

cudnnMathType_t math_type(DataType dt) {
  return dt == DataType::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// Whether an algorithm's math respects the dtype: strict FP32 takes no tensor-core math.
bool math_allowed(DataType dt, cudnnMathType_t m) {
  return dt != DataType::fp32 ||
         (m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

// How the algorithm is chosen: heuristic, search, or a fixed algorithm number.
struct AlgoSelection {
  enum class Mode { heuristic, search, fixed } mode = Mode::heuristic;
  int number = 0;  // Mode::fixed
  std::string text() const {
    return mode == Mode::heuristic ? "heuristic"
           : mode == Mode::search  ? "search"
                                   : std::to_string(number);
  }
};

AlgoSelection parse_algo_selection(const std::string& text) {
  AlgoSelection s;
  if (text.empty() || text == "heuristic") return s;
  if (text == "search") {
    s.mode = AlgoSelection::Mode::search;
    return s;
  }
  if (text.size() == 1 && text[0] >= '0' && text[0] < '0' + CUDNN_CONVOLUTION_FWD_ALGO_COUNT) {
    s.mode = AlgoSelection::Mode::fixed;
    s.number = text[0] - '0';
    return s;
  }
  throw bench::UsageError("--cudnn-algo '" + text +
                          "': expected heuristic, search, or an algorithm number 0.." +
                          std::to_string(CUDNN_CONVOLUTION_FWD_ALGO_COUNT - 1));
}

// Host values (already rounded to dt) as dt's bytes in memory.
std::vector<unsigned char> to_storage(const std::vector<float>& v, DataType dt) {
  std::vector<unsigned char> out(v.size() * std::size_t(bench::storage_bytes(dt)));
  if (dt == DataType::fp16 || dt == DataType::bf16) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint16_t h =
          dt == DataType::fp16 ? bench::float_to_half_bits(v[i]) : bench::float_to_bf16_bits(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    std::memcpy(out.data(), v.data(), out.size());
  }
  return out;
}

std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

class CudnnInstance final : public Instance {
 public:
  CudnnInstance(const Problem& p, const HostData& data, AlgoSelection selection)
      : p_(p),
        selection_(selection),
        elem_bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        src_(data.src.size() * elem_bytes_),
        wei_(data.wei.size() * elem_bytes_),
        dst_(std::size_t(p.dst_elements()) * elem_bytes_),
        timer_(stream_.get()) {
    const std::vector<unsigned char> src = to_storage(data.src, p.dtype);
    const std::vector<unsigned char> wei = to_storage(data.wei, p.dtype);
    src_.upload_async(src.data(), stream_.get());
    wei_.upload_async(wei.data(), stream_.get());
    stream_.synchronize();  // the host vectors end here
  }

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
        conv_.get(), int(p_.ph), int(p_.pw), int(p_.sh), int(p_.sw), int(p_.dh), int(p_.dw),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
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

  void poison_output() override { dst_.fill_bytes_async(0xFF, stream_.get()); }

  void run() override {
    const float alpha = 1.0f, beta = 0.0f;  // float scaling for every non-double data type
    CUDNN_CHECK_SUPPORTED(cudnnConvolutionForward(
        handle_.get(), &alpha, x_.get(), src_.data(), w_.get(), wei_.data(), conv_.get(), algo_,
        workspace_.data(), workspace_.bytes(), &beta, y_.get(), dst_.data()));
  }

  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override {
    std::vector<unsigned char> bytes(dst_.bytes());
    dst_.download_async(bytes.data(), stream_.get());
    stream_.synchronize();
    const std::size_t count = std::size_t(p_.dst_elements());
    if (elem_bytes_ == 4) {
      std::memcpy(dst, bytes.data(), count * 4);
      return;
    }
    for (std::size_t i = 0; i < count; ++i) {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      dst[i] =
          p_.dtype == DataType::fp16 ? bench::half_bits_to_float(h) : bench::bf16_bits_to_float(h);
    }
  }

  std::vector<std::int64_t> output_dims() const override { return dims_; }
  std::string algorithm() const override { return algo_name(algo_); }
  std::optional<std::int64_t> workspace_bytes() const override {
    return std::int64_t(workspace_.bytes());
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json j = {{"cudnn_algo_selection", selection_.text()},
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

  Problem p_;
  AlgoSelection selection_;
  std::size_t elem_bytes_;
  bench::Stream stream_;
  Handle handle_;
  TensorDesc x_, y_;
  FilterDesc w_;
  ConvDesc conv_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_, workspace_;
  bench::CudaEventTimer timer_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;
  std::vector<std::int64_t> dims_;
  double search_time_ms_ = 0;
  std::int64_t search_workspace_bytes_ = 0;
};

std::string version_text(std::size_t v) {
  // cuDNN 9 numbers versions major * 10000 + minor * 100 + patch (cuDNN 8: major * 1000 + ...).
  const std::size_t major = v >= 90000 ? v / 10000 : v / 1000;
  const std::size_t minor = v >= 90000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

class CudnnBackend final : public Backend {
 public:
  explicit CudnnBackend(AlgoSelection selection) : selection_(selection) {}
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
    return std::make_unique<CudnnInstance>(p, data, selection_);
  }

 private:
  AlgoSelection selection_;
};

}  // namespace

std::unique_ptr<Backend> make_cudnn_backend(const BackendOptions& options) {
  return std::make_unique<CudnnBackend>(parse_algo_selection(options.cudnn_algo));
}

}  // namespace conv
