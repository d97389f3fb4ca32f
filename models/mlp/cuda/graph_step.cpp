#include "models/mlp/cuda/graph_step.hpp"

#include <functional>
#include <stdexcept>
#include <utility>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_services.hpp"

namespace mlp::cuda {

namespace {

std::unique_ptr<bench::Replay> capture(cudaStream_t s, const std::string& what,
                                       const std::function<void()>& body) {
  std::string why;
  std::unique_ptr<bench::Replay> g = bench::capture_cuda_graph(s, body, 1, &why);
  if (!g) throw std::runtime_error("CUDA graph of the " + what + ": " + why);
  return g;
}

}  // namespace

GraphStepInstance::GraphStepInstance(const MlpProblem& p, std::string name)
    : p_(p), name_(std::move(name)), timer_(stream_.get()), loss_sum_(1) {}

void GraphStepInstance::compile() {
  choose();
  call();  // warm-up: lazy set-up (cuBLASLt's, the kernels' attributes) outside the captures
  stream_.synchronize();
  graph_ = capture(stream_.get(), "call", [this] { call(); });
  forward_graph_ = capture(stream_.get(), "forward", [this] { forward(); });
}

double GraphStepInstance::loss() {
  float sum = 0;
  CUDA_CHECK(
      cudaMemcpyAsync(&sum, loss_sum_.data(), sizeof sum, cudaMemcpyDeviceToHost, stream_.get()));
  stream_.synchronize();
  return double(sum) / double(p_.batch_size * p_.dim);
}

PhaseTimes GraphStepInstance::time_phases(int steps) {
  PhaseTimes t;
  t.clock =
      "CUDA events: forward = a replay of a graph of the forward alone; backward = "
      "(a replay of the call's graph) / num_steps - forward";
  bench::Event e0, e1, e2;
  for (int i = 0; i < steps; ++i) {
    e0.record(stream_.get());
    forward_graph_->launch();
    e1.record(stream_.get());
    graph_->launch();
    e2.record(stream_.get());
    e2.synchronize();
    float f = 0, call = 0;
    CUDA_CHECK(cudaEventElapsedTime(&f, e0.get(), e1.get()));
    CUDA_CHECK(cudaEventElapsedTime(&call, e1.get(), e2.get()));
    t.forward_ms.push_back(f);
    t.backward_ms.push_back(call / float(p_.num_steps) - f);
  }
  return t;
}

std::unique_ptr<bench::Replay> GraphStepInstance::make_replay(bench::DeviceServices&, int,
                                                              std::string* why) {
  if (why) *why = name_ + " is a replayed graph already";
  return nullptr;
}

DataType GraphStepInstance::store_type() const {
  return p_.dtype == DataType::bf16 ? DataType::bf16 : DataType::fp32;
}

std::size_t GraphStepInstance::element_bytes() const {
  return std::size_t(bench::storage_bytes(store_type()));
}

Bytes GraphStepInstance::upload(const std::vector<float>& v) {
  const std::vector<unsigned char> bytes = bench::to_storage_bytes(v, store_type());
  Bytes buf(bytes.size());
  buf.upload_async(bytes.data(), stream_.get());
  stream_.synchronize();
  return buf;
}

std::vector<float> GraphStepInstance::download(const Bytes& buf, std::size_t count) {
  std::vector<unsigned char> bytes(buf.bytes());
  buf.download_async(bytes.data(), stream_.get());
  stream_.synchronize();
  std::vector<float> out(count);
  bench::from_storage_bytes(bytes.data(), count, store_type(), out.data());
  return out;
}

}  // namespace mlp::cuda
