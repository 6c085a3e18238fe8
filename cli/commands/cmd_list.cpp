// `fa-bench list`: every path, whether it can run on this machine, and what it takes (its
// capabilities row, then what its own gate adds). `--markdown` prints the machine-independent path
// table the README carries (a test compares them): one row a path, the capability columns apart.
// `fa-bench list --names gpu` prints only the names of one kind, one a line, for scripts; plugin
// rows (--plugin, FABENCH_PLUGINS) say the file they came from and the version they declare; a line
// under the table says what `auto` dispatches by here (a fitted table, or rank order and why).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "paths/auto_path.hpp"
#include "paths/builtin.hpp"
#include "paths/plugin_paths.hpp"

namespace fa::cli {
namespace {

void print_markdown(const Registry& reg) {
  std::cout << "| path | kind | device | dtypes | head dims | G | serving fields | kv_cache | its gate adds | what |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : reg.rows()) {
    if (!r.plugin_file.empty()) continue;  // the table describes the project's own paths
    const CapabilityCells c = capability_cells(r.caps);
    const std::string kind = r.name == "auto" ? "dispatcher" : r.kind;  // auto's kind follows the machine
    std::cout << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.name, kind, c.device, c.dtypes,
                             c.head_dims, c.splits, c.serving, c.kv_cache, r.gate_doc, r.summary);
  }
}

}  // namespace

void add_list(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("list", "List kernel paths, their availability here, and what each takes");
  auto names = std::make_shared<std::string>();
  cmd->add_option("--names", *names, "Print only the names of the paths of this kind (cpu, gpu or all), one a line")
      ->check(CLI::IsMember({"cpu", "gpu", "all"}));
  auto markdown = std::make_shared<bool>(false);
  cmd->add_flag("--markdown", *markdown,
                "Print the path table (capabilities in columns, nothing about this machine), as the README carries it");
  auto plugins = std::make_shared<std::vector<std::string>>();
  add_plugin_option(*cmd, *plugins);
  cmd->callback([&status, names, markdown, plugins] {
    const DeviceFacts dev = probe_device();
    const DispatchChoice dispatch = auto_dispatch(dev);
    const Registry reg = registry_with_plugins(dev, *plugins, dispatch);
    status = 0;
    if (!names->empty()) {
      for (const auto& r : reg.rows())
        if (*names == "all" || r.kind == *names) std::cout << r.name << "\n";
      return;
    }
    if (*markdown) return print_markdown(reg);
    std::cout << "| path | kind | available here | takes | what | from |\n|---|---|---|---|---|---|\n";
    for (const auto& r : reg.rows()) {
      const auto why = reg.unavailable(r, dev);
      const std::string from =
          r.plugin_file.empty() ? "built in" : fmt::format("plugin {} (version {})", r.plugin_file, r.plugin_version);
      std::cout << fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.name, r.kind, why ? "no: " + *why : "yes",
                               r.gate_words(), r.summary, from);
    }
    std::cout << fmt::format("\nauto dispatches by: {}\n", dispatch.describe());
  });
}

}  // namespace fa::cli
