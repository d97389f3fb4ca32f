// Halide backend on the host CPU: the algorithm of halide_conv.hpp, JIT-compiled for the host
// target (halide_host_target(): get_host_target() made safe) with a hand-written x86 schedule per
// layout or one of Halide 14's autoschedulers (Adams2019, Mullapudi2016, Li2018, loaded as
// plugins).
//
// compile() applies the schedule (running the autoscheduler, if any) and JIT-compiles, so that it
// holds all of Halide's compile time; run() only calls the compiled pipeline into the
// preallocated output buffer.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <unistd.h>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/halide_conv.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"

#ifndef MYCONV_HALIDE_PLUGIN_DIR
#define MYCONV_HALIDE_PLUGIN_DIR ""
#endif

namespace conv {
namespace {

using Halide::Var;

// Largest power of two <= min(want, extent), at least 1: a vector width the extent can hold
// (outputs are split with TailStrategy::ShiftInwards, which needs extent >= factor).
int fit_pow2(int want, std::int64_t extent) {
  int f = 1;
  while (f * 2 <= want && f * 2 <= extent) f *= 2;
  return f;
}

// ---- Schedules: x86-64 host CPU (one per layout) -------------------------------------------
// Times: median total time, fp32, on this machine (2 vCPUs of an Intel Xeon with AVX-512 under
// KVM, Halide target x86-64-linux-avx-avx2-avx512-avx512_cannonlake-avx512_skylake-f16c-fma-
// sse41), measured with nothing else running (other jobs on the 2 cores doubled them), by
//   build-halide/experiments/myconv --problem <descriptor> --backend halide_cpu

// Whether the schedules copy the input rows a parallel task reads into a padded fp32 buffer
// first: with padding, so that the inner loop reads plain memory instead of evaluating the
// boundary condition per tap; with 16-bit storage, so that each value is converted once.
bool needs_staging(const Problem& p) {
  return p.ph > 0 || p.pw > 0 || p.dtype == DataType::fp16 || p.dtype == DataType::bf16;
}

// x-vectorized: each output row is vectorized along x, the weights are scalars broadcast to all
// lanes. A register tile of one vector of x by `rows` output rows by `chans` output channels
// accumulates in registers (acc computed at the tile, its update unrolled), so each input vector
// loaded feeds `chans` FMAs and each weight feeds `rows`. The reduction runs kw (unrolled when
// small), then kh, then input channels. Parallel over image x row blocks, the channel blocks
// inside so that the input rows of a block stay in cache across them. `stage` copies those input
// rows into an fp32 buffer with x innermost per task (see needs_staging(); for nhwc input this
// copy also transposes).
std::string schedule_x_vectorized(HalideConv& h, const Halide::Target& target, bool stage,
                                  const std::string& label) {
  const Problem& p = h.problem;
  const int vec = fit_pow2(target.natural_vector_size<float>(), p.ow());
  const int rows = halide_fit(4, p.oh()), chans = halide_fit(4, p.oc);
  const bool unroll_kw = p.kw <= 7;
  Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), co("co"), cii("cii"), tile("tile");
  h.output.split(h.x, xo, xi, vec)
      .split(h.y, yo, yi, rows)
      .split(h.c, co, cii, chans)
      .reorder(xi, yi, cii, xo, co, yo, h.n)
      .vectorize(xi)
      .unroll(yi)
      .unroll(cii)
      .fuse(yo, h.n, tile)
      .parallel(tile);
  h.acc.compute_at(h.output, xo).vectorize(h.x).unroll(h.y).unroll(h.c);
  h.acc.update()
      .reorder(h.x, h.y, h.c, h.k.x, h.k.y, h.k.z, h.n)
      .vectorize(h.x)
      .unroll(h.y)
      .unroll(h.c);
  if (unroll_kw) h.acc.update().unroll(h.k.x);
  if (stage) h.src_padded.compute_at(h.output, tile).vectorize(h.x, fit_pow2(vec, p.iw));
  return label + ": x vectorized by " + std::to_string(vec) + ", tile " + std::to_string(rows) +
         " rows x " + std::to_string(chans) + " channels unrolled" +
         (unroll_kw ? ", kw unrolled" : "") + (stage ? ", input rows staged per task" : "") +
         ", parallel over images x row blocks";
}

// nchw: x (w) is contiguous, so the x-vectorized schedule.
//   mb2ic4ih64oc8kh5          0.038 ms  (300 GFLOP/s)
//   mb32ic64ih56oc64kh3ph1    28.0 ms   (264 GFLOP/s; 4x that without the staged input rows)
std::string schedule_manual_nchw(HalideConv& h, const Halide::Target& target) {
  return schedule_x_vectorized(h, target, needs_staging(h.problem), "manual nchw");
}

// nhwc: c is contiguous, so output channels are vectorized; the weights (ohwi, input channel
// innermost) are repacked once per call into a buffer with the output channel innermost, so that
// a weight vector is one dense load. A register tile of `cvecs` channel vectors by `cols` output
// pixels of a row: each weight vector feeds `cols` FMAs, each input value (a broadcast scalar)
// feeds `cvecs`. The reduction runs input channels (contiguous in src) innermost, then kw, kh.
// Parallel over image x row.
//   mb32ic64ih56oc64kh3ph1nhwc  23.5 ms  (315 GFLOP/s; 2 x 6, 2 x 8 tiles: 9%, 26% slower)
// With fewer output channels than lanes, the x-vectorized schedule instead (below):
//   mb2ic4ih64oc8kh5nhwc        0.056 ms (205 GFLOP/s; channel vectors of 8 lanes: 0.076 ms)
std::string schedule_manual_nhwc(HalideConv& h, const Halide::Target& target) {
  const Problem& p = h.problem;
  const int lanes = target.natural_vector_size<float>();
  // Fewer output channels than lanes (the seed problem's 8 of 16): x vectors of 16 lanes with the
  // input staged (transposed) per task beat channel vectors of 8 (the output stores become
  // strided, once per output element).
  if (p.oc < lanes && p.ow() >= lanes)
    return schedule_x_vectorized(h, target, true,
                                 "manual nhwc, " + std::to_string(p.oc) + " output channels < " +
                                     std::to_string(lanes) + " lanes");
  const int vec = fit_pow2(lanes, p.oc);
  // About 16 accumulator vectors (of AVX-512's 32 registers): 4 x 4, 2 x 8 or 1 x 12.
  const int cvecs = p.oc >= 4 * vec ? 4 : p.oc >= 2 * vec ? 2 : 1;
  const int cols = halide_fit(cvecs == 4 ? 4 : cvecs == 2 ? 8 : 12, p.ow());
  Var co("co"), cii("cii"), xo("xo"), xi("xi"), tile("tile");
  h.output.split(h.c, co, cii, vec * cvecs)
      .split(h.x, xo, xi, cols)
      .reorder(cii, xi, co, xo, h.y, h.n)
      .vectorize(cii, vec)
      .unroll(cii)
      .unroll(xi)
      .fuse(h.y, h.n, tile)
      .parallel(tile);
  // Channels innermost in acc's storage too, so that its vectors are dense and stay in registers.
  h.acc.compute_at(h.output, co).reorder_storage(h.c, h.x, h.y, h.n);
  h.acc.vectorize(h.c, vec).unroll(h.c).unroll(h.x);
  h.acc.update()
      .reorder(h.c, h.x, h.k.z, h.k.x, h.k.y, h.y, h.n)
      .vectorize(h.c, vec)
      .unroll(h.c)
      .unroll(h.x);
  h.weight.compute_root().reorder_storage(h.c, h.icg, h.s, h.r);
  const bool stage = needs_staging(p);
  if (stage)
    h.src_padded.compute_at(h.output, tile)
        .reorder_storage(h.c, h.x, h.y, h.n)
        .reorder(h.c, h.x, h.y, h.n)
        .vectorize(h.c, fit_pow2(target.natural_vector_size<float>(), p.ic));
  return "manual nhwc: c vectorized by " + std::to_string(vec) + ", tile " + std::to_string(cvecs) +
         " channel vectors x " + std::to_string(cols) +
         " pixels unrolled, weights repacked channel-innermost" +
         (stage ? ", input rows staged per task" : "") + ", parallel over images x rows";
}

// ---- Autoschedulers -------------------------------------------------------------------------
// The same algorithm (with HalideConvOptions::clamp_reads) scheduled by Halide 14's
// autoschedulers. Median total time and compile time (the autoscheduler's search included) on
// this machine, fp32, nchw / nhwc, by
//   build-halide/experiments/myconv --problem <descriptor> [--layout nhwc] --backend halide_cpu
//       --halide-schedule <adams2019|mullapudi2016|li2018>
//                   mb2ic4ih64oc8kh5                 mb32ic64ih56oc64kh3ph1
//   Adams2019       0.053 / 0.227 ms (10 / 12 s)     224 / 23.7 ms (171 / 142 s)
//   Mullapudi2016   0.50 / 0.54 ms (0.7 / 0.8 s)     302 / 302 ms (0.9 / 0.8 s)
//   Li2018          0.78 / 0.85 ms (0.6 / 0.6 s)     299 / 313 ms (0.5 / 0.5 s)
// Adams2019 also gave wrong outputs in 6 of 32 fp16/bf16 cases of a randomized sweep (0 of 16
// fp32), which the case runner reports as incorrect. Its schedules there compute the input stage
// inside the reduction with store_at() further out, across a split pure var; the same directives
// written by hand (acc.update().split(y, y, yi, 4).reorder(x, k.x, k.y, yi, k.z, y, ...) with
// src_padded.compute_at(acc, k.y).store_at(acc, k.z)) are wrong in fp32 too: Halide 14 lowers
// them wrongly, the algorithm is not at fault.

struct Autoscheduler {
  const char* option;  // --halide-schedule value
  const char* name;    // name the plugin registers with Pipeline::add_autoscheduler
};
constexpr Autoscheduler kAutoschedulers[] = {
    {"adams2019", "Adams2019"}, {"mullapudi2016", "Mullapudi2016"}, {"li2018", "Li2018"}};

const Autoscheduler* find_autoscheduler(const std::string& option) {
  for (const Autoscheduler& a : kAutoschedulers)
    if (option == a.option) return &a;
  return nullptr;
}

std::string plugin_path(const std::string& dir, const Autoscheduler& a) {
  return (dir.empty() ? std::string(MYCONV_HALIDE_PLUGIN_DIR) : dir) + "/libautoschedule_" +
         a.option + ".so";
}

// Loads each plugin once per process (it registers its autoscheduler when loaded).
void load_autoscheduler(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(path)) return;
  Halide::load_plugin(path);
  loaded.insert(path);
}

