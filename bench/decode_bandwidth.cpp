// Benchmark: the decode, kv-cache and mma-decode paths' GB/s (Q, K, V read once, O and LSE written
// once) next to a plain device-to-device copy of the same K+V bytes (read + write counted), in one
// run. Targets: decode >= 70% of copy; mma-decode >= 93% of copy (issue 18). Each path's result is
// validated before it is timed; a path the device does not run is listed with its gate's reason.
// A read-only pass was tried as a second peer and dropped: a plain grid-stride read of the same
// bytes read 2628-3044 GB/s on the H100 across runs and grids: too unsteady to be a peer.
// Usage: build/bench-decode [Sk] [H] [Hk] [D] [B]    (default 131072 32 8 128 1, bf16)
#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "kernels/runtime/gpu_device.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

int main(int argc, char** argv) {
  fa::Problem p;
  p.S = 1;
  p.Sk = argc > 1 ? std::atoll(argv[1]) : 131072;
  p.H = argc > 2 ? std::atoll(argv[2]) : 32;
  p.Hk = argc > 3 ? std::atoll(argv[3]) : 8;
  p.D = argc > 4 ? std::atoll(argv[4]) : 128;
  p.B = argc > 5 ? std::atoll(argv[5]) : 1;
  p.dtype = fa::DType::bf16;
  fa::GateContext ctx;
  ctx.device = fa::probe_device();
  if (!ctx.device.gpu) {
    fmt::print("no GPU: {}\n", ctx.device.gpu_absent_why);
    return 0;
  }
  const fa::Registry reg = fa::builtin_registry(ctx.device);
  const double kv_bytes = 2.0 * double(p.B * p.Sk * p.Hk * p.D) * 2;
  const double copy = fa::gpu::copy_bandwidth_gbps(size_t(kv_bytes), 50);
  fmt::print("device             {} ({} SMs)\n", ctx.device.name, ctx.device.units);
  fmt::print("problem            B={} H={} Hk={} S=1 Sk={} D={} bf16, {:.1f} MB moved\n", p.B, p.H, p.Hk, p.Sk, p.D,
             p.bytes() / 1e6);
  fmt::print("d2d copy           {:.0f} GB/s (read + write, {:.1f} MB copied)\n", copy, kv_bytes / 1e6);
  int status = 0;
  for (const char* path : {"decode", "kv-cache", "mma-decode"}) {
    fa::Problem q = p;
    q.kv_cache = std::string(path) == "kv-cache";
    const fa::PathRow* row = reg.find(path);
    if (auto no = row ? row->supports(q, 0, ctx) : std::optional<std::string>("not built")) {
      fmt::print("{:<18} skipped: {}\n", path, *no);
      continue;
    }
    const fa::HostInputs in = fa::make_inputs(q);
    auto exec = row->prepare(q, in, 0, ctx);
    exec->poison();
    exec->run();
    const fa::RunOutputs out = exec->read_back();
    const fa::Reference ref = fa::compute_reference(q, in, fa::sample_rows(q, 0, 0), true);
    const fa::Verdict v = fa::judge(fa::measure(q, in, ref, out), q.dtype, {});
    fa::TimingPolicy pol;
    pol.time_cap_s = 1.0;
    const fa::TimingStats st = fa::measure_time(pol, [&] { return exec->timed_sample_ms(fa::TimingMode::cold); });
    const double gbps = q.bytes() / (st.median_ms * 1e-3) / 1e9;
    fmt::print("{:<18} {:.0f} GB/s = {:.0f}% of copy  ({:.4f} ms median of {}, spread {:.2f}%, {} splits, {})\n", path,
               gbps, 100.0 * gbps / copy, st.median_ms, st.samples, 100 * st.spread, out.g_used,
               v.pass ? "valid" : "INVALID: " + v.reason);
    status |= !v.pass;
  }
  return status;
}
