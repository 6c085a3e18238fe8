// The `sweep`/`run` flags for what a run prints and writes (--table, --markdown, --fail-on-skip),
// how it is spread (--shard, --devices) and where its tensors go (--save-tensors, --load-tensors),
// and the glue execute() calls for each, so that cli/options.cpp keeps one line per step.
#pragma once
#include <CLI/CLI.hpp>

#include <optional>

#include "cli/options.hpp"
#include "harness/results/output_file.hpp"
#include "harness/run/runner.hpp"

namespace fa::cli {

void add_run_output_options(CLI::App& cmd, CommonOptions& o);

// --shard: keeps the rows of this shard (after --filter; a shard may be empty) and returns "i/n"
// for the records' shard column; "" without --shard.
std::string apply_shard(Sweep& sweep, const CommonOptions& o);

// --devices, checked before anything is written: the ordinals, or none; an input error on a build
// without a GPU backend.
std::vector<int> requested_devices(const CommonOptions& o);

// --save-tensors / --load-tensors: the runner's hooks. Loaded tensors are checked against every
// valid row first, so a wrong shape or dtype is an input error before anything runs.
void hook_tensors(RunOptions& ro, const CommonOptions& o, const Sweep& sweep);

// run_sweep, or one worker per device when `devices` is not empty.
std::vector<Record> run_records(const Sweep& sweep, const RunOptions& ro, const Registry& reg, const GateContext& ctx,
                                const std::vector<RecordSink*>& sinks, const std::vector<int>& devices,
                                const ProgressFn& progress);

// The chosen tables to stdout and, with --markdown, to that file (opened and checked before the run).
void print_outputs(const std::vector<Record>& records, const std::string& baseline, const CommonOptions& o,
                   std::optional<OutputFile>& markdown);

// --fail-on-skip turns a clean status into 1 when any record is a skip.
int apply_fail_on_skip(int status, const std::vector<Record>& records, const CommonOptions& o);

}  // namespace fa::cli
