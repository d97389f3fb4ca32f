#include "models/transformer/model_cache.hpp"

#include "core/error.hpp"
#include "models/transformer/bench.hpp"
#include "models/transformer/safetensors.hpp"

namespace transformer {

nlohmann::ordered_json model_record(const ModelSource& m) {
  return {{"name", m.config.name},
          {"source", m.description},
          {"arch", to_string(m.config.arch)},
          {"parameters", m.config.parameter_count()},
          {"config", to_hf_config(m.config)},
          {"attention", Model::attention_kind()}};
}

Model* ModelCache::get(std::size_t index, bench::DataType dt) {
  const Key key{index, dt};
  if (current_ && key_ == key) return current_.get();
  if (errors_.count(key)) return nullptr;
  if (current_) {
    current_.reset();
    release_cached_memory(device_);
  }
  const ModelSource& source = models_[index];
  try {
    const at::ScalarType st = dt == bench::DataType::fp16   ? at::kHalf
                              : dt == bench::DataType::bf16 ? at::kBFloat16
                                                            : at::kFloat;
    if (dt == bench::DataType::tf32) throw bench::Unsupported("tf32 is not a storage dtype");
    if (source.checkpoint_dir.empty()) {
      current_ = std::make_unique<Model>(Model::random(source.config, seed_, st, device_));
    } else {
      const Checkpoint ckpt(source.checkpoint_dir);
      current_ = std::make_unique<Model>(Model::from_checkpoint(source.config, ckpt, st, device_));
    }
    key_ = key;
    return current_.get();
  } catch (const bench::UsageError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    errors_[key] = "model not made: " + what.substr(0, what.find('\n'));
    return nullptr;
  }
}

}  // namespace transformer
