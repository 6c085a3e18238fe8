// `fa-bench expand FILE...`: the problems a sweep file expands to (YAML grid/zip/defaults, CSV
// lists), as CSV on stdout, one line per (row, dtype) with its G list, FLOPs and bytes, and each
// sequence's resolved lengths (q_lens, k_lens: `a|b|c`, the seeded generator's draws included).
// External baselines (scripts/sdpa_baseline.py) read it so that they run exactly the sweep's problems.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "harness/problem_fields.hpp"
#include "harness/results/results.hpp"
#include "harness/sweep/sweep.hpp"

namespace fa::cli {

void add_expand(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("expand", "Print the problems sweep files expand to, as CSV");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, "Sweep files (.csv, .yaml)")->required()->check(CLI::ExistingFile);
  cmd->callback([files, &status] {
    std::vector<Sweep> sweeps;
    for (const auto& f : *files) sweeps.push_back(load_sweep(f, Overrides{}));  // all checked before output
    // The problem's columns as the results files have them (its field table), then the row's.
    std::string header;
    for (const auto& f : problem_field_table()) header += std::string(f.name) + ",";
    std::cout << header << "G,flops,bytes,sweep_file,sweep_line,invalid,q_lens,k_lens\n";
    for (const auto& s : sweeps)
      for (const auto& r : s.rows) {
        const Problem& p = r.problem;
        std::string g;
        for (const auto& sr : r.splits) g += (g.empty() ? "" : "|") + sr.str();
        const std::string invalid = r.invalid ? r.invalid->field + ": " + r.invalid->reason : "";
        std::string cells;
        for (const auto& f : problem_field_table()) cells += csv_escape(f.cell(p)) + ",";
        std::string q_lens, k_lens;  // an invalid row's lengths may not resolve: left empty
        for (int64_t b = 0; !r.invalid && b < p.B; ++b)
          q_lens += (b ? "|" : "") + std::to_string(p.q_len(b)), k_lens += (b ? "|" : "") + std::to_string(p.k_len(b));
        std::cout << cells
                  << fmt::format("{},{:.6g},{:.6g},{},{},{},{},{}\n", g, p.flops(), p.bytes(), csv_escape(r.where.file), r.where.line, csv_escape(invalid),
                                 q_lens, k_lens);
      }
    status = 0;
  });
}

}  // namespace fa::cli
