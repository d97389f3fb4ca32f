// The part of the Instance interface (conv/backend.hpp) that our conv CUDA instances
// (conv/cuda/*.cpp) answer alike: their output lies in a device buffer of the dtype's storage type,
// in the problem's layout, written on their stream (conv/cuda/device_output.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "conv/backend.hpp"
#include "conv/cuda/device_output.hpp"
#include "core/compare.hpp"

namespace conv {

// sync, read_output, device_output and output_dims of Derived, which holds the problem p_, its
// stream stream_ (bench::Stream) and its output dst_ (bench::DeviceBuffer<unsigned char>), and
// names DeviceOutputInstance<Derived> a friend.
template <class Derived>
class DeviceOutputInstance : public Instance {
 public:
  void sync() override { self().stream_.synchronize(); }

  void read_output(float* dst) override {
    read_output_of(self().dst_, self().p_, self().stream_.get(), dst);
  }
  std::optional<bench::DeviceValues> device_output() override {
    return device_values_of(self().dst_, self().p_, self().stream_.get());
  }

  std::vector<std::int64_t> output_dims() const override {
    const Problem& p = static_cast<const Derived&>(*this).p_;
    return {p.mb, p.oc, p.oh(), p.ow()};
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace conv
