#include "models/transformer/registry.hpp"

#include <algorithm>

#include <ATen/Context.h>
#include <torch/version.h>

#include "core/error.hpp"
#include "core/torch/libtorch_common.hpp"
#if MYCONV_HAVE_TORCH_CUDA
#include "models/transformer/cuda/own_decode.hpp"
#endif

namespace transformer {

namespace {

std::unique_ptr<Implementation> eager_cpu(const RegistryOptions&) {
  return std::make_unique<Implementation>("libtorch_cpu", "cpu", DecodeMode::eager);
}
#if MYCONV_HAVE_TORCH_CUDA
std::unique_ptr<Implementation> eager_cuda(const RegistryOptions&) {
  return std::make_unique<Implementation>("libtorch_cuda", "cuda", DecodeMode::eager);
}
std::unique_ptr<Implementation> graph_cuda(const RegistryOptions&) {
  return std::make_unique<Implementation>("libtorch_graph", "cuda", DecodeMode::graph);
}
std::unique_ptr<Implementation> own_cuda(const RegistryOptions&) {
  return std::make_unique<Implementation>("own_cuda", "cuda", DecodeMode::own);
}
#define MYCONV_TF_CUDA(factory) factory, ""
#else
#define MYCONV_TF_CUDA(factory) nullptr, "needs a CUDA LibTorch: " MYCONV_WHY_NO_TORCH_CUDA
#endif

const bench::KnownBackend<Implementation, RegistryOptions> kKnown[] = {
    {"libtorch_cpu", "cpu", "prefill and every decode step as ATen calls over the static cache",
     eager_cpu, ""},
    {"libtorch_cuda", "cuda", "prefill and every decode step as ATen calls over the static cache",
     MYCONV_TF_CUDA(eager_cuda)},
    {"libtorch_graph", "cuda",
     "decode steps replayed from a CUDA graph captured per batch size over the static cache",
     MYCONV_TF_CUDA(graph_cuda)},
    {"own_cuda", "cuda",
     "decode steps of our own kernels (norm fused into the GEMVs, RoPE and the KV write in the "
     "QKV GEMV, split-KV attention, argmax) replayed from one CUDA graph; prefill on LibTorch",
     MYCONV_TF_CUDA(own_cuda)},
    {"hf_transformers", "cuda", "Hugging Face transformers in Python (external reference)", nullptr,
     "external reference: scripts/references/hf_reference.py runs it and writes the same result "
     "records"},
};

}  // namespace

bool cuda_available() {
  return at::hasCUDA();
}

std::string Implementation::library_version() const {
  return "LibTorch " TORCH_VERSION;
}

Support Implementation::available() const {
  if (device_ == "cuda" && !cuda_available())
    return Support::no("LibTorch " TORCH_VERSION " finds no CUDA device");
  return Support::yes();
}

Support Implementation::check_support(const Problem& p, const ModelConfig& cfg) const {
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
#if MYCONV_HAVE_TORCH_CUDA
  if (mode_ == DecodeMode::own) {
    std::string why;
    if (!own_decode_supported(cfg, bench::libtorch::scalar_type(p.dtype), p.mb, &why))
      return Support::no(why);
  }
#endif
  return Support::yes();
}

std::vector<RegistryEntry> make_registry() {
  return bench::make_entries(kKnown, RegistryOptions{});
}

std::vector<std::string> known_implementation_names() {
  std::vector<std::string> names;
  for (const auto& n : bench::names_of(kKnown))
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return names;
}

std::vector<const RegistryEntry*> select_implementations(const std::vector<RegistryEntry>& registry,
                                                         const std::vector<std::string>& names,
                                                         const std::string& device,
                                                         bool available_only,
                                                         std::deque<RegistryEntry>& elsewhere) {
  std::vector<const RegistryEntry*> selected;
  for (const auto& name : known_implementation_names()) {
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
