#include "conv/problem.hpp"

#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <optional>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace conv {

std::string to_string(Layout l) {
  return l == Layout::nchw ? "nchw" : "nhwc";
}

Layout parse_layout(const std::string& text) {
  if (text == "nchw") return Layout::nchw;
  if (text == "nhwc") return Layout::nhwc;
  throw bench::UsageError("unknown layout " + bench::quote_input(text, 40) +
                          " (allowed: nchw, nhwc)");
}

namespace {

// One spatial axis as benchdnn describes it: input, output, kernel, stride, padding, dilation.
struct Axis {
  std::int64_t i = 0, o = 0, k = 0, s = 1, p = 0, d = 0;
};

std::int64_t extent(std::int64_t k, std::int64_t d) {  // a dilated kernel's reach
  return (k - 1) * (d + 1) + 1;
}
// benchdnn's compute_out and compute_pad (C++ integer division, as there).
std::int64_t compute_out(std::int64_t i, std::int64_t k, std::int64_t s, std::int64_t p,
                         std::int64_t d) {
  return (i - extent(k, d) + 2 * p) / s + 1;
}
std::int64_t compute_pad(std::int64_t o, std::int64_t i, std::int64_t k, std::int64_t s,
                         std::int64_t d) {
  return ((o - 1) * s - i + extent(k, d)) / 2;
}

}  // namespace

std::int64_t Problem::symmetric_oh() const {
  return compute_out(ih, kh, sh, ph, dh);
}
std::int64_t Problem::symmetric_ow() const {
  return compute_out(iw, kw, sw, pw, dw);
}
std::int64_t Problem::od() const {
  if (!is_3d()) return 1;
  return out_d ? out_d : compute_out(id, kd, sd, pd, dd);
}
std::int64_t Problem::ph_r() const {
  return (oh() - 1) * sh - ih + extent(kh, dh) - ph;
}
std::int64_t Problem::pw_r() const {
  return (ow() - 1) * sw - iw + extent(kw, dw) - pw;
}

// In double: a problem too large to run (unsupported_reason) still gets its counts, without
// int64 overflow.
static double product(std::initializer_list<std::int64_t> factors) {
  double p = 1;
  for (std::int64_t f : factors) p *= static_cast<double>(f);
  return p;
}

// A count too large for an integer, as "1.21e+24".
static std::string approx_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double Problem::flops() const {
  return 2.0 * product({mb, oc, od(), oh(), ow(), ic / g, is_3d() ? kd : 1, kh, kw});
}

double Problem::bytes() const {
  const std::int64_t depth = std::max<std::int64_t>(id, 1), kdepth = is_3d() ? kd : 1;
  return (product({mb, ic, depth, ih, iw}) + product({oc, ic / g, kdepth, kh, kw}) +
          product({mb, oc, od(), oh(), ow()})) *
         bench::storage_bytes(dtype);
}

GemmShape Problem::gemm() const {
  return {mb * od() * oh() * ow(), oc / g, reduction_length(), g};
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
  const Axis d{id, out_d, kd, sd, pd, dd}, h{ih, out_h, kh, sh, ph, dh},
      w{iw, out_w, kw, sw, pw, dw};
  auto same = [](const Axis& a, const Axis& b) {
    return a.i == b.i && a.o == b.o && a.k == b.k && a.s == b.s && a.p == b.p && a.d == b.d;
  };
  // The axes written: benchdnn fills an absent width from the height (2D) and absent height and
  // width from the depth (3D); a 3D problem has both height and width or neither.
  struct Named {
    const Axis* axis;
    char letter;
  };
  std::vector<Named> axes;
  if (is_3d()) {
    axes.push_back({&d, 'd'});
    if (!(same(d, h) && same(h, w))) axes.insert(axes.end(), {{&h, 'h'}, {&w, 'w'}});
  } else {
    axes.push_back({&h, 'h'});
    if (!same(h, w)) axes.push_back({&w, 'w'});
  }
  std::string s;
  auto add = [&](char first, char letter, std::int64_t v) {
    s += first;
    s += letter;
    s += std::to_string(v);
  };
  if (g != 1) s += "g" + std::to_string(g);
  s += "mb" + std::to_string(mb) + "ic" + std::to_string(ic);
  for (const auto& a : axes) add('i', a.letter, a.axis->i);
  s += "oc" + std::to_string(oc);
  for (const auto& a : axes)
    if (a.axis->o) add('o', a.letter, a.axis->o);
  for (const auto& a : axes) add('k', a.letter, a.axis->k);
  for (const auto& a : axes)
    if (a.axis->s != 1) add('s', a.letter, a.axis->s);
  // A written output size with no padding would make the parser derive the padding from it.
  for (const auto& a : axes)
    if (a.axis->p != 0 || a.axis->o) add('p', a.letter, a.axis->p);
  for (const auto& a : axes)
    if (a.axis->d != 0) add('d', a.letter, a.axis->d);
  if (dtype != DataType::fp32) s += "dt" + bench::to_string(dtype);
  if (layout != Layout::nchw) s += to_string(layout);
  return s;
}

