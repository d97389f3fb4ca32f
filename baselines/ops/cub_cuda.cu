// Op backend "cub_cuda": CUB, the CUDA toolkit's library of device-wide primitives, as the vendor
// bar for what it has primitives for. Each op is the CUB call a CUDA programmer would write:
//   element ops, activations  cub::DeviceTransform::Transform with a functor computing in float;
//                             a broadcast second operand read through a gather iterator
//   copy                      cub::DeviceTransform::Transform with the identity
//   concat                    cub::DeviceMemcpy::Batched: one buffer per (outer index, input)
//   sum, mean, max over all   cub::DeviceReduce::Reduce (plus / maximum), mean scaled on output
//   ... over the last axes    cub::DeviceSegmentedReduce::Reduce, one segment per row, the
//                             offsets a transform of a counting iterator (no offset array)
// Anything else is unsupported with the reason (CUB has no softmax, no matmul, no strided copy).
//
// 16-bit dtypes are read through an iterator converting to float (reductions accumulate in float,
// as DeviceReduce::Sum over __half would not) and rounded once on output; the element functors
// compute in float likewise. DeviceReduce::Sum / Max are Reduce with plus / maximum and an init
// of the input's type: Reduce with float ops names the accumulator type outright.
//
// One kernel per dtype for the element ops and one for the activations: the functor switches on
// the op at run time. The switch is uniform over the grid (no divergence) and these kernels are
// bound by memory, so this costs nothing measurable and saves compiling 30 more CUB kernels.
//
// Temp storage is sized in prepare() by CUB's query call (a null pointer: no work is launched) and
// allocated once; run() only enqueues on the instance's stream, so the runner's CUDA graph capture
// takes it as it is.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#include <cub/device/device_memcpy.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_transform.cuh>
#include <cub/version.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/tuple>

#include "baselines/ops/backends.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"

namespace ops {
namespace {

constexpr int kMaxDims = 8;  // ops::Problem's largest rank

// ---- Conversions between the storage types and float (round to nearest even) ----
__host__ __device__ inline float to_float(float v) {
  return v;
}
__host__ __device__ inline float to_float(__half v) {
  return __half2float(v);
}
__host__ __device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__host__ __device__ inline T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return v;
}

// ---- Functors ----
template <typename T>
struct ToFloat {
  __host__ __device__ float operator()(T v) const { return to_float(v); }
};

// A reduction's result, divided by the count of reduced elements (1 for sum and max) and rounded
// to the output's type.
template <typename T>
struct Finish {
  float count;
  __host__ __device__ T operator()(float v) const { return from_float<T>(v / count); }
};

template <typename T>
struct BinaryOp {
  Op op;
  __host__ __device__ T operator()(T a, T b) const {
    const float x = to_float(a), y = to_float(b);
    switch (op) {
      case Op::sub:
        return from_float<T>(x - y);
      case Op::mul:
        return from_float<T>(x * y);
      case Op::div:
        return from_float<T>(x / y);
      default:
        return from_float<T>(x + y);
    }
  }
};

template <typename T>
struct ActivationOp {
  Op op;
  __host__ __device__ T operator()(T v) const {
    const float x = to_float(v);
    switch (op) {
      case Op::sigmoid:
        return from_float<T>(1.0f / (1.0f + expf(-x)));
      case Op::tanh:
        return from_float<T>(tanhf(x));
      case Op::gelu_erf:
        return from_float<T>(0.5f * x * (1.0f + erff(x * 0.70710678118654752f)));
      case Op::gelu_tanh:
        return from_float<T>(0.5f * x *
                             (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))));
      case Op::silu:
        return from_float<T>(x / (1.0f + expf(-x)));
      default:
        return from_float<T>(x > 0.0f ? x : 0.0f);  // relu
    }
  }
};

template <typename T>
struct Identity {
  __host__ __device__ T operator()(T v) const { return v; }
};

