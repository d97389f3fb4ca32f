// The models of a run as the cases ask for them: each (model, dtype) made when first asked, one at
// a time (the previous one is released before the next is made, so that one model's weights are
// in memory), and each model's record in the results' system facts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "models/transformer/model.hpp"
#include "models/transformer/settings.hpp"

namespace transformer {

// A model's record in system.models (and system.model: the first).
nlohmann::ordered_json model_record(const ModelSource& m);

// Training makes the weights require gradients, so a model serves one task.
class ModelCache {
 public:
  ModelCache(const std::vector<ModelSource>& models, at::Device device, std::uint64_t seed)
      : models_(models), device_(device), seed_(seed) {}

  // The model, or nullptr with error() saying why it could not be made. A bad checkpoint is bad
  // input (bench::UsageError).
  Model* get(std::size_t index, bench::DataType dt);
  const std::string& error(std::size_t index, bench::DataType dt) { return errors_[{index, dt}]; }

 private:
  using Key = std::pair<std::size_t, bench::DataType>;
  const std::vector<ModelSource>& models_;
  at::Device device_;
  std::uint64_t seed_;
  std::unique_ptr<Model> current_;
  Key key_{};
  std::map<Key, std::string> errors_;
};

}  // namespace transformer
