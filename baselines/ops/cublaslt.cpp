// Op backend "cublaslt": cuBLASLt's matmul, the vendor library's bar for matmul (other ops are
// unsupported: cuBLASLt is a matmul library), with the first algorithm of its heuristic, as
// PyTorch's own cuBLASLt path takes it. Also the measured matmul ceiling (matmul_ceiling.hpp).
//
// Layout: the problem is row-major, C[b][m][n] = A[b][m][k] B[b][k][n]; cuBLASLt is column-major.
// A row-major matrix read as column-major is its transpose, so the call is C^T = B^T A^T with no
// operand transposed: B (seen as n x k, ld n) goes first, then A (k x m, ld k), into C (n x m,
// ld n). Batches are strided (one matrix after the other).
//
// Math: fp32 -> CUBLAS_COMPUTE_32F (strict FP32), tf32 -> CUBLAS_COMPUTE_32F_FAST_TF32 on FP32
// storage, fp16 / bf16 -> 16-bit A, B, C with CUBLAS_COMPUTE_32F (FP32 accumulation); scale type
// FP32 throughout.
//
// compile() asks cublasLtMatmulAlgoGetHeuristic for its first algorithm: that query (what a
// library pays once per shape) is the compile time. run() is one cublasLtMatmul on the instance's
// stream with a workspace allocated in prepare(), so the runner's graph capture takes it as it is.
#include "baselines/ops/matmul_ceiling.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baselines/ops/backends.hpp"
#include "core/cuda/cublas_check.hpp"
#include "core/cuda/cublaslt_algo.hpp"
#include "core/cuda/cublaslt_raii.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/matmul_ceiling.hpp"
#include "core/random.hpp"

namespace ops {
namespace {

// 32 MiB: the workspace cuBLAS's documentation recommends for Hopper (cublasSetWorkspace; 4 MiB
// before it), and what PyTorch gives its cuBLASLt calls on sm_90 and later
// (pytorch/pytorch#120925), so that the heuristic may choose among the same algorithms (split-K
// among them) as for PyTorch.
constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

using Handle = bench::LtHandle;
using MatmulDesc = bench::LtMatmulDesc;
using MatrixLayout = bench::LtMatrixLayout;
using Preference = bench::LtPreference;
using bench::cublaslt_version;
using bench::lt_compute_type;
using bench::lt_compute_type_name;
using bench::lt_data_type;

Handle make_handle() {
  return bench::make_lt_handle();
}

// One matmul shape and dtype as cuBLASLt descriptors, and the algorithm its heuristic picks.
class LtMatmul {
 public:
  LtMatmul(cublasLtHandle_t handle, std::int64_t batch, std::int64_t m, std::int64_t n,
           std::int64_t k, DataType dt)
      : handle_(handle), dt_(dt) {
    cublasLtMatmulDesc_t desc = nullptr;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, lt_compute_type(dt), CUDA_R_32F));
    desc_ = MatmulDesc(desc);
    layout_b_ = layout(n, k, batch, k * n);  // our B, cuBLASLt's A
    layout_a_ = layout(k, m, batch, m * k);  // our A, cuBLASLt's B
    layout_c_ = layout(n, m, batch, m * n);
    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    preference_ = Preference(pref);
    const std::uint64_t workspace = kWorkspaceBytes;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  }

