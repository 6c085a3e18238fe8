// One record's run: prepare, poison, run, read back, validate, repeat-check, time, check the timed
// launches; a failure of any step becomes the record's status (oom for memory, else error). The
// host inputs and the serving arrays a path reads are checksummed around the validated run and the
// last timed one (harness/run/input_watch.hpp): a path that writes them fails naming the tensor.
#include "harness/run/run_record.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <new>
#include <stdexcept>

#include "harness/check/full_check.hpp"
#include "harness/check/peaks.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/check/tolerance.hpp"
#include "harness/device_model.hpp"
#include "harness/run/clock_source.hpp"
#include "harness/run/input_watch.hpp"
#include "harness/run/repeat_check.hpp"
#include "harness/run/timed_run.hpp"

namespace fa {

RowData::RowData() = default;
RowData::~RowData() = default;

namespace {

// What a path receives to read only: the host inputs (its own copies are its execution's to watch:
// paths/plugin_cpu.cpp, kernels/runtime/gpu_execution.hip) and the problem's serving arrays. The
// first changed element is found against inputs made again (the seed's, or --load-tensors') and
// against copies of the arrays (B + 1 entries, and the page table: small beside Q).
InputWatch watch_host_inputs(const Problem& p, const HostInputs& in, const RunOptions& opt) {
  InputWatch w;
  auto again = [&p, &opt, &in](const std::vector<float> HostInputs::*t) {
    return [p, make = opt.inputs, t, rows = in.q_rows] {
      const HostInputs fresh = make ? make(p) : make_inputs(p, rows);
      const std::vector<float>& v = fresh.*t;
      return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                  reinterpret_cast<const uint8_t*>(v.data() + v.size()));
    };
  };
  w.add("Q", in.q.data(), in.q.size() * sizeof(float), sizeof(float), again(&HostInputs::q));
  w.add("K", in.k.data(), in.k.size() * sizeof(float), sizeof(float), again(&HostInputs::k));
  w.add("V", in.v.data(), in.v.size() * sizeof(float), sizeof(float), again(&HostInputs::v));
  if (!p.serving_fields().empty()) {
    const ServingShape& sh = p.serving();
    auto array = [&w](const char* name, const std::vector<int64_t>& a) {
      const std::vector<uint8_t> copy(reinterpret_cast<const uint8_t*>(a.data()),
                                      reinterpret_cast<const uint8_t*>(a.data() + a.size()));
      w.add(name, a.data(), copy.size(), sizeof(int64_t), [copy] { return copy; });
    };
    array("the query lengths", sh.q_len), array("the key lengths", sh.k_len);
    array("cu_seqlens_q", sh.cu_q), array("cu_seqlens_k", sh.cu_k), array("the page table", sh.table);
  }
  return w;
}

void add_fault(RunOutputs& out, const std::string& fault) {
  if (!fault.empty()) out.fault = fault + (out.fault.empty() ? "" : "; " + out.fault);
}

// The host inputs' check; a change marks them to be made again for the row's next record.
// Seconds per stage of one record, logged at -v: where a sweep's harness time goes.
class StageClock {
 public:
  void lap(const char* stage) {
    if (!on_) return;  // formatted only when -v will print it
    const auto now = std::chrono::steady_clock::now();
    text_ += fmt::format("{}{} {:.3f}", text_.empty() ? "" : ", ", stage, std::chrono::duration<double>(now - at_).count());
    at_ = now;
  }
  const std::string& text() const { return text_; }

