// Halide backend on a CUDA GPU: the algorithm of halide_conv.hpp, JIT-compiled for host-cuda with
// a hand-written GPU schedule (output tiles to blocks and threads, the reduction accumulated in
// registers), or Halide 14's one autoscheduler with a GPU mode, Li2018.
//
// compile() applies the schedule and JIT-compiles (Pipeline::compile_jit): that is all of
// Halide's compile time. The first run() also loads the CUDA module (the driver JIT-compiles
// Halide's PTX for the device); the case runner times it apart as first_run_ms. run() calls
// realize() with the same target as compile_jit() and only enqueues the kernel; sync() waits.
//
// CUDA context and stream. Halide 14's CUDA runtime, left alone, creates a context of its own
// (cuCtxCreate) and launches on that context's legacy default stream, so CUDA events recorded by
// cudart, which works on the device's primary context, would not bracket Halide's kernels. Halide
// 14's JIT has per-call hooks for exactly this (JITHandlers::custom_cuda_acquire_context,
// custom_cuda_release_context, custom_cuda_get_stream, consulted through the JITUserContext passed
// to realize()): every realize() here passes a context whose hooks hand Halide the primary
// context and a non-blocking stream this backend owns (both from cudart: the context is
// cuStreamGetCtx of that stream, reached through cudaGetDriverEntryPointByVersion, so libcuda is
// never linked). Halide's kernels then run on our stream in the context cudart uses, and an
// ordinary bench::CudaEventTimer on that stream measures them, as it does for cuDNN. Every run
// checks that Halide called the stream hook (else its kernels ran elsewhere and the GPU time
// would be wrong) and throws if it did not.
//
// Buffers: device memory is ours (cudaMalloc through bench::DeviceBuffer, in the primary
// context), wrapped into the Halide buffers with device_wrap_native; inputs are uploaded and the
// output poisoned and read back with cudart copies on our stream. Halide's runtime therefore only
// touches the device inside realize() and at teardown (device_release, which unloads its modules),
// always through the hooks above.
#include "baselines/conv/halide_cuda.hpp"

#include <cuda.h>  // driver API types only (CUcontext, CUstream, CUresult); libcuda is not linked
#include <cudaTypedefs.h>  // PFN_* types of driver entry points
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/halide_conv.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

#ifndef MYCONV_HALIDE_PLUGIN_DIR
#define MYCONV_HALIDE_PLUGIN_DIR ""
#endif

