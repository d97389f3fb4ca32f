// Files of descriptors (conv shape files, op lists), read as benchdnn reads its input files.
#pragma once

#include <string>
#include <vector>

namespace bench {

// One descriptor of a shape file and where it stands ("path:line").
struct ShapeEntry {
  std::string origin;
  std::string descriptor;
};

struct ShapeFile {
  std::vector<ShapeEntry> entries;
  std::vector<std::string> notes;  // "path:line: ..." for each benchdnn option, ignored
};

// Reads a shape file as benchdnn reads its input files: whitespace separates descriptors (a
// quoted name may hold any character but '"'), '#' outside quotes starts a comment, blank lines
// are ignored, and a token starting with "--" is a benchdnn option, which this suite does not
// take: it is noted, not run. Throws bench::UsageError, naming `option`, when the file is not a
// readable regular file (core/paths.hpp: a folder or a FIFO is refused without being opened) or
// cannot be read.
ShapeFile read_shape_file(const std::string& path, const std::string& option = "--shapes");

}  // namespace bench
