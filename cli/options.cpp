// Shared option set and the sweep execution behind `sweep` and `run`.
#include "cli/options.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>

#include "cli/flag_checks.hpp"
#include "cli/interrupt.hpp"
#include "cli/run_outputs.hpp"
#include "cli/test_paths.hpp"
#include "harness/registry.hpp"
#include "harness/results/metadata.hpp"
#include "harness/results/resume.hpp"
#include "harness/results/tables/summary.hpp"
#include "harness/run/runner.hpp"
#include "harness/sweep/filter.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

namespace fa::cli {

namespace {

constexpr long long kMaxSamples = 100000000;  // bounds that keep the int counters far from overflow
constexpr long long kMaxRowsCap = 100000000;

// "a,b|c" -> "a|b|c": lists on the command line may use commas or bars.
std::string bars(std::string s) {
  for (char& c : s)
    if (c == ',') c = '|';
  return s;
}

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
  const SourceLoc where = cli.empty() ? sweep.paths_where : SourceLoc{"command line", 0};
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

}  // namespace

Overrides CommonOptions::overrides() const {
  Overrides ovr;
  if (!G.empty()) ovr.G = bars(G);
  if (!dtype.empty()) ovr.dtype = bars(dtype);
  ovr.seed = seed;
  ovr.max_rows = max_rows;
  return ovr;
}

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--paths", o.paths,
                 "Paths to run, comma-separated (default: the file's, else all available here: the GPU ones where "
                 "there is a GPU)")
      ->check(non_empty());
  cmd.add_option("--G", o.G, "Split counts replacing the file's, e.g. 0,2,4,8,16 or auto")->check(non_empty());
  cmd.add_option("--dtype", o.dtype, "Dtypes replacing the file's, e.g. fp16,bf16")->check(non_empty());
  cmd.add_option("--filter", o.filter, "Keep rows matching an expression, e.g. 'S>=1024 && dtype==bf16'")->check(non_empty());
  cmd.add_option("--seed", o.seed, "Input seed for rows without a seed column")->check(whole_in(0))->capture_default_str();
  cmd.add_option("--check-rows", o.check_rows, "Validate this many sampled query rows (0: as --cpu-budget allows)")
      ->check(whole_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  cmd.add_option("--cpu-budget", o.cpu_budget_gflop,
                 "GFLOP a CPU path or the reference may spend on one problem; beyond it CPU paths skip and "
                 "validation samples rows")
      ->check(finite_in(0, HUGE_VAL))
      ->capture_default_str();
  cmd.add_option("--max-err", o.max_err, "Fixed rule: max |o - ref| threshold (replaces the adaptive rule)")
      ->check(finite_in(0, HUGE_VAL));
  cmd.add_option("--min-cosine", o.min_cosine, "Fixed rule: minimum cosine similarity")->check(finite_in(0, 1));
  cmd.add_option("--timing", o.timing, "cold (flush caches before each sample) or hot")
      ->check(CLI::IsMember({"cold", "hot"}))
      ->capture_default_str();
  cmd.add_option("--time-cap", o.time_cap, "Seconds of samples per record at most")
      ->check(finite_in(0, HUGE_VAL))
      ->capture_default_str();
  cmd.add_option("--spread", o.spread, "Stop sampling at this relative spread (stddev/mean)")
      ->check(finite_in(0, HUGE_VAL))
      ->capture_default_str();
  cmd.add_option("--time-limit", o.time_limit,
                 "Wall seconds a record's sampling may take (flushes and launches included); stops it even under "
                 "--min-samples, with a note")
      ->check(finite_in(0, HUGE_VAL))
      ->capture_default_str();
  cmd.add_option("--min-samples", o.min_samples, "Samples before the spread may stop the loop (at most --max-samples)")
      ->check(whole_in(1, kMaxSamples))
      ->capture_default_str();
  cmd.add_option("--max-samples", o.max_samples, "Samples per record at most")->check(whole_in(1, kMaxSamples))->capture_default_str();
  cmd.add_option("--warmup", o.warmup, "Untimed runs before sampling")->check(whole_in(0, kMaxSamples))->capture_default_str();
  cmd.add_flag("--no-timing", o.no_timing, "Validate only");
  cmd.add_option("-o,--csv", o.csv, "Results CSV (rows flushed as they finish)")->check(non_empty())->capture_default_str();
  cmd.add_option("--json", o.json, "Also write JSON Lines (a meta line, then one object per record)")->check(non_empty());
  cmd.add_flag("--resume", o.resume,
               "Append to the CSV (and JSON), skipping records they hold (error/oom rows re-run); refused when the "
               "file's columns, schema, device or timing mode differ");
  cmd.add_option("--max-rows", o.max_rows, "Refuse sweep files that expand to more rows than this")
      ->check(whole_in(1, kMaxRowsCap))
      ->capture_default_str();
  cmd.add_option("--baseline", o.baseline, "Path the speedup column divides by (default: naive with a GPU, else cpu-ref)")
      ->check(non_empty());
  cmd.add_flag("--no-table", o.no_table, "Do not print the markdown summary");
  cmd.add_flag("--isolate", o.isolate, "Run each record in a child process: a crash or hang becomes an error record");
  cmd.add_option("--row-timeout", o.row_timeout, "Seconds a record may run before it is killed (implies --isolate)")
      ->check(finite_in(0, 1e9));
  cmd.add_option("--repeat-check", o.repeat_check,
                 "Rerun each record N more times; fail it if any rerun differs bit for bit from the first")
      ->check(whole_in(0, kMaxSamples));
  cmd.add_flag("--no-check-timed", o.no_check_timed,
               "Do not compare the last timed launch's output with the validated run (on by default: state carried "
               "between launches fails the record)");
  cmd.add_option("--heuristic", o.heuristic,
                 "Rule G=auto uses: fa2, aiter or model (default: model where parameters for this device's arch "
                 "are found or built in, else fa2)")
      ->check(CLI::IsMember({"fa2", "aiter", "model"}));
  cmd.add_option("--heuristic-file", o.heuristic_file,
                 "The model's parameter file (default: results/heuristics/<arch>.json found at run time, else built in)")
      ->check(CLI::ExistingFile);
  add_run_output_options(cmd, o);
  add_test_options(cmd, o.plant_slowdown);
}