namespace conv {
namespace {

using Halide::TailStrategy;
using Halide::Var;

// ---- CUDA target ----------------------------------------------------------------------------

// Compute capability of the current device as 10 * major + minor, 0 without a usable device.
int device_capability() {
  static const int cc = [] {
    if (!bench::cuda_device_available().ok) return 0;
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return 10 * major + minor;
  }();
  return cc;
}

// host-cuda with the highest CUDA capability Halide 14 knows (8.6) that the device has; without
// a device, 8.6. Halide emits PTX for it, which the driver compiles for the actual device (an
// H100/H200, 9.0, runs sm_86 PTX).
Halide::Target cuda_target() {
  struct Capability {
    int cc;
    Halide::Target::Feature feature;
  };
  static const Capability kCapabilities[] = {
      {86, Halide::Target::CUDACapability86}, {80, Halide::Target::CUDACapability80},
      {75, Halide::Target::CUDACapability75}, {70, Halide::Target::CUDACapability70},
      {61, Halide::Target::CUDACapability61}, {50, Halide::Target::CUDACapability50},
      {35, Halide::Target::CUDACapability35}, {30, Halide::Target::CUDACapability30}};
  const int cc = device_capability();
  Halide::Target t = halide_host_target().with_feature(Halide::Target::CUDA);
  for (const Capability& c : kCapabilities)
    if (cc == 0 || c.cc <= cc) return t.with_feature(c.feature);
  return t.with_feature(Halide::Target::CUDACapability30);
}

// ---- Driver API through cudart --------------------------------------------------------------

// A driver API function from cudart's entry-point query (the driver the runtime already loaded),
// so that the program links no libcuda and starts where no driver is installed.
void* driver_entry_point(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
#else
  CUDA_CHECK(cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &status));
#endif
  if (status != cudaDriverEntryPointSuccess || !fn)
    throw std::runtime_error(std::string("CUDA driver entry point ") + name +
                             " not found (cudaDriverEntryPointQueryResult " +
                             std::to_string(static_cast<int>(status)) + ")");
  return fn;
}

// The context a cudart stream belongs to: the device's primary context. The entry points are
// asked for at CUDA 12.0's ABI: from 12.5 on, "cuStreamGetCtx" names a three-argument function
// (with a green context), not the two-argument one of PFN_cuStreamGetCtx_v9020.
CUcontext stream_context(cudaStream_t stream) {
  static const auto get_ctx =
      reinterpret_cast<PFN_cuStreamGetCtx_v9020>(driver_entry_point("cuStreamGetCtx"));
  CUcontext ctx = nullptr;
  const CUresult r = get_ctx(stream, &ctx);
  if (r != CUDA_SUCCESS || !ctx) {
    const char* name = "unknown";
    try {
      reinterpret_cast<PFN_cuGetErrorName_v6000>(driver_entry_point("cuGetErrorName"))(r, &name);
    } catch (const std::exception&) {
    }
    throw std::runtime_error(std::string("cuStreamGetCtx failed: ") + name + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
  }
  return ctx;
}

// Halide's CUDA runtime finds the driver's functions by name in the process (or by loading
// "libcuda.so", a name only the driver's development package provides). cudart loaded
// libcuda.so.1 privately; loading it again with RTLD_GLOBAL makes its symbols visible to Halide.
void make_libcuda_visible() {
  static const std::string error = [] {
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) return std::string();
    const char* e = dlerror();
    return std::string("dlopen(libcuda.so.1): ") + (e ? e : "unknown error");
  }();
  if (!error.empty()) throw std::runtime_error(error);
}

// Registers per thread the driver may give Halide's kernels. Halide's CUDA runtime loads modules
// with CU_JIT_MAX_REGISTERS = 64 unless HL_CUDA_JIT_MAX_REGISTERS says otherwise (read at module
// load); at 64 the larger register tiles below spill (ptxas for sm_90: 88 bytes of stack for the
// 4 x 8 tile of a 7 x 7 kernel), at 96 none of them does. 128 leaves headroom and still fits four
// blocks of 128 threads per SM. A value already in the environment wins.
constexpr const char* kMaxRegisters = "128";

void use_register_budget() {
  setenv("HL_CUDA_JIT_MAX_REGISTERS", kMaxRegisters, /*overwrite=*/0);
}

std::string register_budget() {
  const char* v = std::getenv("HL_CUDA_JIT_MAX_REGISTERS");
  return v ? v : "64 (Halide's default)";
}

// ---- Halide's CUDA hooks --------------------------------------------------------------------

// How often Halide's runtime called the hooks; a run that launched a kernel calls get_stream.
struct HookCounts {
  long acquires = 0, streams = 0;
};

// The JITUserContext of every Halide call: Halide passes it to the hooks below, which hand its
// CUDA context and stream to Halide's runtime.
struct CudaJitContext : Halide::JITUserContext {
  CUcontext cu_context = nullptr;
  cudaStream_t stream = nullptr;
  HookCounts* counts = nullptr;
  std::string* errors = nullptr;  // where custom_error writes, when set
};

int acquire_context(Halide::JITUserContext* user_context, void** cuda_context, bool /*create*/) {
  auto* c = static_cast<CudaJitContext*>(user_context);
  *cuda_context = c->cu_context;
  ++c->counts->acquires;
  return 0;
}

int release_context(Halide::JITUserContext* /*user_context*/) {
  return 0;
}

int get_stream(Halide::JITUserContext* user_context, void* /*cuda_context*/, void** stream) {
  auto* c = static_cast<CudaJitContext*>(user_context);
  *stream = c->stream;
  ++c->counts->streams;
  return 0;
}

void collect_error(Halide::JITUserContext* user_context, const char* message) {
  auto* c = static_cast<CudaJitContext*>(user_context);
  if (c->errors) *c->errors += message;
}

// ---- Schedules: CUDA GPU ----------------------------------------------------------------------
// Not yet run on a GPU: written on a machine without one, where every path compiles for sm_86
// and ptxas (sm_90, 128 registers) reports no spills for tiles up to ResNet sizes.
// tests/test_halide_cuda.cpp checks them against the reference on a GPU. Measured times go here,
// beside the schedule that earned them.

int fit(int want, std::int64_t extent) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(want, extent)));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// The factor f in [max(1, hi / 2), hi] whose tiles of f * unit cover extent with the least
// recomputation (ShiftInwards evaluates ceil(extent / (f * unit)) * f * unit elements); the
// largest of equals. E.g. 28 columns rather than 32 for an image 56 wide.
int least_waste(int hi, std::int64_t unit, std::int64_t extent) {
  int best = hi;
  std::int64_t best_covered = ceil_div(extent, hi * unit) * hi * unit;
  for (int f = hi - 1; f >= std::max(1, hi / 2); --f) {
    const std::int64_t covered = ceil_div(extent, f * unit) * f * unit;
    if (covered < best_covered) {
      best = f;
      best_covered = covered;
    }
  }
  return best;
}