std::uint64_t sysconf_or(int name, std::uint64_t fallback) {
  const long v = ::sysconf(name);
  return v > 0 ? static_cast<std::uint64_t>(v) : fallback;
}

// The machine as the autoschedulers see it: all hardware threads; the per-core L2 as the cache
// to tile for, because the L3 of a VM (260 MiB here) is the whole host's, shared with others;
// Halide's default balance (40, as in MachineParams::generic()).
Halide::MachineParams machine_params() {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return Halide::MachineParams(threads, sysconf_or(_SC_LEVEL2_CACHE_SIZE, 1u << 20), 40.0f);
}

std::string schedule_auto(HalideConv& h, const Autoscheduler& a, const std::string& plugin,
                          const Halide::Target& target) {
  try {
    load_autoscheduler(plugin);
    Halide::Pipeline(h.output).auto_schedule(a.name, target, machine_params());
  } catch (const Halide::Error& e) {
    throw bench::Unsupported(std::string("Halide autoscheduler ") + a.name + ": " + e.what());
  }
  return std::string("auto:") + a.name;
}

// Element type of the Halide buffers, as Halide names it.
const char* cpu_storage_name(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return "float16";
    case DataType::bf16:
      return "bfloat16";
    default:
      return "float32";
  }
}

// ---- Host buffers ---------------------------------------------------------------------------

