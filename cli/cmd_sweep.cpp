// `fa-bench sweep FILE...`: run every row of one or more sweep files (CSV or YAML).
#include "cli/commands.hpp"
#include "cli/options.hpp"

namespace fa::cli {

void add_sweep(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("sweep", "Run sweep files (CSV or YAML) over every path that supports each row");
  auto files = std::make_shared<std::vector<std::string>>();
  auto opts = std::make_shared<CommonOptions>();
  cmd->add_option("files", *files, "Sweep files (.csv, .yaml)")->required()->check(CLI::ExistingFile);
  add_common_options(*cmd, *opts);
  cmd->callback([files, opts, &status] {
    // Every file is loaded (and checked) before anything runs: an input error costs no measurement.
    Sweep all;
    for (const auto& f : *files) {
      Sweep s = load_sweep(f, opts->overrides());
      all.rows.insert(all.rows.end(), s.rows.begin(), s.rows.end());
      all.files.push_back(f);
      check_row_cap(all.rows.size(), opts->overrides(), SourceLoc{f, 0});
      if (all.paths.empty()) all.paths = s.paths, all.paths_where = s.paths_where;
      if (!all.thresholds.any()) all.thresholds = s.thresholds;
    }
    status = execute(std::move(all), *opts);
  });
}

}  // namespace fa::cli
