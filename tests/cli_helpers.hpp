// Helpers for tests that drive the fa-bench binary: run a command line and capture its output and
// exit status, and read a results CSV back as rows of column -> text (quoted fields allowed).
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace fa::test {

struct CliResult {
  int status;  // exit status; 128 + signal when killed by one
  std::string output;
};

// `env` prefixes the command (e.g. "FABENCH_TEST_PATHS=1").
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + FABENCH_BINARY + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), int(buf.size()), p)) out += buf.data();
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

// One CSV line split into fields; "" inside quotes is a quote.
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') f.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) f.emplace_back();
    else f.back() += c;
  }
  return f;
}

using CsvRow = std::map<std::string, std::string>;

// Rows of a results CSV by column name (the first line is the header).
inline std::vector<CsvRow> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<CsvRow> rows;
  if (!std::getline(in, line)) return rows;
  const auto header = csv_fields(line);
  while (std::getline(in, line)) {
    const auto f = csv_fields(line);
    CsvRow r;
    for (size_t i = 0; i < header.size() && i < f.size(); ++i) r[header[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace fa::test
