# Finds every dependency. Required: nlohmann-json, CLI11. Optional, each enabling backends:
# LibTorch, oneDNN, Halide 14, CUDA toolkit (+cuDNN, CUPTI). For each optional one this sets
# MYCONV_HAVE_<DEP> (ON/OFF) and MYCONV_WHY_NO_<DEP> (the reason it is off), which the summary
# table prints and the registries (experiments/registry/) report at run time.

include(CheckLanguage)

# A local prefix of unpacked Debian packages (scripts/setup.sh --from-bundle) comes first.
set(MYCONV_DEPS_PREFIX "" CACHE PATH "Prefix of unpacked dependency packages (.deps/prefix)")
if(MYCONV_DEPS_PREFIX)
  set(_libdir "${MYCONV_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu")
  list(PREPEND CMAKE_PREFIX_PATH "${MYCONV_DEPS_PREFIX}/usr" "${_libdir}/cmake")
  # Libraries of the prefix need each other (libHalide -> libLLVM-14 -> libz3): the linker must
  # find them, and DT_RPATH (unlike RUNPATH) also serves those indirect dependencies at run time.
  list(APPEND CMAKE_BUILD_RPATH "${_libdir}" "${_libdir}/halide14")
  list(APPEND CMAKE_INSTALL_RPATH "${_libdir}" "${_libdir}/halide14")  # cmake --install too
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,-rpath-link,${_libdir} -Wl,--disable-new-dtags")
  string(APPEND CMAKE_SHARED_LINKER_FLAGS " -Wl,-rpath-link,${_libdir} -Wl,--disable-new-dtags")
  string(APPEND CMAKE_MODULE_LINKER_FLAGS " -Wl,-rpath-link,${_libdir} -Wl,--disable-new-dtags")
endif()

find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(Threads REQUIRED)

# ---- GoogleTest: the system's package, else Debian's source tree -------------------------------
option(MYCONV_BUILD_TESTS "Build the tests" ON)
if(MYCONV_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT GTest_FOUND AND EXISTS /usr/src/googletest/CMakeLists.txt)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
    set(GTest_FOUND TRUE)
  endif()
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "GoogleTest not found: run scripts/setup.sh, or configure with "
                        "-DMYCONV_BUILD_TESTS=OFF")
  endif()
endif()

# ---- LibTorch: a CUDA-enabled one from Python's torch first, else the system's ----------------
set(MYCONV_HAVE_TORCH OFF)
set(MYCONV_WHY_NO_TORCH "")
option(MYCONV_WITH_TORCH "Build the LibTorch backends" ON)
if(NOT MYCONV_WITH_TORCH)
  set(MYCONV_WHY_NO_TORCH "disabled (MYCONV_WITH_TORCH=OFF)")
else()
  if(NOT Torch_DIR)
    find_program(MYCONV_PYTHON3 python3)
    if(MYCONV_PYTHON3)
      execute_process(COMMAND ${MYCONV_PYTHON3} -c "import torch; print(torch.utils.cmake_prefix_path)"
                      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                      RESULT_VARIABLE _rc)
      if(_rc EQUAL 0 AND EXISTS "${_torch_prefix}")
        list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
        message(STATUS "LibTorch: using Python's torch at ${_torch_prefix}")
      endif()
    endif()
  endif()
  find_package(Torch QUIET)
  if(Torch_FOUND)
    if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
      set(MYCONV_WHY_NO_TORCH "LibTorch at ${Torch_DIR} uses the pre-C++11 string ABI, "
                              "incompatible with the other libraries")
    else()
      set(MYCONV_HAVE_TORCH ON)
      set(MYCONV_TORCH_VERSION "${Torch_VERSION}")
      # Python's torch lives outside the system's folders: installed programs keep its path.
      if(TORCH_INSTALL_PREFIX)
        list(APPEND CMAKE_INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib")
      endif()
      # Python's torch wheels export copies of libstdc++'s std::filesystem functions linked
      # statically into libtorch_cpu.so (pytorch/pytorch#133437). A program whose needed
      # libraries list libtorch before libstdc++ binds its own std::filesystem calls to those
      # copies: on the GPU host (torch 2.11, g++ 13) LD_DEBUG=bindings showed a test binding
      # path::_M_split_cmpts to libtorch_cpu.so, and every test that made a std::filesystem
      # temporary folder crashed at once. libstdc++ first among the needed libraries makes the
      # system's definitions win the lookup. (Torch_DIR names the wheel whether it came from
      # python3 above or from the command line.)
      #
      # The shared library is named by its path, not by -lstdc++: on the GPU host (g++ 13.3 in
      # /opt/gcc) -lstdc++ found gcc's own folder first, which holds libstdc++.a only, so every
      # program linked pieces of libstdc++ statically, among them std::call_once's thread-local
      # __once_call. libstdc++.so's call_once trampoline then read the program's copy while
      # oneDNN, opened with RTLD_DEEPBIND (baselines/onednn_loader.cpp), wrote the shared
      # library's: a call through a null pointer, onednn_cpu's SIGSEGV on every problem
      # (results/h200/20261125_onednn_crash_diagnosis/). tests/build/test_libstdcxx_link.sh checks
      # the programs define none of it.
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND Torch_DIR MATCHES "site-packages")
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                        OUTPUT_VARIABLE _libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT IS_ABSOLUTE "${_libstdcxx}" OR NOT EXISTS "${_libstdcxx}")
          set(_libstdcxx "-l:libstdc++.so.6")  # the compiler has no shared one: the system's
        endif()
        message(STATUS "libstdc++: linked shared and first, ${_libstdcxx}")
        add_link_options("SHELL:-Wl,--push-state,--no-as-needed ${_libstdcxx} -Wl,--pop-state")
      endif()
    endif()
  else()
    set(MYCONV_WHY_NO_TORCH "LibTorch not found (install libtorch-dev or pip install torch)")
  endif()
