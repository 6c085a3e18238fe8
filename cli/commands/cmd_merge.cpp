// `fa-bench merge A.csv B.csv ... -o ALL.csv [--expect SWEEP... --shards n]`: shards (or any runs
// of one fa-bench version) into one results CSV, lines kept as written. A record key in two files
// with different lines is a conflict: exit 2, nothing written. With --expect, the records the
// sweep (with the runs' --G/--dtype/--filter) should have produced and no file holds are listed
// with their shard: exit 1 (ALL.csv is still written). Exit 0 otherwise.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "harness/results/merge.hpp"
#include "harness/sweep/filter.hpp"

namespace fa::cli {

void add_merge(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("merge", "Merge results CSVs (e.g. shards) into one; check duplicates and gaps");
  struct Args {
    std::vector<std::string> files, expect;
    std::string out, G, dtype, filter;
    int shards = 1;
    uint64_t seed = 1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("files", a->files, "Results CSVs")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", a->out, "Merged results CSV")->required();
  cmd->add_option("--expect", a->expect, "Sweep files the runs came from: list the records no file holds");
  cmd->add_option("--shards", a->shards, "How many shards the runs were (--shard i/n): names each gap's shard")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--G", a->G, "As given to the runs");
  cmd->add_option("--dtype", a->dtype, "As given to the runs");
  cmd->add_option("--filter", a->filter, "As given to the runs");
  cmd->add_option("--seed", a->seed, "As given to the runs")->check(whole_in(0))->capture_default_str();
  cmd->callback([a, &status] {
    std::vector<std::string> inputs = a->files;
    inputs.insert(inputs.end(), a->expect.begin(), a->expect.end());
    check_outputs({{"-o", a->out}}, inputs);
    const Merged m = merge_results(a->files);
    if (!m.conflicts.empty()) {
      for (const auto& c : m.conflicts) spdlog::error("conflict: {}", c);
      throw InputError(command_line(), "files",
                       fmt::format("{} record(s) appear in two files with different results", m.conflicts.size()));
    }
    std::vector<std::string> gaps;
    if (!a->expect.empty()) {
      Overrides ovr;
      auto bars = [](std::string s) { return std::replace(s.begin(), s.end(), ',', '|'), s; };
      if (!a->G.empty()) ovr.G = bars(a->G);
      if (!a->dtype.empty()) ovr.dtype = bars(a->dtype);
      ovr.seed = a->seed;
      std::vector<SweepRow> rows;
      for (const auto& f : a->expect) {
        Sweep s = load_sweep(f, ovr);
        rows.insert(rows.end(), s.rows.begin(), s.rows.end());
      }
      if (!a->filter.empty()) {
        const Filter keep(a->filter);
        std::vector<SweepRow> kept;
        for (auto& r : rows)
          if (keep(r.problem)) kept.push_back(std::move(r));
        rows = std::move(kept);
      }
      gaps = find_gaps(m, rows, a->shards);
    }
    std::string text = m.header + '\n';
    for (const auto& l : m.lines) text += l + '\n';
    OutputFile(a->out, inputs).replace_with(text);
    for (const auto& g : gaps) std::cout << "missing: " << g << "\n";
    std::cout << fmt::format("merged {} records from {} files into {}{}{}{}\n", m.lines.size(), a->files.size(), a->out,
                             m.identical_duplicates ? fmt::format(" ({} identical duplicates dropped)", m.identical_duplicates) : "",
                             m.replaced ? fmt::format(" ({} re-run records replaced their earlier line)", m.replaced) : "",
                             gaps.empty() ? "" : fmt::format("; {} missing", gaps.size()));
    status = gaps.empty() ? 0 : 1;
  });
}

}  // namespace fa::cli