// The broadcast operand's element for output element i: the output's dims, collapsed to runs of
// broadcast and not broadcast dims, each contributing its coordinate times the operand's stride
// (0 where broadcast). Index type I: 32-bit where the tensor allows (a cheaper division).
template <typename T, typename I>
struct BroadcastGather {
  const T* rhs;
  int rank;
  I out_stride[kMaxDims];
  I rhs_stride[kMaxDims];
  __host__ __device__ T operator()(I i) const {
    I j = 0;
    for (int d = 0; d < rank; ++d) {
      const I c = i / out_stride[d];
      i -= c * out_stride[d];
      j += c * rhs_stride[d];
    }
    return rhs[j];
  }
};

// Segment offsets for rows of `cols` elements: begin of row r (its end is the begin of r + 1).
struct RowStart {
  std::int64_t cols;
  __host__ __device__ std::int64_t operator()(std::int64_t r) const { return r * cols; }
};

// concat: buffer b = (outer index r, input t) copies `inner_bytes` from input t at r to its place.
struct ConcatSource {
  const unsigned char* const* inputs;  // device array of the inputs' addresses
  std::int64_t count, inner_bytes;
  __host__ __device__ void* operator()(std::int64_t b) const {
    const std::int64_t r = b / count;
    return const_cast<unsigned char*>(inputs[b - r * count] + r * inner_bytes);
  }
};
struct ConcatDestination {
  unsigned char* output;
  std::int64_t inner_bytes;
  __host__ __device__ void* operator()(std::int64_t b) const { return output + b * inner_bytes; }
};

// ---- The plan of one problem: what run() needs, computed once in prepare() ----

std::int64_t product(const std::vector<std::int64_t>& d, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t i = from; i < to; ++i) n *= d[i];
  return n;
}

// The reduced axes are the last ones (and not all): rows of contiguous segments.
bool reduces_last_axes(const Problem& p) {
  if (p.axes.empty()) return false;
  const int rank = int(p.shape.size());
  for (std::size_t i = 0; i < p.axes.size(); ++i)
    if (p.axes[i] != rank - int(p.axes.size()) + int(i)) return false;
  return true;
}

struct Broadcast {
  int rank = 0;
  std::int64_t out_stride[kMaxDims] = {}, rhs_stride[kMaxDims] = {};
};

// The output's dims collapsed into runs of the same kind (broadcast or not; size-1 dims dropped).
Broadcast plan_broadcast(const Problem& p) {
  std::vector<std::int64_t> extent;
  std::vector<bool> broadcast;
  const std::vector<std::int64_t> rhs = p.rhs_shape();
  for (std::size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    const bool b = rhs[d] == 1;
    if (!extent.empty() && broadcast.back() == b) {
      extent.back() *= p.shape[d];
    } else {
      extent.push_back(p.shape[d]);
      broadcast.push_back(b);
    }
  }
  Broadcast plan;
  plan.rank = int(extent.size());
  std::int64_t out = 1, in = 1;
  for (int d = plan.rank; d-- > 0;) {
    plan.out_stride[d] = out;
    plan.rhs_stride[d] = broadcast[std::size_t(d)] ? 0 : in;
    out *= extent[std::size_t(d)];
    if (!broadcast[std::size_t(d)]) in *= extent[std::size_t(d)];
  }
  return plan;
}

template <typename T, typename I>
BroadcastGather<T, I> gather_of(const Broadcast& b, const void* rhs) {
  BroadcastGather<T, I> g{static_cast<const T*>(rhs), b.rank, {}, {}};
  for (int d = 0; d < b.rank; ++d) {
    g.out_stride[d] = I(b.out_stride[d]);
    g.rhs_stride[d] = I(b.rhs_stride[d]);
  }
  return g;
}

struct Plan {
  Problem p;
  std::vector<const void*> inputs;
  void* output = nullptr;
  Broadcast broadcast;
  std::int64_t rows = 1, cols = 1;  // reductions: segments and their length (rows 1: all)
  const unsigned char* const* concat_inputs = nullptr;
};

// ---- Enqueueing: with temp == nullptr, CUB's size query only (no work) ----

