#include "models/mlp/problem.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "core/error.hpp"

namespace mlp {
namespace {

// Every count below 2^20 and dim below 2^17 keeps every product far from int64 overflow.
constexpr std::int64_t kMaxDim = std::int64_t(1) << 17;
constexpr std::int64_t kMaxCount = std::int64_t(1) << 20;

std::string with_name(const std::string& s, const std::string& name) {
  return name.empty() ? s : s + ":n\"" + name + "\"";
}

// Splits "body[:dtype][:n"name"]" into its parts; throws on a malformed tail.
struct Parts {
  std::string kind, sizes, dtype, name;
};

Parts split(const std::string& text) {
  static const std::regex re(R"(^([a-z]+):([a-z0-9]+)(?::([a-z0-9]+))?(?::n\"([^\"]*)\")?$)");
  std::smatch m;
  // std::regex recurses per character: a long text could exhaust the stack.
  if (text.size() > 512 || !std::regex_match(text, m, re))
    throw bench::UsageError("malformed MLP-suite descriptor " + bench::quote_input(text, 40) +
                            " (expected e.g. mlp:d128l16b128s5:fp32 or mm:n1024:bf16)");
  return {m[1], m[2], m[3], m[4]};
}

DataType dtype_or(const std::string& text, DataType fallback) {
  if (text.empty()) return fallback;
  const DataType dt = bench::parse_data_type(text);
  if (!is_mlp_dtype(dt))
    throw bench::UsageError("dtype " + text + " is not one of the MLP suite's: fp32, tf32, bf16");
  return dt;
}

}  // namespace

bool is_mlp_dtype(DataType dt) {
  return dt == DataType::fp32 || dt == DataType::tf32 || dt == DataType::bf16;
}

double MlpProblem::flops() const {
  return 6.0 * double(batch_size) * double(dim) * double(dim) * double(num_layers) *
         double(num_steps);
}

double MlpProblem::bytes() const {
  const double e = bench::storage_bytes(dtype);
  const double per_step = 5.0 * double(parameters()) + double(batch_size * dim) +
                          4.0 * double(num_layers) * double(batch_size * dim);
  return per_step * double(num_steps) * e;
}

std::string MlpProblem::str() const {
  return "mlp:d" + std::to_string(dim) + "l" + std::to_string(num_layers) + "b" +
         std::to_string(batch_size) + "s" + std::to_string(num_steps) + ":" +
         bench::to_string(dtype);
}

std::string MlpProblem::str_with_name() const {
  return with_name(str(), name);
}

nlohmann::ordered_json MlpProblem::params() const {
  return {{"kind", "mlp"},
          {"dim", dim},
          {"num_layers", num_layers},
          {"batch_size", batch_size},
          {"num_steps", num_steps},
          {"parameters", parameters()},
          {"dtype", bench::to_string(dtype)}};
}

std::string MlpProblem::validate() const {
  if (dim < 1 || dim > kMaxDim) return "dim must be in 1.." + std::to_string(kMaxDim);
  for (auto [v, what] : {std::pair{num_layers, "num_layers"}, std::pair{batch_size, "batch_size"},
                         std::pair{num_steps, "num_steps"}})
    if (v < 1 || v > kMaxCount)
      return std::string(what) + " must be in 1.." + std::to_string(kMaxCount);
  if (!is_mlp_dtype(dtype)) return "dtype must be fp32, tf32 or bf16";
  return "";
}

std::string MatmulProblem::str() const {
  return "mm:n" + std::to_string(n) + ":" + bench::to_string(dtype);
}

std::string MatmulProblem::str_with_name() const {
  return with_name(str(), name);
}

nlohmann::ordered_json MatmulProblem::params() const {
  return {{"kind", "mm"}, {"m", n}, {"n", n}, {"k", n}, {"dtype", bench::to_string(dtype)}};
}

std::string MatmulProblem::validate() const {
  if (n < 1 || n > kMaxDim) return "n must be in 1.." + std::to_string(kMaxDim);
  if (!is_mlp_dtype(dtype)) return "dtype must be fp32, tf32 or bf16";
  return "";
}

bool operator==(const MlpProblem& a, const MlpProblem& b) {
  return a.str_with_name() == b.str_with_name();
}

bool operator==(const MatmulProblem& a, const MatmulProblem& b) {
  return a.str_with_name() == b.str_with_name();
}

Problem parse_problem(const std::string& text, DataType default_dtype) {
  const Parts parts = split(text);
  auto number = [&](const std::string& digits, const char* field) {
    if (digits.empty() || digits.size() > 9)
      throw bench::UsageError(bench::quote_input(text, 40) + ": " + field + " needs 1 to 9 digits");
    return std::int64_t(std::stoll(digits));
  };
  Problem out;
  if (parts.kind == "mlp") {
    static const std::regex sizes(R"(^d([0-9]+)l([0-9]+)b([0-9]+)s([0-9]+)$)");
    std::smatch m;
    if (!std::regex_match(parts.sizes, m, sizes))
      throw bench::UsageError("malformed MLP descriptor " + bench::quote_input(text, 40) +
                              " (expected mlp:d<dim>l<num_layers>b<batch_size>s<num_steps>)");
    MlpProblem p;
    p.dim = number(m[1], "d");
    p.num_layers = number(m[2], "l");
    p.batch_size = number(m[3], "b");
    p.num_steps = number(m[4], "s");
    p.dtype = dtype_or(parts.dtype, default_dtype);
    p.name = parts.name;
    if (const std::string why = p.validate(); !why.empty())
      throw bench::UsageError(bench::quote_input(text, 40) + ": " + why);
    out = p;
  } else if (parts.kind == "mm") {
    if (parts.sizes.size() < 2 || parts.sizes[0] != 'n' ||
        !std::all_of(parts.sizes.begin() + 1, parts.sizes.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw bench::UsageError("malformed matmul descriptor " + bench::quote_input(text, 40) +
                              " (expected mm:n<size>)");
    MatmulProblem p;
    p.n = number(parts.sizes.substr(1), "n");
    p.dtype = dtype_or(parts.dtype, default_dtype);
    p.name = parts.name;
    if (const std::string why = p.validate(); !why.empty())
      throw bench::UsageError(bench::quote_input(text, 40) + ": " + why);
    out = p;
  } else {
    throw bench::UsageError("unknown problem kind '" + parts.kind + "' in " +
                            bench::quote_input(text, 40) + " (expected mlp or mm)");
  }
  return out;
}

MlpProblem parse_mlp_problem(const std::string& text, DataType default_dtype) {
  const Problem p = parse_problem(text, default_dtype);
  if (!std::holds_alternative<MlpProblem>(p))
    throw bench::UsageError(bench::quote_input(text, 40) + " is not an MLP problem (mlp:d...)");
  return std::get<MlpProblem>(p);
}

std::string str(const Problem& p) {
  return std::visit([](const auto& x) { return x.str(); }, p);
}

std::string str_with_name(const Problem& p) {
  return std::visit([](const auto& x) { return x.str_with_name(); }, p);
}

DataType dtype_of(const Problem& p) {
  return std::visit([](const auto& x) { return x.dtype; }, p);
}

}  // namespace mlp
