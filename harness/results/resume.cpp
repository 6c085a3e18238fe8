// Reading a results file back for --resume: header, schema, device and timing mode checks, then
// the keys of the records that are final and the exit status they carry.
#include "harness/results/resume.hpp"

#include <fmt/format.h>
#include <libfccp/csv.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "harness/problem_fields.hpp"
#include "harness/results/json_cell.hpp"
#include "harness/results/results_reader.hpp"
#include "harness/results/text_escape.hpp"

namespace fa {
namespace {

constexpr const char* kRefused = "; not appending (the file is left as it is)";

[[noreturn]] void refuse(const std::string& path, int line, const std::string& field, const std::string& why) {
  throw InputError(SourceLoc{path, line}, field, fmt::format("--resume: '{}': {}{}", path, why, kRefused));
}

// The columns --resume reads: schema, the problem's fields (harness/problem_fields.hpp), then what
// makes the key and the verdict.
constexpr size_t kAtPath = 1 + kNumProblemFields, kAtGReq = kAtPath + 1, kAtStatus = kAtPath + 2, kAtDevice = kAtPath + 3,
                 kAtTimingMode = kAtPath + 4, kAtReason = kAtPath + 5, kResumeColumns = kAtPath + 6;
using ResumeCells = std::array<std::string, kResumeColumns>;
using ResumeReader = io::CSVReader<kResumeColumns, io::trim_chars<>, io::double_quote_escape<',', '"'>>;

const ResumeCells& resume_columns() {
  static const ResumeCells names = [] {
    ResumeCells n;
    n[0] = "schema";
    for (size_t i = 0; i < kNumProblemFields; ++i) n[1 + i] = problem_field_table()[i].name;
    n[kAtPath] = "path", n[kAtGReq] = "G_req", n[kAtStatus] = "status", n[kAtDevice] = "device";
    n[kAtTimingMode] = "timing_mode", n[kAtReason] = "reason";
    return n;
  }();
  return names;
}

// The header must be this version's columns, in order: anything else is another schema.
void check_header(const std::string& path, std::string header) {
  if (!header.empty() && header.back() == '\r') header.pop_back();
  std::string want;
  for (const auto& c : CsvWriter::columns()) want += (want.empty() ? "" : ",") + c;
  if (header == want) return;
  size_t i = 0;
  while (i < header.size() && i < want.size() && header[i] == want[i]) ++i;
  refuse(path, 1, "columns",
         fmt::format("its columns differ from this version's (schema {}) from character {}: '{}' where '{}' is expected",
                     kSchemaVersion, i + 1, header.substr(i, 24), want.substr(i, 24)));
}

// The file's complete lines; *complete_bytes is set to their length when a torn line follows them.
std::string complete_lines(const std::string& path, long long* complete_bytes) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (!text.empty() && text.back() != '\n') {
    const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    *complete_bytes = static_cast<long long>(keep);
    text.resize(keep);
  }
  return text;
}

}  // namespace

