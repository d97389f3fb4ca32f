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
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "baselines/conv/backends.hpp"
#include "conv/cuda/device_output.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/cudnn_check.hpp"
#include "core/cuda/device_copy.hpp"
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
    if (status_ != CUDNN_STATUS_SUCCESS) {                                                   \
      const std::string text_ = bench::cudnn_error_text(#call, status_, __FILE__, __LINE__); \
      if (is_not_supported(status_)) throw bench::Unsupported("cuDNN: " + text_);            \
      throw std::runtime_error(text_);                                                       \
    }                                                                                        \
  } while (0)

// ---- Shared by both APIs -----------------------------------------------------------------------

// Which of cuDNN's APIs runs the convolution.
enum class Api { legacy, graph };

const char* api_name(Api a) {
  return a == Api::legacy ? "legacy" : "graph";
}

Api parse_api(const std::string& text) {
  if (text == "legacy") return Api::legacy;
  if (text == "graph") return Api::graph;
  throw bench::UsageError("--cudnn-api '" + text + "': expected legacy or graph");
}

// How the algorithm (legacy) or engine config (graph) is chosen: heuristic, search, or a number.
struct AlgoSelection {
  enum class Mode { heuristic, search, fixed } mode = Mode::heuristic;
  int number = 0;  // Mode::fixed
  std::string text() const {
    return mode == Mode::heuristic ? "heuristic"
           : mode == Mode::search  ? "search"
                                   : std::to_string(number);
  }
};

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

std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// What both APIs share: the problem, the device buffers with the inputs, the stream, the handle
// and the timer; poisoning and reading the output. Each API adds compile() and run().
class CudnnInstance : public Instance {
 public:
  CudnnInstance(const Problem& p, const HostData& data, AlgoSelection selection)
      : p_(p),
        selection_(selection),
        elem_bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        src_(data.src.size() * elem_bytes_),
        wei_(data.wei.size() * elem_bytes_),
        dst_(std::size_t(p.dst_elements()) * elem_bytes_),
        timer_(stream_.get()) {
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
  }

  void poison_output() override { dst_.fill_bytes_async(0xFF, stream_.get()); }

  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override { read_output_of(dst_, p_, stream_.get(), dst); }
  std::optional<bench::DeviceValues> device_output() override {
    return device_values_of(dst_, p_, stream_.get());
  }

  std::vector<std::int64_t> output_dims() const override { return dims_; }
  std::optional<std::int64_t> workspace_bytes() const override {
    return std::int64_t(workspace_.bytes());
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

 protected:
  Problem p_;
  AlgoSelection selection_;
  std::size_t elem_bytes_;
  bench::Stream stream_;
  Handle handle_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_, workspace_;
  bench::CudaEventTimer timer_;
  std::vector<std::int64_t> dims_;
};

// ---- Legacy API: cudnnConvolutionForward --------------------------------------------------------

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

// ---- Graph API: cudnnBackendExecute of a prebuilt execution plan -------------------------------

// Move-only owner of one cudnnBackendDescriptor_t (tensor, operation, graph, engine config, plan,
// variant pack...). Created empty (not finalized); destroyed without throwing.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type) {
    CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc_));
  }
  ~BackendDescriptor() {
    if (desc_) CUDNN_CHECK_NOTHROW(cudnnBackendDestroyDescriptor(desc_));
  }
  BackendDescriptor(BackendDescriptor&& o) noexcept : desc_(std::exchange(o.desc_, nullptr)) {}
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept {
    std::swap(desc_, o.desc_);
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }

  // count values of type at values; "not supported" answers throw bench::Unsupported.
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
           const void* values) {
    CUDNN_CHECK_SUPPORTED(cudnnBackendSetAttribute(desc_, name, type, count, values));
  }
  void set_int64s(cudnnBackendAttributeName_t name, const std::vector<std::int64_t>& values) {
    set(name, CUDNN_TYPE_INT64, std::int64_t(values.size()), values.data());
  }
  void set_descriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& d) {
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d.desc_);
  }
  void finalize() { CUDNN_CHECK_SUPPORTED(cudnnBackendFinalize(desc_)); }

  std::int64_t get_int64(cudnnBackendAttributeName_t name) const {
    std::int64_t value = 0, count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(desc_, name, CUDNN_TYPE_INT64, 1, &count, &value));
    return value;
  }
  // Up to max descriptors of an array attribute, each created as type for cuDNN to fill in.
  std::vector<BackendDescriptor> get_descriptors(cudnnBackendAttributeName_t name,
                                                 cudnnBackendDescriptorType_t type,
                                                 std::int64_t max) const {
    std::vector<BackendDescriptor> out;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < max; ++i) {
      out.emplace_back(type);
      raw.push_back(out.back().get());
    }
    std::int64_t count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(desc_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, max, &count,
                                         raw.data()));
    out.erase(out.begin() + std::clamp<std::int64_t>(count, 0, max), out.end());
    return out;
  }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// cuDNN 9.x marks the handle attributes of the operation graph and of the execution plan