int execute(Sweep sweep, const CommonOptions& o) {
  const SourceLoc cli{"command line", 0};
  if (o.min_samples > o.max_samples)
    throw InputError(cli, "--min-samples", fmt::format("{} is more than --max-samples {}", o.min_samples, o.max_samples));
  // The output policy first: nothing is read, run or truncated while an output is wrong.
  std::vector<std::string> inputs = sweep.files;
  if (!o.heuristic_file.empty()) inputs.push_back(o.heuristic_file);
  check_outputs({{"-o", o.csv}, {"--json", o.json}, {"--markdown", o.markdown}}, inputs);
  drop_duplicate_rows(sweep);
  if (!o.filter.empty()) {
    const Filter keep(o.filter);
    std::vector<SweepRow> rows;
    for (auto& r : sweep.rows)
      if (keep(r.problem)) rows.push_back(std::move(r));
    spdlog::info("--filter kept {} of {} rows", rows.size(), sweep.rows.size());
    if (rows.empty())
      throw InputError(SourceLoc{"command line", 0}, "--filter", fmt::format("'{}' keeps none of the {} rows", o.filter, sweep.rows.size()));
    sweep.rows = std::move(rows);
  }
  const std::string shard = apply_shard(sweep, o);
  const std::vector<int> devices = requested_devices(o);
  GateContext ctx;
  ctx.device = probe_device();
  ctx.cpu_budget_flops = o.cpu_budget_gflop * 1e9;
  if (!ctx.device.gpu) spdlog::info("no GPU: {}", ctx.device.gpu_absent_why);
  Registry reg = builtin_registry(ctx.device);
  add_test_paths(reg);

  RunOptions ro;
  ro.paths = resolve_paths(o.paths, sweep, reg, ctx.device);
  if (!o.baseline.empty() && !reg.find(o.baseline))
    throw InputError(cli, "--baseline", fmt::format("unknown path '{}' (`fa-bench list` names them)", o.baseline));
  ro.timing = {o.warmup, o.min_samples, o.max_samples, o.spread, o.time_cap,
               o.timing == "hot" ? TimingMode::hot : TimingMode::cold, o.time_limit};
  ro.time_paths = !o.no_timing;
  ro.thresholds = sweep.thresholds;
  if (o.max_err >= 0) ro.thresholds.max_err = o.max_err;
  if (o.min_cosine >= 0) ro.thresholds.cosine = o.min_cosine;
  ro.check_rows = o.check_rows;
  ro.reference = compute_reference;
  ro.repeat_check = o.repeat_check;
  ro.check_timed = !o.no_check_timed;
  ro.isolate = o.isolate || o.row_timeout > 0;
  ro.row_timeout_s = o.row_timeout;
  ro.split = make_split_policy(o.heuristic, o.heuristic_file, ctx.device.gpu ? ctx.device.arch : "");
  if (std::any_of(sweep.rows.begin(), sweep.rows.end(),
                  [](const SweepRow& r) { return std::any_of(r.splits.begin(), r.splits.end(), [](auto& g) { return g.is_auto; }); }))
    spdlog::info("G rule: {}", ro.split.describe());
  const StopOnSignals stop_on_signals;
  ro.stop = StopOnSignals::received;
  hook_tensors(ro, o, sweep);
  ro.timing.planted_slowdown = checked_plant_slowdown(o.plant_slowdown);

  // Every output is opened, locked and checked (and a resumed one read) before any is truncated.
  OutputFile csv_out(o.csv, inputs);
  std::optional<OutputFile> json_out, markdown_out;
  if (!o.json.empty()) json_out.emplace(o.json, inputs);
  if (!o.markdown.empty()) markdown_out.emplace(o.markdown, inputs);
  RunMeta meta = collect_meta(ctx.device, ro.timing.mode);
  meta.shard = shard;
  ResumeState earlier;
  if (o.resume) {
    earlier = read_resume(o.csv, meta);
    const long long json_complete = json_out ? check_json_resume(o.json, meta) : -1;
    ro.done = earlier.done;
    // Torn last lines (a write cut short) are cut off only now, once both files passed every check.
    auto cut = [](OutputFile& f, long long complete) {
      if (complete < 0) return;
      spdlog::warn("--resume: '{}' ends in a torn line (a write cut short); dropping it after byte {}", f.path(), complete);
      f.truncate_to(complete);
    };
    cut(csv_out, earlier.complete_bytes);
    if (json_out) cut(*json_out, json_complete);
    if (earlier.exit_status != 0)
      spdlog::warn("--resume: '{}' already holds a record that makes this run exit {}: {}", o.csv, earlier.exit_status,
                   earlier.exit_why);
  }
  CsvWriter csv(std::move(csv_out), meta, o.resume);
  std::unique_ptr<JsonLinesWriter> json;
  std::vector<RecordSink*> sinks{&csv};
  if (json_out) {
    json = std::make_unique<JsonLinesWriter>(std::move(*json_out), meta, o.resume);
    sinks.push_back(json.get());
  }
  spdlog::info("{} rows x {} paths on {} ({} backend); results -> {}", sweep.rows.size(), ro.paths.size(), meta.device,
               meta.backend, o.csv);
  std::vector<Record> records;
  {
    ProgressLine line(isatty(2) && spdlog::get_level() <= spdlog::level::info);
    records = run_records(sweep, ro, reg, ctx, sinks, devices, [&](size_t d, size_t t, const Record& r) { line(d, t, r); });
  }
  const std::string baseline = !o.baseline.empty() ? o.baseline : ctx.device.gpu ? "naive" : "cpu-ref";
  print_outputs(records, baseline, o, markdown_out);
  spdlog::info("wrote {} records to {}{}", records.size(), o.csv, o.json.empty() ? "" : " and " + o.json);
  if (!earlier.done.empty()) spdlog::info("--resume: {} records were already in {}", earlier.done.size(), o.csv);
  if (const int sig = StopOnSignals::received()) {
    spdlog::warn("stopped by signal {} after {} records; --resume finishes the sweep", sig, records.size());
    return 128 + sig;
  }
  return apply_fail_on_skip(combined_exit_status(earlier.exit_status, exit_status(records)), records, o);
}

}  // namespace fa::cli
