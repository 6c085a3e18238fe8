// `fa-bench check DIR... [--path NAME]`: validation for outputs computed anywhere. Each DIR is a
// record folder of --save-tensors (or a folder of them) where another program (JAX, Triton, a
// torch backend, a script) has written o.npy, and optionally lse.npy. The problem comes back from
// problem.json, the inputs from q/k/v.npy, and the record is judged by the runner itself
// (run_record without timing): the rule, metrics and rounding bias a built-in path gets.
//   fa-bench sweep sweeps/whisper.csv --paths cpu-ref --no-timing --save-tensors saved
//   python my_kernel.py saved/*   # writes o.npy (and lse.npy) in each folder
//   fa-bench check saved --path my-kernel -o check.csv   # exit 0 all pass, 1 any fail, 2 input error
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "harness/results/output_file.hpp"
#include "harness/results/tensors/check_dir.hpp"
#include "harness/inputs.hpp"
#include "harness/results/metadata.hpp"
#include "harness/run/runner.hpp"
#include "harness/results/tables/summary.hpp"
#include "harness/results/tensors/tensor_files.hpp"
#include "paths/builtin.hpp"
#include "reference/cpu_ref.hpp"

namespace fa::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> dirs;
  std::string path = "external", csv = "fa-bench-check.csv", json;
  bool no_lse = false, no_table = false;
  double max_err = -1, min_cosine = -1, cpu_budget_gflop = 50;
  int64_t check_rows = 0;
  int accumulate_keys = 0;  // PathRow::rz_accumulate_keys of the program that wrote o.npy
  int fp8_accumulate_bits = 0;  // PathRow::fp8_accumulate_bits of that program
  std::string fp8_p = "fp8_e4m3";  // PathRow::fp8_p of that program
};

// The outputs another program wrote, handed to the runner as a path's run would hand them.
class SavedOutputs : public Execution {
 public:
  explicit SavedOutputs(RunOutputs out) : out_(std::move(out)) {}
  void poison() override {}
  void run() override {}
  RunOutputs read_back() override { return out_; }
  double timed_sample_ms(TimingMode) override { throw std::logic_error("check: saved outputs are not timed"); }

 private:
  RunOutputs out_;
};

RunOutputs outputs_of(const RecordDir& rd, const HostInputs& in, bool no_lse) {
  const Problem& p = rd.problem;
  RunOutputs out = read_outputs(rd.dir, p, !no_lse);
  if (no_lse) {  // LSE not judged: the reference's own, so only O decides
    std::vector<int64_t> rows(size_t(p.S));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
    const Reference ref = compute_reference(p, in, rows, false);
    out.lse.assign(ref.lse.begin(), ref.lse.end());
  }
  if (p.kv_cache) {  // the cache append is the saved path's work, not the checked program's
    out.k_cache = to_typed(p.dtype, in.k);
    out.v_cache = to_typed(p.dtype, in.v);
  }
  out.g_used = rd.g_used;
  out.ran_path = rd.saved_path.empty() ? "" : "saved by " + rd.saved_path;
  return out;
}

const SourceLoc kCheckCli = command_line();

// --path names the program that wrote o.npy: a built-in path's name would file an outside
// program's records under that path (and `compare` would pair them with its own).
void check_path_name(const std::string& name, const DeviceFacts& device) {
  // A word, as sweep files and --paths name paths: 'cpu-flash ' would be a table column that looks
  // like the built-in's, and a comma or newline a name no --paths list can select.
  const bool word = !name.empty() && std::isalnum((unsigned char)name[0]) &&
                    std::all_of(name.begin(), name.end(), [](char c) {
                      return std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || c == '+';
                    });
  if (!word)
    throw InputError(kCheckCli, "--path",
                     fmt::format("'{}' is not a path name: letters, digits and - _ . + only, starting with a letter or digit",
                                 name));
  const Registry reg = builtin_registry(device);
  for (const auto& row : reg.rows())
    if (row.name == name)
      throw InputError(kCheckCli, "--path",
                       fmt::format("'{}' is a built-in path's name; name the program that wrote o.npy", name));
}

// One record folder named twice (`check DIR DIR`, or DIR and DIR/rec) would write one key twice.
void refuse_repeated_dirs(const std::vector<std::string>& dirs) {
  std::map<std::pair<dev_t, ino_t>, std::string> seen;
  for (const auto& d : dirs) {
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0) continue;  // read_record_dir names it
    const auto [it, fresh] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), d);
    if (!fresh)
      throw InputError(SourceLoc{d, 0}, "check", fmt::format("the record folder '{}' is named twice (also as '{}')", d, it->second));
  }
}

// Every file of every record folder is an input: -o and --json may be none of them (o.npy and
// problem.json would be truncated before they are read).
std::vector<std::string> record_files(const std::vector<RecordDir>& found) {
  std::vector<std::string> files;
  for (const auto& rd : found) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(rd.dir, ec)) files.push_back(e.path().string());
  }
  return files;
}

