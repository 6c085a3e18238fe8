// `fa-bench list`: every path, whether it can run on this machine, and what its gate admits.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "harness/registry.hpp"

namespace fa::cli {

void add_list(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("list", "List kernel paths, their availability here, and their gates");
  cmd->callback([&status] {
    const DeviceFacts dev = probe_device();
    const Registry reg = Registry::builtin(dev);
    std::cout << "| path | kind | available here | gate | what |\n|---|---|---|---|---|\n";
    for (const auto& r : reg.rows()) {
      const auto why = reg.unavailable(r, dev);
      std::cout << fmt::format("| {} | {} | {} | {} | {} |\n", r.name, r.kind, why ? "no: " + *why : "yes", r.gate_doc,
                               r.summary);
    }
    status = 0;
  });
}

}  // namespace fa::cli
