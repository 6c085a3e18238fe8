// `fa-bench run`: problems from flags, through the same runner as a sweep. Shape flags take lists
// (`--S 64,128 --B 1,4`): the run covers their cartesian product, in flag order, last flag fastest.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/sweep_pipeline.hpp"
#include "harness/problem_fields.hpp"

namespace fa::cli {

void add_run(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("run", "Run the problems given by flags (lists: their cartesian product)");
  // One flag a problem field (harness/problem_fields.hpp), as its text; the flags as booleans.
  struct Shape {
    std::map<std::string, std::string> text;
    std::map<std::string, bool> on;
  };
  auto sh = std::make_shared<Shape>();
  auto opts = std::make_shared<CommonOptions>();
  for (const auto& f : problem_field_table()) {
    if (!f.flag) continue;  // --dtype, --seed: common options
    if (f.kind == FieldKind::flag) {
      cmd->add_flag(f.flag, sh->on[f.name], f.help);
    } else {
      CLI::Option* o = cmd->add_option(f.flag, sh->text[f.name], f.help);
      if (f.required) o->required();
    }
  }
  add_common_options(*cmd, *opts);
  cmd->callback([sh, opts, &status] {
    RawRow raw;
    raw.where = command_line();
    for (const auto& [k, v] : sh->text)
      if (!v.empty()) raw.cells[k] = v;
    for (const auto& [k, v] : sh->on) raw.cells[k] = v ? "1" : "0";
    // Each list-valued cell multiplies the rows so far.
    std::vector<RawRow> grid{raw};
    for (const auto& f : problem_field_table()) {
      const std::string k = f.name;
      if (!f.listable || !raw.cells.count(k)) continue;
      std::string text = raw.cells.at(k);
      std::replace(text.begin(), text.end(), ',', '|');
      const auto values = split_list(text);
      std::vector<RawRow> next;
      for (const auto& g : grid)
        for (const auto& v : values) {
          next.push_back(g);
          next.back().cells[k] = v;
        }
      grid = std::move(next);
      check_row_cap(grid.size(), opts->overrides(), command_line());
    }
    Sweep sweep;
    for (const auto& g : grid) {
      auto rows = build_rows(g, {}, opts->overrides());
      sweep.rows.insert(sweep.rows.end(), rows.begin(), rows.end());
    }
    status = execute(std::move(sweep), *opts);
  });
}

}  // namespace fa::cli