std::string Problem::str_with_name() const {
  return name.empty() ? str() : str() + "n\"" + name + "\"";
}

nlohmann::ordered_json Problem::params() const {
  nlohmann::ordered_json j = {{"mb", mb},
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
                              {"dilation_h", dilation_h()},
                              {"dilation_w", dilation_w()},
                              {"g", g},
                              {"oh", oh()},
                              {"ow", ow()},
                              {"dtype", bench::to_string(dtype)},
                              {"layout", to_string(layout)}};
  if (out_h || out_w) {
    j["ph_r"] = ph_r();
    j["pw_r"] = pw_r();
  }
  if (is_3d()) {
    j["id"] = id;
    j["kd"] = kd;
    j["sd"] = sd;
    j["pd"] = pd;
    j["dd"] = dd;
    j["od"] = od();
  }
  return j;
}

std::string Problem::validate() const {
  // Bounds that keep the output-size and padding arithmetic far from int64 overflow (sizes up to
  // 2^40, window fields up to 2^20: (o - 1) * s and (k - 1) * (d + 1) stay under 2^62). Tensors
  // past 2^31-1 elements are valid problems, which this suite does not run (unsupported_reason):
  // benchdnn's shapes_large_conv has a width of 4294967311.
  constexpr std::int64_t kMaxSize = std::int64_t(1) << 40, kMaxWindow = std::int64_t(1) << 20;
  struct Field {
    const char* field;
    std::int64_t value, min, max;
  };
  std::vector<Field> fields = {
      {"mb (batch_size)", mb, 1, kMaxSize},       {"ic (in_channels)", ic, 1, kMaxSize},
      {"ih (input height)", ih, 1, kMaxSize},     {"iw (input width)", iw, 1, kMaxSize},
      {"oc (out_channels)", oc, 1, kMaxSize},     {"kh (kernel height)", kh, 1, kMaxWindow},
      {"kw (kernel width)", kw, 1, kMaxWindow},   {"sh (stride)", sh, 1, kMaxWindow},
      {"sw (stride)", sw, 1, kMaxWindow},         {"ph (padding)", ph, 0, kMaxWindow},
      {"pw (padding)", pw, 0, kMaxWindow},        {"dh (dilation)", dh, 0, kMaxWindow},
      {"dw (dilation)", dw, 0, kMaxWindow},       {"g (groups)", g, 1, kMaxSize},
      {"oh (output height)", out_h, 0, kMaxSize}, {"ow (output width)", out_w, 0, kMaxSize}};
  if (is_3d())
    fields.insert(fields.end(), {{"id (input depth)", id, 1, kMaxSize},
                                 {"kd (kernel depth)", kd, 1, kMaxWindow},
                                 {"sd (stride)", sd, 1, kMaxWindow},
                                 {"pd (padding)", pd, 0, kMaxWindow},
                                 {"dd (dilation)", dd, 0, kMaxWindow},
                                 {"od (output depth)", out_d, 0, kMaxSize}});
  for (const auto& f : fields) {
    if (f.value < f.min)
      return std::string(f.field) + " must be at least " + std::to_string(f.min) + ", got " +
             std::to_string(f.value);
    if (f.value > f.max)
      return std::string(f.field) + " must be at most " + std::to_string(f.max) + ", got " +
             std::to_string(f.value);
  }
  if (ic % g != 0 || oc % g != 0)
    return "in_channels (" + std::to_string(ic) + ") and out_channels (" + std::to_string(oc) +
           ") must both be divisible by groups (" + std::to_string(g) + ")";
  if (name.find('"') != std::string::npos) return "a name may not contain '\"'";
  // Where the output size is derived, the dilated kernel must fit the padded input.
  const struct {
    const char* what;
    std::int64_t out, i, k, p, d;
  } axes[] = {{"height", out_h, ih, kh, ph, dh},
              {"width", out_w, iw, kw, pw, dw},
              {"depth", is_3d() ? out_d : 1, id, kd, pd, dd}};
  for (const auto& a : axes)
    if (a.out == 0 && extent(a.k, a.d) > a.i + 2 * a.p)
      return "kernel " + std::string(a.what) + " " + std::to_string(a.k) + " (dilated " +
             std::to_string(extent(a.k, a.d)) + ") is larger than the padded input " +
             std::string(a.what) + " " + std::to_string(a.i + 2 * a.p);
  // Element counts in checked 64-bit arithmetic, with room for the bytes of a float64 copy: a
  // tensor past that is no problem any machine holds, and would wrap to a negative count.
  const std::int64_t depth = is_3d() ? id : 1, kdepth = is_3d() ? kd : 1;
  const struct {
    const char* what;
    std::optional<std::int64_t> elements;
    double approx;
  } tensors[] = {
      {"input (mb x ic x ih x iw)", bench::checked_product({mb, ic, depth, ih, iw}),
       product({mb, ic, depth, ih, iw})},
      {"weight (oc x ic/g x kh x kw)", bench::checked_product({oc, ic / g, kdepth, kh, kw}),
       product({oc, ic / g, kdepth, kh, kw})},
      {"output (mb x oc x oh x ow)", bench::checked_product({mb, oc, od(), oh(), ow()}),
       product({mb, oc, od(), oh(), ow()})}};
  for (const auto& t : tensors)
    if (!t.elements || !bench::checked_mul(*t.elements, 16))
      return std::string("the ") + t.what + " tensor has about " + approx_text(t.approx) +
             " elements, more than 64-bit byte counts hold";
  return "";
}

