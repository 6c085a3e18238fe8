// Result records and their printers. One record per (problem, path, G). CSV (schema in
// results/README.md, version kSchemaVersion) and JSON Lines writers write each record as it
// finishes (every write checked), so an interrupted sweep keeps everything measured; --resume
// reads the CSV back (harness/results/resume.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/check/metrics.hpp"
#include "harness/check/peaks.hpp"
#include "harness/input_error.hpp"
#include "harness/path.hpp"
#include "harness/results/output_file.hpp"
#include "harness/results/text_escape.hpp"
#include "harness/timing.hpp"

namespace fa {

// 2: bias_ulp, bias_bound, repeat_*; 3: batch, timing_note, pct_peak, bound, clocks, shard, device_index;
// 4: split_rule, units, tile_m, tile_n, resident; 5: timed_check; 6: plugin, plugin_version;
// 7: seqlens_q, seqlens_k, page_size, window, alibi, softcap; 8: tile_heads; 9: flush_bytes;
// 10: clock_mhz_min, clock_mhz_median, power_w_max, throttled_samples, throttle_reasons, cycles_median, clock_source.
constexpr int kSchemaVersion = 10;

enum class Status { pass, fail, skip, invalid, error, oom };
const char* status_name(Status s);

struct RunMeta {
  std::string run_id, started, host, cpu, device, arch, runtime, backend, git_commit, compiler;
  int units = 0, cpu_threads = 0, sm_clock_mhz = 0, mem_clock_mhz = 0;
  size_t device_memory = 0;
  std::string timing_mode;
  std::string shard;  // "i/n" under --shard; empty otherwise
};

struct Record {
  Problem problem;
  SourceLoc where;
  std::string path, ran_path;
  SplitRequest g_req;
  int g_used = 0;
  std::string split_rule;  // the rule that chose G (G=auto), or a path's own split rule (decode chunks)
  int units = 0;           // SMs/CUs (CPU paths: threads) the rules counted
  TileShape tile{0, 0, 0};  // the path's tile and occupancy at G_used (0s: not known, e.g. other tools' records)
  Status status = Status::skip;
  std::string reason, rule;
  double tol = 0, bias_bound = 0;
  int repeat_runs = 0, repeat_diffs = 0;  // --repeat-check: reruns, and those not bit-identical
  std::string timed_check;  // the last timed launch vs the validated run: same, rule, differs; empty: not checked
  std::optional<Metrics> metrics;
  std::optional<TimingStats> timing;
  double tflops = 0, gbps = 0;
  std::optional<Roofline> roof;  // timed GPU records on an arch harness/check/peaks.cpp knows
  size_t flush_bytes = 0;        // cold GPU records: bytes the flush read before each sample (harness/device_model.hpp)
  int device_index = -1;         // the GPU ordinal under --devices; -1 otherwise
  std::string time;  // when the record finished (UTC, ISO 8601)
  std::string plugin_file, plugin_version;  // a plugin path's library and declared version; empty: built in

  std::string resume_key() const;  // row name + problem identity + path + requested G
};

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void write(const Record& r) = 0;
};

// Both writers empty the file unless appending, and start an empty file with its header (CSV) or
// meta line (JSON Lines): a file always has exactly one.
class CsvWriter : public RecordSink {
 public:
  CsvWriter(OutputFile out, const RunMeta& meta, bool append);
  void write(const Record& r) override;
  static std::vector<std::string> columns();

 private:
  OutputFile out_;
  RunMeta meta_;
};

class JsonLinesWriter : public RecordSink {
 public:
  JsonLinesWriter(OutputFile out, const RunMeta& meta, bool append);
  void write(const Record& r) override;

 private:
  OutputFile out_;
  RunMeta meta_;
};

std::string meta_json(const RunMeta& meta);  // the JSON Lines meta line, without its newline

// A CSV cell: escape_text (harness/results/text_escape.hpp), then quoted where it holds a comma or a quote.
std::string csv_escape(const std::string& s);
// A problem's identity as results columns, name through seed, in the schema's order: its field
// table's cells (harness/problem_fields.hpp), shared by the results writers and `compare`'s output.
std::vector<std::pair<std::string, std::string>> problem_fields(const Problem& p);
std::string utc_now();

}  // namespace fa
