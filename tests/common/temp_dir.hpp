// Test helpers for files: a fresh temporary folder per test, and reading a file whole.
//
// The folder is made, listed and removed with POSIX calls (mkdtemp, opendir, nftw), not
// std::filesystem's out-of-line functions: Python's torch wheels export their own copies of
// those (pytorch/pytorch#133437), and on the GPU host a test linked with that LibTorch crashed
// at once in TempDir while it used temp_directory_path and remove_all.
#pragma once

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench::testing {

// A fresh, empty folder, removed with everything in it at the end of its scope.
class TempDir {
 public:
  TempDir() {
    const char* tmp = ::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/myconv_test_XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    name_ = pattern;
    path_ = name_;
  }
  ~TempDir() {
    ::nftw(
        name_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p), 0; },
        16, FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Names of the folder's entries.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(name_.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
      }
      ::closedir(d);
    }
    return names;
  }

 private:
  std::string name_;
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace bench::testing