std::string Problem::unsupported_reason() const {
  if (is_3d())
    return "3D convolution (id/kd/od): this suite runs 2D problems (1D ones as 2D of height 1)";
  auto asymmetric = [](const char* o, std::int64_t given, std::int64_t symmetric, const char* p,
                       std::int64_t left, std::int64_t right) {
    return std::string("asymmetric padding: ") + o + std::to_string(given) + " with " + p +
           std::to_string(left) + " means a bottom/right padding of " + std::to_string(right) +
           " (benchdnn derives it from the output size; symmetric padding gives " + o +
           std::to_string(symmetric) + "); the backends here take symmetric padding only";
  };
  if (out_h) return asymmetric("oh", out_h, symmetric_oh(), "ph", ph, ph_r());
  if (out_w) return asymmetric("ow", out_w, symmetric_ow(), "pw", pw, pw_r());
  // validate() keeps these counts inside int64.
  for (const std::int64_t e : {src_elements(), wei_elements(), dst_elements()})
    if (e > std::numeric_limits<std::int32_t>::max())
      return "a tensor of this problem has " + std::to_string(e) +
             " elements; the backends here index with 32-bit integers (at most 2^31-1)";
  return "";
}

bool operator==(const Problem& a, const Problem& b) {
  return a.str() == b.str();
}