endif()

# ---- oneDNN ------------------------------------------------------------------------------------
set(MYCONV_HAVE_ONEDNN OFF)
set(MYCONV_WHY_NO_ONEDNN "")
option(MYCONV_WITH_ONEDNN "Build the oneDNN backend" ON)
if(NOT MYCONV_WITH_ONEDNN)
  set(MYCONV_WHY_NO_ONEDNN "disabled (MYCONV_WITH_ONEDNN=OFF)")
else()
  find_package(dnnl CONFIG QUIET)
  if(dnnl_FOUND AND dnnl_VERSION VERSION_GREATER_EQUAL 3)
    # oneDNN 3 changed the primitive API (e.g. no operation descriptors): a distribution that
    # ships it (newer Ubuntu) gets the backend reported as not built, not a broken build.
    set(MYCONV_WHY_NO_ONEDNN "oneDNN ${dnnl_VERSION} found; the backend is written for the 2.x "
                             "API (Debian 12's libdnnl-dev 2.6, or scripts/offline/bundle_deps.sh)")
  elseif(dnnl_FOUND)
    set(MYCONV_HAVE_ONEDNN ON)
  else()
    set(MYCONV_WHY_NO_ONEDNN "oneDNN not found (install libdnnl-dev and ocl-icd-opencl-dev)")
  endif()
endif()

# ---- Halide 14 ---------------------------------------------------------------------------------
# Halide's CMake package needs LLVM's (llvm-14-dev, 34 MB), which GPU hosts without network may
# lack: where it is missing, the headers and the library are found directly.
set(MYCONV_HAVE_HALIDE OFF)
set(MYCONV_WHY_NO_HALIDE "")
option(MYCONV_WITH_HALIDE "Build the Halide backends" ON)
if(NOT MYCONV_WITH_HALIDE)
  set(MYCONV_WHY_NO_HALIDE "disabled (MYCONV_WITH_HALIDE=OFF)")