ResumeState read_resume(const std::string& csv_path, const RunMeta& meta) {
  ResumeState st;
  const std::string text = complete_lines(csv_path, &st.complete_bytes);
  std::istringstream f(text);
  std::string header;
  if (!std::getline(f, header)) return st;
  check_header(csv_path, header);
  int line = 1;
  try {
    ResumeReader in(csv_path, text.data(), text.data() + text.size());
    const auto& names = resume_columns();
    std::apply([&](const auto&... n) { in.read_header(io::ignore_extra_column, n...); }, names);
    ResumeCells c;
    // A key read again later (an error or oom record re-run by an earlier --resume) replaces the
    // earlier line: only the last status of each key counts.
    std::map<std::string, std::pair<std::string, std::string>> last;  // key -> (status, "file:line: status: reason")
    while (std::apply([&](auto&... v) { return in.read_row(v...); }, c)) {
      line = int(in.get_file_line());
      if (c[0] != std::to_string(kSchemaVersion))
        refuse(csv_path, line, "schema", fmt::format("a record of schema '{}'; this run writes schema {}", c[0], kSchemaVersion));
      if (c[kAtDevice] != meta.device)
        refuse(csv_path, line, "device", fmt::format("a record from device '{}'; this run is on '{}'", c[kAtDevice], meta.device));
      if (!c[kAtTimingMode].empty() && c[kAtTimingMode] != meta.timing_mode)
        refuse(csv_path, line, "timing_mode",
               fmt::format("a record timed in timing mode '{}'; this run's timing mode is '{}'", c[kAtTimingMode],
                           meta.timing_mode));
      Problem p;
      for (size_t i = 0; i < kNumProblemFields; ++i) {
        const ProblemField& f = problem_field_table()[i];
        const std::string cell = f.kind == FieldKind::text ? unescape_text(c[1 + i]) : c[1 + i];
        if (auto why = f.set(p, cell)) refuse(csv_path, line, f.name, *why);
      }
      last[p.name + "|" + p.key() + "|" + c[kAtPath] + "|" + c[kAtGReq]] = {
          c[kAtStatus], fmt::format("{}:{}: {}: {}", csv_path, line, c[kAtStatus], unescape_text(c[kAtReason]))};
    }
    for (const auto& [key, final] : last) {
      const auto& [status, why] = final;
      // error and oom records are run again; every other status is final and counts as it stands.
      if (status == "error" || status == "oom") continue;
      st.done.insert(key);
      if (status == "fail" && st.exit_status != 1) st.exit_status = 1, st.exit_why = why;
      else if (status == "invalid" && st.exit_status == 0) st.exit_status = 2, st.exit_why = why;
    }
  } catch (const io::error::base& e) {
    refuse(csv_path, line, "csv", e.what());
  }
  return st;
}

long long check_json_resume(const std::string& jsonl_path, const RunMeta& meta) {
  long long complete = -1;
  std::istringstream f(complete_lines(jsonl_path, &complete));
  std::string first;
  if (!std::getline(f, first)) return complete;
  const auto j = nlohmann::json::parse(first, nullptr, false);
  if (j.is_discarded() || !j.contains("meta") || !j["meta"].is_object())
    refuse(jsonl_path, 1, "meta", "the first line is not a {\"meta\": ...} object");
  const auto& m = j["meta"];
  auto shown = [&](const char* k) { return m.contains(k) ? m[k].dump() : std::string("none"); };
  if (!(m.contains("schema") && m["schema"] == kSchemaVersion))
    refuse(jsonl_path, 1, "schema", fmt::format("meta schema {}; this run writes schema {}", shown("schema"), kSchemaVersion));
  if (!(m.contains("device") && m["device"] == meta.device))
    refuse(jsonl_path, 1, "device", fmt::format("meta device {}; this run is on '{}'", shown("device"), meta.device));
  if (!(m.contains("timing_mode") && m["timing_mode"] == meta.timing_mode))
    refuse(jsonl_path, 1, "timing_mode",
           fmt::format("meta timing mode {}; this run's timing mode is '{}'", shown("timing_mode"), meta.timing_mode));
  return complete;
}

std::vector<std::string> json_lines_missing(const std::string& csv_path, const std::string& jsonl_path) {
  long long torn = -1;
  std::map<std::string, int> held;  // the JSON Lines file's records (dumped again: one spelling), and how many times
  {
    std::istringstream f(complete_lines(jsonl_path, &torn));
    for (std::string line; std::getline(f, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && !j.contains("meta")) ++held[j.dump()];
    }
  }
  std::vector<std::string> missing;
  std::istringstream f(complete_lines(csv_path, &torn));
  std::string line;
  if (!std::getline(f, line)) return missing;
  const std::vector<std::string> columns = split_csv_line(line);
  while (std::getline(f, line)) {
    const std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != columns.size()) continue;  // read_resume has refused such a file already
    nlohmann::json j;
    for (size_t i = 0; i < cells.size(); ++i) j[columns[i]] = json_cell(columns[i], cells[i]);
    std::string dumped = j.dump();
    if (auto it = held.find(dumped); it != held.end() && it->second > 0) --it->second;
    else missing.push_back(std::move(dumped));
  }
  return missing;
}

int combined_exit_status(int earlier, int now) { return earlier == 1 || now == 1 ? 1 : std::max(earlier, now); }

}  // namespace fa
