// Backend "im2col_gemm_cuda": our im2col + GEMM kernels, nchw and nhwc, any groups, stride,
// dilation and padding. FP32 on CUDA cores (variants 1-3, conv/cuda/im2col_gemm_kernels.cu),
// TF32/FP16/BF16 on tensor cores (variants 4-6, conv/cuda/im2col_gemm_mma.cu) and two direct
// kernels for any dtype (7, conv/cuda/small_conv_kernels.cu; 8, conv/cuda/depthwise_kernels.cu),
// where the trade-offs are described; BackendOptions::variant picks one, "" the default.
//
//   variant  dtypes                  form
//   1        fp32                    im2col kernel (column buffer) + tiled SGEMM, the textbook form
//   2        fp32                    implicit GEMM, rows computed on the fly
//   3        fp32                    implicit GEMM, row table (default for fp32)
//   4        tf32, fp16, bf16        implicit GEMM on tensor cores, row table, gathers from the
//                                    layout given
//   5        tf32, fp16, bf16        im2col kernel (column buffer in the storage type) +
//                                    tensor-core GEMM
//   6        tf32, fp16, bf16        nhwc repack (channels padded to vectors) + pipelined
//                                    implicit GEMM (default for these)
//   7        fp32, tf32, fp16, bf16  direct small-OC kernel: a thread computes every output
//                                    channel of its group for a few pixels, FP32 math on CUDA
//                                    cores (default where OC/G <= 32, depthwise aside)
//   8        fp32, tf32, fp16, bf16  direct depthwise kernels (groups == IC, OC/G <= 4), FP32
//                                    math on CUDA cores, tf32 as FP32 (default for the depthwise
//                                    problems they run): 8.1 staged (any kernel; nchw stages
//                                    input tiles in shared memory, nhwc slides a window of
//                                    channel vectors along W), 8.2 strips (3x3, stride 1 or 2,
//                                    multiplier 1: each input row loaded once per thread's band,
//                                    16-byte vectors), 8.3 the same for nhwc through a cp.async
//                                    ring in shared memory, 8.4 nchw whole planes in shared
//                                    memory, 8.5 nhwc whole images, 8.6 nhwc direct (a thread
//                                    per channel vector and item, the window through L1); 8
//                                    chooses (depthwise_config)
//   9        fp32, tf32, fp16, bf16  "Caffe-classic": variant 5's im2col kernel, then cuBLASLt's
//                                    GEMM (cublasLtMatmul, the heuristic's algorithm) writing the
//                                    output in the layout directly; times its im2col and GEMM
//                                    apart, the split of our gap to cuDNN (conv/cuda/caffe_gemm.*)
//   10       tf32, fp16, bf16        Hopper: nhwc (repack where needed) + implicit GEMM on wgmma,
//                                    fed by TMA tensor copies (im2col mode for the input) through
//                                    a warp-specialized, persistent pipeline
//                                    (conv/cuda/wgmma_conv.cu); one group, channels a whole
//                                    number of 128-byte slices, sm_90a only
//   11       fp16, bf16              Hopper: 1x1, stride 1, one group, on the GEMM engine
//                                    (core/cuda/gemm/), tensors read as they lie
//                                    (conv/cuda/gemm_1x1.*)
//   12       fp32 (tf32 as FP32)     Winograd F(2x2,3x3) for 3x3 stride-1 dense layers with one
//                                    group: 12.1 filter and input transforms, 16 batched GEMMs on
//                                    the SGEMM of variants 1-3, output transform; 12.2 the filter
//                                    transform, then one kernel for the rest; both layouts read
//                                    and written in place (conv/cuda/winograd.*)
//   13       tf32, fp16, bf16        nhwc 1x1, stride 1, one group, IC <= 512 bytes a row: one
//                                    streaming GEMM kernel on mma.sync, the input read straight
//                                    into the A fragments, the weights in shared memory
//                                    (conv/cuda/thin_1x1.*)
#include "conv/cuda/im2col_gemm_cuda.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv/cuda/caffe_gemm.hpp"
#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_kernels.hpp"
#include "conv/cuda/device_facts.hpp"
#include "conv/cuda/device_instance.hpp"
#include "conv/cuda/gemm_1x1.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/plan_override.hpp"
#include "conv/cuda/small_conv_kernels.hpp"
#include "conv/cuda/thin_1x1.hpp"
#include "conv/cuda/variant_choice.hpp"
#include "conv/cuda/variant_search.hpp"
#include "conv/cuda/variant_support.hpp"
#include "conv/cuda/wgmma_conv.hpp"
#include "conv/cuda/winograd.hpp"
#include "conv/im2col_index.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