  // The heuristic's first algorithm; bench::Unsupported when it has none for this case.
  void choose() {
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle_, desc_.get(), layout_b_.get(), layout_a_.get(), layout_c_.get(), layout_c_.get(),
        preference_.get(), 1, &heuristic_, &returned);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0))
      throw bench::Unsupported("cuBLASLt " + cublaslt_version() +
                               ": the heuristic has no algorithm for this matmul");
    if (status != CUBLAS_STATUS_SUCCESS)
      bench::throw_cublas_error("cublasLtMatmulAlgoGetHeuristic", status, __FILE__, __LINE__);
    chosen_ = true;
  }

  // C = A B on stream s (row-major; see the header comment for the operand order).
  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t s) const {
    if (!chosen_) throw std::logic_error("cublaslt: run() before compile()");
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(handle_, desc_.get(), &alpha, b, layout_b_.get(), a,
                                layout_a_.get(), &beta, c, layout_c_.get(), c, layout_c_.get(),
                                &heuristic_.algo, workspace, kWorkspaceBytes, s));
  }

  std::size_t workspace_bytes() const { return heuristic_.workspaceSize; }

  nlohmann::ordered_json algo_json() const {
    nlohmann::ordered_json j = {{"heuristic_rank", 1}};
    j.update(bench::lt_algo_json(heuristic_));
    return j;
  }

  std::string describe() const {
    return std::string("cublasLtMatmul, ") + lt_compute_type_name(dt_) +
           ", heuristic's first: " + bench::lt_algo_text(heuristic_) + ", workspace " +
           std::to_string(heuristic_.workspaceSize) + " B";
  }

 private:
  // A column-major rows x cols matrix (ld = rows) of the dtype, batched with the given stride.
  MatrixLayout layout(std::int64_t rows, std::int64_t cols, std::int64_t batch,
                      std::int64_t stride) const {
    cublasLtMatrixLayout_t l = nullptr;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, lt_data_type(dt_), std::uint64_t(rows),
                                            std::uint64_t(cols), rows));
    MatrixLayout owned(l);
    if (batch > 1) {
      const std::int32_t count = std::int32_t(batch);
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof count));
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof stride));
    }
    return owned;
  }

  cublasLtHandle_t handle_;
  DataType dt_;
  MatmulDesc desc_;
  MatrixLayout layout_a_, layout_b_, layout_c_;
  Preference preference_;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  bool chosen_ = false;
};

class CublasLtInstance final : public Instance {
 public:
  CublasLtInstance(const Problem& p, const HostData& data)
      : p_(p),
        handle_(make_handle()),
        matmul_(handle_.get(), p.b, p.m, p.n, p.k, p.dtype),
        out_(std::size_t(p.output_elements()) * std::size_t(bench::storage_bytes(p.dtype))),
        workspace_(kWorkspaceBytes),
        timer_(stream_.get()) {
    for (const auto& in : data.inputs)
      inputs_.push_back(bench::upload_as_storage(in, p.dtype, stream_.get()));
  }

  void compile() override { matmul_.choose(); }
  void poison_output() override { out_.fill_bytes_async(0xFF, stream_.get()); }  // NaN in all
  void run() override {
    matmul_.run(inputs_[0].data(), inputs_[1].data(), out_.data(), workspace_.data(),
                stream_.get());
  }
  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override {
    bench::read_as_float(out_, std::size_t(p_.output_elements()), p_.dtype, stream_.get(), dst);
  }

  std::string algorithm() const override { return matmul_.describe(); }
  std::optional<std::int64_t> workspace_bytes() const override {
    return std::int64_t(matmul_.workspace_bytes());
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }
  nlohmann::ordered_json extra() const override {
    return {{"cublaslt_version", cublaslt_version()},
            {"compute_type", lt_compute_type_name(p_.dtype)},
            {"cublaslt_algo", matmul_.algo_json()},
            {"workspace_limit_bytes", kWorkspaceBytes},
            {"compile_includes", "cublasLtMatmulAlgoGetHeuristic (first result)"}};
  }

 private:
  Problem p_;
  Handle handle_;
  LtMatmul matmul_;
  bench::Stream stream_;
  std::vector<bench::DeviceBuffer<unsigned char>> inputs_;
  bench::DeviceBuffer<unsigned char> out_, workspace_;
  bench::CudaEventTimer timer_;
};

class CublasLtBackend final : public Backend {
 public:
  std::string name() const override { return "cublaslt"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override { return "cuBLASLt " + cublaslt_version(); }
  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }
  Support check_support(const Problem& p) const override {
    if (p.op != Op::matmul)
      return Support::no("cuBLASLt is a matmul library: it has no " + to_string(p.op));
    if (p.b > std::numeric_limits<std::int32_t>::max())
      return Support::no("cuBLASLt's batch count is a 32-bit integer");
    return Support::yes();
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<CublasLtInstance>(p, data);
  }
};

// ---- The matmul ceiling ----

constexpr std::int64_t kCeilingSize = 8192;
constexpr int kCeilingWarmups = 2, kCeilingTimed = 5;

