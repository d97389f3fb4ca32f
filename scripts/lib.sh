# Shared by the scripts: paths, the package lists, and the CMake arguments. Source it; it
# defines functions and variables only.

MYCONV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# An install tree (cmake --install): MYCONV_ROOT is PREFIX/share/myconv, whose file `installed`
# names the folder of the installed programs; the scripts then run those, with no set-up or build.
MYCONV_INSTALLED_BIN=""
if [ -f "$MYCONV_ROOT/installed" ]; then
  MYCONV_INSTALLED_BIN=$(head -n 1 "$MYCONV_ROOT/installed")
fi
# Where `setup.sh --from-bundle` unpacks packages; the build uses it when it exists. The
# environment may name another one (scripts/checks/check_bundle_install.sh uses a scratch prefix).
MYCONV_PREFIX=${MYCONV_PREFIX:-$MYCONV_ROOT/.deps/prefix}

# Packages of a full CPU build on Debian 12 / Ubuntu. Required ones fail the set-up when missing;
# optional ones (a backend each) are installed where the distribution has them.
MYCONV_REQUIRED_PACKAGES=(build-essential cmake ninja-build git python3 nlohmann-json3-dev
  libcli11-dev libgtest-dev
  # scripts/analyze_results.py draws its plots with it; its test checks them
  python3-matplotlib)
MYCONV_OPTIONAL_PACKAGES=(libtorch-dev libdnnl-dev ocl-icd-opencl-dev libhalide14-0-dev
  # LibTorch's BLAS as libtorch1.13 recommends it (without it the reference netlib BLAS serves
  # libtorch_cpu's matmul, 2 GFLOP/s at 512^3 here: not the PyTorch a user gets)
  libopenblas0-pthread
  python3-pandas
  # scripts/remote_run.sh (ssh, rsync)
  openssh-client rsync)
# Packages only the tests need (scripts/test.sh installs them): the remote_run.sh test starts an
# sshd of its own on 127.0.0.1.
MYCONV_TEST_PACKAGES=(openssh-server
  # tests/analysis/test_analyze_results.py loads a report's index.html in headless Chromium (the
  # test skips without it); --no-install-recommends: 16 packages, 123 MB, 47 s on the 2-core CI host
  chromium
  # the Slurm test (tests/runner/test_slurm.sh) starts a single-node cluster of its own
  slurm-wlm munge)

# Packages a GPU host without network needs from a bundle: everything above except the
# toolchain (present there) and LibTorch (taken from the host's Python torch). Run-time
# libraries of Halide (LLVM 14, Z3, libedit) and oneDNN (OpenCL ICD loader) are listed because
# the host may lack them.
MYCONV_BUNDLE_PACKAGES=(nlohmann-json3-dev libcli11-dev libgtest-dev libhalide14-0
  libhalide14-0-dev libllvm14 libz3-4 libedit2 libdnnl2 libdnnl-dev ocl-icd-libopencl1
  ocl-icd-opencl-dev opencl-c-headers)

# A script's lines start with its own name: [setup], [test], [sanitize], [submit], ...
myconv_log() { echo "[$(basename "$0" .sh)] $*"; }

# The CUDA architectures of this machine's GPUs ("90", "80;90"), from nvidia-smi; empty when there
# is no GPU or the driver is too old to report compute_cap.
myconv_local_cuda_archs() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
    awk '/^[0-9]+\.[0-9]+$/ { sub(/\./, ""); print }' | sort -un | paste -sd';' -
}

# Arguments for `cmake -S . -B build`: generator, build type, the bundle prefix, and the CUDA
# architectures: $CUDAARCHS when set (CMake's own variable), else the local GPUs' own (a build
# for one architecture takes a third of the portable default's time), else CMake's default
# (cmake/Dependencies.cmake: portable, for a machine without a GPU).
myconv_cmake_args() {
  local args=(-DCMAKE_BUILD_TYPE=Release)
  if command -v ninja >/dev/null 2>&1; then args+=(-G Ninja); fi
  if [ -d "$MYCONV_PREFIX/usr" ]; then args+=("-DMYCONV_DEPS_PREFIX=$MYCONV_PREFIX"); fi
  # The Python whose torch (CUDA LibTorch) and nvidia-cudnn wheel the build uses: $MYCONV_PYTHON,
  # e.g. /opt/pytorch/bin/python3 on AWS's Deep Learning AMI, else python3 on PATH.
  if [ -n "${MYCONV_PYTHON:-}" ]; then args+=("-DMYCONV_PYTHON3=$MYCONV_PYTHON"); fi
  local archs=${CUDAARCHS:-$(myconv_local_cuda_archs)}
  if [ -n "$archs" ]; then args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs"); fi
  printf '%s\n' "${args[@]}"
}

myconv_jobs() { nproc 2>/dev/null || echo 2; }

# True when every required package is installed (or a bundle prefix provides the libraries).
myconv_setup_done() {
  [ -d "$MYCONV_PREFIX/usr" ] && return 0
  command -v dpkg-query >/dev/null 2>&1 || return 1
  local p
  for p in "${MYCONV_REQUIRED_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || return 1
  done
  return 0
}
