// `fa-bench gate --baseline BASE.csv CURRENT.csv`: the CI verdict. Exit 1 on any wrong record in
// CURRENT (fail, error, oom, invalid), any BASE record missing from CURRENT (or passing in BASE
// and skipped now), any SLOW, any timing that is not a finite number >= 0; AMBIGUOUS (few samples,
// ms and cycles disagreeing where the clocks moved, a throttled record without --allow-throttled)
// fails only with --strict. Exit 0 otherwise, 2 on a missing baseline (with how to make one), an unreadable file (file:line), on a file with no records
// (unless --allow-empty), or on an output that breaks the output policy (harness/results/output_file.hpp).
// The comparison table first; the one-line summary last.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "gate/compare_print.hpp"
#include "gate/gate.hpp"
#include "harness/results/output_file.hpp"

namespace fa::cli {

void add_gate(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("gate", "Fail (exit 1) on wrong, missing or slower records against a baseline");
  struct Args {
    std::string baseline, current, csv, json;
    CompareRule rule;
    bool strict = false, allow_empty = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--baseline", a->baseline, "Committed baseline results CSV")->required();
  cmd->add_option("current", a->current, "Results CSV of this run")->required();
  add_compare_rule_options(*cmd, a->rule);
  cmd->add_flag("--strict", a->strict, "AMBIGUOUS records fail the gate too");
  cmd->add_option("--csv", a->csv, "Also write the comparison as CSV");
  cmd->add_option("--json", a->json, "Also write the comparison as JSON");
  cmd->add_flag("--allow-empty", a->allow_empty, "Accept a baseline or current file with no records (header only)");
  cmd->callback([a, &status] {
    const std::vector<std::string> inputs{a->baseline, a->current};
    // A runner's first gate: say how to make the baseline rather than that a file cannot be opened.
    if (std::error_code ec; !std::filesystem::exists(a->baseline, ec))
      throw InputError(SourceLoc{a->baseline, 0}, "--baseline",
                       fmt::format("no baseline here: make one on this GPU, idle, with `fa-bench sweep sweeps/ci.yaml -o "
                                   "{}` and commit it (the rocm-gate workflow uploads one as "
                                   "baseline-candidate-<arch>.csv when it finds none: docs/ci-gate.md)",
                                   a->baseline));
    check_outputs({{"--csv", a->csv}, {"--json", a->json}}, inputs);
    const ResultsFile base = read_results_csv(a->baseline);
    const ResultsFile cur = read_results_csv(a->current);
    // A gate over nothing passes vacuously: an empty file is far more often a broken run.
    for (const ResultsFile* f : {&base, &cur})
      if (f->records.empty() && !a->allow_empty)
        throw InputError(SourceLoc{f->path, 0}, "records", "no records (header only); pass --allow-empty to gate on it anyway");
    const GateReport g = run_gate(base, cur, a->rule, a->strict);
    print_gate_report(std::cout, g, a->rule);
    if (!a->csv.empty()) OutputFile(a->csv, inputs).replace_with(compare_csv({g.cmp}));
    if (!a->json.empty()) OutputFile(a->json, inputs).replace_with(compare_json({g.cmp}, a->rule));
    status = g.failed() ? 1 : 0;
  });
}

}  // namespace fa::cli
