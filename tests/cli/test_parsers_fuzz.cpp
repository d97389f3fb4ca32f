// Randomized property tests of the parsers (descriptors of the conv, op and MLP suites, shape
// files, safetensors headers): random and mutated text never crashes, hangs or throws anything but
// bench::UsageError, and every descriptor that parses round-trips: parse(p.str_with_name()) is p,
// and printing it again gives the same text. Sizes whose counts would overflow 64 bits are
// refused, never counted negative; a shape file that is a FIFO or a folder is refused without
// being opened; a safetensors file is read only when its tensors tile its data section; an error
// echoes a long input cut short. The command lines are fuzzed through the binaries
// (tests/cli/test_fuzz.py).
//
// Fixed seeds, so that a failure reproduces; MYCONV_FUZZ_ITERATIONS scales the counts (e.g. 100
// for a long run) and MYCONV_FUZZ_SEED changes the seed. The sanitizer job
// (scripts/checks/sanitize.sh) runs these under AddressSanitizer and UndefinedBehaviorSanitizer
// too.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "conv/data.hpp"
#include "conv/problem.hpp"
#include "conv/settings.hpp"
#include "core/error.hpp"
#include "models/mlp/data.hpp"
#include "models/mlp/problem.hpp"
#include "models/transformer/safetensors.hpp"
#include "ops/data.hpp"
#include "ops/problem.hpp"
#include "tests/common/temp_dir.hpp"

