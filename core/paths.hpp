// The checks of the paths a program reads and writes, made before the first case runs, so that a
// bad path is one line and exit code 2 with nothing run and nothing written. The check_ functions
// open, create or change nothing: they look (stat, access) and answer.
#pragma once

#include <string>

namespace bench {

// An input file (--shapes, --ops-file, a config file, a checkpoint's file): it must exist, be a
// regular file (not a folder, FIFO, device or socket: those are refused without being opened, so
// that a FIFO cannot block the program) and be readable. Throws UsageError naming option.
void check_input_file(const std::string& option, const std::string& path);

// An output file written whole (--json, --csv, --markdown, ...): not a folder or any other
// non-regular file, in a folder that exists and is writable (results are written to a temporary
// file there and renamed). An empty path is no file and passes. Throws UsageError naming option.
void check_output_file(const std::string& option, const std::string& path);

// An output folder (--trace-dir, --save-tensors, --profile): an existing writable folder, or one
// that can be made: its nearest existing ancestor is a writable folder. Nothing is made here.
// An empty path passes. Throws UsageError naming option.
void check_output_dir(const std::string& option, const std::string& path);

// check_output_dir, then makes the folder (and its parents): the last step of a driver's checks,
// right before its session starts, so that nothing is made when an earlier check fails. Throws
// UsageError when it cannot be made (a file system that refuses: /proc, read-only mounts).
void make_output_dir(const std::string& option, const std::string& path);

}  // namespace bench
