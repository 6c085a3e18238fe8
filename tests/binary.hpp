// Runs the built fa-bench binary with arguments and returns its exit status and its stdout and
// stderr together, for end-to-end tests of subcommands.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace fa::test {

struct BinaryResult {
  int status;
  std::string output;
};

inline BinaryResult run_fa_bench(const std::string& args) {
  const std::string cmd = std::string(FABENCH_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), int(buf.size()), p)) out += buf.data();
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace fa::test