else()
  find_package(Halide 14 CONFIG QUIET)
  if(Halide_FOUND)
    get_target_property(_halide_lib Halide::Halide IMPORTED_LOCATION_RELEASE)
  else()
    find_path(MYCONV_HALIDE_INCLUDE_DIR Halide.h PATH_SUFFIXES halide14)
    find_library(MYCONV_HALIDE_LIBRARY NAMES Halide14 libHalide14.so.0 Halide)
    if(MYCONV_HALIDE_INCLUDE_DIR AND MYCONV_HALIDE_LIBRARY)
      # A Halide package that failed on its missing LLVM dependency may have created the target.
      if(NOT TARGET Halide::Halide)
        add_library(Halide::Halide SHARED IMPORTED)
      endif()
      set_target_properties(Halide::Halide PROPERTIES
        IMPORTED_LOCATION "${MYCONV_HALIDE_LIBRARY}"
        IMPORTED_LOCATION_RELEASE "${MYCONV_HALIDE_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${MYCONV_HALIDE_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
      set(_halide_lib "${MYCONV_HALIDE_LIBRARY}")
      set(Halide_FOUND TRUE)
    endif()
  endif()
  if(Halide_FOUND AND MYCONV_DEPS_PREFIX)
    # libLLVM-14 (libHalide's dependency) carries RUNPATH $ORIGIN/../lib, and the loader looks up
    # the dependencies of an object with a RUNPATH (libz3, libedit) only there and in the system's
    # folders, never in the RPATH of the program: on a host without them the programs failed to
    # start (exit 127, "libz3.so.4: cannot open shared object file"; seen on the H100 host). So
    # the programs name them themselves, from the prefix (the RPATH above finds them), and
    # libLLVM's requests find them loaded.
    set(_llvm_deps "")
    foreach(_dep libz3.so.4 libedit.so.2)
      if(EXISTS "${_libdir}/${_dep}")
        list(APPEND _llvm_deps "${_libdir}/${_dep}")
      endif()
    endforeach()
    if(_llvm_deps)
      list(JOIN _llvm_deps "," _llvm_deps)
      set_property(TARGET Halide::Halide APPEND PROPERTY INTERFACE_LINK_OPTIONS
                   "LINKER:--push-state,--no-as-needed,${_llvm_deps},--pop-state")
    endif()
  endif()
  if(Halide_FOUND)
    set(MYCONV_HAVE_HALIDE ON)
    get_filename_component(_halide_libdir "${_halide_lib}" DIRECTORY)
    set(MYCONV_HALIDE_PLUGIN_DIR "${_halide_libdir}/halide14")
  else()
    set(MYCONV_WHY_NO_HALIDE "Halide 14 not found (install libhalide14-0-dev)")
  endif()
endif()

# ---- CUDA toolkit and cuDNN --------------------------------------------------------------------
# CUDA is a language of the project only where a working nvcc is found (check_language); without
# one every CUDA backend is reported as not built, and the CPU build is unchanged. The default
# architectures are portable (Turing, Ampere, Hopper); a run on one GPU passes its own, e.g.
# -DCMAKE_CUDA_ARCHITECTURES=90 or CUDAARCHS=90 for the H100/H200 (the scripts pass the local
# GPU's own: scripts/lib.sh myconv_cmake_args).
set(MYCONV_HAVE_CUDA OFF)
set(MYCONV_WHY_NO_CUDA "")
set(MYCONV_HAVE_CUDNN OFF)
set(MYCONV_WHY_NO_CUDNN "")
option(MYCONV_WITH_CUDA "Build the CUDA backends (our kernels, cuDNN)" ON)
if(NOT MYCONV_WITH_CUDA)
  set(MYCONV_WHY_NO_CUDA "disabled (MYCONV_WITH_CUDA=OFF)")
else()
  # nvcc is often installed but not on PATH (/usr/local/cuda/bin): check_language honours CUDACXX.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(MYCONV_NVCC nvcc)
    if(NOT MYCONV_NVCC AND EXISTS /usr/local/cuda/bin/nvcc)
      set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # CUDAARCHS in the environment is CMake's own way to choose them (enable_language reads it).
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "75;80;90" CACHE STRING
          "CUDA architectures to build for (one GPU's own, e.g. 90, builds faster)")
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(MYCONV_HAVE_CUDA ON)
      list(APPEND CMAKE_INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
    else()
      set(MYCONV_WHY_NO_CUDA "nvcc works but the CUDA toolkit's libraries were not found")
    endif()
  else()
    set(MYCONV_WHY_NO_CUDA "no CUDA compiler found (install the CUDA toolkit or set CUDACXX)")
  endif()
endif()

# cuDNN: Python's nvidia-cudnn wheel first (what PyTorch on the GPU host uses), then the toolkit's
# own folders. The wheel has only the versioned library file (libcudnn.so.9).
if(NOT MYCONV_HAVE_CUDA)
  set(MYCONV_WHY_NO_CUDNN "needs CUDA: ${MYCONV_WHY_NO_CUDA}")
else()
  set(_cudnn_include_hints "")
  set(_cudnn_library_hints "")
  find_program(MYCONV_PYTHON3 python3)
  if(MYCONV_PYTHON3)
    execute_process(
      COMMAND ${MYCONV_PYTHON3} -c "import nvidia.cudnn, os; print(list(nvidia.cudnn.__path__)[0])"
      OUTPUT_VARIABLE _cudnn_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND EXISTS "${_cudnn_py}")
      list(APPEND _cudnn_include_hints "${_cudnn_py}/include")
      list(APPEND _cudnn_library_hints "${_cudnn_py}/lib")
    endif()
  endif()
  find_path(MYCONV_CUDNN_INCLUDE_DIR cudnn.h HINTS ${_cudnn_include_hints} ${CUDAToolkit_INCLUDE_DIRS})
  # NAMES_PER_DIR: the wheel's folder wins even though its file matches only the second name.
  find_library(MYCONV_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 NAMES_PER_DIR
               HINTS ${_cudnn_library_hints} ${CUDAToolkit_LIBRARY_DIR})
  if(MYCONV_CUDNN_INCLUDE_DIR AND MYCONV_CUDNN_LIBRARY)
    set(_cudnn_version_h "${MYCONV_CUDNN_INCLUDE_DIR}/cudnn_version.h")
    if(NOT EXISTS "${_cudnn_version_h}")
      set(_cudnn_version_h "${MYCONV_CUDNN_INCLUDE_DIR}/cudnn.h")
    endif()
    file(STRINGS "${_cudnn_version_h}" _cudnn_defs REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*" "\\1" _cudnn_major "${_cudnn_defs}")
    string(REGEX REPLACE ".*CUDNN_MINOR ([0-9]+).*" "\\1" _cudnn_minor "${_cudnn_defs}")
    string(REGEX REPLACE ".*CUDNN_PATCHLEVEL ([0-9]+).*" "\\1" _cudnn_patch "${_cudnn_defs}")
    set(MYCONV_CUDNN_VERSION "${_cudnn_major}.${_cudnn_minor}.${_cudnn_patch}")
    if(_cudnn_major VERSION_LESS 8)
      set(MYCONV_WHY_NO_CUDNN "cuDNN ${MYCONV_CUDNN_VERSION} is older than 8 (no CUDNN_FMA_MATH)")
    else()
      set(MYCONV_HAVE_CUDNN ON)
      add_library(myconv::cudnn SHARED IMPORTED)
      set_target_properties(myconv::cudnn PROPERTIES
        IMPORTED_LOCATION "${MYCONV_CUDNN_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${MYCONV_CUDNN_INCLUDE_DIR}")
      get_filename_component(_cudnn_dir "${MYCONV_CUDNN_LIBRARY}" DIRECTORY)
      list(APPEND CMAKE_INSTALL_RPATH "${_cudnn_dir}")
      message(STATUS "cuDNN ${MYCONV_CUDNN_VERSION}: ${MYCONV_CUDNN_LIBRARY} "
                     "(headers ${MYCONV_CUDNN_INCLUDE_DIR})")
    endif()
  else()
    set(MYCONV_WHY_NO_CUDNN "cuDNN not found (pip install nvidia-cudnn-cu13, or install libcudnn9)")
  endif()
endif()

# ---- CUPTI and NVTX: GPU activity and ranges of the debug traces (myconv --debug) -------------
# Both from the toolkit. CUPTI (libcupti.so) needs no libcuda at load time, so binaries linked
# with it still start without a driver. NVTX 3 is header-only.
set(MYCONV_HAVE_CUPTI OFF)
set(MYCONV_WHY_NO_CUPTI "")
set(MYCONV_HAVE_NVTX OFF)
if(NOT MYCONV_HAVE_CUDA)
  set(MYCONV_WHY_NO_CUPTI "needs CUDA: ${MYCONV_WHY_NO_CUDA}")
else()
  if(TARGET CUDA::cupti)
    set(MYCONV_HAVE_CUPTI ON)
  else()
    set(MYCONV_WHY_NO_CUPTI "CUPTI (libcupti.so, cupti.h) not found in the CUDA toolkit")
  endif()
  find_path(MYCONV_NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(MYCONV_NVTX3_INCLUDE_DIR)
    set(MYCONV_HAVE_NVTX ON)
  endif()
endif()

# ---- LibTorch on CUDA ----------------------------------------------------------------------------
# A CUDA build of LibTorch shows in its CMake package as the imported target torch_cuda, a
# non-empty TORCH_CUDA_LIBRARIES, or CAFFE2_USE_CUDA (Caffe2Config); a CPU-only one has none of
# them. The backend also needs our own CUDA support (its stream timer, CUDA_CHECK).
set(MYCONV_HAVE_TORCH_CUDA OFF)
set(MYCONV_WHY_NO_TORCH_CUDA "")
if(NOT MYCONV_HAVE_TORCH)
  set(MYCONV_WHY_NO_TORCH_CUDA "needs LibTorch: ${MYCONV_WHY_NO_TORCH}")
elseif(NOT (TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA))
  set(MYCONV_WHY_NO_TORCH_CUDA "LibTorch found is CPU-only (Debian's libtorch-dev)")
elseif(NOT MYCONV_HAVE_CUDA)
  set(MYCONV_WHY_NO_TORCH_CUDA "needs CUDA: ${MYCONV_WHY_NO_CUDA}")
else()
  set(MYCONV_HAVE_TORCH_CUDA ON)
endif()

# ---- cuBLASLt: the one LibTorch loads ----------------------------------------------------------
# A process holds one libcublasLt.so.13. pip's torch loads the nvidia wheel's (site-packages/
# nvidia/cu13/lib), but a program linked to the toolkit's loads that one first, by its own
# run path: LibTorch's matmuls in our programs then ran the toolkit's cuBLASLt while a Python
# user's run the wheel's (seen with LD_DEBUG=libs on the H100 host, toolkit 13.0 against the
# wheel). So with a CUDA LibTorch the wheel's library is linked (and cublaslt measures it too),
# else the toolkit's. The headers are the toolkit's: the same major version, one ABI.
if(MYCONV_HAVE_CUDA)
  unset(_cublaslt_wheel)
  if(MYCONV_HAVE_TORCH_CUDA AND Torch_DIR MATCHES "site-packages")
    string(REGEX REPLACE "(.*/site-packages)/.*" "\\1" _site "${Torch_DIR}")
    find_library(MYCONV_CUBLASLT_WHEEL NAMES libcublasLt.so.13 libcublasLt.so.12 NAMES_PER_DIR
                 PATHS "${_site}/nvidia/cu13/lib" "${_site}/nvidia/cublas/lib" NO_DEFAULT_PATH)
    if(MYCONV_CUBLASLT_WHEEL)
      set(_cublaslt_wheel "${MYCONV_CUBLASLT_WHEEL}")
    endif()
  endif()
  if(_cublaslt_wheel)
    add_library(myconv::cublasLt SHARED IMPORTED)
    set_target_properties(myconv::cublasLt PROPERTIES IMPORTED_LOCATION "${_cublaslt_wheel}"
      INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
    get_filename_component(_cublaslt_dir "${_cublaslt_wheel}" DIRECTORY)
    # first in the run path, ahead of the toolkit's folder
    list(PREPEND CMAKE_INSTALL_RPATH "${_cublaslt_dir}")
    set(CMAKE_BUILD_RPATH "${_cublaslt_dir}" ${CMAKE_BUILD_RPATH})
    message(STATUS "cuBLASLt: ${_cublaslt_wheel} (the one LibTorch loads)")
  else()
    add_library(myconv::cublasLt INTERFACE IMPORTED)
    set_target_properties(myconv::cublasLt PROPERTIES INTERFACE_LINK_LIBRARIES CUDA::cublasLt)
    message(STATUS "cuBLASLt: the CUDA toolkit's")
  endif()
endif()

# ---- Halide on CUDA (halide_cuda): Halide's CUDA JIT plus our CUDA support --------------------
set(MYCONV_HAVE_HALIDE_CUDA OFF)
set(MYCONV_WHY_NO_HALIDE_CUDA "")
if(NOT MYCONV_HAVE_HALIDE)
  set(MYCONV_WHY_NO_HALIDE_CUDA "needs Halide: ${MYCONV_WHY_NO_HALIDE}")
elseif(NOT MYCONV_HAVE_CUDA)
  set(MYCONV_WHY_NO_HALIDE_CUDA "needs CUDA: ${MYCONV_WHY_NO_CUDA}")
else()
  set(MYCONV_HAVE_HALIDE_CUDA ON)
endif()

function(myconv_dependency_summary)
  message(STATUS "")
  message(STATUS "myconv backends                    built  why not")
  message(STATUS "---------------------------------  -----  -------------------------------------")
  foreach(row IN ITEMS "libtorch_cpu;TORCH" "onednn_cpu;ONEDNN" "halide_cpu;HALIDE"
                      "im2col_gemm_cuda;CUDA" "cudnn;CUDNN" "libtorch_cuda;TORCH_CUDA"
                      "halide_cuda;HALIDE_CUDA")
    list(GET row 0 name)
    list(GET row 1 dep)
    if(MYCONV_HAVE_${dep})
      set(built "yes")
      set(why "")
    else()
      set(built "no")
      set(why "${MYCONV_WHY_NO_${dep}}")
    endif()
    string(LENGTH "${name}" _len)
    math(EXPR _pad "35 - ${_len}")
    string(REPEAT " " ${_pad} _spaces)
    message(STATUS "${name}${_spaces}${built}    ${why}")
  endforeach()
  message(STATUS "")
endfunction()
