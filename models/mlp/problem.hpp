// The problems of the MLP suite (mymlp), each a type that prints and parses itself and owns its
// derived numbers. No backend recomputes them.
//
//   mlp:d128l16b128s5:fp32   the lecture's run_mlp(dim, num_layers, batch_size, num_steps): an MLP
//                            of num_layers x (Linear(dim, dim) -> GeLU); one call runs num_steps
//                            steps, each a forward pass, the loss (the mean of the output) and a
//                            backward pass, gradients accumulated from zero
//   mm:n1024:fp32            the lecture's square matmul benchmark: C = A B, all n x n
//
// The dtype (fp32 tf32 bf16; fp16 is not part of the lecture) may be left out (default fp32, or
// the caller's); a label n"name" may follow, not part of the identity (scaling studies name their
// cases base, scale_dim_x3, ...). Descriptors print every size field, in this order.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace mlp {

using bench::DataType;

struct MlpProblem {
  std::int64_t dim = 128, num_layers = 16, batch_size = 128, num_steps = 5;
  DataType dtype = DataType::fp32;
  std::string name;  // optional label, not part of the identity

  // 6 x batch x dim^2 x layers x steps: per layer and step 2BD^2 in the forward GEMM, 4BD^2 in
  // the backward (dX and dW). Biases, GeLU and the loss are left out, as the lecture does.
  double flops() const;
  // Fewest bytes one call moves, per step: the weights and biases read in the forward and in the
  // backward and their gradients read and written once (5 x parameters), the input read, each
  // layer's activation written in the forward and read in the backward, and its gradient written
  // and read once (4 x B x D per layer); all in dtype.
  double bytes() const;
  std::int64_t parameters() const { return num_layers * (dim * dim + dim); }
  std::string str() const;            // canonical descriptor, without the name
  std::string str_with_name() const;  // with :n"name" when named
  nlohmann::ordered_json params() const;
  std::string validate() const;  // empty when valid, else a one-line reason
};

struct MatmulProblem {
  std::int64_t n = 1024;
  DataType dtype = DataType::fp32;
  std::string name;

  double flops() const { return 2.0 * double(n) * double(n) * double(n); }
  double bytes() const { return 3.0 * double(n) * double(n) * bench::storage_bytes(dtype); }
  std::string str() const;
  std::string str_with_name() const;
  nlohmann::ordered_json params() const;
  std::string validate() const;
};

bool operator==(const MlpProblem& a, const MlpProblem& b);
bool operator==(const MatmulProblem& a, const MatmulProblem& b);

using Problem = std::variant<MlpProblem, MatmulProblem>;

// Parses either kind; the dtype from default_dtype when the text names none. Throws
// bench::UsageError with a one-line reason on malformed text or an invalid problem.
Problem parse_problem(const std::string& text, DataType default_dtype = DataType::fp32);
MlpProblem parse_mlp_problem(const std::string& text, DataType default_dtype = DataType::fp32);

std::string str(const Problem& p);
std::string str_with_name(const Problem& p);
DataType dtype_of(const Problem& p);

// The dtypes this suite takes: fp32, tf32 (fp32 storage, TF32 tensor-core GEMMs), bf16.
bool is_mlp_dtype(DataType dt);

}  // namespace mlp
