// A batch of a LibTorch backend's calls captured into one at::cuda::CUDAGraph and replayed on its
// stream: the Replay (core/device.hpp) of every backend that runs ATen on CUDA. Header-only; only
// code built with a CUDA LibTorch includes it.
//
// ATen allocates each call's output from its caching allocator, which a plain stream capture does
// not allow: at::cuda::CUDAGraph captures into a private memory pool. The replayed graph writes
// the output tensor allocated during the capture's last call; launch() points the backend's output
// at it.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "core/device.hpp"

namespace bench::libtorch {

struct TorchGraphReplay final : Replay {
  TorchGraphReplay(c10::cuda::CUDAStream stream, int calls, at::Tensor* out)
      : stream(stream), n(calls), out(out) {}
  void launch() override {
    const c10::cuda::CUDAStreamGuard guard(stream);
    graph.replay();
    *out = output;
  }
  int calls() const override { return n; }

  c10::cuda::CUDAStream stream;
  int n;
  at::Tensor* out;  // the backend's output, pointed at the graph's after each launch
  at::cuda::CUDAGraph graph;
  at::Tensor output;
};

// `calls` calls of run() captured on stream; run() leaves its result in *out. Null, with the
// reason in *why, where the capture fails (the CUDA error is cleared).
template <class Run>
std::unique_ptr<Replay> capture_graph_replay(c10::cuda::CUDAStream stream, int calls,
                                             at::Tensor* out, Run&& run, std::string* why) {
  try {
    auto replay = std::make_unique<TorchGraphReplay>(stream, calls, out);
    {
      const c10::cuda::CUDAStreamGuard guard(stream);
      replay->graph.capture_begin();
      try {
        for (int i = 0; i < calls; ++i) run();
      } catch (...) {
        replay->graph.capture_end();
        throw;
      }
      replay->graph.capture_end();
    }
    replay->output = *out;
    return replay;
  } catch (const std::exception& e) {
    (void)cudaGetLastError();
    if (why) *why = std::string("at::cuda::CUDAGraph capture failed: ") + e.what();
    return nullptr;
  }
}

}  // namespace bench::libtorch
