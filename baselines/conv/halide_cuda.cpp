// Halide backend on a CUDA GPU: the algorithm of halide_conv.hpp, JIT-compiled for host-cuda with
// one of the schedules of halide_cuda_schedule.cpp: "manual" (input and weight tiles staged in
// shared memory per reduction chunk, register tiles per lane; the default), "manual_basic"
// (register tiles per thread straight from global memory) or Halide 14's one autoscheduler with a
// GPU mode, Li2018. This file is the backend around them: the tensors, the instance, and the
// entry points that lower and compile without a GPU; halide_cuda_runtime.cpp holds the CUDA
// target and the hooks that put Halide's kernels on our stream.
//
// The schedules' speed on an H200 against cuDNN (the times go beside each schedule in
// halide_cuda_schedule.cpp), per schedule and tile preset, e.g.
//   build/experiments/myconv --backend halide_cuda,cudnn --timing pure --layout nchw,nhwc
//       --shapes experiments/shapes/resnet50.txt --shapes experiments/shapes/vgg16.txt
//       --halide-schedule manual --halide-tile auto --json manual_auto.json
// and the same with each other tile preset (c32 c64 c128 k16 w4), and with --halide-schedule
// manual_basic (no --halide-tile).
//
// compile() applies the schedule and JIT-compiles (Pipeline::compile_jit): that is all of
// Halide's compile time. The first run() also loads the CUDA module (the driver JIT-compiles
// Halide's PTX for the device); the case runner times it apart as first_run_ms. run() calls
// realize() with the same target as compile_jit() and only enqueues the kernel; sync() waits.
//
// CUDA context and stream: see halide_cuda_runtime.hpp (the primary context and a stream of
// ours, handed to Halide through its JIT hooks).
//
// Buffers: device memory is ours (cudaMalloc through bench::DeviceBuffer, in the primary
// context), wrapped into the Halide buffers with device_wrap_native; inputs are uploaded and the
// output poisoned and read back with cudart copies on our stream. Halide's runtime therefore only
// touches the device inside realize() and at teardown (device_release, which unloads its modules),
// always through the hooks above.
#include "baselines/conv/halide_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/halide_conv.hpp"
#include "baselines/conv/halide_cuda_runtime.hpp"
#include "baselines/conv/halide_cuda_schedule.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

namespace conv {
namespace {

// Element type of the Halide buffers, as Halide names it.
const char* cuda_storage_name(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return "float16";
    case DataType::bf16:
      return "bfloat16 as uint16 bits";
    default:
      return "float32";
  }
}

// ---- Tensors ----------------------------------------------------------------------------------

// values (memory order) in the storage of dt: fp32, or fp16 / bf16 bits, rounded to nearest even.
void store_values(DataType dt, const std::vector<float>& values, std::uint8_t* bytes) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint16_t b = 0;
    switch (dt) {
      case DataType::fp16:
        b = bench::float_to_half_bits(values[i]);
        std::memcpy(bytes + 2 * i, &b, 2);
        break;
      case DataType::bf16:
        b = bench::float_to_bf16_bits(values[i]);
        std::memcpy(bytes + 2 * i, &b, 2);
        break;
      default:
        std::memcpy(bytes + 4 * i, &values[i], 4);
    }
  }
}

// n values in the storage of dt as float.
void load_values(DataType dt, const std::uint8_t* bytes, std::size_t n, float* dst) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t b = 0;
    switch (dt) {
      case DataType::fp16:
        std::memcpy(&b, bytes + 2 * i, 2);
        dst[i] = bench::half_bits_to_float(b);
        break;
      case DataType::bf16:
        std::memcpy(&b, bytes + 2 * i, 2);
        dst[i] = bench::bf16_bits_to_float(b);
        break;
      default:
        std::memcpy(&dst[i], bytes + 4 * i, 4);
    }
  }
}

// One tensor in the problem's layout and dtype's storage: host bytes and a Halide buffer over
// them with the layout's strides; on_device adds device memory of the same size (ours), which is
// attached to the buffer (device_wrap_native) once Halide's CUDA interface exists.
class Tensor {
 public:
  Tensor(DataType dt, const std::vector<halide_dimension_t>& dims, bool on_device) : dt_(dt) {
    elements_ = 1;
    for (const halide_dimension_t& d : dims) elements_ *= static_cast<std::size_t>(d.extent);
    const auto bytes = elements_ * static_cast<std::size_t>(bench::storage_bytes(dt));
    host_.assign(std::max<std::size_t>(1, bytes), 0);
    if (on_device) device_ = bench::DeviceBuffer<std::uint8_t>(host_.size());
    buffer_ = Halide::Buffer<>(halide_storage_type(dt, kHalideCudaBf16AsBits), host_.data(),
                               static_cast<int>(dims.size()), dims.data());
  }

