#include "core/paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace bench {

namespace {

// What a non-regular file is, for the message.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

UsageError bad(const std::string& option, const std::string& path, const std::string& why) {
  return UsageError(option + ": " + quote_input(path) + " " + why);
}

UsageError cannot(const std::string& option, const char* verb, const std::string& path,
                  const std::string& why) {
  return UsageError(option + ": cannot " + verb + " " + quote_input(path) + ": " + why);
}

// The folder a file is written into must exist, be a folder and be writable.
void check_parent(const std::string& option, const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (parent.empty()) parent = ".";
  struct stat st {};
  if (::stat(parent.c_str(), &st) != 0)
    throw cannot(option, "write", path, "folder " + quote_input(parent) + " does not exist");
  if (!S_ISDIR(st.st_mode))
    throw cannot(option, "write", path, quote_input(parent) + " is not a folder");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw cannot(option, "write", path,
                 "folder " + quote_input(parent) + ": " + std::strerror(errno));
}

}  // namespace

void check_input_file(const std::string& option, const std::string& path) {
  struct stat st {};
  if (path.empty()) throw UsageError(option + ": an empty path");
  if (::stat(path.c_str(), &st) != 0) throw cannot(option, "read", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw bad(option, path, std::string("is ") + kind_of(st.st_mode) + ", not a regular file");
  if (::access(path.c_str(), R_OK) != 0) throw cannot(option, "read", path, std::strerror(errno));
}

void check_output_file(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw bad(option, path, std::string("is ") + kind_of(st.st_mode) + ", not a file to write");
  } else if (errno != ENOENT && errno != ENOTDIR) {  // ENOTDIR: the folder check names it
    throw cannot(option, "write", path, std::strerror(errno));
  } else if (path.back() == '/') {
    throw bad(option, path, "names a folder, not a file to write");
  }
  check_parent(option, path);
}

void check_output_dir(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  std::filesystem::path p = path;
  // The nearest existing ancestor (the folder itself when it exists) decides.
  for (;;) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        throw bad(option, path,
                  p.string() == path
                      ? std::string("is ") + kind_of(st.st_mode) + ", not a folder"
                      : "cannot be made: " + quote_input(p.string()) + " is not a folder");
      if (::access(p.c_str(), W_OK | X_OK) != 0)
        throw cannot(option, "write into", path,
                     quote_input(p.string()) + ": " + std::strerror(errno));
      return;
    }
    if (errno != ENOENT && errno != ENOTDIR)  // ENOTDIR: the ancestor that is a file is named
      throw bad(option, path,
                "cannot be made: " + quote_input(p.string()) + ": " + std::strerror(errno));
    std::filesystem::path up = p.parent_path();
    if (up.empty()) up = ".";
    if (up == p) return;  // the root, or ".", exists: not reached
    p = up;
  }
}

void make_output_dir(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  check_output_dir(option, path);
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path))
    throw cannot(option, "make", path, ec ? ec.message() : std::string("not a folder after all"));
}

}  // namespace bench
