#include "conv/problem.hpp"

#include <cctype>
#include <limits>
#include <optional>

#include "core/error.hpp"

namespace conv {

std::string to_string(Layout l) {
  return l == Layout::nchw ? "nchw" : "nhwc";
}

Layout parse_layout(const std::string& text) {
  if (text == "nchw") return Layout::nchw;
  if (text == "nhwc") return Layout::nhwc;
  throw bench::UsageError("unknown layout '" + text + "' (allowed: nchw, nhwc)");
}

double Problem::flops() const {
  return 2.0 * static_cast<double>(mb) * static_cast<double>(oc) * static_cast<double>(oh()) *
         static_cast<double>(ow()) * static_cast<double>(reduction_length());
}

double Problem::bytes() const {
  return static_cast<double>(src_elements() + wei_elements() + dst_elements()) *
         bench::storage_bytes(dtype);
}

GemmShape Problem::gemm() const {
  return {mb * oh() * ow(), oc / g, reduction_length(), g};
}

std::vector<std::int64_t> Problem::src_shape() const {
  return layout == Layout::nchw ? std::vector<std::int64_t>{mb, ic, ih, iw}
                                : std::vector<std::int64_t>{mb, ih, iw, ic};
}

std::vector<std::int64_t> Problem::wei_shape() const {
  return layout == Layout::nchw ? std::vector<std::int64_t>{oc, ic / g, kh, kw}
                                : std::vector<std::int64_t>{oc, kh, kw, ic / g};
}

std::vector<std::int64_t> Problem::dst_shape() const {
  return layout == Layout::nchw ? std::vector<std::int64_t>{mb, oc, oh(), ow()}
                                : std::vector<std::int64_t>{mb, oh(), ow(), oc};
}

std::string Problem::str() const {
  auto f = [](const char* key, std::int64_t v) { return key + std::to_string(v); };
  std::string s;
  if (g != 1) s += f("g", g);
  s += f("mb", mb) + f("ic", ic) + f("ih", ih);
  if (iw != ih) s += f("iw", iw);
  s += f("oc", oc) + f("kh", kh);
  if (kw != kh) s += f("kw", kw);
  if (sh != 1) s += f("sh", sh);
  if (sw != sh) s += f("sw", sw);
  if (ph != 0) s += f("ph", ph);
  if (pw != ph) s += f("pw", pw);
  if (dh != 1) s += f("dh", dh);
  if (dw != dh) s += f("dw", dw);
  if (dtype != DataType::fp32) s += "dt" + bench::to_string(dtype);
  if (layout != Layout::nchw) s += to_string(layout);
  return s;
}

std::string Problem::str_with_name() const {
  return name.empty() ? str() : str() + "n\"" + name + "\"";
}

nlohmann::ordered_json Problem::params() const {
  return {{"mb", mb},
          {"ic", ic},
          {"ih", ih},
          {"iw", iw},
          {"oc", oc},
          {"kh", kh},
          {"kw", kw},
          {"sh", sh},
          {"sw", sw},
          {"ph", ph},
          {"pw", pw},
          {"dh", dh},
          {"dw", dw},
          {"g", g},
          {"oh", oh()},
          {"ow", ow()},
          {"dtype", bench::to_string(dtype)},
          {"layout", to_string(layout)}};
}

std::string Problem::validate() const {
  // Every size is bounded so that products of sizes stay far from int64 overflow.
  constexpr std::int64_t kMaxDim = 1 << 20;
  const struct {
    const char* field;
    std::int64_t value, min;
  } fields[] = {
      {"mb (batch_size)", mb, 1},   {"ic (in_channels)", ic, 1},  {"ih (input height)", ih, 1},
      {"iw (input width)", iw, 1},  {"oc (out_channels)", oc, 1}, {"kh (kernel height)", kh, 1},
      {"kw (kernel width)", kw, 1}, {"sh (stride)", sh, 1},       {"sw (stride)", sw, 1},
      {"ph (padding)", ph, 0},      {"pw (padding)", pw, 0},      {"dh (dilation)", dh, 1},
      {"dw (dilation)", dw, 1},     {"g (groups)", g, 1}};
  for (const auto& f : fields) {
    if (f.value < f.min)
      return std::string(f.field) + " must be at least " + std::to_string(f.min) + ", got " +
             std::to_string(f.value);
    if (f.value > kMaxDim)
      return std::string(f.field) + " must be at most " + std::to_string(kMaxDim) + ", got " +
             std::to_string(f.value);
  }
  if (ic % g != 0 || oc % g != 0)
    return "in_channels (" + std::to_string(ic) + ") and out_channels (" + std::to_string(oc) +
           ") must both be divisible by groups (" + std::to_string(g) + ")";
  const std::int64_t ekh = dh * (kh - 1) + 1, ekw = dw * (kw - 1) + 1;
  if (ekh > ih + 2 * ph || ekw > iw + 2 * pw)
    return "kernel " + std::to_string(kh) + "x" + std::to_string(kw) + " (dilated " +
           std::to_string(ekh) + "x" + std::to_string(ekw) + ") is larger than the padded input " +
           std::to_string(ih + 2 * ph) + "x" + std::to_string(iw + 2 * pw);
  const double elements[] = {double(mb) * ic * ih * iw, double(oc) * (ic / g) * kh * kw,
                             double(mb) * oc * oh() * ow()};
  for (double e : elements)
    if (e > double(std::numeric_limits<std::int32_t>::max()))
      return "a tensor of this problem has " + std::to_string(static_cast<long long>(e)) +
             " elements; at most 2^31-1 are supported";
  return "";
}

bool operator==(const Problem& a, const Problem& b) {
  return a.str() == b.str();
}

Problem parse_problem(const std::string& text, const Problem& defaults) {
  auto fail = [&](const std::string& why) -> bench::UsageError {
    return bench::UsageError("malformed problem descriptor '" + text + "': " + why +
                             " (expected e.g. mb2ic4ih64oc8kh5; tokens g mb ic ih iw oc kh kw sh "
                             "sw ph pw dh dw, dt<fp32|tf32|fp16|bf16>, nchw|nhwc, n\"name\")");
  };
  std::optional<std::int64_t> mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, dh, dw, g;
  Problem p = defaults;
  p.name = defaults.name;
  struct Key {
    const char* text;
    std::optional<std::int64_t>* field;
  };
  const Key keys[] = {{"mb", &mb}, {"ic", &ic}, {"ih", &ih}, {"iw", &iw}, {"oc", &oc},
                      {"kh", &kh}, {"kw", &kw}, {"sh", &sh}, {"sw", &sw}, {"ph", &ph},
                      {"pw", &pw}, {"dh", &dh}, {"dw", &dw}, {"g", &g}};
  std::size_t i = 0;
  auto starts_with = [&](const std::string& token) {
    return text.compare(i, token.size(), token) == 0;
  };
  if (text.empty()) throw fail("empty");
  while (i < text.size()) {
    if (starts_with("nchw") || starts_with("nhwc")) {
      p.layout = parse_layout(text.substr(i, 4));
      i += 4;
      continue;
    }
    if (starts_with("dt")) {
      i += 2;
      bool found = false;
      for (auto dt : bench::all_data_types()) {
        if (starts_with(bench::to_string(dt))) {
          p.dtype = dt;
          i += bench::to_string(dt).size();
          found = true;
          break;
        }
      }
      if (!found) throw fail("unknown dtype after 'dt'");
      continue;
    }
    if (starts_with("n\"")) {
      const auto close = text.find('"', i + 2);
      if (close == std::string::npos) throw fail("unterminated name");
      p.name = text.substr(i + 2, close - i - 2);
      i = close + 1;
      continue;
    }
    const Key* key = nullptr;
    for (const auto& k : keys)
      if (starts_with(k.text)) {
        key = &k;
        break;
      }
    if (!key) throw fail("unknown token at '" + text.substr(i) + "'");
    if (key->field->has_value()) throw fail(std::string("'") + key->text + "' given twice");
    i += std::string(key->text).size();
    std::size_t digits = 0;
    while (i + digits < text.size() && std::isdigit(static_cast<unsigned char>(text[i + digits])))
      ++digits;
    if (digits == 0) throw fail(std::string("'") + key->text + "' needs a number");
    if (digits > 9) throw fail(std::string("'") + key->text + "' is too large");
    *key->field = std::stoll(text.substr(i, digits));
    i += digits;
  }
  if (mb) p.mb = *mb;
  if (ic) p.ic = *ic;
  if (oc) p.oc = *oc;
  if (g) p.g = *g;
  // A width-like field absent from the text follows its height-like partner when that was given.
  auto pair = [](const std::optional<std::int64_t>& h, const std::optional<std::int64_t>& w,
                 std::int64_t& ph_out, std::int64_t& pw_out) {
    if (h) ph_out = *h;
    if (w)
      pw_out = *w;
    else if (h)
      pw_out = *h;
  };
  pair(ih, iw, p.ih, p.iw);
  pair(kh, kw, p.kh, p.kw);
  pair(sh, sw, p.sh, p.sw);
  pair(ph, pw, p.ph, p.pw);
  pair(dh, dw, p.dh, p.dw);
  if (p.ic == 0 || p.ih == 0 || p.oc == 0 || p.kh == 0)
    throw fail("ic, ih, oc and kh are required");
  if (const std::string why = p.validate(); !why.empty())
    throw bench::UsageError("invalid problem '" + text + "': " + why);
  return p;
}

}  // namespace conv