// Where a schedule's block and thread loops go: to the GPU, or (to check its tiling on a machine
// without one, see halide_cuda_run_tiling_on_host) left as serial loops on the host, with the
// accumulators in ordinary memory. Everything else is the same.
enum class Loops { gpu, host };

constexpr int kThreadsPerBlock = 128;
// Fewest threads worth launching: about half of an H100/H200's resident threads. Register tiles
// shrink (fewer outputs per thread, more threads) until a problem launches this many.
constexpr std::int64_t kMinThreads = 64 * 1024;

// Output splits shift the last tile inwards (ShiftInwards), which keeps every tile the same
// constant size (so the accumulators can live in registers) and inside the output; every factor
// is therefore at most the extent it splits (fit()).

// x-threads: threads tx columns x ty row groups x tc channel groups; each thread accumulates ry
// rows x rc output channels in registers, reading each input value once for rc channels and each
// weight (the same address across a warp's columns and rows: a broadcast) once for ry rows.
// Consecutive threads take consecutive output columns, so in nchw the loads of src and stores of
// dst coalesce. Channel groups fill the block where rows are short (7 x 7 images). Blocks:
// (channel tiles x images) in x, column tiles in y, row tiles in z.
std::string schedule_x_threads(HalideConv& h, Loops loops, const std::string& label) {
  const Problem& p = h.problem;
  const int tx = least_waste(fit(32, p.ow()), 1, p.ow());
  int rc = fit(8, p.oc), ry = fit(4, p.oh());
  const auto threads = [&] {
    return ceil_div(p.ow(), tx) * tx * ceil_div(p.oh(), ry) * ceil_div(p.oc, rc) * p.mb;
  };
  while (threads() < kMinThreads && (rc > 1 || ry > 1)) {
    if (rc >= ry)
      rc = (rc + 1) / 2;
    else
      ry = (ry + 1) / 2;
  }
  const int ty = least_waste(fit(kThreadsPerBlock / tx, p.oh() / ry), ry, p.oh());
  const int tc = fit(kThreadsPerBlock / (tx * ty), p.oc / rc);
  Var xo("xo"), xi("xi"), yo("yo"), yb("yb"), yt("yt"), yr("yr"), co("co"), cb("cb"), ct("ct"),
      cr("cr"), t("t");
  h.output.split(h.x, xo, xi, tx, TailStrategy::ShiftInwards)
      .split(h.y, yo, yb, ty * ry, TailStrategy::ShiftInwards)
      .split(yb, yt, yr, ry, TailStrategy::ShiftInwards)
      .split(h.c, co, cb, tc * rc, TailStrategy::ShiftInwards)
      .split(cb, ct, cr, rc, TailStrategy::ShiftInwards)
      .reorder(cr, yr, xi, yt, ct, co, h.n, xo, yo)
      .fuse(co, h.n, t)
      .unroll(cr)
      .unroll(yr);
  if (loops == Loops::gpu) h.output.gpu_threads(xi, yt, ct).gpu_blocks(t, xo, yo);
  h.acc.compute_at(h.output, xi);
  if (loops == Loops::gpu) h.acc.store_in(Halide::MemoryType::Register);
  h.acc.reorder(h.c, h.y, h.x, h.n).unroll(h.c).unroll(h.y);
  const bool unroll_kw = p.kw <= 7;
  Halide::Stage update = h.acc.update();
  update.reorder(h.c, h.y, h.x, h.n, h.k.x, h.k.y, h.k.z).unroll(h.c).unroll(h.y);
  if (unroll_kw) update.unroll(h.k.x);
  return label + ": block " + std::to_string(tx) + "x" + std::to_string(ty) + "x" +
         std::to_string(tc) + " threads (columns x row groups x channel groups), " +
         std::to_string(ry) + " rows x " + std::to_string(rc) +
         " channels per thread in registers" + (unroll_kw ? ", kw unrolled" : "");
}

