// oneDNN backend of the op suite on the CPU, oneDNN 2.x API (op desc -> primitive_desc ->
// primitive), one primitive per op:
//   add sub mul div        binary (binary_add/sub/mul/div); a broadcast operand is a src1 with 1
//                          in its broadcast dimensions
//   activations            eltwise_forward: relu (alpha 0), logistic, tanh, gelu_erf, gelu_tanh,
//                          swish with alpha 1 (silu)
//   sum mean max           reduction (reduction_sum/mean/max): dst dims are src dims with 1 at the
//                          reduced axes, the same numbers in the same order as the output shape
//   softmax, layernorm     softmax_forward and layer_normalization_forward (use_scale, use_shift,
//                          eps 1e-5) over {rows, last axis}; rmsnorm: oneDNN 2.6 has none
//   matmul                 matmul, {m,k}x{k,n} or batched {b,m,k}x{b,k,n}
//   copy                   reorder between two plain descriptors of the same dims
//   transpose, permute     reorder from a descriptor of the output's dims with the input's strides
//                          permuted (oneDNN's way to permute) into a plain one
//   concat                 concat
//
// Every buffer is plain row-major (strides from the dims, never format_tag::any): the op suite
// times the op on the caller's layout, and a blocked layout would need reorders that a fair timing
// must either count or not hide. Inputs are converted and copied once when the case is prepared;
// compile() creates the primitive descriptor (implementation choice) and the primitive (JIT code).
// Every oneDNN call that can fail goes through ONEDNN_CALL: "unimplemented" (no implementation for
// this problem on this CPU, e.g. most fp16 on CPUs without AVX512-FP16) becomes
// bench::Unsupported, any other error std::runtime_error.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "baselines/onednn_common.hpp"
#include "baselines/ops/backends.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