// count elements of dt, random in [-1, 1): a block of 2^20 random values repeated (random enough
// for the tensor cores' power draw, which zeros would understate; cheap to make on the host).
bench::DeviceBuffer<unsigned char> random_matrix(std::int64_t count, DataType dt,
                                                 std::uint64_t seed, cudaStream_t s) {
  const std::size_t esize = std::size_t(bench::storage_bytes(dt));
  bench::DeviceBuffer<unsigned char> buf(std::size_t(count) * esize);
  std::vector<float> block(std::size_t(1) << 20);
  bench::fill_random(block, seed, dt);
  const std::vector<unsigned char> bytes = bench::to_storage_bytes(block, dt);
  for (std::size_t at = 0; at < buf.bytes(); at += bytes.size())
    CUDA_CHECK(cudaMemcpyAsync(buf.data() + at, bytes.data(),
                               std::min(bytes.size(), buf.bytes() - at), cudaMemcpyHostToDevice,
                               s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return buf;
}

// The ceiling matmul of dt set up (inputs, plan, workspace), and one call of it timed by CUDA
// events.
std::function<double()> prepare_ceiling_matmul(DataType dt) {
  const std::int64_t n = kCeilingSize;
  struct Setup {
    bench::Stream stream;
    bench::DeviceBuffer<unsigned char> a, b, c, workspace;
    Handle handle;
    std::unique_ptr<LtMatmul> matmul;
    std::unique_ptr<bench::CudaEventTimer> timer;
  };
  auto s = std::make_shared<Setup>();
  s->a = random_matrix(n * n, dt, 1, s->stream.get());
  s->b = random_matrix(n * n, dt, 2, s->stream.get());
  s->c = bench::DeviceBuffer<unsigned char>(std::size_t(n * n) *
                                            std::size_t(bench::storage_bytes(dt)));
  s->workspace = bench::DeviceBuffer<unsigned char>(kWorkspaceBytes);
  s->handle = make_handle();
  s->matmul = std::make_unique<LtMatmul>(s->handle.get(), 1, n, n, n, dt);
  s->matmul->choose();
  s->timer = std::make_unique<bench::CudaEventTimer>(s->stream.get());
  return [s] {
    s->timer->start();
    s->matmul->run(s->a.data(), s->b.data(), s->c.data(), s->workspace.data(), s->stream.get());
    s->timer->stop();
    return s->timer->elapsed().count();
  };
}

}  // namespace

std::unique_ptr<Backend> make_cublaslt_backend(const BackendOptions&) {
  return std::make_unique<CublasLtBackend>();
}

nlohmann::ordered_json measure_matmul_ceiling(const std::vector<bench::DataType>& dtypes) {
  const std::string size = std::to_string(kCeilingSize);
  nlohmann::ordered_json out = {
      {"method", "cuBLASLt " + size + "x" + size + "x" + size +
                     " row-major matmul, random inputs, the heuristic's first algorithm, 32 MiB "
                     "workspace; best of " +
                     std::to_string(kCeilingTimed) + " calls after " +
                     std::to_string(kCeilingWarmups) + " warm-ups, timed by CUDA events"}};
  const bench::CudaAvailability a = bench::cuda_device_available();
  if (!a.ok) {
    out["why"] = "no CUDA device: " + a.reason;
    return out;
  }
  out["cublaslt_version"] = cublaslt_version();
  // The one measurement of core/matmul_ceiling.hpp, recorded under this suite's keys: tflops and
  // failed by dtype.
  std::vector<bench::CeilingMatmul> matmuls;
  const double n = double(kCeilingSize);
  for (DataType dt : dtypes)
    matmuls.push_back(
        {"cublaslt", "cuda", dt, "", 2.0 * n * n * n, [dt] { return prepare_ceiling_matmul(dt); }});
  const nlohmann::ordered_json measured = bench::measure_matmul_ceiling(
      out["method"].get<std::string>(), matmuls, {kCeilingWarmups, kCeilingTimed});
  out["tflops"] =
      measured.contains("tflops") ? measured["tflops"]["cuda"] : nlohmann::ordered_json::object();
  if (measured.contains("failed")) out["failed"] = measured["failed"]["cublaslt"];
  return out;
}

}  // namespace ops