// c-threads (nhwc with at least 32 output channels): a warp's 32 lanes take 32 consecutive output
// channels, so stores of dst coalesce, and every lane reads the same input value (a broadcast).
// The weights (ohwi) of consecutive output channels lie kh*kw*ic/g elements apart, so each
// weight load of a warp touches 32 cache lines; what amortizes it is the register tile: a thread
// accumulates rx columns of one row for its channel, one weight load per rx FMAs (a second
// channel per thread would cost another such load for rx more FMAs: no better). Threads: 32
// channels x tx column groups x ty rows. Blocks: (row tiles x images) in x, channel tiles in y,
// column tiles in z. The reduction runs input channels innermost (contiguous in src and wei, so
// a lane's next weights are in the line it just loaded), then kw, kh.
std::string schedule_c_threads(HalideConv& h, Loops loops, const std::string& label) {
  const Problem& p = h.problem;
  int rx = fit(16, p.ow());
  while (p.oc * ceil_div(p.ow(), rx) * p.oh() * p.mb < kMinThreads && rx > 1) rx = (rx + 1) / 2;
  rx = least_waste(rx, 1, p.ow());
  const int tc = fit(32, p.oc);
  const int tx = least_waste(fit(kThreadsPerBlock / tc, p.ow() / rx), rx, p.ow());
  const int ty = least_waste(fit(kThreadsPerBlock / (tc * tx), p.oh()), 1, p.oh());
  Var co("co"), ct("ct"), xo("xo"), xb("xb"), xt("xt"), xr("xr"), yo("yo"), yt("yt"), t("t");
  h.output.split(h.c, co, ct, tc, TailStrategy::ShiftInwards)
      .split(h.x, xo, xb, tx * rx, TailStrategy::ShiftInwards)
      .split(xb, xt, xr, rx, TailStrategy::ShiftInwards)
      .split(h.y, yo, yt, ty, TailStrategy::ShiftInwards)
      .reorder(xr, ct, xt, yt, yo, h.n, co, xo)
      .fuse(yo, h.n, t)
      .unroll(xr);
  if (loops == Loops::gpu) h.output.gpu_threads(ct, xt, yt).gpu_blocks(t, co, xo);
  h.acc.compute_at(h.output, ct);
  if (loops == Loops::gpu) h.acc.store_in(Halide::MemoryType::Register);
  h.acc.reorder(h.x, h.c, h.y, h.n).unroll(h.x);
  h.acc.update().reorder(h.x, h.c, h.y, h.n, h.k.z, h.k.x, h.k.y).unroll(h.x);
  return label + ": block " + std::to_string(tc) + "x" + std::to_string(tx) + "x" +
         std::to_string(ty) + " threads (channels x column groups x rows), " + std::to_string(rx) +
         " columns per thread in registers";
}

std::string schedule_manual(HalideConv& h, Loops loops = Loops::gpu) {
  const Problem& p = h.problem;
  if (p.layout == Layout::nhwc && p.oc >= 32) return schedule_c_threads(h, loops, "manual nhwc");
  if (p.layout == Layout::nhwc)
    return schedule_x_threads(h, loops,
                              "manual nhwc, " + std::to_string(p.oc) + " output channels < 32");
  return schedule_x_threads(h, loops, "manual nchw");
}

// ---- Autoscheduler ----------------------------------------------------------------------------
// Li2018 is the only one of Halide 14's autoschedulers with a GPU mode: it tiles outputs to
// blocks of 64 threads and computes most Funcs at root (one kernel each, their buffers allocated
// per call, which Halide's device allocation cache then reuses; see
// JITSharedRuntime::reuse_device_allocations below). Adams2019 and Mullapudi2016 schedule CPUs
// only in Halide 14 (Adams2019's GPU successor, Anderson2021, came with Halide 15).

std::string plugin_path(const std::string& dir) {
  return (dir.empty() ? std::string(MYCONV_HALIDE_PLUGIN_DIR) : dir) + "/libautoschedule_li2018.so";
}

