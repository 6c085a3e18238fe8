// The flags `sweep` and `run` share: path selection, overrides, validation, timing, outputs, scale-out.
// What they do is cli/sweep_pipeline.cpp.
#include "cli/options.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/test_paths.hpp"
#include "harness/sweep/shard.hpp"

namespace fa::cli {

namespace {

constexpr long long kMaxSamples = 100000000;  // bounds that keep the int counters far from overflow
constexpr long long kMaxRowsCap = 100000000;

}  // namespace

std::string bars(std::string s) {
  for (char& c : s)
    if (c == ',') c = '|';
  return s;
}

Overrides CommonOptions::overrides() const {
  Overrides ovr;
  if (!G.empty()) ovr.G = bars(G);
  if (!dtype.empty()) ovr.dtype = bars(dtype);
  ovr.seed = seed;
  ovr.max_rows = max_rows;
  return ovr;
}

namespace {

void add_run_output_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--table", o.table, "Tables to print: compact (problems x paths, the default), detail (one per problem: errors, "
                 "samples, spread, %peak, speedup), both (compact first)")
      ->check(CLI::IsMember({"detail", "compact", "both"}))
      ->capture_default_str();
  cmd.add_option("--markdown", o.markdown, "Also write the tables to this markdown file")->check(non_empty());
  cmd.add_flag("--fail-on-skip", o.fail_on_skip, "Exit 1 when any record is a skip (CI: nothing may go unrun)");
  cmd.add_flag("--dry-run", o.dry_run,
               "Expand the sweep and check every flag, input and output (--resume's files read), run nothing and "
               "write nothing; exit 0, or 2 naming the first input error (slurm-array.sh runs it before sbatch)");
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

}  // namespace

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
  cmd.add_option("--gpu-reference", o.gpu_reference,
                 "on: check every query row of a GPU record against a GPU reference (the CPU oracle checks it "
                 "on the sampled rows); off: the sampled rows only")
      ->check(CLI::IsMember({"on", "off"}))
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
  cmd.add_option("--throttle-policy", o.throttle_policy,
                 "A record whose samples ran under a power, thermal or other clock-event reason: warn (note and "
                 "table mark), retry (wait for the clock, time again, twice at most) or fail (an error record)")
      ->check(CLI::IsMember({"warn", "retry", "fail"}))
      ->capture_default_str();
  cmd.add_option("--throttle-wait", o.throttle_wait, "Seconds --throttle-policy retry waits for the clock, each retry")
      ->check(finite_in(0, 3600))
      ->capture_default_str();
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
  add_plugin_option(cmd, o.plugins);
  add_run_output_options(cmd, o);
  add_test_options(cmd, o.plant_slowdown);
}

}  // namespace fa::cli
