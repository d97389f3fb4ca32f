#include "models/transformer/backend.hpp"

#include <algorithm>

#include <ATen/Context.h>
#include <torch/version.h>

#include "core/error.hpp"

namespace transformer {

bool cuda_available() {
  return at::hasCUDA();
}

std::string Backend::library_version() const {
  return "LibTorch " TORCH_VERSION;
}

Support Backend::available() const {
  if (device_ == "cuda" && !cuda_available())
    return Support::no("LibTorch " TORCH_VERSION " finds no CUDA device");
  return Support::yes();
}

Support Backend::check_support(const Problem& p, const ModelConfig& cfg) const {
  if (p.dtype == bench::DataType::tf32)
    return Support::no("tf32 is a math mode, not a storage dtype: use fp32, fp16 or bf16");
  const std::int64_t positions = p.task == Task::train ? p.in : p.in + p.out;
  if (positions > cfg.max_position_embeddings)
    return Support::no(std::to_string(positions) + " positions exceed the model's " +
                       std::to_string(cfg.max_position_embeddings) + " (max_position_embeddings)");
  if (p.task == Task::train) {
    if (mode_ == DecodeMode::graph || mode_ == DecodeMode::own)
      return Support::no(name_ +
                         " captures decode steps; training runs in libtorch_cpu or libtorch_cuda");
    if (p.in < 2) return Support::no("training needs sequences of 2 tokens at least");
  }
  return Support::yes();
}

std::vector<const RegistryEntry*> select_implementations(const std::vector<RegistryEntry>& registry,
                                                         const std::vector<std::string>& names,
                                                         const std::string& device,
                                                         bool available_only,
                                                         std::deque<RegistryEntry>& elsewhere) {
  std::vector<const RegistryEntry*> selected;
  std::vector<std::string> known;  // the registry's names in its order, each once
  for (const auto& e : registry)
    if (std::find(known.begin(), known.end(), e.name) == known.end()) known.push_back(e.name);
  for (const auto& name : known) {
    const bool asked = std::find(names.begin(), names.end(), name) != names.end();
    const RegistryEntry* entry = nullptr;
    bool other_device = false;
    for (const auto& e : registry)
      if (e.name == name) {
        if (e.device == device)
          entry = &e;
        else
          other_device = true;
      }
    if (names.empty() ? !(entry && entry->backend) : !asked) continue;
    if (available_only && !(entry && bench::runnable_here(*entry))) continue;
    if (entry) {
      selected.push_back(entry);
    } else if (other_device) {
      elsewhere.push_back({name, device, "", nullptr, name + " does not run on " + device});
      selected.push_back(&elsewhere.back());
    }
  }
  if (available_only && selected.empty())
    throw bench::UsageError("--available-only: none of the implementations asked can run on " +
                            device + " here (--list-backends says why)");
  return selected;
}

c10::Device resolve_device(const std::string& d, const std::function<void(int)>& select_cuda) {
  if (d == "cpu") return c10::Device(c10::kCPU);
  std::string index = d;
  if (d.rfind("cuda:", 0) == 0) index = d.substr(5);
  const bool numeric =
      !index.empty() && index.size() <= 4 &&
      std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (d == "cuda" || d == "gpu" || numeric) {
    if (!cuda_available())
      throw bench::UsageError(
          "--device " + d + ": LibTorch " TORCH_VERSION " finds no CUDA device" +
          std::string(MYCONV_HAVE_TORCH_CUDA ? "" : " (this build is CPU-only)"));
    const int n = numeric ? std::stoi(index) : 0;
    const int count = static_cast<int>(at::getNumGPUs());
    if (n >= count)
      throw bench::UsageError("--device " + d + ": no CUDA device " + std::to_string(n) + " (" +
                              std::to_string(count) + " here)");
    select_cuda(n);
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(n));
  }
  if (d == "auto") return cuda_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  throw bench::UsageError("--device: '" + d +
                          "' is not a device (auto, cpu, cuda, or a CUDA index N)");
}

}  // namespace transformer