MmaType mma_type(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return MmaType::fp16;
    case DataType::bf16:
      return MmaType::bf16;
    default:
      return MmaType::tf32;
  }
}

// The tile and split-K of a tensor-core variant: split-K where the variant runs the pipelined
// kernel (conv/cuda/mma_index.hpp, choose_mma_plan).
MmaPlan plan_mma(Variant v, const Im2colGeometry& g, MmaType type) {
  const bool pipelined = v == Variant::mma_implicit_gemm ? mma_pipelined_gather(g, type)
                         : v == Variant::mma_im2col_gemm ? mma_pipelined_columns(g, type)
                                                         : true;
  return choose_mma_plan(g, mma_type_bytes(type), sm_count(), pipelined);
}

// Split-K of variants 1-3 (choose_fp32_splits).
int plan_fp32_splits(const Im2colGeometry& g, GemmTile tile) {
  return choose_fp32_splits(g, tile, sm_count());
}

// Variant 8's configuration choice with its sub-variant fixed (1 to 6) or chosen (0), and
// MYCONV_DEPTHWISE_DIRECT=P:E:W[:B[:R]] (8.6's outputs per item along W, channels per thread,
// channel vectors per block, blocks per SM asked of ptxas and output rows per item; 0 keeps a
// part's automatic value) where set, for experiments.
DepthwiseChoice depthwise_choice(int sub_variant) {
  DepthwiseChoice c;
  c.sub_variant = sub_variant;
  if (const char* v = std::getenv("MYCONV_DEPTHWISE_DIRECT"); v && *v) {
    DepthwiseDirectChoice& d = c.direct;
    char end = 0;
    const int fields = std::sscanf(v, "%d:%d:%d:%d:%d%c", &d.pixels, &d.vec, &d.words,
                                   &d.min_blocks, &d.rows, &end);
    if (fields < 3 || fields > 5 || (d.pixels != 0 && d.pixels != 2 && d.pixels != 4) ||
        (d.vec != 0 && d.vec != 4 && d.vec != 8) ||
        (d.words != 0 && d.words != 8 && d.words != 16 && d.words != 32) ||
        (fields >= 4 && d.min_blocks != 0 && d.min_blocks != 2) ||
        (fields == 5 && d.rows != 0 && d.rows != 1 && d.rows != 2))
      throw std::invalid_argument("MYCONV_DEPTHWISE_DIRECT='" + std::string(v) +
                                  "': expected P:E:W[:B[:R]] with P 0, 2 or 4, E 0, 4 or 8, W 0, "
                                  "8, 16 or 32, B 0 or 2, R 0, 1 or 2");
  }
  return c;
}

// Variant 10's plan for the repacked geometry r, with MYCONV_WGMMA_PLAN=BN:S (tile width 64 or
// 128, split-K count 1-8; 0 keeps a part's automatic value) where set, for experiments; launched
// with programmatic dependent launch where pdl_launch() says.
WgmmaConvPlan plan_wgmma(const Im2colGeometry& r, int element_bytes) {
  const PlanOverride o =
      plan_override("MYCONV_WGMMA_PLAN", {0, 64, 128}, kWgmmaMaxSplits).value_or(PlanOverride{});
  WgmmaConvPlan plan = wgmma_conv_plan(r, element_bytes, sm_count(), o.bn, o.splits);
  plan.pdl = pdl_launch();
  return plan;
}

class Im2colGemmInstance final : public DeviceOutputInstance<Im2colGemmInstance> {
  friend class DeviceOutputInstance<Im2colGemmInstance>;

