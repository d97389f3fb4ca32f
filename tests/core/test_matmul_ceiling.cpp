// Tests of core/matmul_ceiling.cpp: the best timed call counts, warm-ups are not timed, the
// record's keys (by backend, by device and dtype, the best backend of a device), a matmul that
// throws is recorded as failed and the others still measured.
#include "core/matmul_ceiling.hpp"

#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace bench {
namespace {

// A matmul whose calls take the given times in ms, in turn; counts its calls.
CeilingMatmul fake(const std::string& backend, const std::string& device, DataType dt, double flop,
                   std::vector<double> times_ms, int* calls) {
  return {backend, device, dt, "mm", flop, [times_ms, calls] {
            return std::function<double()>([times_ms, calls] {
              return times_ms[static_cast<std::size_t>((*calls)++) % times_ms.size()];
            });
          }};
}

TEST(MatmulCeiling, BestTimedCallAfterTheWarmups) {
  int calls = 0;
  // 2 warm-ups (0.5 ms each: faster than any timed call, so counting one would show), then 3
  // timed calls of 4, 2 and 8 ms: the best, 2 ms, gives 2e12 flop / 2 ms = 1000 TFLOP/s.
  const auto c = measure_matmul_ceiling(
      "m", {fake("a", "cuda", DataType::bf16, 2e12, {0.5, 0.5, 4, 2, 8}, &calls)}, {2, 3});
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(c["method"], "m");
  EXPECT_DOUBLE_EQ(c["by_backend"]["a"]["bf16"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(c["tflops"]["cuda"]["bf16"].get<double>(), 1000.0);
  EXPECT_FALSE(c.contains("failed"));
}

TEST(MatmulCeiling, BestBackendPerDeviceAndFailuresRecorded) {
  int a = 0, b = 0, d = 0;
  std::vector<CeilingMatmul> m = {fake("slow", "cpu", DataType::fp32, 1e12, {1000}, &a),
                                  fake("fast", "cpu", DataType::fp32, 1e12, {500}, &b),
                                  fake("gpu", "cuda", DataType::fp32, 1e12, {10}, &d)};
  m.push_back({"broken", "cuda", DataType::fp16, "mm", 1e12,
               []() -> std::function<double()> { throw std::runtime_error("no plan"); }});
  std::vector<std::string> seen;
  const auto c = measure_matmul_ceiling("m", m, {1, 2},
                                        [&](const CeilingMatmul& x) { seen.push_back(x.backend); });
  EXPECT_EQ(seen, (std::vector<std::string>{"slow", "fast", "gpu", "broken"}));
  EXPECT_DOUBLE_EQ(c["by_backend"]["slow"]["fp32"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(c["by_backend"]["fast"]["fp32"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(c["tflops"]["cpu"]["fp32"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(c["tflops"]["cuda"]["fp32"].get<double>(), 100.0);
  EXPECT_EQ(c["failed"]["broken"]["fp16"], "no plan");
  EXPECT_FALSE(c["tflops"]["cuda"].contains("fp16"));
}

}  // namespace
}  // namespace bench