template <typename T>
void element(const Plan& pl, cudaStream_t s) {
  const T* a = static_cast<const T*>(pl.inputs[0]);
  T* out = static_cast<T*>(pl.output);
  const std::int64_t n = pl.p.output_elements();
  const BinaryOp<T> op{pl.p.op};
  if (pl.p.rhs.empty()) {
    const T* b = static_cast<const T*>(pl.inputs[1]);
    CUDA_CHECK(cub::DeviceTransform::Transform(::cuda::std::make_tuple(a, b), out, n, op, s));
  } else if (n <= std::numeric_limits<std::int32_t>::max()) {
    const auto b =
        thrust::make_transform_iterator(thrust::counting_iterator<std::int32_t>(0),
                                        gather_of<T, std::int32_t>(pl.broadcast, pl.inputs[1]));
    CUDA_CHECK(cub::DeviceTransform::Transform(::cuda::std::make_tuple(a, b), out, std::int32_t(n),
                                               op, s));
  } else {
    const auto b =
        thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                        gather_of<T, std::int64_t>(pl.broadcast, pl.inputs[1]));
    CUDA_CHECK(cub::DeviceTransform::Transform(::cuda::std::make_tuple(a, b), out, n, op, s));
  }
}

template <typename T>
void activation(const Plan& pl, cudaStream_t s) {
  CUDA_CHECK(cub::DeviceTransform::Transform(static_cast<const T*>(pl.inputs[0]),
                                             static_cast<T*>(pl.output), pl.p.output_elements(),
                                             ActivationOp<T>{pl.p.op}, s));
}

template <typename T>
void copy(const Plan& pl, cudaStream_t s) {
  CUDA_CHECK(cub::DeviceTransform::Transform(static_cast<const T*>(pl.inputs[0]),
                                             static_cast<T*>(pl.output), pl.p.output_elements(),
                                             Identity<T>{}, s));
}

void concat(const Plan& pl, void* temp, std::size_t& temp_bytes, cudaStream_t s) {
  const Problem& p = pl.p;
  const std::int64_t inner_bytes =
      product(p.shape, std::size_t(p.axis), p.shape.size()) * bench::storage_bytes(p.dtype);
  const std::int64_t buffers = product(p.shape, 0, std::size_t(p.axis)) * p.inputs;
  const auto sources = thrust::make_transform_iterator(
      thrust::counting_iterator<std::int64_t>(0),
      ConcatSource{pl.concat_inputs, std::int64_t(p.inputs), inner_bytes});
  const auto destinations = thrust::make_transform_iterator(
      thrust::counting_iterator<std::int64_t>(0),
      ConcatDestination{static_cast<unsigned char*>(pl.output), inner_bytes});
  CUDA_CHECK(cub::DeviceMemcpy::Batched(temp, temp_bytes, sources, destinations,
                                        thrust::constant_iterator<std::int64_t>(inner_bytes),
                                        buffers, s));
}

// One reduction with the input read as float and the result written through `out`.
template <typename In, typename Out, typename ReduceOp>
void reduce_into(const Plan& pl, In in, Out out, ReduceOp op, float init, void* temp,
                 std::size_t& temp_bytes, cudaStream_t s) {
  if (pl.rows == 1 && pl.p.axes.empty()) {
    CUDA_CHECK(cub::DeviceReduce::Reduce(temp, temp_bytes, in, out, pl.cols, op, init, s));
  } else {
    const auto begin = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                       RowStart{pl.cols});
    CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(temp, temp_bytes, in, out, pl.rows, begin,
                                                  begin + 1, op, init, s));
  }
}

template <typename T, typename ReduceOp>
void reduce_as(const Plan& pl, ReduceOp op, float init, void* temp, std::size_t& temp_bytes,
               cudaStream_t s) {
  const T* x = static_cast<const T*>(pl.inputs[0]);
  T* y = static_cast<T*>(pl.output);
  const float count = pl.p.op == Op::mean ? float(pl.cols) : 1.0f;
  const auto out = thrust::make_transform_output_iterator(y, Finish<T>{count});
  if constexpr (std::is_same_v<T, float>) {
    // Plain pointers where nothing is converted: CUB's vectorized loads and direct stores.
    if (pl.p.op == Op::mean)
      reduce_into(pl, x, out, op, init, temp, temp_bytes, s);
    else
      reduce_into(pl, x, y, op, init, temp, temp_bytes, s);
  } else {
    reduce_into(pl, thrust::make_transform_iterator(x, ToFloat<T>{}), out, op, init, temp,
                temp_bytes, s);
  }
}

