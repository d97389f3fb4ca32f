// oneDNN backend: the convolution_forward primitive (algorithm convolution_direct) on the CPU,
// oneDNN 2.x API (convolution_forward::desc -> primitive_desc -> primitive).
//
// Layouts, decided here once for every case:
//   - src and dst stay in the user's plain layout (nchw or nhwc). They are given to the primitive
//     descriptor as fixed formats, never format_tag::any: a blocked activation format (nChw16c)
//     would need a reorder of src and of dst on every call, which a fair timing must either count
//     or not hide. oneDNN then picks the best implementation it has for the plain layout; for
//     nchw that is often the im2col + GEMM one ("gemm:jit"), for nhwc a direct JIT kernel.
//   - weights use format_tag::any: oneDNN picks its blocked layout and compile() reorders the
//     user's weights into it once, as frameworks do with constant weights. That reorder is part
//     of compile_time_ms and never runs again.
// Every oneDNN call that can fail goes through ONEDNN_CALL: "unimplemented" (no implementation
// for this problem on this CPU) becomes bench::Unsupported, any other error std::runtime_error.
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

#include "baselines/conv/backends.hpp"
#include "baselines/onednn_common.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

namespace conv {
namespace {

using bench::onednn::effective_isa;
using bench::onednn::onednn_type;
using dnnl::memory;
using Tag = memory::format_tag;

// Plain descriptors of the problem's buffers (see conv/problem.hpp). oneDNN's logical dims are
// always {N, C, H, W} and {[G,] O, I, H, W}; the format tag says how they lie in memory.
memory::desc src_md(const Problem& p) {
  return memory::desc({p.mb, p.ic, p.ih, p.iw}, onednn_type(p.dtype),
                      p.layout == Layout::nhwc ? Tag::nhwc : Tag::nchw);
}
memory::desc dst_md(const Problem& p) {
  return memory::desc({p.mb, p.oc, p.oh(), p.ow()}, onednn_type(p.dtype),
                      p.layout == Layout::nhwc ? Tag::nhwc : Tag::nchw);
}
memory::dims wei_dims(const Problem& p) {
  if (p.g == 1) return {p.oc, p.ic, p.kh, p.kw};
  return {p.g, p.oc / p.g, p.ic / p.g, p.kh, p.kw};
}
memory::desc user_wei_md(const Problem& p, Tag tag_or_any) {
  return memory::desc(wei_dims(p), onednn_type(p.dtype), tag_or_any);
}
Tag user_wei_tag(const Problem& p) {
  const bool nhwc = p.layout == Layout::nhwc;
  if (p.g == 1) return nhwc ? Tag::ohwi : Tag::oihw;
  return nhwc ? Tag::gohwi : Tag::goihw;  // OHWI / OIHW with O split into {G, OC/G}
}

// Name of a blocked memory format in oneDNN's verbose notation: dimensions from outermost to
// innermost, upper case where blocked, then the inner blocks, e.g. "ABcd16b16a" or "acdb".
std::string format_name(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind == dnnl_format_kind_any) return "any";
  if (d.format_kind != dnnl_blocked) return "opaque";
  const dnnl_blocking_desc_t& blk = d.format_desc.blocking;
  std::vector<dnnl_dim_t> block(static_cast<std::size_t>(d.ndims), 1);
  for (int i = 0; i < blk.inner_nblks; ++i)
    block[static_cast<std::size_t>(blk.inner_idxs[i])] *= blk.inner_blks[i];
  std::vector<int> order(static_cast<std::size_t>(d.ndims));
  std::iota(order.begin(), order.end(), 0);
  // Outer dimensions by decreasing stride; a tie (a dimension of one outer block) keeps the
  // dimension with more outer blocks outside, then the logical order.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (blk.strides[a] != blk.strides[b]) return blk.strides[a] > blk.strides[b];
    return d.padded_dims[a] / block[static_cast<std::size_t>(a)] >
           d.padded_dims[b] / block[static_cast<std::size_t>(b)];
  });
  std::string s;
  for (int dim : order)
    s += static_cast<char>((block[static_cast<std::size_t>(dim)] == 1 ? 'a' : 'A') + dim);
  for (int i = 0; i < blk.inner_nblks; ++i)
    s += std::to_string(blk.inner_blks[i]) + static_cast<char>('a' + blk.inner_idxs[i]);
  return s;
}