 public:
  // depthwise_sub: variant 8's sub-variant (1 or 2), 0 for its own choice.
  Im2colGemmInstance(const Problem& p, const HostData& data, Variant variant, int depthwise_sub = 0)
      : p_(p),
        variant_(variant),
        g_(make_im2col_geometry(p)),
        elem_bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        tile_(choose_gemm_tile(g_)),
        mma_type_(mma_type(p.dtype)),
        mma_plan_(uses_tensor_cores(variant) && variant != Variant::wgmma_implicit_gemm
                      ? plan_mma(variant, g_, mma_type_)
                      : MmaPlan{}),
        wgmma_plan_(variant == Variant::wgmma_implicit_gemm
                        ? plan_wgmma(mma_repacked_geometry(g_, int(elem_bytes_)), int(elem_bytes_))
                        : WgmmaConvPlan{}),
        wgmma_rounds_in_smem_(variant == Variant::wgmma_implicit_gemm &&
                              mma_type_ == MmaType::tf32 && !mma_needs_repack(g_, mma_type_) &&
                              wgmma_tf32_rounding(g_, std::getenv("MYCONV_TF32_ROUNDING")) ==
                                  WgmmaTf32Rounding::in_kernel),
        fp32_splits_(uses_tensor_cores(variant) || variant == Variant::small_direct ||
                             variant == Variant::depthwise
                         ? 1
                         : plan_fp32_splits(g_, tile_)),
        dw_config_(variant == Variant::depthwise
                       ? depthwise_config(g_, int(elem_bytes_), sm_count(),
                                          depthwise_choice(depthwise_sub))
                       : DepthwiseConfig{}),
        src_(data.src.size() * elem_bytes_),
        wei_(data.wei.size() * elem_bytes_),
        dst_(std::size_t(p.dst_elements()) * elem_bytes_),
        timer_(stream_.get()) {
    if (variant_ == Variant::im2col_gemm || variant_ == Variant::mma_im2col_gemm) {
      const std::size_t bytes = variant_ == Variant::im2col_gemm
                                    ? im2col_buffer_elements(g_) * sizeof(float)
                                    : mma_column_buffer_elements(g_, mma_type_) * elem_bytes_;
      std::size_t free = 0, total = 0;
      CUDA_CHECK(cudaMemGetInfo(&free, &total));
      if (bytes > free)
        throw bench::Unsupported("variant " + std::to_string(int(variant_)) +
                                 "'s column buffer needs " + gib(double(bytes)) +
                                 ", more than the " + gib(double(free)) + " free on the device");
      col_ = bench::DeviceBuffer<unsigned char>(bytes);
    }
    if (const std::size_t n = mma_partial_elements(g_, mma_plan_); n > 0)
      partial_ = bench::DeviceBuffer<float>(n);  // split-K
    if (const std::size_t n = wgmma_conv_partial_elements(g_, wgmma_plan_); n > 0)
      partial_ = bench::DeviceBuffer<float>(n);
    if (fp32_splits_ > 1)
      partial_ = bench::DeviceBuffer<float>(std::size_t(fp32_splits_) * std::size_t(g_.m) *
                                            std::size_t(g_.oc));
    if ((variant_ == Variant::mma_repacked_implicit_gemm && mma_needs_repack(g_, mma_type_)) ||
        (variant_ == Variant::wgmma_implicit_gemm && wgmma_needs_repack())) {
      const std::size_t src_bytes = mma_repacked_src_elements(g_, mma_type_) * elem_bytes_;
      const std::size_t wei_bytes = mma_repacked_wei_elements(g_, mma_type_) * elem_bytes_;
      std::size_t free = 0, total = 0;
      CUDA_CHECK(cudaMemGetInfo(&free, &total));
      if (src_bytes + wei_bytes > free)
        throw bench::Unsupported("variant " + std::to_string(int(variant_)) +
                                 "'s repacked input and weights need " +
                                 gib(double(src_bytes + wei_bytes)) + ", more than the " +
                                 gib(double(free)) + " free on the device");
      src_repacked_ = bench::DeviceBuffer<unsigned char>(src_bytes);
      wei_repacked_ = bench::DeviceBuffer<unsigned char>(wei_bytes);
    }
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
  }