Problem parse_problem(const std::string& text, const Problem& defaults) {
  auto fail = [&](const std::string& why) -> bench::UsageError {
    return bench::UsageError("malformed problem descriptor " + bench::quote_input(text, 40) + ": " +
                             why +
                             " (benchdnn's grammar, e.g. mb2ic4ih64oc8kh5; tokens g mb ic id ih "
                             "iw oc od oh ow kd kh kw sd sh sw pd ph pw dd dh dw, "
                             "dt<fp32|tf32|fp16|bf16>, nchw|nhwc, n\"name\")");
  };
  // Values as written; -1 = not written. Axes: 0 depth, 1 height, 2 width.
  std::int64_t g = -1, mb = -1, ic = -1, oc = -1;
  std::int64_t in[3] = {-1, -1, -1}, out[3] = {-1, -1, -1}, ker[3] = {-1, -1, -1},
               str[3] = {-1, -1, -1}, pad[3] = {-1, -1, -1}, dil[3] = {-1, -1, -1};
  struct Key {
    const char* text;
    std::int64_t* value;
  };
  const Key keys[] = {{"g", &g},       {"mb", &mb},     {"ic", &ic},     {"id", &in[0]},
                      {"ih", &in[1]},  {"iw", &in[2]},  {"oc", &oc},     {"od", &out[0]},
                      {"oh", &out[1]}, {"ow", &out[2]}, {"kd", &ker[0]}, {"kh", &ker[1]},
                      {"kw", &ker[2]}, {"sd", &str[0]}, {"sh", &str[1]}, {"sw", &str[2]},
                      {"pd", &pad[0]}, {"ph", &pad[1]}, {"pw", &pad[2]}, {"dd", &dil[0]},
                      {"dh", &dil[1]}, {"dw", &dil[2]}};
  Problem p;
  p.mb = defaults.mb;
  p.dtype = defaults.dtype;
  p.layout = defaults.layout;
  p.name = defaults.name;
  std::size_t i = 0;
  auto starts_with = [&](const std::string& token) {
    return text.compare(i, token.size(), token) == 0;
  };
  // The end of a token: the text's end, a '_' separator, a name, or a dtype.
  auto boundary_at = [&](std::size_t at) {
    return at == text.size() || text[at] == '_' || text[at] == 'n' ||
           text.compare(at, 2, "dt") == 0;
  };
  if (text.empty()) throw fail("empty");
  while (i < text.size()) {
    if ((starts_with("nchw") || starts_with("nhwc")) && boundary_at(i + 4)) {
      p.layout = parse_layout(text.substr(i, 4));
      i += 4;
    } else if (starts_with("n")) {
      // The rest is the name, as in benchdnn; quoted, it ends at the closing quote.
      if (starts_with("n\"")) {
        const auto close = text.find('"', i + 2);
        if (close == std::string::npos) throw fail("unterminated name");
        if (close + 1 != text.size()) throw fail("text after the name");
        p.name = text.substr(i + 2, close - i - 2);
      } else {
        p.name = text.substr(i + 1);
        if (p.name.find('"') != std::string::npos) throw fail("'\"' in an unquoted name");
      }
      break;
    } else if (starts_with("dt")) {
      i += 2;
      bool found = false;
      for (auto dt : bench::all_data_types()) {
        if (starts_with(bench::to_string(dt)) && boundary_at(i + bench::to_string(dt).size())) {
          p.dtype = dt;
          i += bench::to_string(dt).size();
          found = true;
          break;
        }
      }
      if (!found) throw fail("unknown dtype after 'dt'");
    } else {
      const Key* key = nullptr;
      for (const auto& k : keys)
        if (starts_with(k.text)) {
          key = &k;
          break;
        }
      if (!key) throw fail("unknown token at " + bench::quote_input(text.substr(i), 24));
      if (*key->value >= 0) throw fail(std::string("'") + key->text + "' given twice");
      i += std::string(key->text).size();
      std::size_t digits = 0;
      while (i + digits < text.size() && std::isdigit(static_cast<unsigned char>(text[i + digits])))
        ++digits;
      if (digits == 0) throw fail(std::string("'") + key->text + "' needs a number");
      if (digits > 13) throw fail(std::string("'") + key->text + "' is too large");
      *key->value = std::stoll(text.substr(i, digits));
      i += digits;
    }
    // One '_' may follow any token (benchdnn's separator), not start the text or follow another.
    if (i < text.size() && text[i] == '_') ++i;
  }

  if (g == 0) throw fail("'g' must be positive");
  if (g > 0) p.g = g;
  if (mb >= 0) p.mb = mb;
  if (ic <= 0 || oc <= 0) throw fail("ic and oc are required");
  p.ic = ic;
  p.oc = oc;
  const char* axis_name[] = {"d", "h", "w"};
  Axis axes[3];
  bool present[3];
  for (int a = 0; a < 3; ++a) {
    const std::string n = axis_name[a];
    if (str[a] == 0) throw fail("'s" + n + "' must be positive");
    Axis& x = axes[a];
    // benchdnn: an axis is absent when its input, kernel, output and dilation are 0 or not
    // written, its stride is 1 and its padding is 0 or not written.
    present[a] =
        !(in[a] <= 0 && ker[a] <= 0 && out[a] <= 0 && dil[a] <= 0 && str[a] <= 1 && pad[a] <= 0);
    if (!present[a]) continue;
    if (in[a] <= 0 || ker[a] <= 0)
      throw fail("'i" + n + "' and 'k" + n + "' are required where any " + n + " field is written");
    x.i = in[a];
    x.k = ker[a];
    x.s = str[a] > 0 ? str[a] : 1;
    x.d = dil[a] > 0 ? dil[a] : 0;
    if (out[a] <= 0) {
      x.p = pad[a] > 0 ? pad[a] : 0;
      x.o = compute_out(x.i, x.k, x.s, x.p, x.d);
      if (x.o <= 0)
        throw fail("the output size o" + n + " would be " + std::to_string(x.o) +
                   " (the dilated kernel is larger than the padded input)");
    } else {
      x.o = out[a];
      x.p = pad[a] >= 0 ? pad[a] : compute_pad(x.o, x.i, x.k, x.s, x.d);
      if (x.p < 0) throw fail("the padding derived from o" + n + " is negative");
    }
  }
  // benchdnn's sanitize_desc: the dimensions follow from which output sizes exist.
  if (present[0]) {
    if (!present[1] && !present[2])
      axes[1] = axes[2] = axes[0];
    else if (present[1] != present[2])
      throw fail("a 3D problem needs both the h and the w fields, or neither");
  } else if (present[1]) {
    if (!present[2]) axes[2] = axes[1];
  } else if (present[2]) {
    axes[1] = Axis{1, 1, 1, 1, 0, 0};  // 1D: a 2D problem of height 1
  } else {
    throw fail("no spatial dimension (ih/iw/id and kh/kw/kd)");
  }
  auto set = [](const Axis& x, std::int64_t& i, std::int64_t& o, std::int64_t& k, std::int64_t& s,
                std::int64_t& pd, std::int64_t& d) {
    i = x.i, k = x.k, s = x.s, pd = x.p, d = x.d;
    // The output size is kept where it is not what symmetric padding gives: another size, or
    // one that benchdnn's integer division reaches although the kernel overhangs the padded
    // input (then benchdnn derives a larger bottom/right padding).
    const bool symmetric =
        extent(x.k, x.d) <= x.i + 2 * x.p && x.o == compute_out(x.i, x.k, x.s, x.p, x.d);
    o = symmetric ? 0 : x.o;
  };
  set(axes[1], p.ih, p.out_h, p.kh, p.sh, p.ph, p.dh);
  set(axes[2], p.iw, p.out_w, p.kw, p.sw, p.pw, p.dw);
  // A depth of one image plane under a one-plane kernel, unpadded, is the 2D problem (benchdnn's
  // *_1d and *_2d inputs write their problems so, with id1kd1od1), as a width alone is a 1D one.
  const Axis& depth = axes[0];
  const bool flat = depth.i == 1 && depth.k == 1 && depth.p == 0 && depth.o == 1;
  if (present[0] && !flat) set(axes[0], p.id, p.out_d, p.kd, p.sd, p.pd, p.dd);
  if (const std::string why = p.validate(); !why.empty())
    throw bench::UsageError("invalid problem " + bench::quote_input(text, 40) + ": " + why);
  return p;
}

void print_problem(std::ostream& os, const Problem& p) {
  os << "\n== " << p.str_with_name() << ": " << bench::to_string(p.dtype) << " "
     << to_string(p.layout) << ", ";
  if (!p.unsupported_reason().empty()) {
    os << p.flops() / 1e6 << " MFLOP ==\n";
    return;
  }
  const GemmShape gm = p.gemm();
  os << "input " << p.mb << "x" << p.ic << "x" << p.ih << "x" << p.iw << ", weights " << p.oc << "x"
     << p.ic / p.g << "x" << p.kh << "x" << p.kw << ", output " << p.mb << "x" << p.oc << "x"
     << p.oh() << "x" << p.ow() << ", " << p.flops() / 1e6 << " MFLOP, GEMM M=" << gm.m
     << " N=" << gm.n << " K=" << gm.k
     << (gm.groups > 1 ? " x" + std::to_string(gm.groups) + " groups" : "") << " ==\n";
}

}  // namespace conv
