#include "conv/data.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "core/compare.hpp"
#include "core/npy.hpp"

namespace conv {

std::uint64_t problem_seed(const Problem& p, std::uint64_t user_seed) {
  return bench::descriptor_seed(p.str(), user_seed);
}

bool host_check_forced(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return false;
  if (v == "host") return true;
  throw std::invalid_argument("MYCONV_CHECK='" + v + "': expected auto or host");
}

DeviceReferenceConv choose_reference(const char* value, bool uses_gpu, DeviceReferenceConv device) {
  const std::string v = value ? value : "";
  if (v == "cpu") return nullptr;
  if (v == "gpu") {
    if (!device)
      throw std::invalid_argument(
          "MYCONV_REFERENCE=gpu: this build has no GPU reference (no CUDA)");
    return device;
  }
  if (v.empty() || v == "auto") return uses_gpu ? device : nullptr;
  throw std::invalid_argument("MYCONV_REFERENCE='" + v + "': expected auto, cpu or gpu");
}

HostData make_host_data(const Problem& p, std::uint64_t user_seed, DeviceReferenceConv device) {
  HostData d;
  const std::uint64_t seed = problem_seed(p, user_seed);
  d.src.resize(static_cast<std::size_t>(p.src_elements()));
  d.wei.resize(static_cast<std::size_t>(p.wei_elements()));
  fill_random(d.src, seed, p.dtype);
  fill_random(d.wei, seed ^ 0x5851f42d4c957f2dULL, p.dtype);
  d.ref.resize(static_cast<std::size_t>(p.dst_elements()));
  if (device) {
    d.ref_fallback =
        device(p, d.src.data(), d.wei.data(), d.ref.data(), &d.device_check, &d.device_check_none);
    if (d.ref_fallback.empty()) d.ref_device = "cuda";
  }
  if (d.ref_device == "cpu") {
    d.device_check.reset();
    d.device_check_none.clear();
    reference_conv(p, d.src.data(), d.wei.data(), d.ref.data());
  }
  d.ref_rms = bench::rms(d.ref.data(), d.ref.size());
  return d;
}

double host_bytes_needed(const Problem& p) {
  const double f = 4, d = 8;
  return 2.0 * (static_cast<double>(p.src_elements() + p.wei_elements()) * f +
                static_cast<double>(p.dst_elements()) * (d + 2 * f));
}

bench::MemoryNeed memory_need(const Problem& p, bool on_gpu) {
  bench::MemoryNeed need;
  need.host_bytes = host_bytes_needed(p);
  if (on_gpu) need.device_bytes = p.bytes();
  return need;
}

void save_tensors(const std::string& dir, const Problem& p, const HostData& data) {
  const auto folder = std::filesystem::path(dir) / p.str();
  std::filesystem::create_directories(folder);
  bench::write_npy((folder / "src.npy").string(), data.src.data(), p.src_shape());
  bench::write_npy((folder / "wei.npy").string(), data.wei.data(), p.wei_shape());
  bench::write_npy((folder / "ref.npy").string(), data.ref.data(), p.dst_shape());
}

void save_output(const std::string& dir, const Problem& p, const std::string& backend,
                 const std::vector<float>& output) {
  bench::write_npy((std::filesystem::path(dir) / p.str() / (backend + ".npy")).string(),
                   output.data(), p.dst_shape());
}

}  // namespace conv
