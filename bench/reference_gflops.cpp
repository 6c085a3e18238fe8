// Benchmark: the CPU reference's GFLOP/s (attention FLOPs of the problem / wall time, fp64
// oracle) next to Eigen's own fp64 GEMM GFLOP/s, both measured in this run on all cores.
// Target: reference >= 50% of GEMM. Usage: build/bench-reference [S] [D] [H]
#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Dense>
#include <chrono>
#include <cstdlib>

#include "harness/check/row_sample.hpp"
#include "harness/inputs.hpp"
#include "reference/cpu_ref.hpp"

template <typename F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  fa::Problem p;
  p.B = 1;
  p.S = p.Sk = argc > 1 ? std::atoll(argv[1]) : 1500;
  p.D = argc > 2 ? std::atoll(argv[2]) : 64;
  p.H = p.Hk = argc > 3 ? std::atoll(argv[3]) : 16;
  const fa::HostInputs in = fa::make_inputs(p);
  const auto rows = fa::sample_rows(p, 0, 0);

  const int n = 1024;
  Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, n), B = Eigen::MatrixXd::Random(n, n), C(n, n);
  const double gemm_s = best_seconds(5, [&] { C.noalias() = A * B; });
  const double gemm = 2.0 * n * n * n / gemm_s / 1e9;

  double sink = 0;
  const double ref_s = best_seconds(3, [&] { sink += fa::compute_reference(p, in, rows, false).o[0]; });
  const double ref = p.flops() / ref_s / 1e9;
  const double both_s = best_seconds(3, [&] { sink += fa::compute_reference(p, in, rows, true).o[0]; });

  fmt::print("threads            {}\n", omp_get_max_threads());
  fmt::print("problem            B={} H={} S=Sk={} D={} ({:.2f} GFLOP)\n", p.B, p.H, p.S, p.D, p.flops() / 1e9);
  fmt::print("eigen fp64 GEMM    {:.1f} GFLOP/s  ({}^3, best of 5)\n", gemm, n);
  fmt::print("reference fp64     {:.1f} GFLOP/s  ({:.3f} s, best of 3)\n", ref, ref_s);
  fmt::print("ratio              {:.0f}% of GEMM (target >= 50%)\n", 100.0 * ref / gemm);
  fmt::print("fp64 + low-prec    {:.3f} s (the validation pass)\n", both_s);
  return sink == 12345.678 ? 1 : 0;
}