// deprecated (newer releases can plan from a CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, without a
// device); cuDNN 9 still takes them, and PyTorch and cudnn-frontend still set them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kOperationGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kExecutionPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

// Unique ids of the tensors in the graph and in the variant pack.
constexpr std::int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';
// --cudnn-algo search: plans timed, and timed runs of each after one warm-up run.
constexpr int kSearchPlans = 8;
constexpr int kSearchRuns = 3;

const char* note_name(cudnnBackendNumericalNote_t n) {
  switch (n) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      return "TENSOR_CORE";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      return "DOWN_CONVERT_INPUTS";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      return "REDUCED_PRECISION_REDUCTION";
    case CUDNN_NUMERICAL_NOTE_FFT:
      return "FFT";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      return "NONDETERMINISTIC";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      return "WINOGRAD_TILE_4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      return "WINOGRAD_TILE_6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
      return "WINOGRAD_TILE_13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP:
      return "STRICT_NAN_PROP";
    default:
      return "UNKNOWN";
  }
}

// One engine config from the heuristics, with what it says about itself.
struct EngineConfig {
  BackendDescriptor config;
  int heuristic_index = 0;     // position in the heuristics' list (best first)
  std::int64_t engine_id = 0;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<std::int64_t, std::int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  std::vector<cudnnBackendNumericalNote_t> notes;
  bool runtime_compiled = false;  // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: NVRTC at plan time

  bool has(cudnnBackendNumericalNote_t n) const {
    return std::find(notes.begin(), notes.end(), n) != notes.end();
  }
  // cudnn-frontend's plan tag, "eng<id>_k<knob type>=<value>...": what PyTorch logs.
  std::string tag() const {
    std::string t = "eng" + std::to_string(engine_id);
    for (const auto& [type, value] : knobs)
      t += "_k" + std::to_string(type) + "=" + std::to_string(value);
    return t;
  }
  // Why the dtype's math rule rejects this engine, or "" where it allows it.
  std::string rejection(DataType dt) const {
    if (dt == DataType::fp32 && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
      return "tensor-core (TF32) math, not strict FP32";
    if (has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return "down-converts its inputs";
    if (has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) return "reduces in less than FP32";
    return "";
  }
};

EngineConfig describe_config(BackendDescriptor config, int heuristic_index) {
  EngineConfig c{std::move(config), heuristic_index, 0, {}, {}};
  std::vector<BackendDescriptor> engine =
      c.config.get_descriptors(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1);
  if (engine.empty()) throw std::runtime_error("cuDNN: an engine config without an engine");
  c.engine_id = engine[0].get_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  std::int64_t count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(engine[0].get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE, std::int64_t(notes.size()),
                                       &count, notes.data()));
  c.notes.assign(notes.begin(),
                 notes.begin() + std::clamp<std::int64_t>(count, 0, std::int64_t(notes.size())));
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behavior{};
  CUDNN_CHECK(cudnnBackendGetAttribute(engine[0].get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                       CUDNN_TYPE_BEHAVIOR_NOTE, std::int64_t(behavior.size()),
                                       &count, behavior.data()));
  const auto behavior_end =
      behavior.begin() + std::clamp<std::int64_t>(count, 0, std::int64_t(behavior.size()));
  c.runtime_compiled = std::find(behavior.begin(), behavior_end,
                                 CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) != behavior_end;
  for (const BackendDescriptor& k :
       c.config.get_descriptors(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS)) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    std::int64_t n = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(k.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                         CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
    c.knobs.emplace_back(std::int64_t(type), k.get_int64(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE));
  }
  return c;
}

// A finalized execution plan and the workspace it asks for.
struct Plan {
  BackendDescriptor plan;
  std::int64_t workspace_bytes = 0;
};

class GraphInstance final : public CudnnInstance {
 public:
  using CudnnInstance::CudnnInstance;