  // Variants 3, 4 and 6 build their row tables here, variant 10 its tensor maps: the only
  // planning any variant does.
  void compile() override {
    if (variant_ == Variant::wgmma_implicit_gemm) {
      const bool repack = src_repacked_.bytes() > 0;
      wgmma_maps_ = make_wgmma_conv_maps(mma_repacked_geometry(g_, int(elem_bytes_)), mma_type_,
                                         wgmma_plan_, repack ? src_repacked_.data() : src_.data(),
                                         repack ? wei_repacked_.data() : wei_.data());
      return;
    }
    if (variant_ == Variant::implicit_gemm_precomp) {
      const std::vector<Im2colRow> rows = im2col_row_table(g_);
      rows_ = bench::DeviceBuffer<unsigned char>(rows.size() * sizeof(Im2colRow));
      CUDA_CHECK(cudaMemcpyAsync(rows_.data(), rows.data(), rows_.bytes(), cudaMemcpyHostToDevice,
                                 stream_.get()));
      stream_.synchronize();
    } else if (variant_ == Variant::mma_implicit_gemm ||
               variant_ == Variant::mma_repacked_implicit_gemm) {
      const std::vector<Im2colRow16> rows = im2col_row16_table(
          variant_ == Variant::mma_implicit_gemm ? g_
                                                 : mma_repacked_geometry(g_, int(elem_bytes_)));
      rows_ = bench::DeviceBuffer<unsigned char>(rows.size() * sizeof(Im2colRow16));
      CUDA_CHECK(cudaMemcpyAsync(rows_.data(), rows.data(), rows_.bytes(), cudaMemcpyHostToDevice,
                                 stream_.get()));
      stream_.synchronize();
    }
  }

  // Variant 10 reads repacked tensors where the layout needs it. tf32 operands are rounded to
  // nearest tf32 (wgmma would truncate the FP32 values it reads): by the repack copy, or, where
  // the layout needs no repack, by the kernel in shared memory (wgmma_conv.cu) with no copy
  // before it: wgmma_tf32_rounding's rule, decided once (wgmma_rounds_in_smem_).
  bool wgmma_needs_repack() const {
    return mma_needs_repack(g_, mma_type_) ||
           (mma_type_ == MmaType::tf32 && !wgmma_rounds_in_smem_);
  }

  void poison_output() override { dst_.fill_bytes_async(0xFF, stream_.get()); }  // NaN in all

  void run() override {
    launch_variant();
    if (!uses_tensor_cores(variant_) && fp32_splits_ > 1)  // the tensor-core variants reduce
      launch_fp32_split_reduce(g_, fp32_splits_, partial_.data(),
                               reinterpret_cast<float*>(dst_.data()), stream_.get());
  }