template <typename T>
void reduction(const Plan& pl, void* temp, std::size_t& temp_bytes, cudaStream_t s) {
  if (pl.p.op == Op::max)
    reduce_as<T>(pl, ::cuda::maximum<float>{}, -std::numeric_limits<float>::infinity(), temp,
                 temp_bytes, s);
  else
    reduce_as<T>(pl, ::cuda::std::plus<float>{}, 0.0f, temp, temp_bytes, s);
}

template <typename T>
void enqueue_typed(const Plan& pl, void* temp, std::size_t& temp_bytes, cudaStream_t s) {
  const bool query = temp == nullptr;
  switch (pl.p.category()) {
    case Category::element:
      if (!query) element<T>(pl, s);
      return;
    case Category::activation:
      if (!query) activation<T>(pl, s);
      return;
    case Category::reduction:
      reduction<T>(pl, temp, temp_bytes, s);
      return;
    case Category::memory:
      if (pl.p.op == Op::concat)
        concat(pl, temp, temp_bytes, s);
      else if (!query)
        copy<T>(pl, s);
      return;
    default:
      throw std::logic_error("cub_cuda: no CUB call for " + pl.p.str());
  }
}

void enqueue(const Plan& pl, void* temp, std::size_t& temp_bytes, cudaStream_t s) {
  switch (pl.p.dtype) {
    case DataType::fp16:
      return enqueue_typed<__half>(pl, temp, temp_bytes, s);
    case DataType::bf16:
      return enqueue_typed<__nv_bfloat16>(pl, temp, temp_bytes, s);
    default:
      return enqueue_typed<float>(pl, temp, temp_bytes, s);
  }
}

// The CUB call(s) of p, for the result's algorithm field.
std::string describe(const Plan& pl) {
  const Problem& p = pl.p;
  const std::string op = to_string(p.op);
  switch (p.category()) {
    case Category::element:
      return "cub::DeviceTransform::Transform (" + op + " in float" +
             (p.rhs.empty() ? "" : ", second operand through a broadcast gather iterator") + ")";
    case Category::activation:
      return "cub::DeviceTransform::Transform (" + op + " in float)";
    case Category::reduction: {
      const std::string how = std::string(p.op == Op::max ? "maximum" : "plus") + " in float" +
                              (p.op == Op::mean ? ", / count on output" : "");
      if (pl.rows == 1 && p.axes.empty())
        return "cub::DeviceReduce::Reduce (" + how + ") over " + std::to_string(pl.cols) +
               " elements";
      return "cub::DeviceSegmentedReduce::Reduce (" + how + ") over " + std::to_string(pl.rows) +
             " rows of " + std::to_string(pl.cols);
    }
    case Category::memory:
      if (p.op == Op::concat)
        return "cub::DeviceMemcpy::Batched (" +
               std::to_string(product(p.shape, 0, std::size_t(p.axis)) * p.inputs) +
               " buffers of " +
               std::to_string(product(p.shape, std::size_t(p.axis), p.shape.size()) *
                              bench::storage_bytes(p.dtype)) +
               " bytes)";
      return "cub::DeviceTransform::Transform (identity)";
    default:
      return "";
  }
}

std::string cub_version() {
  return std::to_string(CUB_MAJOR_VERSION) + "." + std::to_string(CUB_MINOR_VERSION) + "." +
         std::to_string(CUB_SUBMINOR_VERSION);
}

