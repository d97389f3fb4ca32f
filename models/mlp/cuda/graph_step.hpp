// What the MLP instances whose call is one replayed CUDA graph share (cublaslt_fused in
// baselines/mlp/, our own_cuda in own_mlp.cpp): the stream and its event timer, the captures of
// the call and of the forward alone (compile()), the phase timing, the loss sum and the uploads
// and downloads in the stored dtype (fp32 for fp32 and tf32, else bf16). The derived instance
// enqueues one call (call()) and one forward (forward()) on stream(); compile() runs choose()
// (untimed set-up such as algorithm heuristics), one call as warm-up outside the captures, then
// captures both.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cuda_raii.hpp"
#include "models/mlp/backend.hpp"

namespace mlp::cuda {

using Bytes = bench::DeviceBuffer<unsigned char>;

class GraphStepInstance : public Instance {
 public:
  // name: the backend's, for the messages.
  GraphStepInstance(const MlpProblem& p, std::string name);

  void compile() override;
  void run() override { graph_->launch(); }
  void sync() override { stream_.synchronize(); }
  // The mean of the last step's output, from loss_sum() (forward() writes it).
  double loss() override;
  // forward = a replay of the forward's graph; backward = (a replay of the call's graph) /
  // num_steps - forward, as libtorch_graph splits its replay.
  PhaseTimes time_phases(int steps) override;
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }
  std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices&, int,
                                             std::string* why) override;

 protected:
  virtual void choose() {}
  virtual void call() = 0;
  virtual void forward() = 0;

  const MlpProblem& problem() const { return p_; }
  cudaStream_t stream() const { return stream_.get(); }
  float* loss_sum() const { return loss_sum_.data(); }
  // The dtype parameters, activations and gradients are stored in: fp32 (fp32, tf32) or bf16.
  DataType store_type() const;
  std::size_t element_bytes() const;
  // v rounded to the stored dtype, in a new device buffer (synchronizes).
  Bytes upload(const std::vector<float>& v);
  // The first `count` stored values of buf, as float (synchronizes).
  std::vector<float> download(const Bytes& buf, std::size_t count);

 private:
  MlpProblem p_;
  std::string name_;
  bench::Stream stream_;
  bench::CudaEventTimer timer_;
  bench::DeviceBuffer<float> loss_sum_;
  std::unique_ptr<bench::Replay> graph_, forward_graph_;
};

}  // namespace mlp::cuda