  // The kernels of the variant; with split-K the GEMM writes partial_ (the tensor-core variants
  // also launch their reduction here).
  void launch_variant() {
    cudaStream_t s = stream_.get();
    float* dst = reinterpret_cast<float*>(dst_.data());
    const float* src = reinterpret_cast<const float*>(src_.data());
    const float* wei = reinterpret_cast<const float*>(wei_.data());
    switch (variant_) {
      case Variant::im2col_gemm: {
        float* col = reinterpret_cast<float*>(col_.data());
        launch_im2col(g_, src, col, s);
        launch_gemm_from_columns(g_, tile_, wei, col, dst, s, fp32_splits_, partial_.data());
        break;
      }
      case Variant::implicit_gemm:
        launch_implicit_gemm(g_, tile_, src, wei, dst, s, fp32_splits_, partial_.data());
        break;
      case Variant::implicit_gemm_precomp:
        launch_implicit_gemm_precomp(g_, tile_, src, wei,
                                     reinterpret_cast<const Im2colRow*>(rows_.data()), dst, s,
                                     fp32_splits_, partial_.data());
        break;
      case Variant::mma_implicit_gemm:
        launch_mma_implicit_gemm(g_, mma_type_, mma_plan_, src_.data(), wei_.data(),
                                 reinterpret_cast<const Im2colRow16*>(rows_.data()), dst_.data(),
                                 partial_.data(), s);
        launch_mma_split_reduce(g_, mma_type_, mma_plan_, partial_.data(), dst_.data(), s);
        break;
      case Variant::mma_im2col_gemm:
        launch_mma_im2col(g_, mma_type_, src_.data(), col_.data(), s);
        launch_mma_gemm_from_columns(g_, mma_type_, mma_plan_, wei_.data(), col_.data(),
                                     dst_.data(), partial_.data(), s);
        launch_mma_split_reduce(g_, mma_type_, mma_plan_, partial_.data(), dst_.data(), s);
        break;
      case Variant::small_direct:
        if (p_.dtype == DataType::fp16)
          launch_small_conv(g_, reinterpret_cast<const __half*>(src_.data()),
                            reinterpret_cast<const __half*>(wei_.data()),
                            reinterpret_cast<__half*>(dst_.data()), s);
        else if (p_.dtype == DataType::bf16)
          launch_small_conv(g_, reinterpret_cast<const __nv_bfloat16*>(src_.data()),
                            reinterpret_cast<const __nv_bfloat16*>(wei_.data()),
                            reinterpret_cast<__nv_bfloat16*>(dst_.data()), s);
        else
          launch_small_conv(g_, src, wei, dst, s);
        break;
      case Variant::depthwise:
        if (p_.dtype == DataType::fp16)
          launch_depthwise(g_, dw_config_, reinterpret_cast<const __half*>(src_.data()),
                           reinterpret_cast<const __half*>(wei_.data()),
                           reinterpret_cast<__half*>(dst_.data()), s);
        else if (p_.dtype == DataType::bf16)
          launch_depthwise(g_, dw_config_, reinterpret_cast<const __nv_bfloat16*>(src_.data()),
                           reinterpret_cast<const __nv_bfloat16*>(wei_.data()),
                           reinterpret_cast<__nv_bfloat16*>(dst_.data()), s);
        else
          launch_depthwise(g_, dw_config_, src, wei, dst, s);
        break;
      case Variant::wgmma_implicit_gemm:
        if (src_repacked_.bytes() > 0)
          launch_mma_repack(g_, mma_type_, src_.data(), wei_.data(), src_repacked_.data(),
                            wei_repacked_.data(), s);
        launch_wgmma_conv(g_, mma_type_, wgmma_plan_, wgmma_maps_, wgmma_rounds_in_smem_,
                          dst_.data(), partial_.data(), s);
        launch_mma_split_reduce(g_, mma_type_, MmaPlan{MmaTileShape::t128x128, wgmma_plan_.splits},
                                partial_.data(), dst_.data(), s);
        break;
      case Variant::mma_repacked_implicit_gemm: {
        const bool repack = src_repacked_.bytes() > 0;
        if (repack)
          launch_mma_repack(g_, mma_type_, src_.data(), wei_.data(), src_repacked_.data(),
                            wei_repacked_.data(), s);
        launch_mma_repacked_implicit_gemm(
            g_, mma_type_, mma_plan_, repack ? src_repacked_.data() : src_.data(),
            repack ? wei_repacked_.data() : wei_.data(),
            reinterpret_cast<const Im2colRow16*>(rows_.data()), dst_.data(), partial_.data(), s);
        launch_mma_split_reduce(g_, mma_type_, mma_plan_, partial_.data(), dst_.data(), s);
        break;
      }
      case Variant::caffe:     // prepare() makes its own instance (conv/cuda/caffe_gemm.cpp),
      case Variant::gemm_1x1:  // conv/cuda/gemm_1x1.cpp
      case Variant::winograd:  // conv/cuda/winograd.cpp
      case Variant::thin_1x1:  // and conv/cuda/thin_1x1.cpp
        throw std::logic_error("variants 9, 11, 12 and 13 have no launch in Im2colGemmInstance");
    }
  }

