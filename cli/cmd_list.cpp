// `fa-bench list`: every path, whether it can run on this machine, and what its gate admits.
// `fa-bench list --names gpu` prints only the names of one kind, one a line, for scripts.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "paths/builtin.hpp"

namespace fa::cli {

void add_list(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("list", "List kernel paths, their availability here, and their gates");
  auto names = std::make_shared<std::string>();
  cmd->add_option("--names", *names, "Print only the names of the paths of this kind (cpu, gpu or all), one a line")
      ->check(CLI::IsMember({"cpu", "gpu", "all"}));
  cmd->callback([&status, names] {
    const DeviceFacts dev = probe_device();
    const Registry reg = builtin_registry(dev);
    status = 0;
    if (!names->empty()) {
      for (const auto& r : reg.rows())
        if (*names == "all" || r.kind == *names) std::cout << r.name << "\n";
      return;
    }
    std::cout << "| path | kind | available here | gate | what |\n|---|---|---|---|---|\n";
    for (const auto& r : reg.rows()) {
      const auto why = reg.unavailable(r, dev);
      std::cout << fmt::format("| {} | {} | {} | {} | {} |\n", r.name, r.kind, why ? "no: " + *why : "yes", r.gate_doc,
                               r.summary);
    }
  });
}

}  // namespace fa::cli