class CubInstance final : public Instance {
 public:
  CubInstance(const Problem& p, const HostData& data)
      : out_(std::size_t(p.output_elements()) * std::size_t(bench::storage_bytes(p.dtype))),
        timer_(stream_.get()) {
    plan_.p = p;
    for (const auto& in : data.inputs) {
      const std::vector<unsigned char> bytes = bench::to_storage_bytes(in, p.dtype);
      inputs_.emplace_back(bytes.size());
      inputs_.back().upload_async(bytes.data(), stream_.get());
      stream_.synchronize();  // the host bytes end here
      plan_.inputs.push_back(inputs_.back().data());
    }
    plan_.output = out_.data();
    if (p.category() == Category::element && !p.rhs.empty()) plan_.broadcast = plan_broadcast(p);
    if (p.category() == Category::reduction) {
      const std::size_t kept = p.axes.empty() ? 0 : p.shape.size() - p.axes.size();
      plan_.rows = product(p.shape, 0, kept);
      plan_.cols = product(p.shape, kept, p.shape.size());
    }
    if (p.op == Op::concat) {
      std::vector<const unsigned char*> addresses;
      for (const auto& b : inputs_) addresses.push_back(b.data());
      concat_table_ = bench::DeviceBuffer<const unsigned char*>(addresses.size());
      concat_table_.upload_async(addresses.data(), stream_.get());
      stream_.synchronize();
      plan_.concat_inputs = concat_table_.data();
    }
    std::size_t bytes = 0;
    enqueue(plan_, nullptr, bytes, stream_.get());
    temp_bytes_ = bytes;
    // CUB reads a null temp pointer as a size query: even an empty temp storage gets an address.
    temp_ = bench::DeviceBuffer<unsigned char>(std::max<std::size_t>(bytes, 16));
  }

  void compile() override {}  // CUB's kernels are compiled in; the launch is planned per call
  void poison_output() override { out_.fill_bytes_async(0xFF, stream_.get()); }  // NaN in all
  void run() override {
    std::size_t bytes = temp_bytes_;
    enqueue(plan_, temp_.data(), bytes, stream_.get());
  }
  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override {
    std::vector<unsigned char> bytes(out_.bytes());
    out_.download_async(bytes.data(), stream_.get());
    stream_.synchronize();
    bench::from_storage_bytes(bytes.data(), std::size_t(plan_.p.output_elements()), plan_.p.dtype,
                              dst);
  }

  std::string algorithm() const override { return describe(plan_); }
  std::optional<std::int64_t> workspace_bytes() const override { return std::int64_t(temp_bytes_); }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }
  nlohmann::ordered_json extra() const override {
    return {{"cub_version", cub_version()},
            {"accumulation", "fp32"},
            {"workspace_bytes_is", "CUB's temp storage size query"}};
  }

 private:
  Plan plan_;
  bench::Stream stream_;
  std::vector<bench::DeviceBuffer<unsigned char>> inputs_;
  bench::DeviceBuffer<unsigned char> out_, temp_;
  bench::DeviceBuffer<const unsigned char*> concat_table_;
  std::size_t temp_bytes_ = 0;
  bench::CudaEventTimer timer_;
};

class CubBackend final : public Backend {
 public:
  std::string name() const override { return "cub_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override {
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    return "CUB " + cub_version() + " (CUDA runtime " + bench::cuda_version_string(runtime) + ")";
  }
  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }
  Support check_support(const Problem& p) const override {
    switch (p.category()) {
      case Category::element:
      case Category::activation:
        return Support::yes();
      case Category::reduction:
        if (p.axes.empty() || reduces_last_axes(p)) return Support::yes();
        return Support::no(
            "CUB reduces all elements or contiguous segments (the last axes); reducing "
            "leading or inner axes would need a strided gather, not a CUB primitive");
      case Category::normalization:
        return Support::no("CUB has no " + to_string(p.op) +
                           " (its primitives are reduce, scan, sort, select, transform, copy)");
      case Category::matmul:
        return Support::no("CUB has no matmul (cuBLASLt is the vendor library for it)");
      case Category::memory:
        if (p.op == Op::copy || p.op == Op::concat) return Support::yes();
        return Support::no("CUB has no " + to_string(p.op) +
                           " (no strided or permuted copy primitive)");
    }
    return Support::no("unknown category");
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<CubInstance>(p, data);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cub_cuda_backend(const BackendOptions&) {
  return std::make_unique<CubBackend>();
}

}  // namespace ops
