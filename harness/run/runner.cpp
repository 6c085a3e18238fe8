// Runner loop: for each row, path and G: resume skip, G=auto resolved, gate, then one record
// (harness/run/run_record.cpp, or in a child with --isolate, gate included), handed to the sinks.
#include "harness/run/runner.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "harness/run/clock_source.hpp"
#include "harness/run/isolate.hpp"
#include "harness/run/run_record.hpp"
#include "harness/split/split_rules.hpp"

namespace fa {
namespace {

int units_for(const PathRow& row, const GateContext& ctx) {
  return row.kind == "gpu" && ctx.device.gpu ? ctx.device.units : ctx.device.cpu_threads;
}

}  // namespace

std::vector<Record> run_sweep(const Sweep& sweep, const RunOptions& opt, const Registry& reg, const GateContext& ctx,
                              const std::vector<RecordSink*>& sinks, const ProgressFn& progress) {
  if (!opt.reference) throw std::invalid_argument("run_sweep: RunOptions::reference is not set");
  std::vector<Record> records;
  size_t total = 0, done = 0;
  for (const auto& row : sweep.rows) total += row.invalid ? 1 : opt.paths.size() * row.splits.size();
  auto emit = [&](Record&& r) {
    r.time = utc_now();
    for (auto* s : sinks) s->write(r);
    records.push_back(std::move(r));
    if (progress) progress(++done, total, records.back());
  };

  std::unique_ptr<RowData> data;
  std::string data_key;
  for (const auto& row : sweep.rows) {
    if (opt.stop && opt.stop()) return records;
    const Problem& p = row.problem;
    if (row.invalid) {
      Record r{p, row.where, "-", "", row.splits.front()};
      r.status = Status::invalid;
      r.reason = fmt::format("{}: field '{}': {}", row.where.str(), row.invalid->field, row.invalid->reason);
      if (opt.done.count(r.resume_key())) {  // already in the file being resumed
        ++done;
        continue;
      }
      spdlog::error("invalid row: {}", r.reason);
      emit(std::move(r));
      continue;
    }
    // A row whose problem is the previous row's (the same shape under another name, a repeat) keeps
    // its inputs and reference: seeded inputs depend on nothing else (--load-tensors' may: per row).
    if (opt.inputs || !data || p.key() != data_key) {
      data = std::make_unique<RowData>(), data_key = p.key();
      data->oracle_rows_only = row_draws_on_device(p, opt, reg, ctx);
    }
    for (const auto& path : opt.paths) {
      const PathRow* pr = reg.find(path);
      for (const auto& g : row.splits) {
        if (opt.stop && opt.stop()) return records;
        Record r{p, row.where, path, "", g};
        if (opt.done.count(r.resume_key())) {
          ++done;
          continue;
        }
        r.plugin_file = pr->plugin_file;
        r.plugin_version = pr->plugin_version;
        r.units = units_for(*pr, ctx);
        int G = g.value;
        if (!pr->own_split_rule.empty()) {
          r.split_rule = pr->own_split_rule;
          if (g.is_auto) G = 0;  // the path sizes its own split
        } else if (g.is_auto) {
          r.split_rule = opt.split.rule_for(*pr);
          G = opt.split.choose(split_inputs(p, *pr, ctx.device, r.units), *pr);
        }
        r.g_used = G;
        auto skip_reason = [&](const std::string& no) {
          return g.is_auto ? fmt::format("G=auto ({}) chose {}: {}", r.split_rule, G, no) : no;
        };
        // The row's device check is fa-bench's own; the gate calls into the path (a plugin's
        // supports()), so under --isolate the child applies it (harness/run/isolate.hpp).
        std::optional<std::string> no = reg.unavailable(*pr, ctx.device);
        if (!no && !opt.isolate) no = pr->supports(p, G, ctx);
        if (no) {
          r.status = Status::skip;
          r.reason = skip_reason(*no);
          emit(std::move(r));
          continue;
        }
        r.tile = pr->tile_for(p, G, ctx.device);
        if (opt.isolate) {
          // The child opens its own reader; this one says once, here, why none opens (the child is quiet).
          if (pr->kind == "gpu") clock_source_for(ctx.device);
          run_isolated(r, G, opt, ctx);
          if (r.status == Status::skip) r.reason = skip_reason(r.reason);
        } else {
          run_record(r, *pr, G, opt, ctx, *data);
        }
        if (r.status == Status::fail || r.status == Status::error)
          spdlog::warn("{} {} G={}: {}: {}", p.label(), path, g.str(), status_name(r.status), r.reason);
        emit(std::move(r));
      }
    }
  }
  return records;
}

bool row_draws_on_device(const Problem& p, const RunOptions& opt, const Registry& reg, const GateContext& ctx) {
  if (!ctx.device.gpu || opt.inputs || opt.keep_outputs || opt.isolate || is_fp8(p.dtype) || !drawn_on_device(p)) return false;
  return std::all_of(opt.paths.begin(), opt.paths.end(), [&](const std::string& name) {
    const PathRow* pr = reg.find(name);
    return pr && pr->kind == "gpu" && !pr->oracle;
  });
}

int exit_status(const std::vector<Record>& records) {
  bool bad = false, invalid = false;
  for (const auto& r : records) {
    bad |= r.status == Status::fail || r.status == Status::error;
    invalid |= r.status == Status::invalid;
  }
  return bad ? 1 : invalid ? 2 : 0;
}

}  // namespace fa