// One tensor in the problem's layout, in 64-byte-aligned memory it owns, seen by Halide through a
// non-owning Buffer with the layout's strides.
class HostTensor {
 public:
  HostTensor(Halide::Type type, const std::vector<halide_dimension_t>& dims) {
    elements_ = 1;
    for (const halide_dimension_t& d : dims) elements_ *= static_cast<std::size_t>(d.extent);
    const std::size_t bytes = std::max<std::size_t>(64, (elements_ * type.bytes() + 63) / 64 * 64);
    mem_.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, bytes)));
    if (!mem_) throw std::bad_alloc();
    buffer_ = Halide::Buffer<>(type, mem_.get(), static_cast<int>(dims.size()), dims.data());
  }

  Halide::Buffer<>& buffer() { return buffer_; }
  const Halide::Buffer<>& buffer() const { return buffer_; }

  // Element i in memory order (the problem's layout) from or to float.
  void store(const std::vector<float>& values) {
    const Halide::Type t = buffer_.type();
    for (std::size_t i = 0; i < elements_; ++i) {
      if (t.bits() == 32) {
        reinterpret_cast<float*>(mem_.get())[i] = values[i];
      } else {
        const std::uint16_t b = t.is_bfloat() ? bench::float_to_bf16_bits(values[i])
                                              : bench::float_to_half_bits(values[i]);
        reinterpret_cast<std::uint16_t*>(mem_.get())[i] = b;
      }
    }
  }
  void load(float* dst) const {
    const Halide::Type t = buffer_.type();
    if (t.bits() == 32) {
      std::memcpy(dst, mem_.get(), elements_ * sizeof(float));
      return;
    }
    const auto* bits = reinterpret_cast<const std::uint16_t*>(mem_.get());
    for (std::size_t i = 0; i < elements_; ++i)
      dst[i] =
          t.is_bfloat() ? bench::bf16_bits_to_float(bits[i]) : bench::half_bits_to_float(bits[i]);
  }
  void fill_nan() {
    const Halide::Type t = buffer_.type();
    if (t.bits() == 32) {
      std::fill_n(reinterpret_cast<float*>(mem_.get()), elements_,
                  std::numeric_limits<float>::quiet_NaN());
    } else {
      std::fill_n(reinterpret_cast<std::uint16_t*>(mem_.get()), elements_,
                  std::uint16_t(t.is_bfloat() ? 0x7FC0 : 0x7E00));
    }
  }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<std::uint8_t, Free> mem_;
  std::size_t elements_ = 0;
  Halide::Buffer<> buffer_;
};

