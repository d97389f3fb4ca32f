// Randomized property tests of the parsers (descriptor, shape file): random and mutated text never
// crashes, hangs or throws anything but bench::UsageError, and every descriptor that parses
// round-trips: parse(p.str_with_name()) is p, and printing it again gives the same text. The
// command-line parser is fuzzed through the binary (tests/test_cli_fuzz.py).
//
// Fixed seeds, so that a failure reproduces; MYCONV_FUZZ_ITERATIONS scales the counts (e.g. 100
// for a long run) and MYCONV_FUZZ_SEED changes the seed. The sanitizer job (scripts/sanitize.sh)
// runs these under AddressSanitizer and UndefinedBehaviorSanitizer too.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "conv/problem.hpp"
#include "conv/settings.hpp"
#include "core/error.hpp"
#include "ops/problem.hpp"

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

}  // namespace
}  // namespace conv