  // Operation graph, engine choice, plan, workspace and variant pack: what a graph API user
  // (PyTorch: one cached plan per shape) does once per shape.
  void compile() override {
    CUDNN_CHECK(cudnnSetStream(handle_.get(), stream_.get()));
    dims_ = {p_.mb, p_.oc, p_.oh(), p_.ow()};
    build_operation_graph();

    std::vector<EngineConfig> allowed = allowed_configs(CUDNN_HEUR_MODE_A);
    heuristic_mode_ = "A";
    const std::size_t limit = free_device_bytes();
    std::optional<Plan> chosen;
    switch (selection_.mode) {
      case AlgoSelection::Mode::heuristic:
        chosen = first_plan(allowed, limit);
        if (!chosen) {  // PyTorch, too, falls back to the fallback list
          allowed = allowed_configs(CUDNN_HEUR_MODE_FALLBACK);
          heuristic_mode_ = "FALLBACK";
          chosen = first_plan(allowed, limit);
        }
        break;
      case AlgoSelection::Mode::search:
        chosen = fastest_plan(allowed, limit / 2);
        if (!chosen) {
          allowed = allowed_configs(CUDNN_HEUR_MODE_FALLBACK);
          heuristic_mode_ = "FALLBACK";
          chosen = fastest_plan(allowed, limit / 2);
        }
        break;
      case AlgoSelection::Mode::fixed: {
        const std::size_t n = std::size_t(selection_.number);
        if (n >= allowed.size())
          throw bench::Unsupported("cuDNN graph API: --cudnn-algo " + selection_.text() +
                                   " asks for allowed engine " + "config " + selection_.text() +
                                   ", the heuristics offer " + std::to_string(allowed.size()) +
                                   " that " + bench::to_string(p_.dtype) + " math allows (" +
                                   std::to_string(heuristic_configs_) + " in all)");
        std::string why;
        chosen = build_plan(allowed[n], &why);
        if (!chosen) throw bench::Unsupported("cuDNN graph API: " + why);
        chosen_ = n;
        break;
      }
    }
    if (!chosen)
      throw bench::Unsupported("cuDNN graph API: no engine for this problem (" +
                               std::to_string(heuristic_configs_) + " configs from the " +
                               "heuristics, " + std::to_string(allowed_configs_) + " allowed by " +
                               bench::to_string(p_.dtype) + " math" +
                               (last_failure_.empty() ? "" : "; last: " + last_failure_) + ")");
    engine_ = std::move(allowed[chosen_]);
    plan_.emplace(std::move(*chosen));
    workspace_ = bench::DeviceBuffer<unsigned char>(std::size_t(plan_->workspace_bytes));
    variant_pack_.emplace(make_variant_pack(workspace_.data()));
  }

  void run() override {
    CUDNN_CHECK(cudnnBackendExecute(handle_.get(), plan_->plan.get(), variant_pack_->get()));
  }

  std::string algorithm() const override {
    if (!engine_) return "";
    std::string how = selection_.mode == AlgoSelection::Mode::search
                          ? "fastest of " + std::to_string(search_results_.size()) + " timed, "
                          : "";
    return "graph " + engine_->tag() + " (" + how +
           (heuristic_mode_ == "A" ? "heuristic" : "fallback") + " config " +
           std::to_string(engine_->heuristic_index) + " of " + std::to_string(heuristic_configs_) +
           ", tensor cores " + (engine_->has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ? "on" : "off") +
           ")";
  }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json j = {{"cudnn_api", api_name(Api::graph)},
                                {"cudnn_algo_selection", selection_.text()}};
    if (!engine_) return j;
    nlohmann::ordered_json notes = nlohmann::ordered_json::array();
    for (cudnnBackendNumericalNote_t n : engine_->notes) notes.push_back(note_name(n));
    j["cudnn_engine"] = engine_->tag();
    j["cudnn_engine_global_index"] = engine_->engine_id;
    j["cudnn_heuristic_mode"] = heuristic_mode_;
    j["cudnn_heuristic_index"] = engine_->heuristic_index;
    j["cudnn_heuristic_configs"] = heuristic_configs_;
    j["cudnn_configs_allowed"] = allowed_configs_;
    j["cudnn_tensor_cores"] = engine_->has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    j["cudnn_numerical_notes"] = notes;
    j["cudnn_runtime_compiled"] = engine_->runtime_compiled;
    if (selection_.mode == AlgoSelection::Mode::search) {
      nlohmann::ordered_json timed = nlohmann::ordered_json::array();
      for (const auto& [tag, ms] : search_results_)
        timed.push_back({{"engine", tag}, {"time_ms", ms}});
      j["cudnn_search_workspace_bytes"] = search_workspace_bytes_;
      j["cudnn_search_time_ms"] = search_time_ms_;
      j["cudnn_search_timed"] = timed;
    }
    return j;
  }

