// core/memory_fit.hpp: a case's estimate against the memory there, the readable byte counts, the
// record of a case that does not fit, and the gate that refuses an invocation of which no case
// fits.
#include "core/memory_fit.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace bench {
namespace {

TEST(MemoryFit, BytesAreReadable) {
  EXPECT_EQ(bytes_text(100), "100 B");
  EXPECT_EQ(bytes_text(1536), "1.5 KiB");
  EXPECT_EQ(bytes_text(3.0 * (1 << 30)), "3.0 GiB");
  EXPECT_EQ(bytes_text(200.0 * (1 << 20)), "200 MiB");
  // Past 1024 TiB an exponent, never a long run of digits.
  EXPECT_EQ(bytes_text(1e300), "9.09e+287 TiB");
}

TEST(MemoryFit, ShortfallNamesBothNumbers) {
  MemoryAvailable a;
  a.host_bytes = 1 << 30;
  a.device_bytes = 2.0 * (1 << 30);
  EXPECT_EQ(memory_shortfall({1000, 0}, a), "");
  EXPECT_EQ(memory_shortfall({1000, 2.0 * (1 << 30)}, a), "");
  EXPECT_EQ(memory_shortfall({2.0 * (1 << 30), 0}, a),
            "needs about 2.0 GiB of host memory (estimate), 1.0 GiB available (MemAvailable)");
  EXPECT_EQ(memory_shortfall({1, 3.0 * (1 << 30)}, a),
            "needs about 3.0 GiB of device memory (estimate), 2.0 GiB available (cudaMemGetInfo)");
  // Unknown memory (0) is not checked.
  EXPECT_EQ(memory_shortfall({1e30, 1e30}, MemoryAvailable{}), "");
}

TEST(MemoryFit, UnfitCaseIsRecordedUnsupported) {
  MemoryAvailable a;
  a.host_bytes = 1000;
  Result identity;
  identity.backend = "onednn_cpu";
  const MemoryNeed need{5000, 0};
  const Result r = memory_unsupported(identity, memory_shortfall(need, a), need, a);
  EXPECT_EQ(r.status, Status::unsupported);
  EXPECT_EQ(r.reason.rfind("does not fit in memory: needs about", 0), 0u) << r.reason;
  EXPECT_EQ(r.extra["memory"]["host_bytes_estimate"].get<double>(), 5000);
  EXPECT_EQ(r.extra["memory"]["host_bytes_available"].get<double>(), 1000);
}

TEST(MemoryFit, GateRefusesOnlyWhenNothingFits) {
  MemoryAvailable a;
  a.host_bytes = 1000;
  MemoryGate some(a);
  EXPECT_EQ(some.check("small", {10, 0}), "");
  EXPECT_NE(some.check("big", {1e6, 0}), "");
  EXPECT_NO_THROW(some.refuse_if_nothing_fits());

  MemoryGate none(a);
  none.check("bigger", {1e9, 0});
  none.check("big", {1e6, 0});
  try {
    none.refuse_if_nothing_fits();
    ADD_FAILURE() << "no case fits, yet no UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("'big' does not fit in memory: needs about 977 KiB", 0), 0u) << what;
    EXPECT_NE(what.find("no case of this invocation fits"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(MemoryGate(a).refuse_if_nothing_fits());  // no case checked
}

TEST(MemoryFit, LimitFromTheEnvironment) {
  ::setenv("MYCONV_MEMORY_LIMIT_BYTES", "4096", 1);
  MemoryAvailable a = host_memory_available();
  EXPECT_EQ(a.host_bytes, 4096);
  EXPECT_EQ(a.host_source, "MYCONV_MEMORY_LIMIT_BYTES");
  a.device_bytes = 1e9;
  apply_memory_limit_to_device(a);
  EXPECT_EQ(a.device_bytes, 4096);
  for (const char* bad : {"-1", "0", "1e9", "x", "99999999999999999999999"}) {
    ::setenv("MYCONV_MEMORY_LIMIT_BYTES", bad, 1);
    EXPECT_THROW(host_memory_available(), UsageError) << bad;
  }
  ::unsetenv("MYCONV_MEMORY_LIMIT_BYTES");
  EXPECT_EQ(host_memory_available().host_source, "MemAvailable");
}

}  // namespace
}  // namespace bench