namespace conv {
namespace {

std::uint64_t seed() {
  const char* s = std::getenv("MYCONV_FUZZ_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20261123;
}

int scaled(int n) {
  const char* s = std::getenv("MYCONV_FUZZ_ITERATIONS");
  return s ? n * std::max(1, std::atoi(s)) : n;
}

class Fuzzer {
 public:
  explicit Fuzzer(std::uint64_t seed) : rng_(seed) {}

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return pick(0, 99) < percent; }

  // A descriptor in benchdnn's grammar with random tokens in a random order, random '_'
  // separators, sometimes written defaults, output sizes, depth, dtype, layout and a name. Most
  // are valid; some are not (a kernel larger than the input, say), which is fine: the property is
  // about what parses.
  std::string descriptor() {
    std::vector<std::string> tokens;
    auto num = [&](const char* key, int lo, int hi) {
      tokens.push_back(key + std::to_string(pick(lo, hi)));
    };
    const int g = chance(30) ? pick(1, 4) : 1;
    if (g > 1 || chance(10)) tokens.push_back("g" + std::to_string(g));
    if (chance(70)) num("mb", 1, 8);
    tokens.push_back("ic" + std::to_string(g * pick(1, 6)));
    tokens.push_back("oc" + std::to_string(g * pick(1, 6)));
    const bool width = chance(70), height = !width || chance(80), depth = chance(15);
    for (const char* axis : {"h", "w", "d"}) {
      const bool on = axis[0] == 'h' ? height : axis[0] == 'w' ? width : depth;
      if (!on) continue;
      const std::string a = axis;
      const int i = pick(1, 40), k = pick(1, 7);
      tokens.push_back("i" + a + std::to_string(i));
      tokens.push_back("k" + a + std::to_string(k));
      if (chance(40)) tokens.push_back("s" + a + std::to_string(pick(1, 4)));
      if (chance(50)) tokens.push_back("p" + a + std::to_string(pick(0, 4)));
      if (chance(30)) tokens.push_back("d" + a + std::to_string(pick(0, 3)));
      if (chance(25)) tokens.push_back("o" + a + std::to_string(pick(1, 45)));
    }
    std::shuffle(tokens.begin(), tokens.end(), rng_);
    std::string s;
    for (const auto& t : tokens) s += t + (chance(20) ? "_" : "");
    if (chance(30)) s += "dt" + std::string(chance(50) ? "fp16" : "bf16");
    if (chance(20)) s += chance(50) ? "nhwc" : "nchw";
    if (chance(40)) s += "n\"" + name() + "\"";
    return s;
  }

  // Any characters but '"', spaces, '#', ':' and '*N' included.
  std::string name() {
    static const std::string alphabet =
        "abcxyz_:*#- 0123456789./\\()[]{}'\t\xc3\xa9";  // a UTF-8 e-acute too
    std::string s;
    for (int n = pick(0, 12); n > 0; --n)
      s += alphabet[static_cast<std::size_t>(pick(0, static_cast<int>(alphabet.size()) - 1))];
    return s;
  }

  // Deletes, inserts, replaces, duplicates or truncates at random places.
  std::string mutate(std::string s) {
    static const char kChars[] = "gmbicohkwspdt_n\"0123456789-+ #\r\n\0\xff:*chw";
    static const std::string alphabet(kChars, sizeof kChars - 1);  // with the NUL
    for (int m = pick(1, 4); m > 0; --m) {
      const std::size_t at = s.empty() ? 0 : static_cast<std::size_t>(pick(0, int(s.size())));
      const char c = alphabet[static_cast<std::size_t>(pick(0, int(alphabet.size()) - 1))];
      switch (pick(0, 4)) {
        case 0:
          if (!s.empty() && at < s.size()) s.erase(at, 1);
          break;
        case 1:
          s.insert(at, 1, c);
          break;
        case 2:
          if (at < s.size()) s[at] = c;
          break;
        case 3:
          s.insert(at, s.substr(at / 2, static_cast<std::size_t>(pick(0, 8))));
          break;
        default:
          s.resize(at);
      }
    }
    if (chance(2)) s += std::string(static_cast<std::size_t>(pick(1, 20)), '9');  // huge numbers
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

// The property: parses into a valid problem that round-trips, or throws UsageError.
// Returns whether it parsed.
bool check_descriptor(const std::string& text) {
  Problem p;
  try {
    p = parse_problem(text);
  } catch (const bench::UsageError&) {
    return false;
  }
  EXPECT_EQ(p.validate(), "") << text;
  const std::string printed = p.str_with_name();
  Problem q;
  try {
    q = parse_problem(printed);
  } catch (const bench::UsageError& e) {
    ADD_FAILURE() << "'" << text << "' prints as '" << printed
                  << "', which does not parse: " << e.what();
    return true;
  }
  EXPECT_EQ(q.str_with_name(), printed) << text;
  EXPECT_EQ(q.name, p.name) << text;
  EXPECT_EQ(q.oh(), p.oh()) << text;
  EXPECT_EQ(q.ow(), p.ow()) << text;
  EXPECT_EQ(q.od(), p.od()) << text;
  EXPECT_EQ(q.unsupported_reason(), p.unsupported_reason()) << text;
  return true;
}

TEST(ParserFuzz, GeneratedDescriptorsRoundTrip) {
  Fuzzer f(seed());
  int parsed = 0;
  const int n = scaled(20000);
  for (int i = 0; i < n && !HasFailure(); ++i) parsed += check_descriptor(f.descriptor());
  // Most generated descriptors are valid: the property was exercised, not skipped.
  EXPECT_GT(parsed, n / 3);
}

TEST(ParserFuzz, MutatedDescriptorsParseOrSayWhy) {
  Fuzzer f(seed() + 1);
  std::vector<std::string> corpus = {"mb2ic4ih64oc8kh5",
                                     "g32mb1ic32ih112oc32kh3ph1dtbf16nhwc",
                                     "mb2_ic3oc48_ih227oh111kh5sh2ph1dh1_n\"dilated_conv:18\"",
                                     "g1mb50ic3iw224oc64ow112kw7sw2pw3n\"conv1d:2\"",
                                     "mb2ic4id5ih6iw7oc8kd3kh3kw3",
                                     "mb20ic4ih8oc6oh5kh3ph1dh1"};
  for (int i = 0; i < 50; ++i) corpus.push_back(f.descriptor());
  int parsed = 0;
  const int n = scaled(100000);
  for (int i = 0; i < n && !HasFailure(); ++i) {
    const std::string& base = corpus[static_cast<std::size_t>(f.pick(0, int(corpus.size()) - 1))];
    parsed += check_descriptor(f.mutate(base));
  }
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, n);
}

TEST(ParserFuzz, RandomShapeFilesReadOrSayWhy) {
  Fuzzer f(seed() + 2);
  const std::string path = testing::TempDir() + "/fuzz_shapes.txt";
  int read = 0;
  const int n = scaled(300);
  for (int i = 0; i < n && !HasFailure(); ++i) {
    std::string text;
    for (int lines = f.pick(0, 12); lines > 0; --lines) {
      switch (f.pick(0, 6)) {
        case 0:
          text += "# " + f.name();
          break;
        case 1:
          text += "--dir=FWD_B " + f.descriptor();
          break;
        case 2:
          text += f.mutate(f.descriptor());
          break;
        case 3:
          text += "  " + f.descriptor() + "\t" + f.descriptor() + "  # two";
          break;
        default:
          text += f.descriptor();
      }
      text += f.chance(10) ? "\r\n" : "\n";
    }
    std::ofstream(path, std::ios::binary) << text;
    Settings s;
    s.shape_files = {path};
    s.dtypes = {DataType::fp32, DataType::bf16};
    std::vector<std::string> notes;
    std::vector<Problem> problems;
    try {
      problems = expand(s, &notes);
    } catch (const bench::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
      continue;
    }
    ++read;
    for (const auto& p : problems) {
      EXPECT_EQ(parse_problem(p.str_with_name()).str_with_name(), p.str_with_name());
      EXPECT_TRUE(p.dtype == DataType::fp32 || p.dtype == DataType::bf16 ||
                  p.dtype == DataType::fp16);
    }
    for (const auto& note : notes) EXPECT_EQ(note.find('\n'), std::string::npos) << note;
  }
  EXPECT_GT(read, 0);
  std::remove(path.c_str());
}

TEST(ParserFuzz, MutatedOpDescriptorsParseOrSayWhy) {
  Fuzzer f(seed() + 3);
  const std::vector<std::string> corpus = {"add:4096x4096",
                                           "add:4096x4096+1x4096:fp16",
                                           "sum:4x512x896:axis=-1",
                                           "max:4x512x896:axis=0,1",
                                           "softmax:4x512x896:bf16",
                                           "matmul:b8m512n512k64:tf32",
                                           "permute:8x16x32:perm=2,0,1",
                                           "concat:64x64:inputs=3:axis=1",
                                           "gelu_tanh:1024:n\"a:b c\"",
                                           "transpose:8x512x896"};
  int parsed = 0;
  const int n = scaled(50000);
  for (int i = 0; i < n && !HasFailure(); ++i) {
    const std::string text =
        f.mutate(corpus[static_cast<std::size_t>(f.pick(0, int(corpus.size()) - 1))]);
    ops::Problem p;
    try {
      p = ops::parse_problem(text);
    } catch (const bench::UsageError&) {
      continue;
    }
    ++parsed;
    EXPECT_EQ(p.validate(), "") << text;
    const std::string printed = p.str_with_name();
    try {
      EXPECT_EQ(ops::parse_problem(printed).str_with_name(), printed) << text;
    } catch (const bench::UsageError& e) {
      ADD_FAILURE() << "'" << text << "' prints as '" << printed
                    << "', which does not parse: " << e.what();
    }
  }
  EXPECT_GT(parsed, 0);
}

// Fields up to 2^40 each (the largest a descriptor takes): a tensor whose element count would
// overflow 64 bits is refused with a UsageError; every problem that parses has positive counts,
// finite work and memory figures, and an unsupported reason without a negative number.
TEST(ParserFuzz, HugeSizesCountOrSayWhy) {
  Fuzzer f(seed() + 4);
  auto big = [&] {
    return std::to_string(f.chance(50) ? (std::int64_t(1) << f.pick(0, 40)) + f.pick(0, 3)
                                       : std::int64_t(f.pick(1, 9)));
  };
  int parsed = 0, refused = 0;
  const int n = scaled(5000);
  for (int i = 0; i < n && !HasFailure(); ++i) {
    const std::string text = "mb" + big() + "ic" + big() + "ih" + big() + "iw" + big() + "oc" +
                             big() + "kh1kw1" + (f.chance(30) ? "g" + big() : "");
    Problem p;
    try {
      p = parse_problem(text);
    } catch (const bench::UsageError& e) {
      ++refused;
      EXPECT_LT(std::string(e.what()).size(), 400u) << e.what();
      continue;
    }
    ++parsed;
    EXPECT_GT(p.src_elements(), 0) << text;
    EXPECT_GT(p.wei_elements(), 0) << text;
    EXPECT_GT(p.dst_elements(), 0) << text;
    EXPECT_TRUE(std::isfinite(p.flops()) && p.flops() > 0) << text;
    const bench::MemoryNeed need = memory_need(p, true);
    EXPECT_TRUE(std::isfinite(need.host_bytes) && need.host_bytes > 0) << text;
    EXPECT_EQ(p.unsupported_reason().find("has -"), std::string::npos) << p.unsupported_reason();
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(refused, 0);  // some products past 64 bits were generated and refused

  // The op suite: 8 dimensions of up to 2^40 each.
  for (int i = 0; i < n && !HasFailure(); ++i) {
    std::string text = "add:" + big();
    for (int d = f.pick(0, 7); d > 0; --d) text += "x" + big();
    ops::Problem p;
    try {
      p = ops::parse_problem(text);
    } catch (const bench::UsageError&) {
      continue;
    }
    EXPECT_GT(p.input_elements(), 0) << text;
    EXPECT_GT(p.output_elements(), 0) << text;
    EXPECT_TRUE(std::isfinite(ops::memory_need(p, true).host_bytes)) << text;
  }
}

// A descriptor of 90 kB in every suite: the error echoes it cut short.
TEST(ParserFuzz, LongInputIsCutInTheMessage) {
  const std::string conv_text = "mb1" + [] {
    std::string s;
    for (int i = 0; i < 30000; ++i) s += "ic1";
    return s;
  }();
  const std::string ops_text = "add:" + std::string(90000, '7');
  const std::string mlp_text = "mlp:d" + std::string(90000, '1');
  for (const auto& [what, parse] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"conv", [&] { parse_problem(conv_text); }},
           {"ops", [&] { ops::parse_problem(ops_text); }},
           {"mlp", [&] { mlp::parse_problem(mlp_text); }}}) {
    try {
      parse();
      ADD_FAILURE() << what << ": a 90 kB descriptor parsed";
    } catch (const bench::UsageError& e) {
      const std::string msg = e.what();
      EXPECT_LT(msg.size(), 400u) << what << ": " << msg.substr(0, 400);
      EXPECT_NE(msg.find("..."), std::string::npos) << what << ": " << msg;
    }
  }
}

// A shape file that is a FIFO or a folder is refused at once: reading a FIFO would block.
TEST(ParserFuzz, ShapeFilesThatAreNoFilesAreRefused) {
  bench::testing::TempDir tmp;
  const std::string fifo = tmp.path().string() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, tmp.path().string()}) {
    Settings s;
    s.shape_files = {path};
    try {
      expand(s);
      ADD_FAILURE() << path << " was read";
    } catch (const bench::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
}

TEST(ParserFuzz, MutatedMlpDescriptorsParseOrSayWhy) {
  Fuzzer f(seed() + 5);
  const std::vector<std::string> corpus = {"mlp:d128l16b128s5", "mlp:d4096l8b4096s5:bf16",
                                           "mm:n1024:tf32", "mlp:d16l2b8s1:n\"base\"",
                                           "mlp:d131072l1048576b1048576s1048576"};
  int parsed = 0;
  const int n = scaled(5000);
  for (int i = 0; i < n && !HasFailure(); ++i) {
    const std::string text =
        f.mutate(corpus[static_cast<std::size_t>(f.pick(0, int(corpus.size()) - 1))]);
    mlp::Problem p;
    try {
      p = mlp::parse_problem(text);
    } catch (const bench::UsageError&) {
      continue;
    }
    ++parsed;
    const std::string printed = mlp::str_with_name(p);
    EXPECT_EQ(mlp::str_with_name(mlp::parse_problem(printed)), printed) << text;
    for (bool gpu : {false, true}) {
      const bench::MemoryNeed need = mlp::memory_need(p, gpu);
      EXPECT_TRUE(std::isfinite(need.host_bytes) && need.host_bytes > 0) << text;
      EXPECT_TRUE(std::isfinite(need.device_bytes) && need.device_bytes >= 0) << text;
    }
  }
  EXPECT_GT(parsed, 0);
}

// Random safetensors headers: tensors placed end to end, overlapping, with gaps, past the data,
// with shapes whose products overflow. The reader takes a file only when its tensors tile the
// data section exactly and each tensor's bytes match its shape; else a UsageError, which names
// the tensors for an overlap or a gap.
TEST(ParserFuzz, SafetensorsLoadOnlyWhenTensorsTileTheData) {
  Fuzzer f(seed() + 6);
  bench::testing::TempDir tmp;
  const std::string path = tmp.path().string() + "/model.safetensors";
  int loaded = 0, overlaps = 0, gaps = 0;
  const int n = scaled(200);
  for (int i = 0; i < n && !HasFailure(); ++i) {
    std::string header = "{";
    std::uint64_t at = 0;
    for (int t = f.pick(1, 4); t > 0; --t) {
      std::vector<std::int64_t> shape;
      std::uint64_t elements = 1;
      for (int d = f.pick(0, 3); d > 0; --d) {
        const std::int64_t dim =
            f.chance(3) ? (std::int64_t(1) << f.pick(31, 62)) : std::int64_t(f.pick(0, 5));
        shape.push_back(dim);
        elements *= std::uint64_t(dim);
      }
      // End to end, or moved back (an overlap) or on (a gap), or of the wrong size.
      std::uint64_t begin = at;
      if (f.chance(15)) begin -= std::min<std::uint64_t>(begin, std::uint64_t(f.pick(1, 8)));
      if (f.chance(15)) begin += std::uint64_t(f.pick(1, 8));
      std::uint64_t end = begin + 4 * elements;
      if (f.chance(10)) end = begin + std::uint64_t(f.pick(0, 40));
      if (end < begin) end = begin;
      std::string dims;
      for (auto d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      header += std::string(header.size() > 1 ? "," : "") + "\"t" + std::to_string(t) +
                "\":{\"dtype\":\"F32\",\"shape\":[" + dims + "],\"data_offsets\":[" +
                std::to_string(begin) + "," + std::to_string(end) + "]}";
      at = std::max(at, end);
    }
    header += "}";
    const std::uint64_t data = std::min<std::uint64_t>(at + (f.chance(10) ? 4 : 0), 4096);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      const std::uint64_t len = header.size();
      for (int b = 0; b < 8; ++b) out.put(static_cast<char>((len >> (8 * b)) & 0xff));
      out << header << std::string(data, '\0');
    }
    try {
      const transformer::SafetensorsFile file(path);
      ++loaded;
      // What loaded tiles its data section: sorted by address, end to end.
      std::vector<std::pair<const char*, std::size_t>> spans;
      for (const auto& [name, v] : file.tensors()) {
        EXPECT_EQ(std::uint64_t(v.numel()) * 4, v.nbytes) << header;
        spans.push_back({static_cast<const char*>(v.data), v.nbytes});
      }
      std::sort(spans.begin(), spans.end());
      for (std::size_t k = 1; k < spans.size(); ++k)
        EXPECT_EQ(spans[k - 1].first + spans[k - 1].second, spans[k].first) << header;
    } catch (const bench::UsageError& e) {
      const std::string msg = e.what();
      overlaps += msg.find("overlap") != std::string::npos;
      gaps += msg.find("gap") != std::string::npos;
      if (msg.find("overlap") != std::string::npos || msg.find("gap") != std::string::npos) {
        EXPECT_NE(msg.find("'t"), std::string::npos) << msg;  // the tensors are named
      }
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(overlaps, 0);
  EXPECT_GT(gaps, 0);
}

}  // namespace
}  // namespace conv
