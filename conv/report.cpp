#include "conv/report.hpp"

#include <filesystem>

#include "core/npy.hpp"

namespace conv {

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

void save_tensors(const std::string& dir, const Problem& p, const HostData& data) {
  const auto folder = std::filesystem::path(dir) / p.str();
  std::filesystem::create_directories(folder);
  bench::write_npy((folder / "src.npy").string(), data.src.data(), p.src_shape());
  bench::write_npy((folder / "wei.npy").string(), data.wei.data(), p.wei_shape());
  bench::write_npy((folder / "ref.npy").string(), data.ref.data(), p.dst_shape());
}

void save_output(const std::string& dir, const Problem& p, const std::string& backend,
                 const std::vector<float>& output) {
  bench::write_npy((std::filesystem::path(dir) / p.str() / (backend + ".npy")).string(),
                   output.data(), p.dst_shape());
}

}  // namespace conv