// ---- Instance and backend -------------------------------------------------------------------

class HalideCpuInstance final : public Instance {
 public:
  HalideCpuInstance(const Problem& p, const HostData& data, std::string schedule,
                    std::string plugin_dir)
      : p_(p),
        schedule_(std::move(schedule)),
        plugin_dir_(std::move(plugin_dir)),
        target_(halide_host_target()),
        src_(halide_storage_type(p.dtype), halide_src_dims(p)),
        wei_(halide_storage_type(p.dtype), halide_wei_dims(p)),
        dst_(halide_storage_type(p.dtype), halide_dst_dims(p)) {
    src_.store(data.src);
    wei_.store(data.wei);
  }

  void compile() override {
    try {
      HalideConvOptions options;
      options.clamp_reads = schedule_ != "manual";  // see HalideConvOptions
      conv_ = make_halide_conv(p_, options);
      conv_.src.set(src_.buffer());
      conv_.wei.set(wei_.buffer());
      bench::WallTimer schedule_timer;
      if (schedule_ == "manual") {
        algorithm_ = p_.layout == Layout::nhwc ? schedule_manual_nhwc(conv_, target_)
                                               : schedule_manual_nchw(conv_, target_);
      } else {
        const Autoscheduler* a = find_autoscheduler(schedule_);
        BENCH_CHECK(a != nullptr, "unknown Halide schedule " + schedule_);
        algorithm_ = schedule_auto(conv_, *a, plugin_path(plugin_dir_, *a), target_);
      }
      schedule_ms_ = schedule_timer.elapsed().count();
      pipeline_ = Halide::Pipeline(conv_.output);
      bench::WallTimer jit_timer;
      pipeline_.compile_jit(target_);
      jit_ms_ = jit_timer.elapsed().count();
    } catch (const Halide::Error& e) {
      throw std::runtime_error(std::string("Halide: ") + e.what());
    }
  }

