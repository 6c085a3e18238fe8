// The sweep pipeline (cli/sweep_pipeline.hpp): one function a stage, called in order by execute().
#include "cli/sweep_pipeline.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/interrupt.hpp"
#include "cli/run_setup.hpp"
#include "cli/test_paths.hpp"
#include "harness/registry.hpp"
#include "harness/results/metadata.hpp"
#include "harness/results/output_file.hpp"
#include "harness/results/resume.hpp"
#include "harness/results/tables/summary.hpp"
#include "harness/results/tensors/tensor_files.hpp"
#include "harness/run/tensor_hooks.hpp"
#include "harness/run/device_pool.hpp"
#include "harness/run/runner.hpp"
#include "harness/split/split_rules.hpp"
#include "harness/sweep/filter.hpp"
#include "harness/sweep/shard.hpp"
#include "paths/auto_path.hpp"
#include "paths/plugin_paths.hpp"
#include "paths/builtin.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/runtime/gpu_select.hpp"
#endif

namespace fa::cli {

namespace {

const SourceLoc kCli = command_line();

// Every path available here; on a GPU machine only the GPU ones (auto included): the CPU paths
// there are slower by orders of magnitude and were most of the H100 main job's time (51 s of the
// whisper sweep's timed samples against under 5 s for every GPU path). --paths cpu-flash asks.
std::vector<std::string> default_paths(const Registry& reg, const DeviceFacts& dev) {
  std::vector<std::string> all = reg.available_names(dev), gpu;
  if (!dev.gpu) return all;
  for (const auto& n : all)
    if (reg.find(n)->kind == "gpu") gpu.push_back(n);
  return gpu.empty() ? all : gpu;
}

std::vector<std::string> resolve_paths(const std::string& cli, const Sweep& sweep, const Registry& reg,
                                       const DeviceFacts& dev) {
  std::vector<std::string> names;
  if (!cli.empty()) names = split_list(bars(cli));
  else if (!sweep.paths.empty()) names = sweep.paths;
  else return default_paths(reg, dev);
  const SourceLoc where = cli.empty() ? sweep.paths_where : command_line();
  const std::string field = cli.empty() ? "paths" : "--paths";
  for (size_t i = 0; i < names.size(); ++i) {
    if (!reg.find(names[i])) {
      std::string known;
      for (const auto& r : reg.rows()) known += " " + r.name;
      throw InputError(where, field, fmt::format("unknown path '{}' (known:{})", names[i], known));
    }
    // One key per record: a path named twice would write two records under one key.
    if (std::find(names.begin(), names.begin() + std::ptrdiff_t(i), names[i]) != names.begin() + std::ptrdiff_t(i))
      throw InputError(where, field, fmt::format("path '{}' is named twice", names[i]));
  }
  return names;
}

class ProgressLine {
 public:
  explicit ProgressLine(bool on) : on_(on), start_(std::chrono::steady_clock::now()) {}
  ~ProgressLine() {
    if (on_ && shown_) std::cerr << "\r\033[K" << std::flush;
  }
  void operator()(size_t done, size_t total, const Record& last) {
    if (!on_) return;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta = done ? el / double(done) * double(total - done) : 0;
    std::cerr << fmt::format("\r\033[K[{}/{}] ETA {}:{:02d}  {} {} G={} {}{}", done, total, int(eta) / 60, int(eta) % 60,
                             last.problem.label(), last.path, last.g_req.str(), status_name(last.status),
                             last.timing && !last.timing->note.empty() ? " (" + last.timing->note + ")" : "")
              << std::flush;
    shown_ = true;
  }

