// Shared-memory matrix descriptors of Hopper's warpgroup MMA (wgmma, sm_90a), host and device, so
// that tests/core/test_gemm_config.cpp checks them on the CPU against a model of the layouts (PTX
// ISA "Matrix Descriptor Format" and "Shared Memory Matrix Layout", the canonical layouts as
// CUTLASS's cute/atom/mma_traits_sm90_gmma.hpp writes them). Users: core/cuda/hopper_ptx.cuh's
// kernels, conv's variant 10 (conv/cuda/wgmma_conv.cu) and the GEMM engine (core/cuda/gemm/).
//
// Only the 128-byte swizzle is used: tiles are rows of 128 bytes (64 16-bit or 32 32-bit values),
// 8-row groups of 1024 bytes, 1024-byte aligned, with 16-byte chunk c of row r stored at chunk
// c ^ (r % 8) of the row, which is what the copy engine's CU_TENSOR_MAP_SWIZZLE_128B writes.
//   - K-major operand (A; conv's B): the rows are m (or n), k contiguous in the row. The stride
//     byte offset (SBO) is the distance between 8-row groups (1024); the leading byte offset is
//     unused with a swizzle (1 by convention). Moving along k inside the 128-byte row adds bytes to
//     the start address (the swizzle applies to the absolute address).
//   - MN-major operand (the matmul's row-major B[k][n] with wgmma's transpose bit): the rows are
//     k, n contiguous in the row, so a 128-byte row holds 64 n of one k. SBO is the distance
//     between groups of 8 k rows (1024), the leading byte offset (LBO) the distance between
//     64-wide column blocks along n (one tensor-copy box of 64 n x BK k rows: BK * 128 bytes).
#pragma once

#include <cstdint>

#include "core/cuda/mma_index.hpp"  // BENCH_HD

namespace bench::sm90 {

inline constexpr std::uint32_t kSw128RowBytes = 128;
inline constexpr std::uint32_t kSw128GroupBytes = 1024;  // 8 rows: one swizzle atom

// The fields of a descriptor with 128-byte swizzle (layout type 1 in bits 62-63): start address
// (bits 0-13), LBO (16-29) and SBO (32-45), each in 16-byte units; base offset 0 (bits 49-51: the
// tiles are 1024-byte aligned).
BENCH_HD constexpr std::uint64_t sw128_desc_fields(std::uint32_t addr, std::uint32_t lbo,
                                                   std::uint32_t sbo) {
  return std::uint64_t((addr & 0x3FFFF) >> 4) | (std::uint64_t((lbo & 0x3FFFF) >> 4) << 16) |
         (std::uint64_t((sbo & 0x3FFFF) >> 4) << 32) | (std::uint64_t(1) << 62);
}
// K-major operand at shared address addr.
BENCH_HD constexpr std::uint64_t sw128_desc(std::uint32_t addr) {
  return sw128_desc_fields(addr, 16, kSw128GroupBytes);
}
// MN-major operand at shared address addr whose 64-wide column blocks are block_bytes apart.
BENCH_HD constexpr std::uint64_t sw128_mn_desc(std::uint32_t addr, std::uint32_t block_bytes) {
  return sw128_desc_fields(addr, block_bytes, kSw128GroupBytes);
}

// Where the 128-byte swizzle puts byte `offset` of a 1024-byte aligned tile.
BENCH_HD constexpr std::uint32_t sw128_address(std::uint32_t offset) {
  return offset ^ (((offset >> 7) & 7) << 4);
}

}  // namespace bench::sm90
