// Variant 9 of im2col_gemm_cuda: our im2col + cuBLASLt's GEMM (conv/cuda/caffe_gemm.hpp says what
// and why; conv/cuda/caffe_gemm_plan.hpp how the GEMM covers groups, images and both layouts).
//
// Build and run (a GPU host; tests/conv/test_caffe_gemm_cuda.cpp checks every dtype and layout
// against the float64 reference, tests/conv/test_backends_gpu.cpp the backend around it):
//   cmake --build build --target myconv test_caffe_gemm_cuda
//   build/tests/test_caffe_gemm_cuda
//   build/experiments/myconv --backend im2col_gemm_cuda --variant 9 --dtype fp32,tf32,fp16,bf16
//       --shapes experiments/shapes/resnet50.txt --json v9.json
// Each passed case's record has the split: metrics.im2col_ms and metrics.gemm_ms (medians of
// single calls timed by CUDA events after the sampling; extra.phase_split says how).
#include "conv/cuda/caffe_gemm.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "conv/cuda/device_facts.hpp"
#include "conv/cuda/device_instance.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "core/cuda/cublas_check.hpp"
#include "core/cuda/cublaslt_algo.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/error.hpp"

namespace conv {

using bench::DataType;

namespace {

// How many of the heuristic's algorithms are looked at for one the dtype's math allows.
constexpr int kHeuristicResults = 8;

// The im2col kernel's instantiation for a dtype: fp32 and tf32 both copy FP32 values (tf32).
MmaType im2col_type(DataType dt) {
  return dt == DataType::fp16   ? MmaType::fp16
         : dt == DataType::bf16 ? MmaType::bf16
                                : MmaType::tf32;
}

// Whether an algorithm's numerical implementation fits the dtype's math: strict FP32 reads FP32
// inputs (no TF32, FP16 or BF16 ones). Flags cuBLASLt does not give (0) are taken on trust.
bool numerics_allowed(DataType dt, std::uint64_t flags) {
  if (dt != DataType::fp32) return true;
  const std::uint64_t reduced = CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32 |
                                CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F |
                                CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF;
  return (flags & reduced) == 0;
}

// A column-major layout of operand o in the storage type, batched where batch > 1.
bench::LtMatrixLayout make_layout(cudaDataType_t type, const CaffeOperand& o, int batch) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&l, type, std::uint64_t(o.rows), std::uint64_t(o.cols), o.ld));
  bench::LtMatrixLayout owned(l);
  if (batch > 1) {
    const std::int32_t count = batch;
    const std::int64_t stride = o.batch_stride;
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                  sizeof count));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, sizeof stride));
  }
  return owned;
}

// Holds a stream at a host function until release(), so that a whole call is enqueued before the
// device starts it: the events around its phases then time the device's work, with no gap where
// the device waited for the host to launch the next kernel (a few microseconds per launch, which
// would land in the phase after it).
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) : stream_(stream) {
    CUDA_CHECK(cudaLaunchHostFunc(stream, &StreamGate::wait, this));
  }
  ~StreamGate() {
    release();
    CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));  // the host function is done with this
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void release() { open_.store(true, std::memory_order_release); }

 private:
  static void CUDART_CB wait(void* self) {
    while (!static_cast<StreamGate*>(self)->open_.load(std::memory_order_acquire))
      std::this_thread::yield();
  }
  cudaStream_t stream_;
  std::atomic<bool> open_{false};
};

}  // namespace

// ---- The GEMM -----------------------------------------------------------------------------------

CaffeGemm::CaffeGemm(cublasLtHandle_t handle, const Im2colGeometry& g, DataType dt)
    : handle_(handle),
      dt_(dt),
      bytes_(bench::storage_bytes(dt)),
      plan_(plan_caffe_gemm(g, bench::storage_bytes(dt))) {}