// Host float data (problem layout, already rounded to the dtype) into a plain oneDNN memory.
void fill_memory(memory& m, const std::vector<float>& values, DataType dt) {
  void* handle = ONEDNN_CALL(m.get_data_handle());
  BENCH_CHECK(
      m.get_desc().get_size() == values.size() * static_cast<std::size_t>(bench::storage_bytes(dt)),
      "oneDNN buffer size differs from the problem's element count");
  if (dt == DataType::bf16 || dt == DataType::fp16) {
    auto* bits = static_cast<std::uint16_t*>(handle);
    for (std::size_t i = 0; i < values.size(); ++i)
      bits[i] = dt == DataType::bf16 ? bench::float_to_bf16_bits(values[i])
                                     : bench::float_to_half_bits(values[i]);
  } else {
    std::memcpy(handle, values.data(), values.size() * sizeof(float));
  }
}

class OnednnInstance final : public Instance {
 public:
  // Untimed: engine, stream and the user's buffers, filled from the host data.
  OnednnInstance(const Problem& p, const HostData& data) : p_(p) {
    engine_ = ONEDNN_CALL(dnnl::engine(dnnl::engine::kind::cpu, 0));
    stream_ = ONEDNN_CALL(dnnl::stream(engine_));
    src_ = ONEDNN_CALL(memory(src_md(p), engine_));
    user_wei_ = ONEDNN_CALL(memory(user_wei_md(p, user_wei_tag(p)), engine_));
    dst_ = ONEDNN_CALL(memory(dst_md(p), engine_));
    fill_memory(src_, data.src, p.dtype);
    fill_memory(user_wei_, data.wei, p.dtype);
  }

  // Timed as compile time: primitive descriptor (implementation choice), primitive (JIT code
  // generation) and the one-time reorder of the weights into the layout the primitive wants.
  void compile() override {
    bench::WallTimer timer;
    const memory::dims strides = {p_.sh, p_.sw};
    const memory::dims dilates = {p_.dh, p_.dw};  // oneDNN, like benchdnn, counts the gaps
    const memory::dims padding = {p_.ph, p_.pw};  // same on both sides, as PyTorch
    dnnl::primitive_attr attr;
    ONEDNN_CALL(attr.set_scratchpad_mode(dnnl::scratchpad_mode::user));
    const auto desc = ONEDNN_CALL(dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md(p_),
        user_wei_md(p_, Tag::any), dst_md(p_), strides, dilates, padding, padding));
    try {
      pd_ = ONEDNN_CALL(dnnl::convolution_forward::primitive_desc(desc, attr, engine_));
    } catch (const bench::Unsupported& e) {
      throw bench::Unsupported("no " + bench::to_string(p_.dtype) + " " + to_string(p_.layout) +
                               " convolution: " + e.what());
    }
    impl_ = ONEDNN_CALL(pd_.impl_info_str());
    pd_ms_ = timer.elapsed().count();
    // The activations were given as fixed formats, so the implementation must use them as is.
    BENCH_CHECK(
        ONEDNN_CALL(pd_.src_desc()) == src_md(p_) && ONEDNN_CALL(pd_.dst_desc()) == dst_md(p_),
        "oneDNN changed the src/dst format it was given");

    timer.start();
    conv_ = ONEDNN_CALL(dnnl::convolution_forward(pd_));
    primitive_ms_ = timer.elapsed().count();

    // The weights are constant: reordered once into oneDNN's chosen layout, as frameworks do.
    timer.start();
    const memory::desc wei_md = ONEDNN_CALL(pd_.weights_desc());
    wei_format_ = format_name(wei_md);
    if (wei_md == user_wei_.get_desc()) {
      wei_ = user_wei_;
    } else {
      wei_ = ONEDNN_CALL(memory(wei_md, engine_));
      ONEDNN_CALL(dnnl::reorder(user_wei_, wei_).execute(stream_, user_wei_, wei_));
      ONEDNN_CALL(stream_.wait());
      wei_reordered_ = true;
    }
    reorder_ms_ = timer.elapsed().count();