namespace ops {
namespace {

using bench::onednn::effective_isa;
using bench::onednn::onednn_type;
using dnnl::memory;

constexpr float kNormEps = 1e-5f;  // layernorm (ops/problem.hpp)

memory::dims row_major_strides(const memory::dims& dims) {
  memory::dims s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// A plain row-major descriptor of any rank (format tags stop at fixed ranks; strides do not).
memory::desc plain_md(const memory::dims& dims, memory::data_type dt) {
  return memory::desc(dims, dt, row_major_strides(dims));
}

memory::dims to_dims(const std::vector<std::int64_t>& shape) {
  return memory::dims(shape.begin(), shape.end());
}

// The normalizations' {rows, last axis} view: both primitives normalize over the last dimension,
// so every rank is the same 2-D problem.
memory::dims rows_cols(const Problem& p) {
  const std::int64_t cols = p.shape.back();
  return {p.input_elements() / cols, cols};
}

// The permutation the output reads the input by: output axis i is input axis perm[i].
std::vector<int> output_perm(const Problem& p) {
  if (p.op == Op::permute) return p.perm;
  std::vector<int> perm(p.shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  if (p.op == Op::transpose) std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return perm;
}

// The descriptors of the inputs, in HostData::inputs order, as the primitive reads them. Their
// sizes are those of the plain row-major inputs, so the host data is copied in byte for byte.
std::vector<memory::desc> input_mds(const Problem& p) {
  const memory::data_type dt = onednn_type(p.dtype);
  switch (p.category()) {
    case Category::element: {
      // oneDNN's binary wants both sources of one rank: a shorter second shape is aligned to the
      // right (numpy's rule), 1 in the leading dimensions.
      memory::dims rhs = to_dims(p.rhs_shape());
      if (rhs.size() < p.shape.size()) rhs.insert(rhs.begin(), p.shape.size() - rhs.size(), 1);
      return {plain_md(to_dims(p.shape), dt), plain_md(rhs, dt)};
    }
    case Category::activation:
    case Category::reduction:
      return {plain_md(to_dims(p.shape), dt)};
    case Category::normalization: {
      std::vector<memory::desc> mds = {plain_md(rows_cols(p), dt)};
      // Scale and shift are f32 in oneDNN 2.x whatever the data type; the values are already
      // rounded to the dtype, so nothing changes but their storage.
      if (p.op == Op::layernorm)
        for (int i = 0; i < 2; ++i)
          mds.push_back(plain_md({p.shape.back()}, memory::data_type::f32));
      return mds;
    }
    case Category::matmul:
      if (p.b > 1) return {plain_md({p.b, p.m, p.k}, dt), plain_md({p.b, p.k, p.n}, dt)};
      return {plain_md({p.m, p.k}, dt), plain_md({p.k, p.n}, dt)};
    case Category::memory: {
      if (p.op == Op::concat)
        return std::vector<memory::desc>(static_cast<std::size_t>(p.inputs),
                                         plain_md(to_dims(p.shape), dt));
      // The input in the output's dims: dimension i is input axis perm[i] with its stride.
      const memory::dims in_strides = row_major_strides(to_dims(p.shape));
      memory::dims dims, strides;
      for (int axis : output_perm(p)) {
        dims.push_back(p.shape[static_cast<std::size_t>(axis)]);
        strides.push_back(in_strides[static_cast<std::size_t>(axis)]);
      }
      return {memory::desc(dims, dt, strides)};
    }
  }
  return {};
}

// The output as the primitive writes it: plain, in the output shape (matmul: {[b,] m, n}), except
// reductions (src rank, 1 at the reduced axes) and normalizations ({rows, cols}); the same numbers
// in the same order.
memory::desc output_md(const Problem& p) {
  const memory::data_type dt = onednn_type(p.dtype);
  if (p.category() == Category::reduction) {
    memory::dims dims = to_dims(p.shape);
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (p.axes.empty() || std::find(p.axes.begin(), p.axes.end(), int(i)) != p.axes.end())
        dims[i] = 1;
    return plain_md(dims, dt);
  }
  if (p.category() == Category::normalization) return plain_md(rows_cols(p), dt);
  return plain_md(to_dims(p.output_shape()), dt);
}

dnnl::algorithm binary_algorithm(Op op) {
  switch (op) {
    case Op::add:
      return dnnl::algorithm::binary_add;
    case Op::sub:
      return dnnl::algorithm::binary_sub;
    case Op::mul:
      return dnnl::algorithm::binary_mul;
    default:
      return dnnl::algorithm::binary_div;
  }
}

// The eltwise algorithm and its alpha (oneDNN's swish is x * sigmoid(alpha x): silu at alpha 1).
std::pair<dnnl::algorithm, float> eltwise_algorithm(Op op) {
  switch (op) {
    case Op::relu:
      return {dnnl::algorithm::eltwise_relu, 0.0f};  // alpha = negative slope
    case Op::sigmoid:
      return {dnnl::algorithm::eltwise_logistic, 0.0f};
    case Op::tanh:
      return {dnnl::algorithm::eltwise_tanh, 0.0f};
    case Op::gelu_erf:
      return {dnnl::algorithm::eltwise_gelu_erf, 0.0f};
    case Op::gelu_tanh:
      return {dnnl::algorithm::eltwise_gelu_tanh, 0.0f};
    default:
      return {dnnl::algorithm::eltwise_swish, 1.0f};
  }
}

dnnl::algorithm reduction_algorithm(Op op) {
  switch (op) {
    case Op::sum:
      return dnnl::algorithm::reduction_sum;
    case Op::mean:
      return dnnl::algorithm::reduction_mean;
    default:
      return dnnl::algorithm::reduction_max;
  }
}

class OnednnOpsInstance final : public Instance {
 public:
  // Untimed: engine, stream and the buffers, the inputs converted to the dtype and copied in.
  OnednnOpsInstance(const Problem& p, const HostData& data) : p_(p) {
    engine_ = ONEDNN_CALL(dnnl::engine(dnnl::engine::kind::cpu, 0));
    stream_ = ONEDNN_CALL(dnnl::stream(engine_));
    const std::vector<memory::desc> mds = input_mds(p);
    BENCH_CHECK(mds.size() == data.inputs.size(), "oneDNN ops: input count differs from the data");
    for (std::size_t i = 0; i < mds.size(); ++i) {
      inputs_.push_back(ONEDNN_CALL(memory(mds[i], engine_)));
      const bool f32 = mds[i].data_type() == memory::data_type::f32;
      const std::vector<unsigned char> bytes =
          bench::to_storage_bytes(data.inputs[i], f32 ? DataType::fp32 : p.dtype);
      BENCH_CHECK(mds[i].get_size() == bytes.size(),
                  "oneDNN buffer size differs from the input's element count");
      std::memcpy(ONEDNN_CALL(inputs_[i].get_data_handle()), bytes.data(), bytes.size());
    }
    dst_ = ONEDNN_CALL(memory(output_md(p), engine_));
  }

  // Timed as compile time: the primitive descriptor (oneDNN's choice of implementation) and the
  // primitive (JIT code generation).
  void compile() override {
    bench::WallTimer timer;
    dnnl::primitive_attr attr;
    ONEDNN_CALL(attr.set_scratchpad_mode(dnnl::scratchpad_mode::user));
    try {
      pd_ = make_primitive_desc(attr);
    } catch (const bench::Unsupported& e) {
      throw bench::Unsupported("no " + bench::to_string(p_.dtype) + " " + to_string(p_.op) + ": " +
                               e.what());
    }
    impl_ = ONEDNN_CALL(pd_.impl_info_str());
    pd_ms_ = timer.elapsed().count();

    timer.start();
    primitive_ = ONEDNN_CALL(dnnl::primitive(pd_.get()));
    primitive_ms_ = timer.elapsed().count();

    const memory::desc scratch_md = ONEDNN_CALL(pd_.scratchpad_desc());
    scratchpad_bytes_ = static_cast<std::int64_t>(scratch_md.get_size());
    scratchpad_ = ONEDNN_CALL(memory(scratch_md, engine_));
    args_ = make_args();
    args_.insert({DNNL_ARG_SCRATCHPAD, scratchpad_});
  }

  void poison_output() override { bench::onednn::poison(dst_); }

  void run() override { bench::onednn::execute(primitive_, stream_, args_); }

  void sync() override { ONEDNN_CALL(stream_.wait()); }

  void read_output(float* out) override {
    const auto n = static_cast<std::size_t>(p_.output_elements());
    BENCH_CHECK(dst_.get_desc().get_size() == n * std::size_t(bench::storage_bytes(p_.dtype)),
                "oneDNN output size differs from the problem's output element count");
    bench::from_storage_bytes(
        static_cast<const unsigned char*>(ONEDNN_CALL(dst_.get_data_handle())), n, p_.dtype, out);
  }

  std::string algorithm() const override { return impl_; }

  std::optional<std::int64_t> workspace_bytes() const override { return scratchpad_bytes_; }

  nlohmann::ordered_json extra() const override {
    return {{"onednn_impl", impl_},
            {"onednn_primitive", primitive_name()},
            {"cpu_isa", effective_isa()},
            {"layout", "plain row-major (user layout, fixed)"},
            {"primitive_desc_ms", pd_ms_},
            {"primitive_create_ms", primitive_ms_},
            {"scratchpad_bytes", scratchpad_bytes_}};
  }

 private:
  std::string primitive_name() const {
    switch (p_.category()) {
      case Category::element:
        return "binary";
      case Category::activation:
        return "eltwise_forward";
      case Category::reduction:
        return "reduction";
      case Category::normalization:
        return p_.op == Op::softmax ? "softmax_forward" : "layer_normalization_forward";
      case Category::matmul:
        return "matmul";
      case Category::memory:
        return p_.op == Op::concat ? "concat" : "reorder";
    }
    return "";
  }

  // The primitive descriptor of the problem's op over the buffers made in the constructor.
  dnnl::primitive_desc_base make_primitive_desc(const dnnl::primitive_attr& attr) const {
    const memory::desc src = inputs_[0].get_desc(), dst = dst_.get_desc();
    constexpr auto inference = dnnl::prop_kind::forward_inference;
    switch (p_.category()) {
      case Category::element: {
        const auto d = ONEDNN_CALL(
            dnnl::binary::desc(binary_algorithm(p_.op), src, inputs_[1].get_desc(), dst));
        return ONEDNN_CALL(dnnl::binary::primitive_desc(d, attr, engine_));
      }
      case Category::activation: {
        const auto [alg, alpha] = eltwise_algorithm(p_.op);
        const auto d = ONEDNN_CALL(dnnl::eltwise_forward::desc(inference, alg, src, alpha, 0.0f));
        return ONEDNN_CALL(dnnl::eltwise_forward::primitive_desc(d, attr, engine_));
      }
      case Category::reduction: {
        const auto d =
            ONEDNN_CALL(dnnl::reduction::desc(reduction_algorithm(p_.op), src, dst, 0.0f, 0.0f));
        return ONEDNN_CALL(dnnl::reduction::primitive_desc(d, attr, engine_));
      }
      case Category::normalization: {
        if (p_.op == Op::softmax) {
          const auto d = ONEDNN_CALL(dnnl::softmax_forward::desc(inference, src, 1));
          return ONEDNN_CALL(dnnl::softmax_forward::primitive_desc(d, attr, engine_));
        }
        const auto flags =
            dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
        const auto d =
            ONEDNN_CALL(dnnl::layer_normalization_forward::desc(inference, src, kNormEps, flags));
        return ONEDNN_CALL(dnnl::layer_normalization_forward::primitive_desc(d, attr, engine_));
      }
      case Category::matmul: {
        const auto d = ONEDNN_CALL(dnnl::matmul::desc(src, inputs_[1].get_desc(), dst));
        return ONEDNN_CALL(dnnl::matmul::primitive_desc(d, attr, engine_));
      }
      case Category::memory: {
        if (p_.op == Op::concat) {
          std::vector<memory::desc> srcs;
          for (const memory& m : inputs_) srcs.push_back(m.get_desc());
          return ONEDNN_CALL(dnnl::concat::primitive_desc(dst, p_.axis, srcs, engine_, attr));
        }
        return ONEDNN_CALL(dnnl::reorder::primitive_desc(engine_, src, engine_, dst, attr));
      }
    }
    throw std::logic_error("oneDNN ops: unknown category");
  }

  std::unordered_map<int, memory> make_args() const {
    switch (p_.category()) {
      case Category::element:
        return {{DNNL_ARG_SRC_0, inputs_[0]}, {DNNL_ARG_SRC_1, inputs_[1]}, {DNNL_ARG_DST, dst_}};
      case Category::normalization:
        if (p_.op == Op::layernorm)
          return {{DNNL_ARG_SRC, inputs_[0]},
                  {DNNL_ARG_SCALE, inputs_[1]},
                  {DNNL_ARG_SHIFT, inputs_[2]},
                  {DNNL_ARG_DST, dst_}};
        break;
      case Category::matmul:
        return {{DNNL_ARG_SRC, inputs_[0]}, {DNNL_ARG_WEIGHTS, inputs_[1]}, {DNNL_ARG_DST, dst_}};
      case Category::memory:
        if (p_.op == Op::concat) {
          std::unordered_map<int, memory> args = {{DNNL_ARG_DST, dst_}};
          for (std::size_t i = 0; i < inputs_.size(); ++i)
            args.insert({DNNL_ARG_MULTIPLE_SRC + int(i), inputs_[i]});
          return args;
        }
        return {{DNNL_ARG_FROM, inputs_[0]}, {DNNL_ARG_TO, dst_}};
      default:
        break;
    }
    return {{DNNL_ARG_SRC, inputs_[0]}, {DNNL_ARG_DST, dst_}};  // activations, reductions, softmax
  }

  Problem p_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<memory> inputs_;
  memory dst_, scratchpad_;
  dnnl::primitive_desc_base pd_;  // the base of every kind's, reorder's and concat's included
  dnnl::primitive primitive_;
  std::unordered_map<int, memory> args_;
  std::string impl_;
  std::int64_t scratchpad_bytes_ = 0;
  double pd_ms_ = 0, primitive_ms_ = 0;
};

class OnednnCpuOpsBackend final : public Backend {
 public:
  std::string name() const override { return "onednn_cpu"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return bench::onednn::version_with_isa(); }
  Support check_support(const Problem& p) const override {
    if (const Support s = bench::onednn::cpu_dtype_support(p.dtype); !s.ok) return s;
    if (p.op == Op::rmsnorm)
      return Support::no(
          "oneDNN 2.6 has no rmsnorm (its layer_normalization always subtracts the mean)");
    if (p.category() == Category::reduction && output_md(p).dims() == to_dims(p.shape))
      return Support::no(
          "oneDNN 2.6's reduction refuses equal src and dst dims (invalid_arguments), which a "
          "reduction over axes of extent 1 only has");
    return Support::yes();  // fp16 and bf16: compile() finds out whether oneDNN has a kernel
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<OnednnOpsInstance>(p, data);
  }
};

}  // namespace
}  // namespace ops

// The module's entry point for the op suite (see baselines/onednn_loader.cpp): a new backend,
// owned by the caller.
extern "C" __attribute__((visibility("default"))) ops::Backend*
myconv_onednn_cpu_ops_backend_new() {
  return new ops::OnednnCpuOpsBackend();
}
