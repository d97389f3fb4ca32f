#include "core/error.hpp"

namespace bench {

void throw_check_failure(const char* expr, const std::string& message, const char* file, int line) {
  throw std::runtime_error(message + " (check `" + expr + "` failed at " + file + ":" +
                           std::to_string(line) + ")");
}

}  // namespace bench