    const memory::desc scratch_md = ONEDNN_CALL(pd_.scratchpad_desc());
    scratchpad_bytes_ = static_cast<std::int64_t>(scratch_md.get_size());
    scratchpad_ = ONEDNN_CALL(memory(scratch_md, engine_));
    args_ = {{DNNL_ARG_SRC, src_},
             {DNNL_ARG_WEIGHTS, wei_},
             {DNNL_ARG_DST, dst_},
             {DNNL_ARG_SCRATCHPAD, scratchpad_}};
  }

  void poison_output() override { bench::onednn::poison(dst_); }

  void run() override { bench::onednn::execute(conv_, stream_, args_); }

  void sync() override { ONEDNN_CALL(stream_.wait()); }

  void read_output(float* out) override {
    const void* handle = ONEDNN_CALL(dst_.get_data_handle());
    const auto n = static_cast<std::size_t>(p_.dst_elements());
    if (p_.dtype == DataType::bf16 || p_.dtype == DataType::fp16) {
      const auto* bits = static_cast<const std::uint16_t*>(handle);
      for (std::size_t i = 0; i < n; ++i)
        out[i] = p_.dtype == DataType::bf16 ? bench::bf16_bits_to_float(bits[i])
                                            : bench::half_bits_to_float(bits[i]);
    } else {
      std::memcpy(out, handle, n * sizeof(float));
    }
  }

  std::vector<std::int64_t> output_dims() const override {
    const memory::dims d = dst_.get_desc().dims();
    return std::vector<std::int64_t>(d.begin(), d.end());
  }

  std::string algorithm() const override { return impl_; }

  std::optional<std::int64_t> workspace_bytes() const override { return scratchpad_bytes_; }

  nlohmann::ordered_json extra() const override {
    const std::string layout = to_string(p_.layout);
    nlohmann::ordered_json extra = {
        {"onednn_impl", impl_},
        {"cpu_isa", effective_isa()},
        {"src_dst_format", layout + " (user layout, fixed)"},
        {"weights_format",
         wei_format_ + (wei_reordered_ ? " (oneDNN's choice, reordered from " +
                                             format_name(user_wei_.get_desc()) + " once at compile)"
                                       : " (user layout, no reorder)")},
        {"primitive_desc_ms", pd_ms_},
        {"primitive_create_ms", primitive_ms_},
        {"weights_reorder_ms", reorder_ms_},
        {"scratchpad_bytes", scratchpad_bytes_}};
    // Measured: the first call of a "gemm" implementation in a process costs tens of ms more.
    if (impl_.find("gemm") != std::string::npos)
      extra["first_run_includes"] =
          "oneDNN's JIT GEMM kernel generation, when this is the process's first GEMM call";
    return extra;
  }

 private:
  Problem p_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  memory src_, user_wei_, wei_, dst_, scratchpad_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward conv_;
  std::unordered_map<int, memory> args_;
  std::string impl_, wei_format_;
  bool wei_reordered_ = false;
  std::int64_t scratchpad_bytes_ = 0;
  double pd_ms_ = 0, primitive_ms_ = 0, reorder_ms_ = 0;
};

class OnednnCpuBackend final : public Backend {
 public:
  std::string name() const override { return "onednn_cpu"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return bench::onednn::version_with_isa(); }
  Support check_support(const Problem& p) const override {
    return bench::onednn::cpu_dtype_support(p.dtype);  // fp16, bf16: compile() finds out
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<OnednnInstance>(p, data);
  }
};

}  // namespace

}  // namespace conv

// The module's one entry point (see baselines/onednn_loader.cpp): a new backend, owned by the
// caller.
extern "C" __attribute__((visibility("default"))) conv::Backend* myconv_onednn_cpu_backend_new() {
  return new conv::OnednnCpuBackend();
}
