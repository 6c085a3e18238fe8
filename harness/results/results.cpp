// CSV and JSON Lines printers over the one record type.
#include "harness/results/results.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "harness/problem_fields.hpp"
#include "harness/results/json_cell.hpp"

namespace fa {

const char* status_name(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::skip: return "skip";
    case Status::invalid: return "invalid";
    case Status::error: return "error";
    case Status::oom: return "oom";
  }
  return "?";
}

std::string Record::resume_key() const { return problem.name + "|" + problem.key() + "|" + path + "|" + g_req.str(); }

std::string csv_escape(const std::string& text) {
  const std::string s = escape_text(text);  // one line, valid UTF-8
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::pair<std::string, std::string>> problem_fields(const Problem& p) {
  std::vector<std::pair<std::string, std::string>> cells;
  for (const auto& f : problem_field_table()) cells.emplace_back(f.name, f.cell(p));
  return cells;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

std::string num(double x) { return fmt::format("{:.6g}", x); }

// Field values in column order; empty strings where a record has no value.
std::vector<std::pair<std::string, std::string>> fields(const Record& r, const RunMeta& meta) {
  const Problem& p = r.problem;
  std::vector<std::pair<std::string, std::string>> f = {
      {"schema", std::to_string(kSchemaVersion)},
      {"run_id", meta.run_id},
      {"time", r.time}};
  for (auto& kv : problem_fields(p)) f.push_back(std::move(kv));
  f.insert(f.end(), {
      {"path", r.path},
      {"ran_path", r.ran_path},
      {"plugin", r.plugin_file},
      {"plugin_version", r.plugin_version},
      {"G_req", r.g_req.str()},
      {"G_used", std::to_string(r.g_used)},
      {"split_rule", r.split_rule},
      {"units", r.units ? std::to_string(r.units) : ""},
      {"tile_m", r.tile.block_m ? std::to_string(r.tile.block_m) : ""},
      {"tile_n", r.tile.block_n ? std::to_string(r.tile.block_n) : ""},
      {"resident", r.tile.resident ? std::to_string(r.tile.resident) : ""},
      {"tile_heads", r.tile.resident ? std::to_string(r.tile.heads) : ""},
      {"status", status_name(r.status)},
      {"reason", r.reason},
      {"rule", r.rule},
      {"tol", r.metrics ? num(r.tol) : ""},
  });
  const Metrics* m = r.metrics ? &*r.metrics : nullptr;
  auto mf = [&](const char* name, auto get) { f.emplace_back(name, m ? get(*m) : std::string()); };
  mf("max_abs_err", [](const Metrics& x) { return num(x.max_abs); });
  mf("mean_abs_err", [](const Metrics& x) { return num(x.mean_abs); });
  mf("rel_l2", [](const Metrics& x) { return num(x.rel_l2); });
  mf("cosine", [](const Metrics& x) { return fmt::format("{:.9f}", x.cosine); });
  mf("lse_max_err", [](const Metrics& x) { return num(x.lse_max_err); });
  mf("nan_inf", [](const Metrics& x) { return std::to_string(x.nan_inf); });
  mf("unwritten", [](const Metrics& x) { return std::to_string(x.unwritten); });
  mf("cache_mismatch", [](const Metrics& x) { return std::to_string(x.cache_mismatch); });
  mf("rows_checked", [](const Metrics& x) { return std::to_string(x.rows_checked); });
  mf("rows_total", [](const Metrics& x) { return std::to_string(x.rows_total); });
  mf("lowprec_max_err", [](const Metrics& x) { return num(x.lp_max_abs); });
  mf("bias_ulp", [](const Metrics& x) { return num(x.bias.mean_ulp); });
  f.emplace_back("bias_bound", m ? num(r.bias_bound) : "");
  f.emplace_back("repeat_runs", r.repeat_runs ? std::to_string(r.repeat_runs) : "");
  f.emplace_back("repeat_diffs", r.repeat_runs ? std::to_string(r.repeat_diffs) : "");
  f.emplace_back("timed_check", r.timed_check);
  const TimingStats* t = r.timing ? &*r.timing : nullptr;
  auto tf = [&](const char* name, auto get) { f.emplace_back(name, t ? get(*t) : std::string()); };
  tf("median_ms", [](const TimingStats& x) { return num(x.median_ms); });
  tf("min_ms", [](const TimingStats& x) { return num(x.min_ms); });
  tf("max_ms", [](const TimingStats& x) { return num(x.max_ms); });
  tf("spread", [](const TimingStats& x) { return num(x.spread); });
  tf("samples", [](const TimingStats& x) { return std::to_string(x.samples); });
  tf("timing_mode", [](const TimingStats& x) { return x.mode; });
  f.emplace_back("flush_bytes", r.flush_bytes ? std::to_string(r.flush_bytes) : "");
  tf("stopped_by", [](const TimingStats& x) { return x.stopped_by; });
  tf("batch", [](const TimingStats& x) { return std::to_string(x.batch); });
  tf("timing_note", [](const TimingStats& x) { return x.note; });
  const ClockStats* c = t && t->clocks ? &*t->clocks : nullptr;
  auto cf = [&](const char* name, auto get) { f.emplace_back(name, c ? get(*c) : std::string()); };
  cf("clock_mhz_min", [](const ClockStats& x) { return num(x.mhz_min); });
  cf("clock_mhz_median", [](const ClockStats& x) { return num(x.mhz_median); });
  cf("power_w_max", [](const ClockStats& x) { return x.power_w_max >= 0 ? num(x.power_w_max) : std::string(); });
  cf("throttled_samples", [](const ClockStats& x) { return std::to_string(x.throttled_samples); });
  cf("throttle_reasons", [](const ClockStats& x) { return x.throttle_reasons; });
  cf("cycles_median", [](const ClockStats& x) { return num(x.cycles_median); });
  cf("clock_source", [](const ClockStats& x) { return x.source; });
  f.emplace_back("tflops", t ? num(r.tflops) : "");
  f.emplace_back("gbps", t ? num(r.gbps) : "");
  f.emplace_back("pct_peak", r.roof ? num(r.roof->pct_peak) : "");
  f.emplace_back("bound", r.roof ? r.roof->bound : "");
  f.emplace_back("flops", num(p.flops()));
  f.emplace_back("bytes", num(p.bytes()));
  f.emplace_back("device", meta.device);
  f.emplace_back("arch", meta.arch);
  f.emplace_back("sm_clock_mhz", meta.sm_clock_mhz ? std::to_string(meta.sm_clock_mhz) : "");
  f.emplace_back("mem_clock_mhz", meta.mem_clock_mhz ? std::to_string(meta.mem_clock_mhz) : "");
  f.emplace_back("shard", meta.shard);
  f.emplace_back("device_index", r.device_index >= 0 ? std::to_string(r.device_index) : "");
  f.emplace_back("git_commit", meta.git_commit);
  f.emplace_back("sweep_file", r.where.file);
  f.emplace_back("sweep_line", std::to_string(r.where.line));
  return f;
}

}  // namespace

std::vector<std::string> CsvWriter::columns() {
  std::vector<std::string> names;
  for (const auto& kv : fields(Record{}, RunMeta{})) names.push_back(kv.first);
  return names;
}

CsvWriter::CsvWriter(OutputFile out, const RunMeta& meta, bool append) : out_(std::move(out)), meta_(meta) {
  if (!append) out_.truncate();
  if (!out_.empty()) return;
  std::string header;
  for (const auto& c : columns()) header += (header.empty() ? "" : ",") + c;
  out_.write(header + '\n');
}

void CsvWriter::write(const Record& r) {
  std::string line;
  for (const auto& kv : fields(r, meta_)) line += (line.empty() ? "" : ",") + csv_escape(kv.second);
  out_.write(line + '\n');
}

std::string meta_json(const RunMeta& meta) {
  nlohmann::json m = {{"schema", kSchemaVersion}, {"run_id", meta.run_id}, {"started", meta.started},
                      {"host", meta.host}, {"cpu", meta.cpu}, {"cpu_threads", meta.cpu_threads},
                      {"device", meta.device}, {"arch", meta.arch}, {"units", meta.units},
                      {"device_memory", meta.device_memory}, {"sm_clock_mhz", meta.sm_clock_mhz},
                      {"mem_clock_mhz", meta.mem_clock_mhz}, {"runtime", meta.runtime},
                      {"backend", meta.backend}, {"git_commit", meta.git_commit}, {"compiler", meta.compiler},
                      {"timing_mode", meta.timing_mode},
                      {"shard", meta.shard.empty() ? nlohmann::json() : nlohmann::json(meta.shard)}};
  return nlohmann::json{{"meta", m}}.dump();
}

JsonLinesWriter::JsonLinesWriter(OutputFile out, const RunMeta& meta, bool append)
    : out_(std::move(out)), meta_(meta) {
  if (!append) out_.truncate();
  if (out_.empty()) out_.write(meta_json(meta) + '\n');
}

void JsonLinesWriter::write(const Record& r) {
  nlohmann::json j;
  for (const auto& [k, v] : fields(r, meta_)) j[k] = json_cell(k, escape_text(v));
  out_.write(j.dump() + '\n');
}

}  // namespace fa