 private:
  bool on_ = spdlog::should_log(spdlog::level::debug);
  std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
  std::string text_;
};

// Every query row of a GPU record against the GPU reference, which must first agree with the CPU
// oracle on the sampled rows (else the record is an error: a checker that disagrees passes nothing).
// The sampled verdict stands where it failed; a problem the GPU reference does not take keeps it,
// and the log says so. The reference, its check against the oracle and that warning come once a
// row: the oracle's fp64 O and LSE are the same whichever P rounding the record's reference has.
// A record whose reference adds FP8 scores on s_acc_bits also gets that accumulation's LSE of every
// row (GpuReference::lse_acc), once a row for each such declaration.
void check_full_output(Record& r, const Problem& p, const RunOutputs& out, const Reference& ref, const Verdict& v,
                       RowData& data, const GateContext& ctx, StageClock& clock) {
  const GpuReferenceFn fn = gpu_reference_fn();
  if (!fn) return;
  const int bits = ref.lp_s_acc_bits;
  if (!data.gpu_ref_tried) {
    data.gpu_ref_tried = true;
    GpuReferenceResult g = fn(p, *data.inputs, ctx, bits);
    clock.lap("gpu-reference");
    if (g.ref) {
      data.gpu_ref_disagrees = gpu_reference_disagreement(p, *g.ref, ref);
      if (bits > 0) data.gpu_lse_acc[bits] = std::move(g.ref->lse_acc);
      data.gpu_ref = std::make_unique<GpuReference>(std::move(*g.ref));
    } else {
      spdlog::warn("{}: the GPU reference does not take this problem ({}): its GPU records are validated on the "
                   "{} sampled rows only", p.label(), g.not_taken, ref.rows.size());
    }
  }
  if (!data.gpu_ref) return;
  if (!data.gpu_ref_disagrees.empty()) {
    r.status = Status::error;
    r.reason = data.gpu_ref_disagrees;
    return;
  }
  if (r.status != Status::pass) return;
  if (bits > 0 && !data.gpu_lse_acc.count(bits)) {  // a second declaration on the row: the reference runs
    GpuReferenceResult g = fn(p, *data.inputs, ctx, bits);  // again, for the LSE under that accumulation
    clock.lap("gpu-reference");
    if (!g.ref)
      spdlog::warn("{}: the GPU reference could not add the scores on {} bits ({}): records that declare it are "
                   "validated on the {} sampled rows only", p.label(), bits, g.not_taken, ref.rows.size());
    data.gpu_lse_acc[bits] = g.ref ? std::move(g.ref->lse_acc) : std::vector<float>{};
  }
  static const std::vector<float> no_acc;
  const std::vector<float>& acc = bits > 0 ? data.gpu_lse_acc[bits] : no_acc;
  if (bits > 0 && acc.empty()) return;  // not computed (warned above): the sampled verdict stands
  if (const std::string bad = full_output_failure(p, *data.gpu_ref, out, v.tol, v.lse_tol, acc); !bad.empty()) {
    r.status = Status::fail;
    r.reason = bad;
  }
  clock.lap("full-check");
}

std::string check_inputs(const InputWatch& w, bool& written) {
  std::string fault = w.check();
  written |= !fault.empty();
  return fault;
}

}  // namespace

std::vector<int64_t> oracle_rows(const Problem& p, const RunOptions& opt, const GateContext& ctx) {
  return sample_rows(p, opt.check_rows > 0 ? opt.check_rows : rows_within_budget(p, ctx.cpu_budget_flops), p.seed);
}