  void poison_output() override { dst_.fill_nan(); }

  void run() override {
    try {
      // The same target as compile_jit(): realize() without it would compile again for the
      // JIT target of the environment.
      pipeline_.realize(dst_.buffer(), target_);
    } catch (const Halide::Error& e) {
      throw std::runtime_error(std::string("Halide: ") + e.what());
    }
  }

  void read_output(float* dst) override { dst_.load(dst); }

  std::vector<std::int64_t> output_dims() const override {
    const Halide::Buffer<>& b = dst_.buffer();
    return {b.dim(3).extent(), b.dim(2).extent(), b.dim(1).extent(), b.dim(0).extent()};
  }

  std::string algorithm() const override { return algorithm_; }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json j = {{"halide_target", target_.to_string()},
                                {"schedule", schedule_},
                                {"storage_type", cpu_storage_name(p_.dtype)},
                                {"schedule_ms", schedule_ms_},
                                {"jit_compile_ms", jit_ms_}};
    if (schedule_ != "manual") j["machine_params"] = machine_params().to_string();
    return j;
  }

 private:
  Problem p_;
  std::string schedule_, plugin_dir_;
  Halide::Target target_;
  HostTensor src_, wei_, dst_;
  HalideConv conv_;
  Halide::Pipeline pipeline_;
  std::string algorithm_;
  double schedule_ms_ = 0, jit_ms_ = 0;
};

class HalideCpuBackend final : public Backend {
 public:
  explicit HalideCpuBackend(const BackendOptions& options)
      : schedule_(options.halide_schedule), plugin_dir_(options.halide_plugin_dir) {}

  std::string name() const override { return "halide_cpu"; }
  std::string device() const override { return "cpu"; }

  std::string library_version() const override {
#if defined(HALIDE_VERSION_MAJOR)
    const std::string version = std::to_string(HALIDE_VERSION_MAJOR) + "." +
                                std::to_string(HALIDE_VERSION_MINOR) + "." +
                                std::to_string(HALIDE_VERSION_PATCH);
#else
    const std::string version = "14.x";  // Halide 14's headers carry no version macros
#endif
    return "Halide " + version + " (target " + halide_host_target().to_string() + ")";
  }

  Support available() const override {
    if (schedule_ == "manual") return Support::yes();
    if (schedule_ == "manual_basic")
      return Support::no(
          "manual_basic is a halide_cuda schedule (its GPU schedule without shared memory); "
          "halide_cpu's hand-written schedule is manual");
    const Autoscheduler* a = find_autoscheduler(schedule_);
    if (!a)
      return Support::no("unknown Halide schedule '" + schedule_ +
                         "' (manual adams2019 mullapudi2016 li2018)");
    const std::string path = plugin_path(plugin_dir_, *a);
    if (!std::filesystem::exists(path))
      return Support::no(std::string("Halide autoscheduler plugin not found: ") + path);
    return Support::yes();
  }

  Support check_support(const Problem& p) const override {
    if (p.dtype == DataType::tf32)
      return Support::no("tf32 is a GPU tensor-core math mode; Halide on the CPU has none");
    if (const std::string why = halide_size_limit(p); !why.empty()) return Support::no(why);
    return Support::yes();
  }

  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<HalideCpuInstance>(p, data, schedule_, plugin_dir_);
  }

 private:
  std::string schedule_, plugin_dir_;
};

}  // namespace

std::unique_ptr<Backend> make_halide_cpu_backend(const BackendOptions& options) {
  return std::make_unique<HalideCpuBackend>(options);
}

}  // namespace conv