  // e.g. "v6 implicit GEMM mma.sync m16n8k16 bf16 128x128x32, 8 warps of 64x32, cp.async 3
  // stages, gather 16-byte vectors, input and weights repacked to nhwc, channels per group padded
  // 3 -> 8".
  std::string algorithm() const override {
    if (variant_ == Variant::small_direct)
      return std::string(variant_name(variant_)) + ", " + small_conv_name(g_);
    if (variant_ == Variant::depthwise)
      return std::string(variant_name(variant_)) +
             (p_.dtype == DataType::tf32 ? " (tf32: fp32 storage, FP32 math)" : "") + ", " +
             depthwise_config_name(g_, dw_config_);
    if (!uses_tensor_cores(variant_))
      return std::string(variant_name(variant_)) + ", " + gemm_tile_name(tile_) +
             ", gather along " + (g_.nhwc ? "k" : "m") +
             (fp32_splits_ > 1
                  ? ", split-K " + std::to_string(fp32_splits_) + " (FP32 partials, ordered sum)"
                  : std::string());
    const int bytes = int(elem_bytes_);
    if (variant_ == Variant::wgmma_implicit_gemm) {
      const char* type = mma_type_ == MmaType::tf32   ? "k8 tf32"
                         : mma_type_ == MmaType::fp16 ? "k16 f16"
                                                      : "k16 bf16";
      std::string s = std::string(variant_name(variant_)) + " wgmma m64n" +
                      std::to_string(wgmma_plan_.bn) + type +
                      ", TMA im2col + tiled loads into 128-byte swizzled stages, warp-specialized "
                      "(1 producer + 2 consumer warpgroups), " +
                      wgmma_conv_plan_name(wgmma_plan_);
      if (mma_needs_repack(g_, mma_type_)) s += ", input and weights repacked to nhwc";
      if (mma_type_ == MmaType::tf32)
        s += wgmma_rounds_in_smem_ ? ", operands rounded to nearest tf32 in shared memory"
                                   : ", operands rounded to nearest tf32 by the repack";
      return s;
    }
    std::string s = std::string(variant_name(variant_)) + " " + mma_instruction_name(mma_type_) +
                    " " + mma_tile_text(mma_plan_.tile, bytes);
    const std::string pipelined =
        ", cp.async 3 stages" +
        (mma_plan_.splits > 1
             ? ", split-K " + std::to_string(mma_plan_.splits) + " (FP32 partials, ordered sum)"
             : std::string());
    const std::string staged = ", registers + 2 shared stages";
    switch (variant_) {
      case Variant::mma_implicit_gemm:
        if (mma_pipelined_gather(g_, mma_type_)) return s + pipelined + ", gather 16-byte vectors";
        return s + staged + ", gather elements along " + (g_.nhwc ? "k" : "m");
      case Variant::mma_im2col_gemm:
        return s + (mma_pipelined_columns(g_, mma_type_) ? pipelined : staged) +
               ", column buffer k padded to " + std::to_string(mma_padded_k(g_.k, bytes));
      case Variant::mma_repacked_implicit_gemm:
        s += pipelined + ", gather 16-byte vectors";
        if (mma_needs_repack(g_, mma_type_))
          s += ", input and weights repacked to nhwc, channels per group padded " +
               std::to_string(g_.icg) + " -> " + std::to_string(mma_padded_channels(g_, bytes));
        return s;
      default:
        return s;
    }
  }

  std::optional<std::int64_t> workspace_bytes() const override {
    return static_cast<std::int64_t>(col_.bytes() + rows_.bytes() + src_repacked_.bytes() +
                                     wei_repacked_.bytes() + partial_.bytes());
  }

  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  nlohmann::ordered_json extra() const override {
    return {{"variant", static_cast<int>(variant_)},
            {"tile", variant_ == Variant::small_direct ? small_conv_name(g_)
                     : variant_ == Variant::depthwise  ? depthwise_config_name(g_, dw_config_)
                     : variant_ == Variant::wgmma_implicit_gemm ? wgmma_conv_plan_name(wgmma_plan_)
                     : uses_tensor_cores(variant_) ? mma_tile_text(mma_plan_.tile, int(elem_bytes_))
                                                   : gemm_tile_name(tile_)},
            {"tensor_cores", uses_tensor_cores(variant_)},
            {"programmatic_dependent_launch",
             variant_ == Variant::wgmma_implicit_gemm && wgmma_plan_.pdl},
            {"split_k", variant_ == Variant::wgmma_implicit_gemm ? wgmma_plan_.splits
                        : uses_tensor_cores(variant_)            ? mma_plan_.splits
                                                                 : fp32_splits_},
            {"kernels_built_with", im2col_gemm_build_info()}};
  }

 private:
  Problem p_;
  Variant variant_;
  Im2colGeometry g_;
  std::size_t elem_bytes_;      // storage bytes per value: 4 (fp32, tf32) or 2 (fp16, bf16)
  GemmTile tile_;               // variants 1-3
  MmaType mma_type_;            // variants 4-6
  MmaPlan mma_plan_;            // variants 4-6: tile and split-K
  WgmmaConvPlan wgmma_plan_;    // variant 10: tile, stages and split-K
  WgmmaConvMaps wgmma_maps_{};  // variant 10: the tensor maps of the buffers (compile())
  bool wgmma_rounds_in_smem_;   // variant 10, tf32: the kernel rounds in shared memory, no copy
  int fp32_splits_;             // variants 1-3: split-K

