// The cuDNN backend's graph API (--cudnn-api graph, the default): the convolution as an operation
// graph, engine configs from the heuristics filtered by the dtype's numerical notes, one finalized
// execution plan (the first that builds, the fastest of those timed, or the Nth) and a prebuilt
// variant pack, so that run() is one cudnnBackendExecute (cudnn.cpp's header says more).
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baselines/conv/cudnn_instance.hpp"

namespace conv::cudnn {
namespace {

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

}  // namespace

std::unique_ptr<Instance> make_graph_instance(const Problem& p, const HostData& data,
                                              AlgoSelection selection) {
  return std::make_unique<GraphInstance>(p, data, selection);
}

}  // namespace conv::cudnn
