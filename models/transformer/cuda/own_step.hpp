// own_cuda's persistent decode step (kernels v3, own_step_kernel.cu): the whole step (every
// layer's GEMVs and attention, the final norm and lm_head) as one kernel of one block a
// multiprocessor, its phases separated by a grid-wide barrier. Each block owns a fixed share of
// every GEMV's row pairs. One thread of the block streams its shares, phase after phase, through
// a ring of shared-memory slots with the copy engine (bulk copies completing on an mbarrier a
// slot); the stream never waits for the barriers (weights depend on nothing the step computes),
// so while the block waits for the other blocks or computes the attention, the next phases'
// weights keep arriving. The GEMV phases use the v2 GEMV's prologue (embedding, RMSNorm or
// LayerNorm of the input rows in shared memory; the norm's weights copied in before the barrier)
// and epilogues (own_gemv_device.cuh); the attention phase runs the split-KV attention's item
// (own_attention_device.cuh) with its split count chosen from the position at run time, the
// o-proj's prologue merges the splits. Batch 1 to 3 (the SIMT GEMV's range); sm_90.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "models/transformer/cuda/own_decode_kernels.hpp"

namespace transformer::cuda {

struct StepPhase {
  enum Kind : int { gemv = 0, attention = 1 };
  Kind kind = gemv;
  GemvArgs g;       // kind gemv
  AttentionArgs a;  // kind attention: chunk, partial_o/ml (room for 256 splits), counters
  // Set by plan_persistent_step for a GEMV: pairs a slot holds at most, warps a row pair.
  int chunk_pairs = 0, group_warps = 1;
};

// What the launch needs: slots of slot_bytes after desc_bytes of shared memory for the weight
// stream's descriptors and the norms' weight copies and aux_bytes for the staged input rows or
// the attention, blocks (one a multiprocessor).
struct StepPlan {
  int blocks = 0, slots = 0;
  std::size_t slot_bytes = 0, desc_bytes = 0, aux_bytes = 0;
  std::size_t shared() const { return desc_bytes + aux_bytes + std::size_t(slots) * slot_bytes; }
};

// The attention's splits at most (the partial buffers hold this many a head).
constexpr int kStepMaxSplits = 64;

// Whether the persistent step runs these phases (why not, where it does not), and its plan; fills
// each GEMV phase's chunk_pairs and group_warps. sms: the device's multiprocessors.
bool plan_persistent_step(std::vector<StepPhase>& phases, Elem e, int sms, StepPlan* plan,
                          const char** why);

// The step on s: phases (device memory, `count` of them), barrier (one unsigned in device memory;
// the launch zeroes it first with a memset on s), trace (null, or count x blocks x 4 words, zeroed
// by the launch: per phase and block, the globaltimer nanoseconds at which the phase began after
// its barrier, its input rows were staged (a GEMV; 0 for the attention) and its work ended, and
// the nanoseconds it waited for its weight pieces).
void persistent_step(const StepPhase* phases, int count, const StepPlan& plan, unsigned* barrier,
                     unsigned long long* trace, Elem e, cudaStream_t s);

}  // namespace transformer::cuda
