// `fa-bench run`: problems from flags, through the same runner as a sweep. Shape flags take lists
// (`--S 64,128 --B 1,4`): the run covers their cartesian product, in flag order, last flag fastest.
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/sweep_pipeline.hpp"

namespace fa::cli {

void add_run(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("run", "Run the problems given by flags (lists: their cartesian product)");
  struct Shape {
    std::string B, H, Hk, S, Sk, D, layout, scale, name;
    bool causal = false, kv_cache = false;
  };
  auto sh = std::make_shared<Shape>();
  auto opts = std::make_shared<CommonOptions>();
  cmd->add_option("--B", sh->B, "Batch")->required();
  cmd->add_option("--H", sh->H, "Query heads")->required();
  cmd->add_option("--Hk", sh->Hk, "Key/value heads (default H)");
  cmd->add_option("--S", sh->S, "Query length")->required();
  cmd->add_option("--Sk", sh->Sk, "Key length (default S)");
  cmd->add_option("--D", sh->D, "Head dimension")->required();
  cmd->add_flag("--causal", sh->causal, "Bottom-right causal mask");
  cmd->add_flag("--kv-cache", sh->kv_cache, "Append the last S keys to a cache, then attend");
  cmd->add_option("--layout", sh->layout, "bshd (default) or bhsd");
  cmd->add_option("--scale", sh->scale, "Softmax scale (default 1/sqrt(D))");
  cmd->add_option("--name", sh->name, "Label for the tables");
  add_common_options(*cmd, *opts);
  cmd->callback([sh, opts, &status] {
    RawRow raw;
    raw.where = SourceLoc{"command line", 0};
    const std::pair<const char*, const std::string*> cells[] = {
        {"B", &sh->B}, {"H", &sh->H}, {"Hk", &sh->Hk}, {"S", &sh->S}, {"Sk", &sh->Sk},
        {"D", &sh->D}, {"layout", &sh->layout}, {"scale", &sh->scale}, {"name", &sh->name}};
    for (auto [k, v] : cells)
      if (!v->empty()) raw.cells[k] = *v;
    raw.cells["causal"] = sh->causal ? "1" : "0";
    raw.cells["kv_cache"] = sh->kv_cache ? "1" : "0";
    // Each list-valued cell multiplies the rows so far.
    std::vector<RawRow> grid{raw};
    for (const char* k : {"B", "H", "Hk", "S", "Sk", "D", "layout", "scale"}) {
      if (!raw.cells.count(k)) continue;
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
      check_row_cap(grid.size(), opts->overrides(), SourceLoc{"command line", 0});
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