  Halide::Buffer<>& buffer() { return buffer_; }
  const Halide::Buffer<>& buffer() const { return buffer_; }
  std::uint8_t* device() const { return device_.data(); }

  // Stores values (memory order) in the storage type, on the host and, with a stream, the device.
  void upload(const std::vector<float>& values, cudaStream_t stream) {
    store_values(dt_, values, host_.data());
    device_.upload_async(host_.data(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void store(const std::vector<float>& values) { store_values(dt_, values, host_.data()); }

  // Every byte 0xFF, on the host and the device: a NaN in fp32, fp16 and bf16.
  void poison(cudaStream_t stream) {
    std::fill(host_.begin(), host_.end(), std::uint8_t(0xFF));
    device_.fill_bytes_async(0xFF, stream);
  }

  // Copies the device memory to the host (waits), then converts the host bytes to float.
  void download(float* dst, cudaStream_t stream) {
    device_.download_async(host_.data(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    load(dst);
  }
  void load(float* dst) const { load_values(dt_, host_.data(), elements_, dst); }

 private:
  DataType dt_;
  std::size_t elements_ = 0;
  std::vector<std::uint8_t> host_;
  bench::DeviceBuffer<std::uint8_t> device_;
  Halide::Buffer<> buffer_;
};

// ---- Instance and backend -------------------------------------------------------------------

class HalideCudaInstance final : public Instance {
 public:
  HalideCudaInstance(const Problem& p, const HostData& data, const BackendOptions& options)
      : p_(p),
        schedule_(options.halide_schedule),
        tile_(options.halide_tile),
        plugin_dir_(options.halide_plugin_dir),
        target_(halide_cuda_target()),
        cu_context_(cuda_stream_context(stream_.get())),
        src_(p.dtype, halide_src_dims(p), true),
        wei_(p.dtype, halide_wei_dims(p), true),
        dst_(p.dtype, halide_dst_dims(p), true),
        timer_(stream_.get()) {
    src_.upload(data.src, stream_.get());
    wei_.upload(data.wei, stream_.get());
  }

  ~HalideCudaInstance() override {
    // Halide's view of our device memory ends here; the memory itself goes with the Tensors.
    const bool healthy = cudaStreamSynchronize(stream_.get()) == cudaSuccess;
    if (cuda_) {
      HalideCudaJitContext ctx = jit_context(nullptr);
      for (Tensor* t : {&src_, &wei_, &dst_})
        if (t->buffer().has_device_allocation()) (void)t->buffer().device_detach_native(&ctx);
      // Unloads the CUDA modules Halide loaded into the primary context and frees the device
      // allocations it cached (Li2018's intermediates). Halide aborts if the context is broken
      // (e.g. after a kernel fault), so only on a healthy stream.
      if (healthy) cuda_->device_release(&ctx, cuda_);
    }
    (void)cudaGetLastError();
  }

  void compile() override {
    try {
      conv_ = make_halide_conv(p_, halide_cuda_conv_options(schedule_));
      bench::WallTimer schedule_timer;
      algorithm_ = apply_halide_cuda_schedule(conv_, schedule_, tile_, plugin_dir_, target_);
      if (p_.dtype == DataType::tf32) algorithm_ += " (tf32 computed as strict fp32)";
      schedule_ms_ = schedule_timer.elapsed().count();
      pipeline_ = Halide::Pipeline(conv_.output);
      bench::WallTimer jit_timer;
      pipeline_.compile_jit(target_);
      jit_ms_ = jit_timer.elapsed().count();
      // Process-wide, and only effective once the shared runtime exists (after compile_jit()).
      if (schedule_ == "li2018") Halide::Internal::JITSharedRuntime::reuse_device_allocations(true);

      make_libcuda_visible();
      use_halide_cuda_register_budget();
      cuda_ = Halide::get_device_interface_for_device_api(Halide::DeviceAPI::CUDA, target_,
                                                          "halide_cuda");
      BENCH_CHECK(cuda_ != nullptr,
                  "Halide has no CUDA device interface for " + target_.to_string());
      for (Tensor* t : {&src_, &wei_, &dst_}) {
        std::string errors;
        HalideCudaJitContext ctx = jit_context(&errors);
        const int r = t->buffer().device_wrap_native(
            cuda_, reinterpret_cast<std::uint64_t>(t->device()), &ctx);
        if (r != 0)
          throw std::runtime_error("Halide: device_wrap_native failed (" + std::to_string(r) +
                                   "): " + errors);
      }
      conv_.src.set(src_.buffer());
      conv_.wei.set(wei_.buffer());
    } catch (const Halide::Error& e) {
      throw std::runtime_error(std::string("Halide: ") + e.what());
    }
  }

  // Both copies of the output hold NaN, and Halide sees them as in sync (neither dirty).
  void poison_output() override {
    dst_.poison(stream_.get());
    dst_.buffer().set_host_dirty(false);
    dst_.buffer().set_device_dirty(false);
  }

  void run() override {
    // A fresh context per call: realize() installs its error buffer in the context it is given
    // and reports errors only when no custom error handler is set, which a reused one would be.
    HalideCudaJitContext ctx = jit_context(nullptr);
    const long launches = counts_.streams;
    try {
      // The same target as compile_jit(): realize() without it would compile again for the JIT
      // target of the environment (a host-only target, whose output stays on the host).
      pipeline_.realize(&ctx, dst_.buffer(), target_);
    } catch (const Halide::Error& e) {
      throw std::runtime_error(std::string("Halide: ") + e.what());
    }
    if (counts_.streams == launches)
      throw std::runtime_error(
          "Halide launched no kernel on the backend's stream (the custom_cuda_get_stream hook was "
          "not called): its work ran elsewhere, and the GPU time would not measure it");
    if (dst_.buffer().host_dirty())
      throw std::runtime_error("the schedule computed the output on the host, not the GPU");
  }

  void sync() override { CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

  void read_output(float* dst) override {
    dst_.download(dst, stream_.get());
    dst_.buffer().set_device_dirty(false);
  }

  std::vector<std::int64_t> output_dims() const override {
    const Halide::Buffer<>& b = dst_.buffer();
    return {b.dim(3).extent(), b.dim(2).extent(), b.dim(1).extent(), b.dim(0).extent()};
  }

  std::string algorithm() const override { return algorithm_; }
  // The manual schedules keep everything in registers and shared memory; Li2018's intermediates
  // are Halide's.
  std::optional<std::int64_t> workspace_bytes() const override {
    if (schedule_ != "li2018") return 0;
    return std::nullopt;
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices& services, int calls,
                                             std::string* why) override {
    // Li2018's root Funcs allocate device buffers inside each call (from Halide's cache after
    // the first), which a captured graph would keep referring to after Halide hands them on.
    if (schedule_ == "li2018") {
      if (why) *why = "Halide allocates intermediate device buffers per call under Li2018";
      return nullptr;
    }
    return Instance::make_replay(services, calls, why);
  }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json j = {
        {"halide_target", target_.to_string()},
        {"schedule", schedule_},
        {"storage_type", cuda_storage_name(p_.dtype)},
        {"compute", p_.dtype == DataType::tf32 ? "fp32 FMA (tf32 computed as strict fp32)"
                                               : "fp32 FMA, fp32 accumulation"},
        {"schedule_ms", schedule_ms_},
        {"jit_compile_ms", jit_ms_},
        {"first_run_includes", "CUDA module load (the driver compiles Halide's PTX)"},
        {"cuda_jit_max_registers", halide_cuda_register_budget()},
        {"cuda_context", "the device's primary context, through Halide's JIT CUDA hooks"},
        {"cuda_stream", "the backend's own non-blocking stream, through custom_cuda_get_stream"},
        {"hook_calls", {{"acquire_context", counts_.acquires}, {"get_stream", counts_.streams}}}};
    if (schedule_ == "manual") j["tile_preset"] = tile_.empty() ? std::string("auto") : tile_;
    if (schedule_ == "li2018") j["machine_params"] = halide_cuda_li2018_params().to_string();
    return j;
  }

 private:
  HalideCudaJitContext jit_context(std::string* errors) {
    return make_halide_cuda_jit_context(cu_context_, stream_.get(), &counts_, errors);
  }

  Problem p_;
  std::string schedule_, tile_, plugin_dir_;
  Halide::Target target_;
  bench::Stream stream_;
  CUcontext cu_context_;
  Tensor src_, wei_, dst_;
  bench::CudaEventTimer timer_;
  HalideHookCounts counts_;
  const halide_device_interface_t* cuda_ = nullptr;
  HalideConv conv_;
  Halide::Pipeline pipeline_;
  std::string algorithm_;
  double schedule_ms_ = 0, jit_ms_ = 0;
};

std::string halide_version() {
#if defined(HALIDE_VERSION_MAJOR)
  return std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
         std::to_string(HALIDE_VERSION_PATCH);
#else
  return "14.x";  // Halide 14's headers carry no version macros
#endif
}

class HalideCudaBackend final : public Backend {
 public:
  explicit HalideCudaBackend(const BackendOptions& options) : options_(options) {}

  std::string name() const override { return "halide_cuda"; }
  std::string device() const override { return "cuda"; }

  std::string library_version() const override {
    return "Halide " + halide_version() + " (target " + halide_cuda_target().to_string() + ")";
  }

  Support available() const override {
    const std::string& schedule = options_.halide_schedule;
    if (const std::string why = halide_cuda_schedule_unsupported(schedule, options_.halide_tile);
        !why.empty())
      return Support::no(why);
    const std::string plugin = halide_cuda_li2018_plugin(options_.halide_plugin_dir);
    if (schedule == "li2018" && !std::filesystem::exists(plugin))
      return Support::no("Halide autoscheduler plugin not found: " + plugin);
    if (const bench::CudaAvailability a = bench::cuda_device_available(); !a.ok)
      return Support::no(a.reason);
    return Support::yes();
  }

  Support check_support(const Problem& p) const override {
    if (const std::string why = halide_size_limit(p); !why.empty()) return Support::no(why);
    return Support::yes();
  }

  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<HalideCudaInstance>(p, data, options_);
  }

 private:
  BackendOptions options_;
};

// The lowered Stmt as the last lowering pass leaves it, before the GPU loops become kernels
// (Pipeline's custom lowering passes run just before that offloading).
class KeepStmt : public Halide::Internal::IRMutator {
 public:
  explicit KeepStmt(std::string* out) : out_(out) {}
  using Halide::Internal::IRMutator::mutate;
  Halide::Internal::Stmt mutate(const Halide::Internal::Stmt& s) override {
    std::ostringstream text;
    text << s;
    *out_ = text.str();
    return s;
  }

 private:
  std::string* out_;
};

// The kernels' source a lowered module embeds: OffloadGPULoops stores it in a buffer named
// "<api>_gpu_source_kernels" that the host code passes to halide_cuda_initialize_kernels.
class FindKernelSource : public Halide::Internal::IRVisitor {
 public:
  std::string source;
  using Halide::Internal::IRVisitor::visit;
  void visit(const Halide::Internal::Variable* op) override {
    if (op->image.defined() && op->name.find("_gpu_source_kernels") != std::string::npos) {
      const Halide::Buffer<std::uint8_t> bytes(op->image);
      source.assign(reinterpret_cast<const char*>(bytes.data()),
                    static_cast<std::size_t>(bytes.number_of_elements()));
      // The buffer ends in the NUL the driver's loader expects; the text does not.
      while (!source.empty() && source.back() == '\0') source.pop_back();
    }
  }
};

}  // namespace

std::string halide_cuda_compile_only(const Problem& p, const BackendOptions& options) {
  try {
    HalideConv h = make_halide_conv(p, halide_cuda_conv_options(options.halide_schedule));
    const Halide::Target target = halide_cuda_target();
    const std::string algorithm = apply_halide_cuda_schedule(
        h, options.halide_schedule, options.halide_tile, options.halide_plugin_dir, target);
    Halide::Pipeline(h.output).compile_jit(target);
    return algorithm;
  } catch (const Halide::Error& e) {
    throw std::runtime_error(std::string("Halide: ") + e.what());
  }
}

HalideCudaLowering halide_cuda_lower(const Problem& p, const BackendOptions& options) {
  try {
    HalideConv h = make_halide_conv(p, halide_cuda_conv_options(options.halide_schedule));
    const Halide::Target target = halide_cuda_target();
    HalideCudaLowering out;
    out.algorithm = apply_halide_cuda_schedule(h, options.halide_schedule, options.halide_tile,
                                               options.halide_plugin_dir, target);
    Halide::Pipeline pipeline(h.output);
    pipeline.add_custom_lowering_pass(new KeepStmt(&out.stmt));
    const Halide::Module module = pipeline.compile_to_module({h.src, h.wei}, "conv", target);
    FindKernelSource find;
    for (const Halide::Internal::LoweredFunc& f : module.functions()) f.body.accept(&find);
    out.ptx = find.source;
    return out;
  } catch (const Halide::Error& e) {
    throw std::runtime_error(std::string("Halide: ") + e.what());
  }
}

void halide_cuda_run_tiling_on_host(const Problem& p, const HostData& data, float* out,
                                    const BackendOptions& options) {
  try {
    HalideConv h = make_halide_conv(p, halide_cuda_conv_options(options.halide_schedule));
    apply_halide_cuda_schedule(h, options.halide_schedule, options.halide_tile,
                               options.halide_plugin_dir, halide_host_target(), HalideLoops::host);
    Tensor src(p.dtype, halide_src_dims(p), false), wei(p.dtype, halide_wei_dims(p), false),
        dst(p.dtype, halide_dst_dims(p), false);
    src.store(data.src);
    wei.store(data.wei);
    h.src.set(src.buffer());
    h.wei.set(wei.buffer());
    h.output.realize(dst.buffer(), halide_host_target());
    dst.load(out);
  } catch (const Halide::Error& e) {
    throw std::runtime_error(std::string("Halide: ") + e.what());
  }
}

std::unique_ptr<Backend> make_halide_cuda_backend(const BackendOptions& options) {
  return std::make_unique<HalideCudaBackend>(options);
}

}  // namespace conv
