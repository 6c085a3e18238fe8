// `fa-bench list`: every path, whether it can run on this machine, and what its gate admits.
// `fa-bench list --names gpu` prints only the names of one kind, one a line, for scripts; plugin
// rows (--plugin, FABENCH_PLUGINS) say the file they came from and the version they declare.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "paths/builtin.hpp"
#include "paths/plugin_paths.hpp"

namespace fa::cli {

void add_list(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("list", "List kernel paths, their availability here, and their gates");
  auto names = std::make_shared<std::string>();
  cmd->add_option("--names", *names, "Print only the names of the paths of this kind (cpu, gpu or all), one a line")
      ->check(CLI::IsMember({"cpu", "gpu", "all"}));
  auto plugins = std::make_shared<std::vector<std::string>>();
  add_plugin_option(*cmd, *plugins);
  cmd->callback([&status, names, plugins] {
    const DeviceFacts dev = probe_device();
    const Registry reg = registry_with_plugins(dev, *plugins);
    status = 0;
    if (!names->empty()) {
      for (const auto& r : reg.rows())
        if (*names == "all" || r.kind == *names) std::cout << r.name << "\n";
      return;
    }
    std::cout << "| path | kind | available here | gate | what | from |\n|---|---|---|---|---|---|\n";
    for (const auto& r : reg.rows()) {
      const auto why = reg.unavailable(r, dev);
      const std::string from =
          r.plugin_file.empty() ? "built in" : fmt::format("plugin {} (version {})", r.plugin_file, r.plugin_version);
      std::cout << fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.name, r.kind, why ? "no: " + *why : "yes",
                               r.gate_doc, r.summary, from);
    }
  });
}

}  // namespace fa::cli