// Loads the plugin once per process (it registers Li2018 when loaded; loading a library that is
// already loaded, e.g. by halide_cpu, does not register it again).
void load_li2018(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(path)) return;
  Halide::load_plugin(path);
  loaded.insert(path);
}

// Li2018's GPU mode reads none of the machine parameters (blocks are 64 threads of the first
// dimension with 64 or more elements; a reduction is also spread over blocks, with atomics, when
// the output has fewer than 4096 elements), so Halide's generic ones are passed.
Halide::MachineParams li2018_params() {
  return Halide::MachineParams::generic();
}

std::string schedule_li2018(HalideConv& h, const std::string& plugin, const Halide::Target& t) {
  try {
    load_li2018(plugin);
    Halide::Pipeline(h.output).auto_schedule("Li2018", t, li2018_params());
  } catch (const Halide::Error& e) {
    throw bench::Unsupported(std::string("Halide autoscheduler Li2018 (GPU): ") + e.what());
  }
  return "auto:Li2018";
}

// What each --halide-schedule value means here: empty when supported, else why not.
std::string schedule_unsupported(const std::string& schedule) {
  if (schedule == "manual" || schedule == "li2018") return "";
  if (schedule == "adams2019")
    return "Halide 14's Adams2019 schedules CPUs only (its GPU successor, Anderson2021, came with "
           "Halide 15)";
  if (schedule == "mullapudi2016") return "Halide 14's Mullapudi2016 schedules CPUs only";
  return "unknown Halide schedule '" + schedule + "' (manual li2018 on the GPU)";
}

// Applies the schedule to a fresh algorithm for p; returns its description.
std::string apply_schedule(HalideConv& h, const std::string& schedule,
                           const std::string& plugin_dir, const Halide::Target& t) {
  if (const std::string why = schedule_unsupported(schedule); !why.empty())
    throw bench::Unsupported(why);
  if (schedule == "manual") return schedule_manual(h);
  return schedule_li2018(h, plugin_path(plugin_dir), t);
}

// Halide 14's PTX code generation fails on BFloat(16): LLVM aborts the process ("Copy one register
// into another with a different width") on a bf16 load widened to fp32. bf16 tensors are
// therefore handled as their bits, converted with integer arithmetic (HalideConvOptions).
constexpr bool kBf16AsBits = true;

HalideConvOptions conv_options(const std::string& schedule) {
  HalideConvOptions o;
  o.clamp_reads = schedule != "manual";  // see HalideConvOptions
  o.bf16_as_bits = kBf16AsBits;
  return o;
}