bool CaffeGemm::try_heuristic(int batch) {
  const cudaDataType_t type = bench::lt_data_type(dt_);
  a_ = make_layout(type, plan_.a, batch);
  b_ = make_layout(type, plan_.b, batch);
  d_ = make_layout(type, plan_.d, batch);
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const bench::LtPreference preference(pref);
  const std::uint64_t workspace = kCaffeMaxWorkspaceBytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof workspace));
  // Split-K partials summed in FP32 only: the INPLACE and OUTPUT_TYPE reduction schemes add the
  // parts in the output type, a rounding per part in fp16/bf16 (on the H200 a bf16 case with
  // K = 2304 had 8 of 5184 outputs outside the tolerance with the heuristic's unrestricted pick).
  const std::uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction, sizeof reduction));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const CaffeOperand*> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &plan_.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &plan_.b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &plan_.d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &plan_.d}};
  for (const auto& [attr, operand] : alignments) {
    const std::uint32_t bytes = caffe_operand_alignment(*operand, plan_, bytes_);
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof bytes));
  }
  cublasLtMatmulHeuristicResult_t results[kHeuristicResults] = {};
  int returned = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, desc_.get(), a_.get(), b_.get(), d_.get(), d_.get(),
                                     pref, kHeuristicResults, results, &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
      (status == CUBLAS_STATUS_INVALID_VALUE && batch > 1)) {  // a batch form it does not take
    unbatched_why_ =
        std::string("cublasLtMatmulAlgoGetHeuristic: ") + cublasLtGetStatusName(status);
    return false;
  }
  if (status != CUBLAS_STATUS_SUCCESS)
    bench::throw_cublas_error("cublasLtMatmulAlgoGetHeuristic", status, __FILE__, __LINE__);
  for (int i = 0; i < returned; ++i)
    if (numerics_allowed(dt_, bench::lt_numerical_impl_flags(results[i].algo))) {
      heuristic_ = results[i];
      heuristic_rank_ = i + 1;
      return true;
    }
  unbatched_why_ = returned == 0 ? "the heuristic has no algorithm"
                                 : "none of the heuristic's " + std::to_string(returned) +
                                       " algorithms is strict FP32";
  return false;
}

void CaffeGemm::choose(bool strided_batch) {
  cublasLtMatmulDesc_t desc = nullptr;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, bench::lt_compute_type(dt_), CUDA_R_32F));
  desc_ = bench::LtMatmulDesc(desc);
  const cublasOperation_t ta = plan_.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = plan_.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (strided_batch || plan_.batch == 1) {
    if (try_heuristic(plan_.batch)) {
      lt_batch_ = plan_.batch;
      unbatched_why_.clear();
      return;
    }
  } else {
    unbatched_why_ = "cuBLASLt was not asked";
  }
  if (plan_.batch > 1) {  // the batch as a host loop
    const std::string why_batched = unbatched_why_;
    if (try_heuristic(1)) {
      lt_batch_ = 1;
      unbatched_why_ = why_batched;
      return;
    }
  }
  throw bench::Unsupported("cuBLASLt " + bench::cublaslt_version() + " (" +
                           bench::lt_compute_type_name(dt_) + "): " + unbatched_why_ +
                           " for this GEMM (m " + std::to_string(plan_.m) + ", n " +
                           std::to_string(plan_.n) + ", k " + std::to_string(plan_.k) + ")");
}

std::size_t CaffeGemm::workspace_bytes() const {
  return lt_batch_ > 0 ? heuristic_.workspaceSize : 0;
}

int CaffeGemm::matmul_calls() const {
  return plan_.calls * (lt_batch_ == 1 ? plan_.batch : 1);
}

void CaffeGemm::run(const void* wei, const void* col, void* dst, void* workspace,
                    cudaStream_t stream) const {
  if (lt_batch_ == 0) throw std::logic_error("variant 9: run() before compile()");
  auto base = [&](const CaffeOperand& o) -> const unsigned char* {
    return static_cast<const unsigned char*>(o.buffer == CaffeBuffer::weights ? wei : col);
  };
  const unsigned char* a = base(plan_.a);
  const unsigned char* b = base(plan_.b);
  unsigned char* d = static_cast<unsigned char*>(dst);
  const std::int64_t bytes = bytes_;
  const int host_batches = lt_batch_ == 1 ? plan_.batch : 1;
  const float alpha = 1.0f, beta = 0.0f;
  for (int c = 0; c < plan_.calls; ++c)
    for (int u = 0; u < host_batches; ++u) {
      auto offset = [&](const CaffeOperand& o) {
        return (c * o.call_stride + u * o.batch_stride) * bytes;
      };
      unsigned char* out = d + offset(plan_.d);
      CUBLAS_CHECK(cublasLtMatmul(handle_, desc_.get(), &alpha, a + offset(plan_.a), a_.get(),
                                  b + offset(plan_.b), b_.get(), &beta, out, d_.get(), out,
                                  d_.get(), &heuristic_.algo, workspace, heuristic_.workspaceSize,
                                  stream));
    }
}

