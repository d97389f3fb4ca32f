// The op problem of the op suite (myops): one type that prints and parses itself and owns every
// derived number (output shape, elements, FLOPs, the fewest bytes moved). No backend recomputes
// them. Descriptors, fields separated by ':':
//   add:4096x4096               element ops: add sub mul div, same shapes
//   add:4096x4096+1x4096:fp16   the second operand broadcast, of the same rank (row 1xN, column
//                               Mx1, scalar 1x1)
//   gelu_tanh:16777216          activations: relu sigmoid tanh gelu_erf gelu_tanh silu
//   sum:4x512x896:axis=2        reductions: sum mean max over the given axes (default: all)
//   softmax:4x512x896           normalization over the last axis: softmax layernorm rmsnorm
//   matmul:m4096n4096k4096:bf16 C[b][m][n] = A[b][m][k] B[b][k][n]; b (batch) default 1
//   transpose:8192x8192         memory: copy, transpose (the last two axes), permute (perm=2,0,1),
//   concat:4096x4096:inputs=2:axis=0   concat of `inputs` copies of the shape along axis
// then an optional dtype (fp32 tf32 fp16 bf16; tf32 only for matmul) and n"name". Axes may be
// written negative (axis=-1); the canonical form writes them from 0, sorted.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace ops {

using bench::DataType;

enum class Category { element, activation, reduction, normalization, matmul, memory };
enum class Op {
  add,
  sub,
  mul,
  div,
  relu,
  sigmoid,
  tanh,
  gelu_erf,
  gelu_tanh,
  silu,
  sum,
  mean,
  max,
  softmax,
  layernorm,
  rmsnorm,
  matmul,
  copy,
  transpose,
  permute,
  concat
};

std::string to_string(Category c);
std::string to_string(Op op);
Category category_of(Op op);
// Every op in the order above, and the names of a category's ops.
const std::vector<Op>& all_ops();
Op parse_op(const std::string& text);              // throws bench::UsageError
Category parse_category(const std::string& text);  // throws bench::UsageError

struct Problem {
  Op op = Op::add;
  std::vector<std::int64_t> shape;  // the (first) input; matmul: unused
  std::vector<std::int64_t> rhs;    // element ops: the second input when it is broadcast
  std::vector<int> axes;            // reductions: the reduced axes, sorted, from 0; empty = all
  std::vector<int> perm;            // permute: output axis i is input axis perm[i]
  int inputs = 2, axis = 0;         // concat
  std::int64_t b = 1, m = 0, n = 0, k = 0;  // matmul
  DataType dtype = DataType::fp32;
  std::string name;  // optional label (n"..."), not part of the identity

  Category category() const { return category_of(op); }
  // The second operand's shape as stored (same as shape unless broadcast).
  std::vector<std::int64_t> rhs_shape() const { return rhs.empty() ? shape : rhs; }
  std::vector<std::int64_t> output_shape() const;
  std::int64_t input_elements() const;  // the first input (matmul: A)
  std::int64_t output_elements() const;
  // Arithmetic work of one call (2 per multiply-add; element and activation ops 1 per output,
  // reductions 1 per input, the normalizations their passes' operations per element).
  double flops() const;
  // Fewest bytes one call moves: every input read once, the output written once, in dtype.
  double bytes() const;

  std::string str() const;            // canonical descriptor
  std::string str_with_name() const;  // with n"name" when named
  nlohmann::ordered_json params() const;
  // Empty when valid, else a one-line reason.
  std::string validate() const;
};

bool operator==(const Problem& a, const Problem& b);
inline bool operator!=(const Problem& a, const Problem& b) {
  return !(a == b);
}

// Parses a descriptor; dtype from `defaults` when the text names none. Throws bench::UsageError
// with the reason on malformed text or an invalid problem.
Problem parse_problem(const std::string& text, const Problem& defaults = Problem());

// "== PROBLEM: category, input elements, MB moved at least[, MFLOP] ==", after a blank line.
void print_problem(std::ostream& os, const Problem& p);

}  // namespace ops
