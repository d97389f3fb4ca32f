// What every suite's cuBLASLt code says about its matmuls: the data and compute types of a dtype,
// and the configuration of the algorithm cuBLASLt's heuristic chose (id, tile, stages, split-K,
// numerical implementation), as record fields and as text. Shared by baselines/ops/cublaslt.cpp
// and conv/cuda/caffe_gemm.cpp.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace bench {

// The storage type cuBLASLt reads and writes for a dtype: fp32 and tf32 (FP32 storage) -> 32F,
// fp16 -> 16F, bf16 -> 16BF.
inline cudaDataType_t lt_data_type(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return CUDA_R_16F;
    case DataType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// tf32 -> CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores on FP32 storage); every other dtype ->
// CUBLAS_COMPUTE_32F: strict FP32 for fp32, FP32 accumulation for fp16 and bf16.
inline cublasComputeType_t lt_compute_type(DataType dt) {
  return dt == DataType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
inline const char* lt_compute_type_name(DataType dt) {
  return dt == DataType::tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F";
}

// One configuration attribute of an algorithm; V{} where cuBLASLt does not answer.
template <typename V>
V lt_algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  V v{};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &written) !=
      CUBLAS_STATUS_SUCCESS)
    return V{};
  return v;
}

// The algorithm's numerical implementation (CUBLASLT_NUMERICAL_IMPL_FLAGS_*: FMA or tensor-core
// MMA, accumulator and input types); 0 where cuBLASLt does not answer.
inline std::uint64_t lt_numerical_impl_flags(const cublasLtMatmulAlgo_t& algo) {
  cublasLtNumericalImplFlags_t flags = 0;
  std::size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags,
                                        sizeof flags, &written) != CUBLAS_STATUS_SUCCESS)
    return 0;
  return flags;
}

// cublasLtMatmulTile_t's names for its first ids (the two-dimensional tiles; the enum's values
// are fixed by the ABI), "id N" past them.
inline std::string lt_tile_name(std::uint32_t id) {
  static const char* const kTiles[] = {
      "undefined", "8x8",    "8x16",   "16x8",   "8x32",    "16x16",   "32x8",    "8x64",
      "16x32",     "32x16",  "64x8",   "32x32",  "32x64",   "64x32",   "32x128",  "64x64",
      "128x32",    "64x128", "128x64", "64x256", "128x128", "256x64",  "64x512",  "128x256",
      "256x128",   "512x64", "64x96",  "96x64",  "96x128",  "128x160", "160x128", "192x128",
      "128x192",   "128x96", "32x256", "256x32"};
  return id < std::size(kTiles) ? kTiles[id] : "id " + std::to_string(id);
}

// cublasLtMatmulStages_t: ids 1 to 24 are 16, 32, 64, 128 elements by 1 to 6 stages.
inline std::string lt_stages_name(std::uint32_t id) {
  if (id == 0) return "undefined";
  if (id <= 24)
    return std::to_string(16u << ((id - 1) / 6)) + "x" + std::to_string((id - 1) % 6 + 1);
  return "id " + std::to_string(id);
}

// The configuration of a heuristic's result, as record fields: algo_id, tile, stages, split_k,
// reduction_scheme, cta_swizzling, cluster_shape_id, workspace_bytes, waves.
inline nlohmann::ordered_json lt_algo_json(const cublasLtMatmulHeuristicResult_t& h) {
  const cublasLtMatmulAlgo_t& a = h.algo;
  return {
      {"algo_id", lt_algo_config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_ID)},
      {"tile", lt_tile_name(lt_algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID))},
      {"stages", lt_stages_name(lt_algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID))},
      {"split_k", lt_algo_config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
      {"reduction_scheme", lt_algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)},
      {"cta_swizzling", lt_algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)},
      {"cluster_shape_id", lt_algo_config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)},
      {"workspace_bytes", h.workspaceSize},
      {"waves", h.wavesCount}};
}

// "algo 21, tile 128x128, stages 64x3, split-k 1".
inline std::string lt_algo_text(const cublasLtMatmulHeuristicResult_t& h) {
  const nlohmann::ordered_json j = lt_algo_json(h);
  return "algo " + std::to_string(j["algo_id"].get<int>()) + ", tile " +
         j["tile"].get<std::string>() + ", stages " + j["stages"].get<std::string>() +
         ", split-k " + std::to_string(j["split_k"].get<int>());
}

}  // namespace bench
