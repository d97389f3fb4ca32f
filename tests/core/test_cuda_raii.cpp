// The CUDA helpers of core/cuda/: checking macros, move-only owners, the event timer, device
// facts. The tests that need a GPU skip, with the reason, where none is present.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"

namespace bench {
namespace {

#define SKIP_WITHOUT_GPU()                              \
  do {                                                  \
    const CudaAvailability a = cuda_device_available(); \
    if (!a.ok) {                                        \
      GTEST_SKIP() << a.reason;                         \
    }                                                   \
  } while (0)

// These run with or without a GPU: a failing call must throw with its text, file and line.
TEST(CudaCheck, ThrowsWithTheCallTheFileAndTheLine) {
  try {
    CUDA_CHECK(cudaSetDevice(1 << 20));
    FAIL() << "cudaSetDevice(1 << 20) succeeded";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice(1 << 20)"), std::string::npos) << what;
    EXPECT_NE(what.find("test_cuda_raii.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda"), std::string::npos) << what;  // the error's name
  }
  (void)cudaGetLastError();
  CUDA_CHECK_NOTHROW(cudaSetDevice(1 << 20));  // prints, does not throw
  (void)cudaGetLastError();
}

TEST(CudaInfo, AvailabilityAlwaysAnswersAndGivesAReason) {
  const CudaAvailability a = cuda_device_available();
  if (!a.ok) {
    EXPECT_FALSE(a.reason.empty());
  }
  const nlohmann::ordered_json j = cuda_system_info();  // never throws
  EXPECT_EQ(j.at("available").get<bool>(), a.ok);
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
}

// Where the driver's library is missing (this repository's CI machines), the reason names the
// missing driver rather than the runtime's "driver version is insufficient".
TEST(CudaInfo, NoDriverIsNamedAsSuch) {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) {
    dlclose(driver);
    GTEST_SKIP() << "libcuda.so.1 loads here: an NVIDIA driver is installed";
  }
  const CudaAvailability a = cuda_device_available();
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("no NVIDIA driver found"), std::string::npos) << a.reason;
  EXPECT_EQ(a.reason.find("insufficient"), std::string::npos) << a.reason;
}

TEST(CudaInfo, DescribesEachDevice) {
  SKIP_WITHOUT_GPU();
  const nlohmann::ordered_json j = cuda_system_info();
  ASSERT_TRUE(j.contains("devices")) << j.dump();
  ASSERT_FALSE(j["devices"].empty());
  const auto& d = j["devices"][0];
  for (const char* key : {"name", "compute_capability", "sm_count", "l2_cache_bytes",
                          "memory_bytes", "theoretical_memory_bandwidth_gb_s"})
    EXPECT_TRUE(d.contains(key)) << key;
  EXPECT_GT(d["sm_count"].get<int>(), 0);
  EXPECT_GT(d["theoretical_memory_bandwidth_gb_s"].get<double>(), 0.0);
  EXPECT_FALSE(j["driver_version"].get<std::string>().empty());
}

TEST(DeviceBuffer, RoundTripsAndMoves) {
  SKIP_WITHOUT_GPU();
  Stream stream;
  std::vector<float> host(1000);
  std::iota(host.begin(), host.end(), 1.0f);
  DeviceBuffer<float> a(host.size());
  EXPECT_EQ(a.bytes(), host.size() * sizeof(float));
  a.upload_async(host.data(), stream.get());
  DeviceBuffer<float> b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  std::vector<float> back(host.size());
  b.download_async(back.data(), stream.get());
  stream.synchronize();
  EXPECT_EQ(back, host);

  b.fill_bytes_async(0xFF, stream.get());  // the poison of the backends: every float a NaN
  b.download_async(back.data(), stream.get());
  stream.synchronize();
  for (float v : back) ASSERT_TRUE(std::isnan(v));

  DeviceBuffer<float> empty;
  EXPECT_EQ(empty.data(), nullptr);
  empty = std::move(b);  // the old contents of `empty` (none) go to b, freed at scope end
  EXPECT_EQ(empty.size(), host.size());
}

TEST(CudaEventTimer, TimesWorkOnItsStream) {
  SKIP_WITHOUT_GPU();
  Stream stream;
  DeviceBuffer<unsigned char> buf(std::size_t(64) << 20);
  CudaEventTimer timer(stream.get());
  timer.start();
  for (int i = 0; i < 10; ++i) buf.fill_bytes_async(i, stream.get());
  timer.stop();
  const double ms = timer.elapsed().count();  // waits for the stop event
  EXPECT_GT(ms, 0.0);
  EXPECT_LT(ms, 10000.0);
  Event e(cudaEventDisableTiming);
  e.record(stream.get());
  e.synchronize();
  Stream moved(std::move(stream));
  EXPECT_EQ(stream.get(), nullptr);
  moved.synchronize();
}

}  // namespace
}  // namespace bench