 private:
  // Logical dims in NCHW order; the strides say the layout (nhwc: channels innermost). The
  // weights are [OC][IC/G][KH][KW] (nhwc: [OC][KH][KW][IC/G], KRSC): cuDNN infers the groups
  // from the input's channels over the filter's.
  BackendDescriptor tensor(std::int64_t uid, std::int64_t n, std::int64_t c, std::int64_t h,
                           std::int64_t w) const {
    BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const cudnnDataType_t dt = data_type(p_.dtype);
    const std::int64_t alignment = 16;  // cudaMalloc gives 256
    const std::vector<std::int64_t> strides =
        p_.layout == Layout::nhwc ? std::vector<std::int64_t>{h * w * c, 1, w * c, c}
                                  : std::vector<std::int64_t>{c * h * w, h * w, w, 1};
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    t.set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, {n, c, h, w});
    t.set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides);
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    t.finalize();
    return t;
  }

  void build_operation_graph() {
    BackendDescriptor x = tensor(kUidX, p_.mb, p_.ic, p_.ih, p_.iw);
    BackendDescriptor w = tensor(kUidW, p_.oc, p_.ic / p_.g, p_.kh, p_.kw);
    BackendDescriptor y = tensor(kUidY, p_.mb, p_.oc, p_.oh(), p_.ow());

    BackendDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // FP32 accumulation for every dtype
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const std::int64_t spatial_dims = 2;
    conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims);
    conv.set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {p_.ph, p_.pw});
    conv.set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {p_.ph, p_.pw});
    conv.set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {p_.dilation_h(), p_.dilation_w()});
    conv.set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {p_.sh, p_.sw});
    conv.finalize();

    BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    const float alpha = 1.0f, beta = 0.0f;
    op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
    op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
    op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
    op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    op.finalize();

    BackendDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    const cudnnHandle_t handle = handle_.get();
    graph.set(kOperationGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle);
    graph.set_descriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
    graph.finalize();
    graph_.emplace(std::move(graph));
    // The graph's parts live as long as the graph (cuDNN does not say that it copies them).
    for (BackendDescriptor* part : {&x, &w, &y, &conv, &op})
      graph_parts_.push_back(std::move(*part));
  }

  // The heuristics' engine configs (best first) that the dtype's math allows; counts them all.
  std::vector<EngineConfig> allowed_configs(cudnnBackendHeurMode_t mode) {
    BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *graph_);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    heuristics.finalize();
    std::int64_t count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<BackendDescriptor> configs = heuristics.get_descriptors(
        CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count);
    heuristic_configs_ = int(configs.size());
    std::vector<EngineConfig> allowed;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      EngineConfig c = describe_config(std::move(configs[i]), int(i));
      if (const std::string why = c.rejection(p_.dtype); !why.empty())
        last_failure_ = c.tag() + ": " + why;
      else
        allowed.push_back(std::move(c));
    }
    allowed_configs_ = int(allowed.size());
    return allowed;
  }

  // The plan of c, or nothing (the reason in *why) where cuDNN cannot build it for this problem.
  std::optional<Plan> build_plan(const EngineConfig& c, std::string* why) {
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    const cudnnHandle_t handle = handle_.get();
    plan.set(kExecutionPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle);
    plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, c.config);
    const cudnnStatus_t status = cudnnBackendFinalize(plan.get());
    if (status != CUDNN_STATUS_SUCCESS) {
      *why = c.tag() + ": " +
             bench::cudnn_error_text("cudnnBackendFinalize(plan)", status, __FILE__, __LINE__);
      return std::nullopt;
    }
    const std::int64_t bytes = plan.get_int64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
    return Plan{std::move(plan), bytes};
  }

  // The first config, best first, whose plan cuDNN builds and whose workspace fits in limit.
  std::optional<Plan> first_plan(const std::vector<EngineConfig>& allowed, std::size_t limit) {
    for (std::size_t i = 0; i < allowed.size(); ++i) {
      std::optional<Plan> plan = build_plan(allowed[i], &last_failure_);
      if (plan && std::size_t(plan->workspace_bytes) > limit) {
        last_failure_ = allowed[i].tag() + ": workspace of " +
                        std::to_string(plan->workspace_bytes) + " bytes does not fit";
        plan.reset();
      }
      if (plan) {
        chosen_ = i;
        return plan;
      }
    }
    return std::nullopt;
  }

  // The variant pack: the fixed pointers each execution reads and writes.
  BackendDescriptor make_variant_pack(void* workspace) const {
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    const std::array<std::int64_t, 3> uids = {kUidX, kUidW, kUidY};
    const std::array<void*, 3> pointers = {src_.data(), wei_.data(), dst_.data()};
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    pack.finalize();
    return pack;
  }

  // The fastest of the first kSearchPlans plans cuDNN builds (workspace within limit), each timed
  // with CUDA events over kSearchRuns runs after one warm-up run, on our own buffers.
  std::optional<Plan> fastest_plan(const std::vector<EngineConfig>& allowed, std::size_t limit) {
    std::vector<std::pair<std::size_t, Plan>> plans;
    std::size_t scratch_bytes = 0;
    for (std::size_t i = 0; i < allowed.size() && plans.size() < std::size_t(kSearchPlans); ++i) {
      std::optional<Plan> plan = build_plan(allowed[i], &last_failure_);
      if (!plan) continue;
      if (std::size_t(plan->workspace_bytes) > limit) {
        last_failure_ = allowed[i].tag() + ": workspace of " +
                        std::to_string(plan->workspace_bytes) + " bytes does not fit";
        continue;
      }
      scratch_bytes = std::max(scratch_bytes, std::size_t(plan->workspace_bytes));
      plans.emplace_back(i, std::move(*plan));
    }
    if (plans.empty()) return std::nullopt;
    bench::DeviceBuffer<unsigned char> scratch(scratch_bytes);
    search_workspace_bytes_ = std::int64_t(scratch_bytes);
    const BackendDescriptor pack = make_variant_pack(scratch.data());
    bench::Event start, stop;
    std::optional<std::size_t> best;
    for (std::size_t k = 0; k < plans.size(); ++k) {
      const BackendDescriptor& plan = plans[k].second.plan;
      const cudnnStatus_t status = cudnnBackendExecute(handle_.get(), plan.get(), pack.get());
      if (status != CUDNN_STATUS_SUCCESS) {  // a plan that builds but does not run is skipped
        last_failure_ = allowed[plans[k].first].tag() + ": " +
                        bench::cudnn_error_text("cudnnBackendExecute", status, __FILE__, __LINE__);
        continue;
      }
      start.record(stream_.get());
      for (int r = 0; r < kSearchRuns; ++r)
        CUDNN_CHECK(cudnnBackendExecute(handle_.get(), plan.get(), pack.get()));
      stop.record(stream_.get());
      stop.synchronize();
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      const double per_run = double(ms) / kSearchRuns;
      search_results_.emplace_back(allowed[plans[k].first].tag(), per_run);
      if (!best || per_run < search_time_ms_) {
        best = k;
        search_time_ms_ = per_run;
      }
    }
    if (!best) return std::nullopt;
    chosen_ = plans[*best].first;
    return std::move(plans[*best].second);
  }

  std::vector<BackendDescriptor> graph_parts_;  // tensors, convolution, operation
  std::optional<BackendDescriptor> graph_;
  std::optional<EngineConfig> engine_;
  std::optional<Plan> plan_;
  std::optional<BackendDescriptor> variant_pack_;
  std::size_t chosen_ = 0;  // index into the allowed configs
  std::string heuristic_mode_;
  int heuristic_configs_ = 0, allowed_configs_ = 0;
  std::string last_failure_;  // why the last config tried was not taken
  std::vector<std::pair<std::string, double>> search_results_;  // (engine tag, ms per run)
  double search_time_ms_ = 0;
  std::int64_t search_workspace_bytes_ = 0;
};

// ---- The backend
// ----------------------------------------------------------------------------------

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
    if (api_ == Api::legacy) return std::make_unique<LegacyInstance>(p, data, selection_);
    return std::make_unique<GraphInstance>(p, data, selection_);
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
