// Output, exit-rule and scale-out flags of `sweep` and `run`, and their glue.
#include "cli/run_outputs.hpp"

#include "cli/flag_checks.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "harness/results/tables/summary.hpp"
#include "harness/results/tensors/tensor_files.hpp"
#include "harness/run/device_pool.hpp"
#include "harness/sweep/shard.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/gpu_select.hpp"
#endif

namespace fa::cli {

void add_run_output_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--table", o.table, "Tables to print: compact (problems x paths, the default), detail (one per problem: errors, "
                 "samples, spread, %peak, speedup), both (compact first)")
      ->check(CLI::IsMember({"detail", "compact", "both"}))
      ->capture_default_str();
  cmd.add_option("--markdown", o.markdown, "Also write the tables to this markdown file")->check(non_empty());
  cmd.add_flag("--fail-on-skip", o.fail_on_skip, "Exit 1 when any record is a skip (CI: nothing may go unrun)");
  cmd.add_option("--shard", o.shard, "Run shard i of n (i/n): the problems whose index % n == i")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              parse_shard(text, "--shard");
            } catch (const InputError& e) {
              return std::string(e.what());
            }
            return std::string();
          },
          "i/n"));
  cmd.add_option("--devices", o.devices, "GPU ordinals of this host, e.g. 0,1,2,3: one worker per device, one results file")
      ->check(non_empty());
  cmd.add_option("--save-tensors", o.save_tensors, "Write each record's Q, K, V, O, LSE and reference O as .npy under DIR")
      ->check(non_empty());
  cmd.add_option("--load-tensors", o.load_tensors, "Run on DIR/{q,k,v}.npy instead of seeded inputs (shape and dtype checked)")
      ->check(CLI::ExistingDirectory);
}

std::string apply_shard(Sweep& sweep, const CommonOptions& o) {
  if (o.shard.empty()) return "";
  const Shard s = parse_shard(o.shard, "--shard");
  const size_t all = sweep.rows.size();
  sweep.rows = take_shard(std::move(sweep.rows), s);
  spdlog::info("--shard {}: {} of {} problems", s.str(), sweep.rows.size(), all);
  return s.str();
}

std::vector<int> requested_devices(const CommonOptions& o) {
  if (o.devices.empty()) return {};
  const std::vector<int> devices = parse_devices(o.devices, "--devices");
#ifndef FABENCH_HAS_GPU
  throw InputError(SourceLoc{"command line", 0}, "--devices", "no GPU backend in this build (FABENCH_GPU=none)");
#endif
  return devices;
}

void hook_tensors(RunOptions& ro, const CommonOptions& o, const Sweep& sweep) {
  for (const auto& row : sweep.rows)
    if (!o.load_tensors.empty() && !row.invalid) load_inputs(o.load_tensors, row.problem);
  std::error_code ec;
  if (!o.save_tensors.empty() && std::filesystem::exists(o.save_tensors, ec) && !std::filesystem::is_directory(o.save_tensors, ec))
    throw InputError(SourceLoc{"command line", 0}, "--save-tensors", fmt::format("'{}' is a file, not a folder", o.save_tensors));
  ro.load_tensors = o.load_tensors;
  ro.save_tensors = o.save_tensors;
  install_tensor_hooks(ro);
}

std::vector<Record> run_records(const Sweep& sweep, const RunOptions& ro, const Registry& reg, const GateContext& ctx,
                                const std::vector<RecordSink*>& sinks, const std::vector<int>& devices,
                                const ProgressFn& progress) {
  if (devices.empty()) return run_sweep(sweep, ro, reg, ctx, sinks, progress);
#ifdef FABENCH_HAS_GPU
  return run_on_devices(sweep, ro, reg, ctx, sinks, devices, gpu::select_device, progress);
#else
  return {};  // requested_devices() refused --devices already
#endif
}

void print_outputs(const std::vector<Record>& records, const std::string& baseline, const CommonOptions& o,
                   std::optional<OutputFile>& markdown) {
  const Tables which = o.no_table ? Tables::none
                       : o.table == "detail" ? Tables::detail
                       : o.table == "compact" ? Tables::compact
                                              : Tables::both;
  std::ostringstream md;
  print_tables(md, records, baseline, which);
  std::cout << md.str();
  if (markdown) {
    std::ostringstream file;
    print_tables(file, records, baseline, which == Tables::none ? Tables::both : which);
    markdown->replace_with(file.str());
  }
}

int apply_fail_on_skip(int status, const std::vector<Record>& records, const CommonOptions& o) {
  if (!o.fail_on_skip || status != 0) return status;
  for (const auto& r : records)
    if (r.status == Status::skip) {
      spdlog::error("--fail-on-skip: {} {} G={} skipped: {}", r.problem.label(), r.path, r.g_req.str(), r.reason);
      return 1;
    }
  return 0;
}

}  // namespace fa::cli