  DepthwiseConfig dw_config_;  // variant 8: kernel, tiles, grid
  bench::Stream stream_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_;  // the storage type
  bench::DeviceBuffer<unsigned char> col_;   // variants 1, 5: column matrices of all groups
  bench::DeviceBuffer<unsigned char> rows_;  // variants 3, 4, 6: K row entries
  bench::DeviceBuffer<unsigned char> src_repacked_, wei_repacked_;  // variant 6 (where needed)
  bench::DeviceBuffer<float> partial_;                              // split-K: FP32 partial outputs
  bench::CudaEventTimer timer_;
};

class Im2colGemmCudaBackend final : public Backend {
 public:
  explicit Im2colGemmCudaBackend(VariantSetting setting) : setting_(setting) {}

  std::string name() const override { return "im2col_gemm_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override {
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    return "CUDA runtime " + bench::cuda_version_string(runtime) + ", kernels by " +
           im2col_gemm_build_info();
  }

  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }

  // auto: the heuristic's variant; search: yes where any candidate runs p.
  Support check_support(const Problem& p) const override {
    switch (setting_.mode) {
      case VariantSetting::Mode::fixed:
        return variant_support(p, setting_.variant, setting_.sub);
      case VariantSetting::Mode::automatic:
        return variant_support(p, choose_variant(p, variant_device()).variant);
      case VariantSetting::Mode::search:
        break;
    }
    std::string why;
    for (Variant v : variant_candidates(p.dtype)) {
      const Support s = variant_support(p, v);
      if (s.ok) return s;
      why = s.reason;
    }
    return Support::no("no candidate variant runs this problem (the last: " + why + ")");
  }

  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    std::vector<SearchCandidate> candidates;
    std::string label;
    if (setting_.mode == VariantSetting::Mode::fixed) {
      candidates.push_back({setting_.variant, nullptr});
    } else if (setting_.mode == VariantSetting::Mode::automatic) {
      const VariantChoice c = choose_variant(p, variant_device());
      candidates.push_back({c.variant, nullptr});
      label = "auto (" + c.why + "): ";
    } else {
      for (Variant v : variant_candidates(p.dtype))
        if (variant_support(p, v).ok) {
          if (v == Variant::winograd)  // both sub-variants, until their measurement picks one
            for (int sub : {1, 2}) candidates.push_back({v, nullptr, sub});
          else
            candidates.push_back({v, nullptr});
        }
      label = "search: ";
    }
    std::string skipped;
    for (SearchCandidate& c : candidates) {
      try {
        c.instance = make_variant_instance(
            p, data, c.variant,
            setting_.mode == VariantSetting::Mode::fixed ? setting_.sub : c.sub);
      } catch (const bench::Unsupported& e) {
        if (candidates.size() == 1) throw;
        skipped +=
            std::string(skipped.empty() ? "" : "; ") + search_candidate_name(c) + ": " + e.what();
      }
    }
    return make_chosen_instance(std::move(candidates), label,
                                setting_.mode == VariantSetting::Mode::search, skipped);
  }

 private:
  static std::unique_ptr<Instance> make_variant_instance(const Problem& p, const HostData& data,
                                                         Variant v, int sub) {
    if (v == Variant::caffe) return make_caffe_instance(p, data, variant_name(v));
    if (v == Variant::gemm_1x1) return make_gemm_1x1_instance(p, data);
    if (v == Variant::winograd) return make_winograd_instance(p, data, sub);
    if (v == Variant::thin_1x1) return make_thin_1x1_instance(p, data);
    return std::make_unique<Im2colGemmInstance>(p, data, v, sub);
  }

  VariantSetting setting_;
};

}  // namespace

std::unique_ptr<Backend> make_im2col_gemm_cuda_backend(const BackendOptions& options) {
  return std::make_unique<Im2colGemmCudaBackend>(parse_variant_setting(options.variant));
}

}  // namespace conv