void run_record(Record& r, const PathRow& pr, int G, const RunOptions& opt, const GateContext& ctx, RowData& data) {
  const Problem& p = r.problem;
  const std::string& path = r.path;
  bool written = false;
  StageClock clock;
  try {
    if (!data.inputs) {
      std::vector<int64_t> rows;  // empty: every row
      if (data.oracle_rows_only && !opt.inputs) rows = oracle_rows(p, opt, ctx);
      if (int64_t(rows.size()) >= p.S) rows.clear();  // the oracle samples every row: the whole draw
      data.inputs = std::make_unique<HostInputs>(opt.inputs ? opt.inputs(p) : make_inputs(p, std::move(rows)));
      data.watch.reset();
    }
    // Inputs a caller put in (check's, from the files) are watched from here on, as made ones are.
    if (!data.watch) data.watch = std::make_unique<InputWatch>(watch_host_inputs(p, *data.inputs, opt));
    clock.lap("inputs");
    const InputWatch& inputs = *data.watch;
    auto exec = pr.prepare(p, *data.inputs, G, ctx);
    clock.lap("prepare");
    exec->poison();
    exec->run();
    RunOutputs out = exec->read_back();
    add_fault(out, check_inputs(inputs, written));
    clock.lap("run");
    if (out.g_used >= 0) r.g_used = out.g_used;
    r.ran_path = out.ran_path.empty() ? path : out.ran_path;
    // The toward-zero bias the path's accumulation may leave (harness/check/rounding_bias.hpp's model).
    const int step = out.rz_accumulate_keys >= 0 ? out.rz_accumulate_keys : pr.rz_accumulate_keys;
    const double drift = accumulation_drift_ulp(out_dtype(p.dtype), keys_per_split(p, r.g_used), step);
    // One reference a low-precision model (FP8 rows: P in e4m3 or bf16, scores added in 13 bits or
    // fp32, as the path that ran declares), shared by the row's records.
    const int acc_bits = out.fp8_accumulate_bits >= 0 ? out.fp8_accumulate_bits : pr.fp8_accumulate_bits;
    const LowPrecision lp(lowprec_p_dtype(p, out.fp8_p.value_or(pr.fp8_p)), is_fp8(p.dtype) ? acc_bits : 0);
    std::unique_ptr<Reference>& ref = data.refs[lp];
    if (pr.oracle) {
      r.status = Status::pass;
      r.reason = "oracle (not validated)";
    } else {
      if (!ref) {
        ref = std::make_unique<Reference>(opt.reference(p, *data.inputs, oracle_rows(p, opt, ctx), lp));
        clock.lap("reference");
      }
      const Metrics m = measure(p, *data.inputs, *ref, out);
      const Verdict v = judge(m, p.dtype, opt.thresholds, drift);
      r.metrics = m;
      r.rule = v.rule;
      r.tol = v.tol;
      r.bias_bound = v.bias_bound;
      r.status = v.pass ? Status::pass : Status::fail;
      r.reason = v.reason;
      if (!out.fault.empty()) {
        r.status = Status::fail;
        r.reason = out.fault + (v.pass ? "" : "; " + v.reason);
      }
      if (opt.gpu_reference && pr.kind == "gpu" && ctx.device.gpu) check_full_output(r, p, out, *ref, v, data, ctx, clock);
    }
    if (opt.repeat_check > 0) {
      r.repeat_runs = opt.repeat_check;
      r.repeat_diffs = count_differing_reruns(*exec, out, opt.repeat_check);
      if (r.repeat_diffs > 0) {
        r.reason = fmt::format("{} of {} reruns differ bit for bit from the first run{}", r.repeat_diffs,
                               r.repeat_runs, r.status == Status::fail ? "; " + r.reason : "");
        r.status = Status::fail;
      }
    }
    if (opt.keep_outputs) opt.keep_outputs(r, *data.inputs, out);
    clock.lap("validate");
    if (opt.time_paths) {
      TimingPolicy timing = opt.timing;
      if (!timing.clocks && pr.kind == "gpu" && ctx.device.gpu) timing.clocks = clock_source_for(ctx.device);
      r.timing = time_execution(*exec, timing, opt.check_timed, opt.throttle);
      clock.lap("timing");
      const double s = r.timing->median_ms * 1e-3;
      r.tflops = s > 0 ? p.flops() / s / 1e12 : 0;
      r.gbps = s > 0 ? p.bytes() / s / 1e9 : 0;
      if (pr.kind == "gpu" && ctx.device.gpu) {
        r.roof = roofline(p.flops(), p.bytes(), r.timing->median_ms, device_peak(ctx.device, peak_class(p.dtype)));
        if (opt.timing.mode == TimingMode::cold) r.flush_bytes = cold_flush_bytes(ctx.device);
      }
      // Outputs were poisoned before each sample, so this is the last timed launch's own output.
      // Its faults (inputs written, guards broken) fail the record whatever --no-check-timed says:
      // that flag skips only the comparison with the validated run.
      if (r.status == Status::pass) {
        RunOutputs last = exec->read_back();
        add_fault(last, check_inputs(inputs, written));
        if (opt.check_timed) {
          TimedCheck c = check_timed_outputs(out, last, pr.deterministic, [&](const RunOutputs& t) {
            if (!ref) return std::string("no reference to judge it by (the oracle)");
            return judge(measure(p, *data.inputs, *ref, t), p.dtype, opt.thresholds, drift).reason;
          });
          if (!last.fault.empty()) c.reason = last.fault + " (in a timed launch)";
          r.timed_check = c.outcome;
          if (!c.reason.empty()) {
            r.status = Status::fail;
            r.reason = c.reason;
          }
        } else if (!last.fault.empty()) {
          r.status = Status::fail;
          r.reason = last.fault + " (in a timed launch)";
        }
      }
      clock.lap("timed-check");
      if (opt.throttle.policy == ThrottlePolicy::fail && r.status == Status::pass) {
        if (const std::string t = throttle_note(*r.timing); !t.empty()) {
          r.status = Status::error;
          r.reason = t + " under --throttle-policy fail";
        }
      }
    }
  } catch (const OutOfMemory& e) {
    r.status = Status::oom;
    r.reason = e.what();
  } catch (const std::bad_alloc& e) {  // host memory for inputs, reference or a CPU path
    r.status = Status::oom;
    r.reason = fmt::format("host allocation failed ({})", e.what());
  } catch (const std::length_error& e) {
    r.status = Status::oom;
    r.reason = fmt::format("host allocation failed ({})", e.what());
  } catch (const std::exception& e) {
    r.status = Status::error;
    r.reason = e.what();
  }
  // A record that did not pass may have written the inputs where nothing checked (it threw, or
  // failed before its timed launches were checked): look now, so the next path is not blamed.
  if (!written && r.status != Status::pass && data.watch) written = !data.watch->check().empty();
  // Written inputs are made again, and a reference computed from them is dropped with them.
  if (written) {
    data.watch.reset(), data.inputs.reset(), data.refs.clear();
    data.gpu_ref.reset(), data.gpu_ref_tried = false, data.gpu_ref_disagrees.clear(), data.gpu_lse_acc.clear();
  }
  clock.lap("end");
  if (!clock.text().empty()) spdlog::debug("{} {} G={}: seconds: {}", p.label(), path, G, clock.text());
}

}  // namespace fa
