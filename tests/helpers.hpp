// Test helpers: an independent fp64 triple-loop attention (no Eigen, no blocking, no shared code
// with reference/), temporary files, the edge-covering problem set the CPU tests iterate, and the
// built-in rows of the CPU paths.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "harness/inputs.hpp"
#include "harness/problem.hpp"
#include "harness/results/results_reader.hpp"
#include "paths/builtin.hpp"

namespace fa::test {

struct Naive {
  std::vector<double> o;    // in the problem's layout
  std::vector<double> lse;  // [B][H][S]
};

// Straight from the definition: causal row i sees keys j <= i + Sk - S.
inline Naive naive_attention(const Problem& p, const HostInputs& in) {
  Naive out;
  out.o.assign(size_t(p.B * p.S * p.H * p.D), 0.0);
  out.lse.assign(size_t(p.B * p.H * p.S), -std::numeric_limits<double>::infinity());
  const double scale = p.scale > 0 ? p.scale : 1.0 / std::sqrt(double(p.D));
  auto qat = [&](int64_t b, int64_t s, int64_t h, int64_t d) {
    return p.layout == Layout::bshd ? ((b * p.S + s) * p.H + h) * p.D + d : ((b * p.H + h) * p.S + s) * p.D + d;
  };
  auto kat = [&](int64_t b, int64_t s, int64_t h, int64_t d) {
    return p.layout == Layout::bshd ? ((b * p.Sk + s) * p.Hk + h) * p.D + d : ((b * p.Hk + h) * p.Sk + s) * p.D + d;
  };
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h) {
      const int64_t hk = h / (p.H / p.Hk);
      for (int64_t i = 0; i < p.S; ++i) {
        std::vector<double> s;
        for (int64_t j = 0; j < p.Sk; ++j) {
          if (p.causal && j > i + p.Sk - p.S) break;
          double dot = 0;
          for (int64_t d = 0; d < p.D; ++d) dot += double(in.q[size_t(qat(b, i, h, d))]) * double(in.k[size_t(kat(b, j, hk, d))]);
          s.push_back(dot * scale);
        }
        if (s.empty()) continue;
        double m = -std::numeric_limits<double>::infinity();
        for (double x : s) m = std::max(m, x);
        double l = 0;
        for (double& x : s) l += (x = std::exp(x - m));
        out.lse[size_t((b * p.H + h) * p.S + i)] = m + std::log(l);
        for (int64_t d = 0; d < p.D; ++d) {
          double acc = 0;
          for (size_t j = 0; j < s.size(); ++j) acc += s[j] * double(in.v[size_t(kat(b, int64_t(j), hk, d))]);
          out.o[size_t(qat(b, i, h, d))] = acc / l;
        }
      }
    }
  return out;
}

// Hand-picked edge problems followed by random small ones: Sk = 3 and other non-powers of two,
// S > Sk causal, S = 1, Sk = 1, D = 80 and odd D, GQA 2/4/8, MQA, tile +-1, bhsd, kv_cache, scale.
inline std::vector<Problem> edge_and_random_problems(int n_random, uint64_t seed = 7) {
  auto mk = [](int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D, bool causal) {
    Problem p;
    p.B = B, p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D, p.causal = causal;
    return p;
  };
  std::vector<Problem> ps = {
      mk(1, 2, 2, 4, 3, 64, false),   mk(1, 2, 2, 5, 3, 16, true),   mk(1, 2, 2, 70, 20, 32, true),
      mk(1, 1, 1, 130, 64, 16, true), mk(2, 2, 2, 1, 77, 64, false), mk(1, 2, 2, 1, 300, 32, true),
      mk(1, 2, 2, 9, 1, 16, false),   mk(1, 1, 1, 1, 1, 8, true),    mk(1, 2, 2, 40, 50, 80, true),
      mk(1, 2, 2, 33, 47, 65, false), mk(1, 8, 4, 20, 30, 16, true), mk(2, 8, 2, 33, 65, 16, false),
      mk(1, 16, 2, 3, 129, 32, false), mk(1, 8, 1, 17, 200, 16, true), mk(1, 2, 2, 63, 65, 16, true),
      mk(1, 2, 2, 129, 127, 16, true), mk(1, 1, 1, 65, 64, 256, false)};
  Problem bhsd = mk(1, 4, 2, 70, 90, 24, true);
  bhsd.layout = Layout::bhsd;
  Problem kv = mk(2, 4, 2, 1, 129, 32, true);
  kv.kv_cache = true;
  Problem sc = mk(1, 2, 2, 20, 30, 32, false);
  sc.scale = 0.05;
  ps.insert(ps.end(), {bhsd, kv, sc});
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t dims[] = {8, 16, 24, 33, 64, 80};
  const int64_t groups[] = {1, 1, 2, 4, 8};
  for (int i = 0; i < n_random; ++i) {
    const int64_t hk = uni(1, 2), g = groups[uni(0, 4)];
    Problem p = mk(uni(1, 2), hk * g, hk, uni(1, 90), uni(1, 140), dims[uni(0, 5)], uni(0, 1) == 1);
    p.dtype = DType(uni(0, 2));
    p.layout = uni(0, 3) == 0 ? Layout::bhsd : Layout::bshd;
    p.seed = uint64_t(uni(1, 1 << 30));
    ps.push_back(p);
  }
  return ps;
}

// A dense problem of these sizes, every other field at its default.
inline Problem sized(int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t Sk, int64_t D) {
  Problem p;
  p.B = B, p.H = H, p.Hk = Hk, p.S = S, p.Sk = Sk, p.D = D;
  return p;
}

// The source tree (for sweeps/): FABENCH_SOURCE_DIR from the environment when the test binary
// runs away from where it was built (a device machine), else the build's own.
inline std::string source_dir() {
  const char* env = std::getenv("FABENCH_SOURCE_DIR");
  return env ? env : FABENCH_SOURCE_DIR;
}

// A row of the built-in registry as seen without a GPU (enough for the CPU paths).
inline const PathRow& cpu_row(const std::string& name) {
  static const Registry reg = builtin_registry(DeviceFacts{});
  const PathRow* r = reg.find(name);
  if (!r) throw std::logic_error("no built-in path " + name);
  return *r;
}

// A Python interpreter that imports `module` ("python3" first, then the system's), or "" if none.
inline std::string python_with(const std::string& module) {
  for (const char* py : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(py) + " -c 'import " + module + "' 2>/dev/null").c_str()) == 0) return py;
  return "";
}

inline std::string temp_file(const std::string& suffix, const std::string& text) {
  char tmpl[] = "/tmp/fa-bench-test-XXXXXX";
  const int fd = mkstemp(tmpl);
  close(fd);
  std::remove(tmpl);
  const std::string path = std::string(tmpl) + suffix;
  std::ofstream(path) << text;
  return path;
}

// A temporary directory, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/fa-bench-dir-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Records written through the real CSV writer to a temporary file, then read back.
inline ResultsFile written(const std::vector<Record>& rs) {
  const auto path = temp_file(".csv", "");
  {
    CsvWriter w(OutputFile(path, {}), RunMeta{}, false);
    for (const auto& r : rs) w.write(r);
  }
  return read_results_csv(path);
}

}  // namespace fa::test
