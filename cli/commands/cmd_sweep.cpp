// `fa-bench sweep FILE...`: run every row of one or more sweep files (CSV or YAML).
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/sweep_pipeline.hpp"

namespace fa::cli {

void add_sweep(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("sweep", "Run sweep files (CSV or YAML) over every path that supports each row");
  auto files = std::make_shared<std::vector<std::string>>();
  auto opts = std::make_shared<CommonOptions>();
  cmd->add_option("files", *files, "Sweep files (.csv, .yaml)")->required()->check(CLI::ExistingFile);
  add_common_options(*cmd, *opts);
  cmd->callback([files, opts, &status] {
    status = execute(load_sweep_files(*files, *opts), *opts);
  });
}

}  // namespace fa::cli