int run_check(const CheckOptions& o) {
  GateContext ctx;
  ctx.device = probe_device();
  check_path_name(o.path, ctx.device);
  const std::vector<std::string> dirs = record_dirs(o.dirs);
  refuse_repeated_dirs(dirs);
  std::vector<RecordDir> found;
  for (const auto& d : dirs) found.push_back(read_record_dir(d));  // every folder read before any is judged
  std::vector<std::string> inputs_files = record_files(found);
  check_outputs({{"-o", o.csv}, {"--json", o.json}}, inputs_files);
  ctx.cpu_budget_flops = o.cpu_budget_gflop * 1e9;
  RunOptions ro;
  ro.reference = compute_reference;
  ro.time_paths = false;
  ro.check_timed = false;
  ro.check_rows = o.check_rows;
  if (o.max_err >= 0) ro.thresholds.max_err = o.max_err;
  if (o.min_cosine >= 0) ro.thresholds.cosine = o.min_cosine;
  OutputFile csv_out(o.csv, inputs_files);
  RunMeta meta = collect_meta(ctx.device, TimingMode::cold);
  meta.timing_mode = "";
  CsvWriter csv(std::move(csv_out), meta, false);
  std::unique_ptr<JsonLinesWriter> json;
  if (!o.json.empty()) json = std::make_unique<JsonLinesWriter>(OutputFile(o.json, inputs_files), meta, false);
  std::vector<Record> records;
  for (const RecordDir& rd : found) {
    Record r{rd.problem, SourceLoc{rd.dir, 0}, o.path, "", rd.g_req};
    r.g_used = rd.g_used;
    RowData data;
    data.inputs = std::make_unique<HostInputs>(load_inputs(rd.dir, rd.problem));
    const RunOutputs out = outputs_of(rd, *data.inputs, o.no_lse);
    PathRow row;
    row.name = o.path;
    row.kind = "cpu";
    row.rz_accumulate_keys = o.accumulate_keys;
    row.fp8_p = *parse_dtype(o.fp8_p);  // checked by the option's validator
    row.fp8_accumulate_bits = o.fp8_accumulate_bits;
    row.prepare = [&out](const Problem&, const HostInputs&, int, const GateContext&) -> std::unique_ptr<Execution> {
      return std::make_unique<SavedOutputs>(out);
    };
    run_record(r, row, rd.g_used, ro, ctx, data);
    r.time = utc_now();
    csv.write(r);
    if (json) json->write(r);
    spdlog::log(r.status == Status::pass ? spdlog::level::info : spdlog::level::warn, "{} {}: {}{}", status_name(r.status),
                rd.dir, r.rule, r.reason.empty() ? "" : ": " + r.reason);
    records.push_back(std::move(r));
  }
  if (!o.no_table) print_tables(std::cout, records, o.path, Tables::detail);
  spdlog::info("checked {} record folders; records -> {}", records.size(), o.csv);
  return exit_status(records);
}

}  // namespace

void add_check(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("check", "Judge outputs another program wrote (o.npy, lse.npy) into --save-tensors "
                                          "folders by the rule a built-in path gets");
  auto o = std::make_shared<CheckOptions>();
  cmd->add_option("dirs", o->dirs, "Record folders of --save-tensors, or folders of them")->required();
  cmd->add_option("--path", o->path, "Path name the records carry (the program that wrote o.npy; not a built-in path's)")
      ->check(non_empty())
      ->capture_default_str();
  cmd->add_option("-o,--csv", o->csv, "Results CSV (the sweep's columns; no timing)")->check(non_empty())->capture_default_str();
  cmd->add_option("--json", o->json, "Also write JSON Lines")->check(non_empty());
  cmd->add_flag("--no-lse", o->no_lse, "Judge O only: the program wrote no lse.npy (a saved one is ignored)");
  cmd->add_flag("--no-table", o->no_table, "Do not print the table");
  cmd->add_option("--accumulate-keys", o->accumulate_keys,
                  "Keys one truncating fp32 accumulate step of the program's PV product folds in (16: NVIDIA "
                  "tensor cores' k16 steps, as mma declares; 0: round-to-nearest); the bias check admits the drift "
                  "it implies over long key ranges (harness/rounding_bias.hpp)")
      ->check(whole_in(0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--fp8-p", o->fp8_p,
                  "FP8 problems: what the program rounds P to before PV, the e4m3 of the inputs' family "
                  "(fp8_e4m3 for OCP inputs as FA3's FP8 path, fp8_e4m3fnuz for FNUZ ones as aiter on MI300; "
                  "either name means that) or bf16; the low-precision reference that scales the tolerance rounds "
                  "it the same way")
      ->check(CLI::IsMember({"fp8_e4m3", "fp8_e4m3fnuz", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--fp8-accumulate-bits", o->fp8_accumulate_bits,
                  "FP8 problems: the fraction bits the program's tensor cores keep as they add Q K^T's products "
                  "(13: Hopper's FP8 wgmma, as mma declares; 0: fp32 rounding); the low-precision reference adds "
                  "the scores the same way, so the LSE rule admits what that accumulation moves")
      ->check(whole_in(0, 23))
      ->capture_default_str();
  // run's checks (cli/flag_checks.hpp): CLI11's NonNegativeNumber and Range let NaN through.
  cmd->add_option("--max-err", o->max_err, "Fixed rule: max |o - ref| threshold")->check(finite_in(0, HUGE_VAL));
  cmd->add_option("--min-cosine", o->min_cosine, "Fixed rule: minimum cosine similarity")->check(finite_in(0, 1));
  cmd->add_option("--check-rows", o->check_rows, "Validate this many sampled query rows (0: as --cpu-budget allows)")
      ->check(whole_in(0, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--cpu-budget", o->cpu_budget_gflop, "GFLOP the reference may spend on one problem")
      ->check(finite_in(0, HUGE_VAL))
      ->capture_default_str();
  cmd->callback([o, &status] { status = run_check(*o); });
}

}  // namespace fa::cli
