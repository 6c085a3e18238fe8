// `fa-bench compare OLD.csv NEW.csv [MORE.csv...]`: each later file against the first, record by
// record (problem incl. name, path, G): time ratio new/old, SAME/FAST/SLOW/AMBIGUOUS from both
// sides' spreads (and in cycles where their clocks moved; throttled records AMBIGUOUS unless
// --allow-throttled: gate/compare.hpp), accuracy changes, geomean ratios, the plugin builds that differ between a pair
// (reported, never a verdict). Markdown to stdout; --csv/--json files
// under the output policy (harness/results/output_file.hpp).
// Exit status: 0 (a report, not a verdict: see `gate`), 2 on an unreadable file (file:line).
#include <iostream>

#include "cli/commands.hpp"
#include "cli/compare_options.hpp"
#include "gate/compare_print.hpp"
#include "harness/results/output_file.hpp"

namespace fa::cli {

void add_compare(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("compare", "Compare results CSVs: each later file against the first");
  auto files = std::make_shared<std::vector<std::string>>();
  auto rule = std::make_shared<CompareRule>();
  auto csv = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  cmd->add_option("files", *files, "Results CSVs: OLD NEW [NEW2 ...]")->required()->expected(2, -1);
  add_compare_rule_options(*cmd, *rule);
  cmd->add_option("--csv", *csv, "Also write the comparison as CSV");
  cmd->add_option("--json", *json, "Also write the comparison as JSON");
  cmd->callback([files, rule, csv, json, &status] {
    check_outputs({{"--csv", *csv}, {"--json", *json}}, *files);  // before anything is read or written
    std::vector<ResultsFile> read;
    for (const auto& f : *files) read.push_back(read_results_csv(f));  // all read before any output
    std::vector<Comparison> cmps;
    for (size_t i = 1; i < read.size(); ++i) {
      cmps.push_back(compare_results(read[0], read[i], *rule));
      print_compare_markdown(std::cout, cmps.back(), *rule);
    }
    if (!csv->empty()) OutputFile(*csv, *files).replace_with(compare_csv(cmps));
    if (!json->empty()) OutputFile(*json, *files).replace_with(compare_json(cmps, *rule));
    status = 0;
  });
}

}  // namespace fa::cli
