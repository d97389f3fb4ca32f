#include "ops/problem.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "core/printers.hpp"

namespace ops {
namespace {

struct OpInfo {
  Op op;
  const char* name;
  Category category;
};

const OpInfo kOps[] = {
    {Op::add, "add", Category::element},
    {Op::sub, "sub", Category::element},
    {Op::mul, "mul", Category::element},
    {Op::div, "div", Category::element},
    {Op::relu, "relu", Category::activation},
    {Op::sigmoid, "sigmoid", Category::activation},
    {Op::tanh, "tanh", Category::activation},
    {Op::gelu_erf, "gelu_erf", Category::activation},
    {Op::gelu_tanh, "gelu_tanh", Category::activation},
    {Op::silu, "silu", Category::activation},
    {Op::sum, "sum", Category::reduction},
    {Op::mean, "mean", Category::reduction},
    {Op::max, "max", Category::reduction},
    {Op::softmax, "softmax", Category::normalization},
    {Op::layernorm, "layernorm", Category::normalization},
    {Op::rmsnorm, "rmsnorm", Category::normalization},
    {Op::matmul, "matmul", Category::matmul},
    {Op::copy, "copy", Category::memory},
    {Op::transpose, "transpose", Category::memory},
    {Op::permute, "permute", Category::memory},
    {Op::concat, "concat", Category::memory},
};

const OpInfo& info(Op op) {
  for (const auto& i : kOps)
    if (i.op == op) return i;
  throw std::logic_error("unknown op");
}

// Sizes are bounded so that every product stays far from int64 overflow.
constexpr std::int64_t kMaxElements = std::int64_t(1) << 40;
constexpr std::size_t kMaxRank = 8;

std::int64_t product(const std::vector<std::int64_t>& d) {
  return std::accumulate(d.begin(), d.end(), std::int64_t(1), std::multiplies<>());
}

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

std::string ints_text(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

std::string to_string(Op op) {
  return info(op).name;
}

Category category_of(Op op) {
  return info(op).category;
}

std::string to_string(Category c) {
  switch (c) {
    case Category::element:
      return "element";
    case Category::activation:
      return "activation";
    case Category::reduction:
      return "reduction";
    case Category::normalization:
      return "normalization";
    case Category::matmul:
      return "matmul";
    case Category::memory:
      return "memory";
  }
  return "?";
}

const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops = [] {
    std::vector<Op> v;
    for (const auto& i : kOps) v.push_back(i.op);
    return v;
  }();
  return ops;
}

Op parse_op(const std::string& text) {
  std::string names;
  for (const auto& i : kOps) {
    if (text == i.name) return i.op;
    names += std::string(names.empty() ? "" : ", ") + i.name;
  }
  throw bench::UsageError("unknown op " + bench::quote_input(text, 40) + " (allowed: " + names +
                          ")");
}

Category parse_category(const std::string& text) {
  for (Category c : {Category::element, Category::activation, Category::reduction,
                     Category::normalization, Category::matmul, Category::memory})
    if (text == to_string(c)) return c;
  throw bench::UsageError("unknown category " + bench::quote_input(text, 40) +
                          " (allowed: element, activation, reduction, normalization, matmul, "
                          "memory)");
}

std::vector<std::int64_t> Problem::output_shape() const {
  switch (op) {
    case Op::sum:
    case Op::mean:
    case Op::max: {
      if (axes.empty()) return {};  // a scalar
      std::vector<std::int64_t> out;
      for (std::size_t i = 0; i < shape.size(); ++i)
        if (std::find(axes.begin(), axes.end(), int(i)) == axes.end()) out.push_back(shape[i]);
      return out;
    }
    case Op::matmul:
      return b > 1 ? std::vector<std::int64_t>{b, m, n} : std::vector<std::int64_t>{m, n};
    case Op::transpose: {
      std::vector<std::int64_t> out = shape;
      if (out.size() >= 2) std::swap(out[out.size() - 1], out[out.size() - 2]);
      return out;
    }
    case Op::permute: {
      std::vector<std::int64_t> out;
      for (int p : perm) out.push_back(shape[std::size_t(p)]);
      return out;
    }
    case Op::concat: {
      std::vector<std::int64_t> out = shape;
      out[std::size_t(axis)] *= inputs;
      return out;
    }
    default:
      return shape;
  }
}

std::int64_t Problem::input_elements() const {
  return op == Op::matmul ? b * m * k : product(shape);
}

std::int64_t Problem::output_elements() const {
  return product(output_shape());
}

double Problem::flops() const {
  if (op == Op::matmul) return 2.0 * double(b) * double(m) * double(n) * double(k);
  // Other ops are measured by the bytes they move; their work is counted as one operation per
  // element read (per output element for element and activation ops).
  if (category() == Category::element || category() == Category::activation)
    return double(output_elements());
  return category() == Category::memory ? 0.0 : double(input_elements());
}

double Problem::bytes() const {
  const double in = double(input_elements()), out = double(output_elements());
  double elements = in + out;
  if (category() == Category::element) elements += double(product(rhs_shape()));
  if (op == Op::layernorm) elements += 2.0 * double(shape.back());  // weight and bias
  if (op == Op::rmsnorm) elements += double(shape.back());          // weight
  if (op == Op::matmul) elements = double(b) * double(m * k + k * n + m * n);
  if (op == Op::concat) elements = in * inputs + out;
  return elements * bench::storage_bytes(dtype);
}

std::string Problem::str() const {
  std::string s = to_string(op) + ":";
  if (op == Op::matmul) {
    if (b != 1) s += "b" + std::to_string(b);
    s += "m" + std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k);
  } else {
    s += dims_text(shape);
    if (!rhs.empty()) s += "+" + dims_text(rhs);
  }
  if (category() == Category::reduction && !axes.empty()) s += ":axis=" + ints_text(axes);
  if (op == Op::permute) s += ":perm=" + ints_text(perm);
  if (op == Op::concat) {
    if (inputs != 2) s += ":inputs=" + std::to_string(inputs);
    if (axis != 0) s += ":axis=" + std::to_string(axis);
  }
  if (dtype != DataType::fp32) s += ":" + bench::to_string(dtype);
  return s;
}

std::string Problem::str_with_name() const {
  return name.empty() ? str() : str() + ":n\"" + name + "\"";
}

nlohmann::ordered_json Problem::params() const {
  nlohmann::ordered_json j = {{"op", to_string(op)}, {"category", to_string(category())}};
  if (op == Op::matmul) {
    j["b"] = b;
    j["m"] = m;
    j["n"] = n;
    j["k"] = k;
  } else {
    j["shape"] = shape;
    if (!rhs.empty()) j["rhs"] = rhs;
  }
  if (category() == Category::reduction) j["axes"] = axes;  // [] = all
  if (op == Op::permute) j["perm"] = perm;
  if (op == Op::concat) {
    j["inputs"] = inputs;
    j["axis"] = axis;
  }
  j["output_shape"] = output_shape();
  j["dtype"] = bench::to_string(dtype);
  return j;
}

std::string Problem::validate() const {
  if (name.find('"') != std::string::npos) return "a name may not contain '\"'";
  if (dtype == DataType::tf32 && op != Op::matmul)
    return "tf32 is a matmul mode; " + to_string(op) + " takes fp32, fp16 or bf16";
  if (op == Op::matmul) {
    for (auto [what, v] : {std::pair{"b", b}, {"m", m}, {"n", n}, {"k", k}})
      if (v < 1 || v > kMaxElements)
        return std::string(what) + " must be between 1 and 2^40, got " + std::to_string(v);
    const double biggest = std::max({double(b) * m * k, double(b) * k * n, double(b) * m * n});
    if (biggest > double(kMaxElements)) return "a matrix has more than 2^40 elements";
    return "";
  }
  if (shape.empty() || shape.size() > kMaxRank) return "the shape needs 1 to 8 dimensions";
  double elements = 1;
  for (auto d : shape) {
    if (d < 1) return "every dimension must be at least 1, got " + dims_text(shape);
    elements *= double(d);
  }
  if (elements * (op == Op::concat ? inputs : 1) > double(kMaxElements))
    return "the tensors have more than 2^40 elements";
  const int rank = int(shape.size());
  if (!rhs.empty()) {
    if (category() != Category::element) return "only element ops take a second shape";
    if (rhs.size() != shape.size())
      return "the second shape " + dims_text(rhs) + " needs the first's " + std::to_string(rank) +
             " dimensions (1 where it is broadcast)";
    for (std::size_t i = 0; i < rhs.size(); ++i)
      if (rhs[i] != shape[i] && rhs[i] != 1)
        return "the second shape " + dims_text(rhs) + " does not broadcast to " + dims_text(shape) +
               " (each dimension equal or 1)";
  }
  for (int a : axes)
    if (a < 0 || a >= rank)
      return "axis " + std::to_string(a) + " outside the shape's " + std::to_string(rank) +
             " dimensions";
  if (op == Op::transpose && rank < 2) return "transpose needs at least 2 dimensions";
  if (op == Op::permute) {
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> want(std::size_t(rank), 0);
    std::iota(want.begin(), want.end(), 0);
    if (sorted != want)
      return "perm must order all " + std::to_string(rank) + " axes, got " + ints_text(perm);
  }
  if (op == Op::concat) {
    if (inputs < 2 || inputs > 64) return "concat takes 2 to 64 inputs";
    if (axis < 0 || axis >= rank) return "concat axis outside the shape";
  }
  return "";
}

bool operator==(const Problem& a, const Problem& b) {
  return a.str() == b.str();
}

Problem parse_problem(const std::string& text, const Problem& defaults) {
  auto fail = [&](const std::string& why) {
    return bench::UsageError(
        "malformed op descriptor " + bench::quote_input(text, 40) + ": " + why +
        " (e.g. add:4096x4096, add:4096x4096+1x4096:fp16, sum:4x512x896:axis=-1, "
        "matmul:m4096n4096k4096:bf16, permute:8x16x32:perm=2,0,1, concat:64x64:inputs=3:axis=1)");
  };
  Problem p;
  p.dtype = defaults.dtype;
  p.name = defaults.name;
  std::string body = text;
  // The name is the last field and may hold ':'.
  if (const auto at = body.find(":n\""); at != std::string::npos) {
    if (body.size() < at + 4 || body.back() != '"') throw fail("unterminated name");
    p.name = body.substr(at + 3, body.size() - at - 4);
    body.resize(at);
  }
  std::vector<std::string> fields;
  for (std::size_t start = 0;;) {
    const auto colon = body.find(':', start);
    fields.push_back(body.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (fields.size() < 2 || fields[0].empty() || fields[1].empty())
    throw fail("an op and a shape are required");
  try {
    p.op = parse_op(fields[0]);
  } catch (const bench::UsageError& e) {
    throw fail(e.what());
  }
  // A number of at most 13 digits (every size is bounded by 2^40 anyway).
  auto number = [&](const std::string& s, std::size_t& i, const std::string& what) {
    std::size_t digits = 0;
    const bool negative = i < s.size() && s[i] == '-';
    if (negative) ++i;
    while (i + digits < s.size() && std::isdigit(static_cast<unsigned char>(s[i + digits])))
      ++digits;
    if (digits == 0) throw fail(what + " needs a number");
    if (digits > 13) throw fail(what + " is too large");
    const std::int64_t v = std::stoll(s.substr(i, digits));
    i += digits;
    return negative ? -v : v;
  };
  auto dims = [&](const std::string& s, const std::string& what) {
    std::vector<std::int64_t> d;
    std::size_t i = 0;
    while (true) {
      d.push_back(number(s, i, what));
      if (i == s.size()) break;
      if (s[i] != 'x') throw fail("unexpected '" + s.substr(i) + "' in " + what);
      ++i;
    }
    return d;
  };
  auto int_list = [&](const std::string& s, const std::string& what) {
    std::vector<int> v;
    std::size_t i = 0;
    while (true) {
      v.push_back(int(number(s, i, what)));
      if (i == s.size()) break;
      if (s[i] != ',') throw fail("unexpected '" + s.substr(i) + "' in " + what);
      ++i;
    }
    return v;
  };

  if (p.op == Op::matmul) {
    const std::string& s = fields[1];
    std::set<char> seen;
    for (std::size_t i = 0; i < s.size();) {
      const char key = s[i++];
      std::int64_t* field = key == 'b'   ? &p.b
                            : key == 'm' ? &p.m
                            : key == 'n' ? &p.n
                            : key == 'k' ? &p.k
                                         : nullptr;
      if (!field) throw fail(std::string("unknown matmul size '") + key + "' (b m n k)");
      if (!seen.insert(key).second) throw fail(std::string("'") + key + "' given twice");
      *field = number(s, i, std::string("'") + key + "'");
    }
    if (!seen.count('m') || !seen.count('n') || !seen.count('k'))
      throw fail("matmul needs m, n and k");
  } else {
    const std::string& s = fields[1];
    const auto plus = s.find('+');
    p.shape = dims(s.substr(0, plus), "the shape");
    if (plus != std::string::npos) {
      if (p.category() != Category::element) throw fail("only element ops take a second shape");
      p.rhs = dims(s.substr(plus + 1), "the second shape");
    }
    if (p.rhs == p.shape) p.rhs.clear();  // not broadcast: the canonical form omits it
  }
  bool dtype_given = false, axis_given = false;
  const int rank = int(p.shape.size());
  for (std::size_t f = 2; f < fields.size(); ++f) {
    const std::string& s = fields[f];
    const auto eq = s.find('=');
    const std::string key = s.substr(0, eq),
                      value = eq == std::string::npos ? "" : s.substr(eq + 1);
    if (eq == std::string::npos) {
      if (dtype_given) throw fail("two dtypes");
      try {
        p.dtype = bench::parse_data_type(s);
      } catch (const bench::UsageError&) {
        throw fail("unknown field '" + s + "'");
      }
      dtype_given = true;
    } else if (key == "axis" && p.category() == Category::reduction && !axis_given) {
      std::set<int> axes;
      for (int a : int_list(value, "axis")) {
        if (a < -rank || a >= rank) throw fail("axis " + std::to_string(a) + " outside the shape");
        if (!axes.insert(a < 0 ? a + rank : a).second) throw fail("an axis given twice");
      }
      if (int(axes.size()) != rank) p.axes.assign(axes.begin(), axes.end());  // all = empty
      axis_given = true;
    } else if (key == "axis" && p.op == Op::concat && !axis_given) {
      std::size_t i = 0;
      const auto a = number(value, i, "axis");
      if (i != value.size() || a < -rank || a >= rank) throw fail("concat axis '" + value + "'");
      p.axis = int(a < 0 ? a + rank : a);
      axis_given = true;
    } else if (key == "perm" && p.op == Op::permute && p.perm.empty()) {
      p.perm = int_list(value, "perm");
    } else if (key == "inputs" && p.op == Op::concat) {
      std::size_t i = 0;
      p.inputs = int(number(value, i, "inputs"));
      if (i != value.size()) throw fail("inputs '" + value + "'");
    } else {
      throw fail("'" + s + "' does not apply to " + to_string(p.op) + " (or is given twice)");
    }
  }
  if (p.op == Op::permute && p.perm.empty()) throw fail("permute needs perm=...");
  if (const std::string why = p.validate(); !why.empty())
    throw bench::UsageError("invalid op problem " + bench::quote_input(text, 40) + ": " + why);
  return p;
}

void print_problem(std::ostream& os, const Problem& p) {
  os << "\n== " << p.str_with_name() << ": " << to_string(p.category()) << ", "
     << p.input_elements() << " input elements, " << p.bytes() / 1e6 << " MB moved at "
     << "least" << (p.flops() > 0 ? ", " + bench::format_fixed(p.flops() / 1e6, 1) + " MFLOP" : "")
     << " ==\n";
}

}  // namespace ops