 private:
  bool on_, shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

// --shard: keeps the rows of this shard (after --filter; a shard may be empty) and returns "i/n"
// for the records' shard column; "" without --shard.
std::string apply_shard(Sweep& sweep, const CommonOptions& o) {
  if (o.shard.empty()) return "";
  const Shard s = parse_shard(o.shard, "--shard");
  const size_t all = sweep.rows.size();
  sweep.rows = take_shard(std::move(sweep.rows), s);
  spdlog::info("--shard {}: {} of {} problems", s.str(), sweep.rows.size(), all);
  return s.str();
}

// --devices, checked before anything is written: the ordinals, or none; an input error on a build
// without a GPU backend.
std::vector<int> requested_devices(const CommonOptions& o) {
  if (o.devices.empty()) return {};
  const std::vector<int> devices = parse_devices(o.devices, "--devices");
#ifndef FABENCH_HAS_GPU
  throw InputError(command_line(), "--devices", "no GPU backend in this build (FABENCH_GPU=none)");
#endif
  return devices;
}

// --save-tensors must be a folder this run can write, or one it can create (its parent exists),
// found before the first record runs, not by every record's save after its run. A real run makes
// the folder (the first save would) and writes and removes a probe file in it; --dry-run creates
// nothing and asks access() of the folder, or of its parent when it is not there yet.
void check_save_folder(const std::string& dir, bool dry_run) {
  namespace fs = std::filesystem;
  auto refuse = [&](const std::string& why) { throw InputError(kCli, "--save-tensors", fmt::format("'{}' {}", dir, why)); };
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) refuse("is a file, not a folder");
  const fs::path parent = fs::path(dir).parent_path().empty() ? fs::path(".") : fs::path(dir).parent_path();
  if (!fs::is_directory(dir, ec) && !fs::is_directory(parent, ec))
    refuse(fmt::format("cannot be created: its parent '{}' is not a folder", parent.string()));
  if (dry_run) {
    const std::string there = fs::is_directory(dir, ec) ? dir : parent.string();
    if (::access(there.c_str(), W_OK | X_OK) != 0) refuse(fmt::format("cannot be written: '{}': {}", there, std::strerror(errno)));
    return;
  }
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) refuse(fmt::format("cannot be created: {}", std::strerror(errno)));
  std::string probe = dir + "/.fa-bench-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) refuse(fmt::format("cannot be written: {}", std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

// --save-tensors / --load-tensors: the runner's hooks. Loaded tensors are checked against every
// valid row first, so a wrong shape or dtype is an input error before anything runs.
void hook_tensors(RunOptions& ro, const CommonOptions& o, const Sweep& sweep) {
  for (const auto& row : sweep.rows)
    if (!o.load_tensors.empty() && !row.invalid) load_inputs(o.load_tensors, row.problem);
  if (!o.save_tensors.empty()) check_save_folder(o.save_tensors, o.dry_run);
  ro.load_tensors = o.load_tensors;
  ro.save_tensors = o.save_tensors;
  install_tensor_hooks(ro);
}

// run_sweep, or one worker per device when `devices` is not empty.
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

// The chosen tables to stdout and, with --markdown, to that file (opened and checked before the run).
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

// --fail-on-skip turns a clean status into 1 when any record is a skip.
int apply_fail_on_skip(int status, const std::vector<Record>& records, const CommonOptions& o) {
  if (!o.fail_on_skip || status != 0) return status;
  for (const auto& r : records)
    if (r.status == Status::skip) {
      spdlog::error("--fail-on-skip: {} {} G={} skipped: {}", r.problem.label(), r.path, r.g_req.str(), r.reason);
      return 1;
    }
  return 0;
}

// Select: the flags that bound each other, then the output policy (nothing is read, run or
// truncated while an output is wrong), one record per key, --filter, --shard. Returns the files no
// output may be, and the shard ("i/n" or "").
std::vector<std::string> select_rows(Sweep& sweep, const CommonOptions& o, std::string& shard) {
  if (o.min_samples > o.max_samples)
    throw InputError(kCli, "--min-samples", fmt::format("{} is more than --max-samples {}", o.min_samples, o.max_samples));
  std::vector<std::string> inputs = sweep.files;
  if (!o.heuristic_file.empty()) inputs.push_back(o.heuristic_file);
  // The plugin libraries (an output over a loaded library would truncate the code being run) and
  // the --load-tensors folder's files.
  for (const auto& f : plugin_files(o.plugins)) inputs.push_back(f);
  if (!o.load_tensors.empty()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(o.load_tensors, ec)) inputs.push_back(e.path().string());
  }
  check_outputs({{"-o", o.csv}, {"--json", o.json}, {"--markdown", o.markdown}}, inputs);
  drop_duplicate_rows(sweep);
  if (!o.filter.empty()) {
    const Filter keep(o.filter);
    std::vector<SweepRow> rows;
    for (auto& r : sweep.rows)
      if (keep(r.problem)) rows.push_back(std::move(r));
    spdlog::info("--filter kept {} of {} rows", rows.size(), sweep.rows.size());
    if (rows.empty())
      throw InputError(command_line(), "--filter", fmt::format("'{}' keeps none of the {} rows", o.filter, sweep.rows.size()));
    sweep.rows = std::move(rows);
  }
  shard = apply_shard(sweep, o);
  return inputs;
}

struct Setup {
  std::vector<int> devices;
  GateContext ctx;
  Registry reg;
  RunOptions ro;
};

// Set up: the devices asked for, the device probed, the registry and oracle (cli/run_setup.hpp),
// and every run option from the flags and the sweep file.
Setup set_up(const Sweep& sweep, const CommonOptions& o) {
  Setup s;
  s.devices = requested_devices(o);
  GateContext& ctx = s.ctx;
  ctx.device = probe_device();
  check_devices_present(s.devices, ctx.device, "--devices");
  ctx.cpu_budget_flops = o.cpu_budget_gflop * 1e9;
  if (!ctx.device.gpu) spdlog::info("no GPU: {}", ctx.device.gpu_absent_why);
  const DispatchChoice dispatch = auto_dispatch(ctx.device, o.heuristic_file);
  s.reg = run_registry(ctx.device, o.plugins, dispatch);
  const Registry& reg = s.reg;

  RunOptions& ro = s.ro;
  ro.paths = resolve_paths(o.paths, sweep, reg, ctx.device);
  if (!o.baseline.empty() && !reg.find(o.baseline))
    throw InputError(kCli, "--baseline", fmt::format("unknown path '{}' (`fa-bench list` names them)", o.baseline));
  ro.timing = {o.warmup, o.min_samples, o.max_samples, o.spread, o.time_cap,
               o.timing == "hot" ? TimingMode::hot : TimingMode::cold, o.time_limit};
  ro.time_paths = !o.no_timing;
  ro.throttle.policy = o.throttle_policy == "retry" ? ThrottlePolicy::retry
                       : o.throttle_policy == "fail" ? ThrottlePolicy::fail
                                                     : ThrottlePolicy::warn;
  ro.throttle.wait_s = o.throttle_wait;
  ro.thresholds = sweep.thresholds;
  if (o.max_err >= 0) ro.thresholds.max_err = o.max_err;
  if (o.min_cosine >= 0) ro.thresholds.cosine = o.min_cosine;
  ro.check_rows = o.check_rows;
  ro.gpu_reference = o.gpu_reference == "on";
  ro.reference = run_oracle();
  ro.repeat_check = o.repeat_check;
  ro.check_timed = !o.no_check_timed;
  ro.isolate = o.isolate || o.row_timeout > 0;
  ro.row_timeout_s = o.row_timeout;
  ro.split = make_split_policy(o.heuristic, o.heuristic_file, ctx.device.gpu ? ctx.device.arch : "");
  ro.heuristic_file = o.heuristic_file;
  if (std::find(ro.paths.begin(), ro.paths.end(), "auto") != ro.paths.end()) spdlog::info("auto: {}", dispatch.describe());
  if (std::any_of(sweep.rows.begin(), sweep.rows.end(),
                  [](const SweepRow& r) { return std::any_of(r.splits.begin(), r.splits.end(), [](auto& g) { return g.is_auto; }); }))
    spdlog::info("G rule: {}", ro.split.describe());
  ro.stop = StopOnSignals::received;
  hook_tensors(ro, o, sweep);
  ro.timing.planted_slowdown = checked_plant_slowdown(o.plant_slowdown);
  return s;
}

struct Outputs {
  RunMeta meta;
  ResumeState earlier;
  std::unique_ptr<CsvWriter> csv;
  std::unique_ptr<JsonLinesWriter> json;
  std::optional<OutputFile> markdown;
  std::vector<RecordSink*> sinks;
};

// Open outputs: every output is opened, locked and checked (and a resumed one read) before any is
// truncated; the records --resume finds already written go into ro.done.
Outputs open_outputs(const CommonOptions& o, const std::vector<std::string>& inputs, const std::string& shard,
                     Setup& s) {
  Outputs out;
  OutputFile csv_out(o.csv, inputs);
  std::optional<OutputFile> json_out;
  if (!o.json.empty()) json_out.emplace(o.json, inputs);
  if (!o.markdown.empty()) out.markdown.emplace(o.markdown, inputs);
  out.meta = collect_meta(s.ctx.device, s.ro.timing.mode);
  out.meta.shard = shard;
  if (o.resume) {
    out.earlier = read_resume(o.csv, out.meta);
    const long long json_complete = json_out ? check_json_resume(o.json, out.meta) : -1;
    s.ro.done = out.earlier.done;
    // Torn last lines (a write cut short) are cut off only now, once both files passed every check.
    auto cut = [](OutputFile& f, long long complete) {
      if (complete < 0) return;
      spdlog::warn("--resume: '{}' ends in a torn line (a write cut short); dropping it after byte {}", f.path(), complete);
      f.truncate_to(complete);
    };
    cut(csv_out, out.earlier.complete_bytes);
    if (json_out) {
      cut(*json_out, json_complete);
      // The JSON Lines as durable as the CSV: the records the CSV holds and the JSON Lines file
      // lacks (a line cut off above, or --json new on this resumed run) are written to it now.
      const std::vector<std::string> missing = json_lines_missing(o.csv, o.json);
      if (!missing.empty()) {
        if (json_out->empty()) json_out->write(meta_json(out.meta) + '\n');
        for (const auto& line : missing) json_out->write(line + '\n');
        spdlog::info("--resume: wrote {} records of '{}' that '{}' lacked", missing.size(), o.csv, o.json);
      }
    }
    if (out.earlier.exit_status != 0)
      spdlog::warn("--resume: '{}' already holds a record that makes this run exit {}: {}", o.csv, out.earlier.exit_status,
                   out.earlier.exit_why);
  }
  out.csv = std::make_unique<CsvWriter>(std::move(csv_out), out.meta, o.resume);
  out.sinks.push_back(out.csv.get());
  if (json_out) {
    out.json = std::make_unique<JsonLinesWriter>(std::move(*json_out), out.meta, o.resume);
    out.sinks.push_back(out.json.get());
  }
  return out;
}

// Run: every record, each handed to the sinks as it is final; a progress line on a terminal.
std::vector<Record> run_stage(const Sweep& sweep, const CommonOptions& o, const Setup& s, const Outputs& out) {
  spdlog::info("{} rows x {} paths on {} ({} backend); results -> {}", sweep.rows.size(), s.ro.paths.size(),
               out.meta.device, out.meta.backend, o.csv);
  ProgressLine line(isatty(2) && spdlog::get_level() <= spdlog::level::info);
  const auto start = std::chrono::steady_clock::now();
  std::vector<Record> records = run_records(sweep, s.ro, s.reg, s.ctx, out.sinks, s.devices,
                                            [&](size_t d, size_t t, const Record& r) { line(d, t, r); });
  // Where a sweep's time went: the timed launches against everything else (inputs, reference,
  // checks, copies), which issue 45 asks to keep under a second a record.
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double timed = 0;
  size_t ran = 0;
  for (const Record& r : records)
    if (r.timing) timed += r.timing->total_ms * 1e-3, ++ran;
  if (ran && s.devices.size() <= 1)  // with several devices the launches overlap in wall time
    spdlog::info("time: {:.1f} s wall, {:.1f} s of it in {} records' timed launches; {:.2f} s a record beyond them",
                 wall, timed, ran, (wall - timed) / double(ran));
  return records;
}

// Print: the tables (stdout, --markdown) against the baseline path, and where the records went.
void print_stage(const std::vector<Record>& records, const CommonOptions& o, const Setup& s, Outputs& out) {
  const std::string baseline = !o.baseline.empty() ? o.baseline : s.ctx.device.gpu ? "naive" : "cpu-ref";
  print_outputs(records, baseline, o, out.markdown);
  spdlog::info("wrote {} records to {}{}", records.size(), o.csv, o.json.empty() ? "" : " and " + o.json);
  if (!out.earlier.done.empty()) spdlog::info("--resume: {} records were already in {}", out.earlier.done.size(), o.csv);
}

// Exit status: 128 + the signal that stopped the run; else the worse of this run's and the resumed
// file's (harness/run/runner.hpp's exit_status), with --fail-on-skip.
int exit_stage(const std::vector<Record>& records, const CommonOptions& o, const Outputs& out) {
  if (const int sig = StopOnSignals::received()) {
    spdlog::warn("stopped by signal {} after {} records; --resume finishes the sweep", sig, records.size());
    return 128 + sig;
  }
  return apply_fail_on_skip(combined_exit_status(out.earlier.exit_status, exit_status(records)), records, o);
}

// --dry-run: everything before this ran (files read and expanded, flags, --filter, --shard, paths,
// the outputs' folders and identities, the tensor folders); here each output is tried for writing
// without being created or changed, and --resume's files are read and checked as a real run would.
// Nothing is opened for writing, created or truncated. Exit 2 where a real run would (an input
// error, or an invalid row), else 0.
int dry_run(const Sweep& sweep, const CommonOptions& o, const std::string& shard, const Setup& s) {
  namespace fs = std::filesystem;
  const std::pair<const char*, std::string> outputs[] = {{"-o", o.csv}, {"--json", o.json}, {"--markdown", o.markdown}};
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    std::error_code ec;
    const std::string dir = fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string();
    const int fd = fs::exists(path, ec) ? ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    const bool ok = fd >= 0 || (!fs::exists(path, ec) && ::access(dir.c_str(), W_OK | X_OK) == 0);
    if (fd >= 0) ::close(fd);
    if (!ok) throw InputError(kCli, flag, fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  if (o.resume) {
    RunMeta meta = collect_meta(s.ctx.device, s.ro.timing.mode);
    meta.shard = shard;
    const ResumeState earlier = read_resume(o.csv, meta);
    if (!o.json.empty()) check_json_resume(o.json, meta);
    spdlog::info("--dry-run: --resume would keep {} records of '{}'", earlier.done.size(), o.csv);
  }
  size_t records = 0, invalid = 0;
  for (const auto& r : sweep.rows) {
    records += r.invalid ? 1 : r.splits.size() * s.ro.paths.size();  // as run_sweep counts them
    if (r.invalid) {  // a real run records it as invalid and exits 2: so does the dry run, naming it
      spdlog::error("invalid row: {}: field '{}': {}", r.where.str(), r.invalid->field, r.invalid->reason);
      ++invalid;
    }
  }
  std::cout << fmt::format("dry run: {} rows x {} paths ({}): {} records -> {}{}; nothing was run or written\n",
                           sweep.rows.size(), s.ro.paths.size(), fmt::join(s.ro.paths, ","), records, o.csv,
                           invalid ? fmt::format(", {} of them invalid rows", invalid) : "");
  return invalid ? 2 : 0;
}

}  // namespace

Sweep load_sweep_files(const std::vector<std::string>& files, const CommonOptions& o) {
  Sweep all;
  for (const auto& f : files) {
    Sweep s = load_sweep(f, o.overrides());
    all.rows.insert(all.rows.end(), s.rows.begin(), s.rows.end());
    all.files.push_back(f);
    check_row_cap(all.rows.size(), o.overrides(), SourceLoc{f, 0});
    if (all.paths.empty()) all.paths = s.paths, all.paths_where = s.paths_where;
    if (!all.thresholds.any()) all.thresholds = s.thresholds;
  }
  return all;
}

int execute(Sweep sweep, const CommonOptions& o) {
  std::string shard;
  const std::vector<std::string> inputs = select_rows(sweep, o, shard);
  Setup setup = set_up(sweep, o);
  if (o.dry_run) return dry_run(sweep, o, shard, setup);
  const StopOnSignals stop_on_signals;  // from here to the end: a signal ends the run after the current record
  Outputs outputs = open_outputs(o, inputs, shard, setup);
  const std::vector<Record> records = run_stage(sweep, o, setup, outputs);
  print_stage(records, o, setup, outputs);
  return exit_stage(records, o, outputs);
}

}  // namespace fa::cli
