// `fa-bench table RESULTS.csv [MORE.csv...]`: the compact table (problems x paths, throughput to
// 3 significant digits; harness/results/tables/compact_table.hpp) over records already written, by fa-bench or
// in its schema by another tool (scripts/sdpa_baseline.py's torch-* paths), so that one table
// puts fa-bench's paths and the peers side by side:
//   fa-bench table fa.csv torch.csv [--csv grid.csv]
// A record read again later (a resumed file, or the same key in a later file) replaces the
// earlier one. Exit status: 0, or 2 on an unreadable file (file:line) or an unwritable --csv.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "gate/compare.hpp"
#include "harness/results/output_file.hpp"
#include "harness/results/tables/compact_table.hpp"

namespace fa::cli {

void add_table(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("table", "One compact table (problems x paths) from results CSVs, e.g. fa-bench's and torch's");
  struct Args {
    std::vector<std::string> files;
    std::string csv;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("files", a->files, "Results CSVs (fa-bench schema), read in order")->required();
  cmd->add_option("--csv", a->csv, "Also write the table as CSV (problem, unit, one column per path)");
  cmd->callback([a, &status] {
    check_outputs({{"--csv", a->csv}}, a->files);
    std::vector<Record> records;
    std::map<std::string, size_t> at;  // match key -> index in records
    size_t replaced = 0;
    for (const auto& f : a->files)
      for (auto& rr : read_results_csv(f).records) {
        const auto [it, fresh] = at.emplace(match_key(rr.record), records.size());
        if (fresh) records.push_back(std::move(rr.record));
        else records[it->second] = std::move(rr.record), ++replaced;
      }
    if (replaced) spdlog::info("{} records replaced by a later line with the same problem, path and G", replaced);
    std::optional<OutputFile> csv;
    if (!a->csv.empty()) csv.emplace(a->csv, a->files);
    print_compact_table(std::cout, records);
    std::cout << fmt::format("\n{} records from {} files\n", records.size(), a->files.size());
    if (csv) {
      std::ostringstream text;
      write_compact_csv(text, compact_grid(records));
      csv->replace_with(text.str());
    }
    status = 0;
  });
}

}  // namespace fa::cli