bool CaffeGemm::tensor_cores() const {
  return (bench::lt_numerical_impl_flags(heuristic_.algo) &
          CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK) != 0;
}

std::string CaffeGemm::describe() const {
  std::string s =
      std::string("cublasLtMatmul, ") + bench::lt_compute_type_name(dt_) + ", heuristic's " +
      (heuristic_rank_ == 1 ? std::string("first")
                            : "#" + std::to_string(heuristic_rank_) + " (the first strict FP32)") +
      ": " + bench::lt_algo_text(heuristic_) + ", workspace " +
      std::to_string(heuristic_.workspaceSize) + " B; " + caffe_batching_text(plan_);
  if (lt_batch_ == 1 && plan_.batch > 1)
    s += ", the batch looped on the host (" + unbatched_why_ + " for the strided batch)";
  return s;
}

nlohmann::ordered_json CaffeGemm::json() const {
  char flags[32];
  std::snprintf(flags, sizeof flags, "0x%llx",
                static_cast<unsigned long long>(bench::lt_numerical_impl_flags(heuristic_.algo)));
  nlohmann::ordered_json algo = {{"heuristic_rank", heuristic_rank_}};
  algo.update(bench::lt_algo_json(heuristic_));
  algo["numerical_impl_flags"] = flags;
  nlohmann::ordered_json j = {
      {"cublaslt_version", bench::cublaslt_version()},
      {"compute_type", bench::lt_compute_type_name(dt_)},
      {"cublaslt_algo", algo},
      {"workspace_limit_bytes", kCaffeMaxWorkspaceBytes},
      {"gemm_mnk", {plan_.m, plan_.n, plan_.k}},
      {"gemm_transa", plan_.a.transposed},
      {"gemm_batch", lt_batch_},
      {"gemm_batch_over", lt_batch_ > 1 ? plan_.batch_over : std::string()},
      {"gemm_calls", matmul_calls()},
      {"column_buffer", "col[group][m][Kp], Kp " + std::to_string(plan_.kp)}};
  if (!unbatched_why_.empty()) j["gemm_unbatched_why"] = unbatched_why_;
  return j;
}

// ---- The instance -------------------------------------------------------------------------------

// The im2col kernel's int index math bounds everything else: cuBLASLt's rows, columns and leading
// dimensions (int32, as it asks) are M, OH*OW, OC/G, K and Kp, its batch counts N or G.
std::string caffe_unsupported_reason(const Problem& p) {
  return im2col_index_limits(p);
}

namespace {

class CaffeInstance final : public DeviceOutputInstance<CaffeInstance> {
  friend class DeviceOutputInstance<CaffeInstance>;

 public:
  CaffeInstance(const Problem& p, const HostData& data, std::string name)
      : p_(p),
        name_(std::move(name)),
        g_(make_im2col_geometry(p)),
        bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        handle_(bench::make_lt_handle()),
        gemm_(handle_.get(), g_, p.dtype),
        src_(data.src.size() * bytes_),
        wei_(data.wei.size() * bytes_),
        dst_(std::size_t(p.dst_elements()) * bytes_),
        timer_(stream_.get()) {
    const std::size_t col_bytes = mma_column_buffer_elements(g_, im2col_type(p.dtype)) * bytes_;
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    if (col_bytes > free)
      throw bench::Unsupported("variant 9's column buffer needs " + gib(double(col_bytes)) +
                               ", more than the " + gib(double(free)) + " free on the device");
    col_ = bench::DeviceBuffer<unsigned char>(col_bytes);
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
  }