// Element type of the Halide buffers, as Halide names it.
const char* storage_name(DataType dt) {
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
    buffer_ = Halide::Buffer<>(halide_storage_type(dt, kBf16AsBits), host_.data(),
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
  HalideCudaInstance(const Problem& p, const HostData& data, std::string schedule,
                     std::string plugin_dir)
      : p_(p),
        schedule_(std::move(schedule)),
        plugin_dir_(std::move(plugin_dir)),
        target_(cuda_target()),
        cu_context_(stream_context(stream_.get())),
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
      CudaJitContext ctx = jit_context(nullptr);
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
      conv_ = make_halide_conv(p_, conv_options(schedule_));
      bench::WallTimer schedule_timer;
      algorithm_ = apply_schedule(conv_, schedule_, plugin_dir_, target_);
      if (p_.dtype == DataType::tf32) algorithm_ += " (tf32 computed as strict fp32)";
      schedule_ms_ = schedule_timer.elapsed().count();
      pipeline_ = Halide::Pipeline(conv_.output);
      bench::WallTimer jit_timer;
      pipeline_.compile_jit(target_);
      jit_ms_ = jit_timer.elapsed().count();
      // Process-wide, and only effective once the shared runtime exists (after compile_jit()).
      if (schedule_ == "li2018") Halide::Internal::JITSharedRuntime::reuse_device_allocations(true);

      make_libcuda_visible();
      use_register_budget();
      cuda_ = Halide::get_device_interface_for_device_api(Halide::DeviceAPI::CUDA, target_,
                                                          "halide_cuda");
      BENCH_CHECK(cuda_ != nullptr,
                  "Halide has no CUDA device interface for " + target_.to_string());
      for (Tensor* t : {&src_, &wei_, &dst_}) {
        std::string errors;
        CudaJitContext ctx = jit_context(&errors);
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
    CudaJitContext ctx = jit_context(nullptr);
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
  // The manual schedule keeps everything in registers; Li2018's intermediates are Halide's.
  std::optional<std::int64_t> workspace_bytes() const override {
    if (schedule_ == "manual") return 0;
    return std::nullopt;
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

  std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices& services, int calls,
                                             std::string* why) override {
    // Li2018's root Funcs allocate device buffers inside each call (from Halide's cache after
    // the first), which a captured graph would keep referring to after Halide hands them on.
    if (schedule_ != "manual") {
      if (why) *why = "Halide allocates intermediate device buffers per call under Li2018";
      return nullptr;
    }
    return Instance::make_replay(services, calls, why);
  }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json j = {
        {"halide_target", target_.to_string()},
        {"schedule", schedule_},
        {"storage_type", storage_name(p_.dtype)},
        {"compute", p_.dtype == DataType::tf32 ? "fp32 FMA (tf32 computed as strict fp32)"
                                               : "fp32 FMA, fp32 accumulation"},
        {"schedule_ms", schedule_ms_},
        {"jit_compile_ms", jit_ms_},
        {"first_run_includes", "CUDA module load (the driver compiles Halide's PTX)"},
        {"cuda_jit_max_registers", register_budget()},
        {"cuda_context", "the device's primary context, through Halide's JIT CUDA hooks"},
        {"cuda_stream", "the backend's own non-blocking stream, through custom_cuda_get_stream"},
        {"hook_calls", {{"acquire_context", counts_.acquires}, {"get_stream", counts_.streams}}}};
    if (schedule_ == "li2018") j["machine_params"] = li2018_params().to_string();
    return j;
  }

 private:
  CudaJitContext jit_context(std::string* errors) {
    CudaJitContext c;
    c.handlers.custom_cuda_acquire_context = &acquire_context;
    c.handlers.custom_cuda_release_context = &release_context;
    c.handlers.custom_cuda_get_stream = &get_stream;
    if (errors) c.handlers.custom_error = &collect_error;
    c.cu_context = cu_context_;
    c.stream = stream_.get();
    c.counts = &counts_;
    c.errors = errors;
    return c;
  }

  Problem p_;
  std::string schedule_, plugin_dir_;
  Halide::Target target_;
  bench::Stream stream_;
  CUcontext cu_context_;
  Tensor src_, wei_, dst_;
  bench::CudaEventTimer timer_;
  HookCounts counts_;
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
  explicit HalideCudaBackend(const BackendOptions& options)
      : schedule_(options.halide_schedule), plugin_dir_(options.halide_plugin_dir) {}

  std::string name() const override { return "halide_cuda"; }
  std::string device() const override { return "cuda"; }

  std::string library_version() const override {
    return "Halide " + halide_version() + " (target " + cuda_target().to_string() + ")";
  }

  Support available() const override {
    if (const std::string why = schedule_unsupported(schedule_); !why.empty())
      return Support::no(why);
    if (schedule_ == "li2018" && !std::filesystem::exists(plugin_path(plugin_dir_)))
      return Support::no("Halide autoscheduler plugin not found: " + plugin_path(plugin_dir_));
    if (const bench::CudaAvailability a = bench::cuda_device_available(); !a.ok)
      return Support::no(a.reason);
    return Support::yes();
  }

  Support check_support(const Problem& p) const override {
    if (const std::string why = halide_size_limit(p); !why.empty()) return Support::no(why);
    return Support::yes();
  }

  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<HalideCudaInstance>(p, data, schedule_, plugin_dir_);
  }

 private:
  std::string schedule_, plugin_dir_;
};

}  // namespace

std::string halide_cuda_compile_only(const Problem& p, const BackendOptions& options) {
  try {
    HalideConv h = make_halide_conv(p, conv_options(options.halide_schedule));
    const Halide::Target target = cuda_target();
    const std::string algorithm =
        apply_schedule(h, options.halide_schedule, options.halide_plugin_dir, target);
    Halide::Pipeline(h.output).compile_jit(target);
    return algorithm;
  } catch (const Halide::Error& e) {
    throw std::runtime_error(std::string("Halide: ") + e.what());
  }
}

void halide_cuda_run_tiling_on_host(const Problem& p, const HostData& data, float* out) {
  try {
    HalideConv h = make_halide_conv(p, conv_options("manual"));
    schedule_manual(h, Loops::host);
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
