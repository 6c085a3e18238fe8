// For the sweep-file fuzzers: the loaders read files, so each input is written to one temporary
// file per process (under /tmp, named by pid) and loaded from there.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace fa::fuzz {

inline const std::string& write_input(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = "/tmp/fa-bench-fuzz-" + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

}  // namespace fa::fuzz