  void compile() override {
    gemm_.choose();
    workspace_ = bench::DeviceBuffer<unsigned char>(gemm_.workspace_bytes());
  }

  // The column buffer too (NaN in every type): the GEMM must read only what this run's im2col
  // wrote.
  void poison_output() override {
    dst_.fill_bytes_async(0xFF, stream_.get());
    col_.fill_bytes_async(0xFF, stream_.get());
  }

  void run() override {
    im2col();
    gemm();
  }

  PhaseTimes time_phases(int calls) override {
    PhaseTimes t{{"im2col", "gemm"},
                 {{}, {}},
                 "CUDA events on the instance's stream before the im2col kernel, between it and "
                 "the first cublasLtMatmul, and after the last, around single calls (one untimed "
                 "call first), each call enqueued whole before the stream starts it"};
    run();
    bench::Event e0, e1, e2;
    for (int i = 0; i < calls; ++i) {
      {
        StreamGate gate(stream_.get());
        e0.record(stream_.get());
        im2col();
        e1.record(stream_.get());
        gemm();
        e2.record(stream_.get());
        gate.release();
      }  // synchronized
      e2.synchronize();
      float im2col_ms = 0, gemm_ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&im2col_ms, e0.get(), e1.get()));
      CUDA_CHECK(cudaEventElapsedTime(&gemm_ms, e1.get(), e2.get()));
      t.ms[0].push_back(im2col_ms);
      t.ms[1].push_back(gemm_ms);
    }
    return t;
  }

  // e.g. "v9 im2col + cuBLASLt GEMM (Caffe-classic): im2col col[group][m][Kp] fp16 storage, Kp
  // 152; cublasLtMatmul, CUBLAS_COMPUTE_32F, heuristic's first: algo 66, tile 128x128, stages
  // 64x3, split-k 1, workspace 0 B; 1 call of a strided batch of 32 (images); output written in
  // nchw directly".
  std::string algorithm() const override {
    const bool fp32_storage = bytes_ == 4;
    return name_ + ": im2col col[group][m][Kp] " +
           (fp32_storage ? std::string("fp32") : bench::to_string(p_.dtype)) + " storage, Kp " +
           std::to_string(gemm_.plan().kp) + "; " + gemm_.describe() + "; output written in " +
           (g_.nhwc ? "nhwc" : "nchw") + " directly";
  }

  std::optional<std::int64_t> workspace_bytes() const override {
    return static_cast<std::int64_t>(col_.bytes() + workspace_.bytes());
  }

  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    const nlohmann::ordered_json gemm = gemm_.json();
    nlohmann::ordered_json j = {
        {"variant", 9},
        {"tile", gemm["cublaslt_algo"]["tile"]},
        {"tensor_cores", gemm_.tensor_cores()},
        {"split_k", gemm["cublaslt_algo"]["split_k"]},
        {"kernels_built_with", im2col_gemm_build_info()},
        {"column_buffer_bytes", col_.bytes()},
        {"compile_includes",
         "cuBLASLt descriptors, cublasLtMatmulAlgoGetHeuristic, the workspace's allocation"}};
    j.update(gemm);
    return j;
  }

 private:
  void im2col() {
    launch_mma_im2col(g_, im2col_type(p_.dtype), src_.data(), col_.data(), stream_.get());
  }
  void gemm() {
    gemm_.run(wei_.data(), col_.data(), dst_.data(), workspace_.data(), stream_.get());
  }

  Problem p_;
  std::string name_;
  Im2colGeometry g_;
  std::size_t bytes_;  // storage bytes per value
  bench::LtHandle handle_;
  CaffeGemm gemm_;
  bench::Stream stream_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_;  // the storage type
  bench::DeviceBuffer<unsigned char> col_;              // col[group][m][Kp]
  bench::DeviceBuffer<unsigned char> workspace_;        // cuBLASLt's
  bench::CudaEventTimer timer_;
};

}  // namespace

std::unique_ptr<Instance> make_caffe_instance(const Problem& p, const HostData& data,
                                              const std::string& variant_name) {
  return std::make_unique<CaffeInstance>(p, data, variant_name);
}

}  // namespace conv
