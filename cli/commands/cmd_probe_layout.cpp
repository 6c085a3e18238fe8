// `fa-bench probe-layout [--instr NAME] [--raw FILE --instr NAME [--arch ARCH]] [--json FILE]`:
// launches one probe kernel per matrix instruction of the device (or reads a raw dump taken
// elsewhere, e.g. in an ISA emulator), prints what each lane's slots of A, B and C hold and every
// difference from the kernels' fragment tables (docs/probe-layout.md). Exit 1 on any difference,
// 0 on none, 2 on a usage error (the flag named) or when there is nothing to probe here.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "harness/input_error.hpp"
#include "harness/probe/probe_print.hpp"
#include "harness/results/output_file.hpp"
#include "kernels/runtime/probe_layout.hpp"
#include "paths/builtin.hpp"

namespace fa::cli {
namespace {

const SourceLoc kFlags = command_line();

std::string names(const std::vector<probe::Instr>& list) {
  std::string out;
  for (const auto& in : list) out += (out.empty() ? "" : ", ") + in.name;
  return out.empty() ? "none" : out;
}

// An arch --arch may name: sm_<digits>[a] or a row of the AMD arch table.
bool known_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) == 0) {
    const std::string num = arch.substr(3, arch.size() - 3 - (arch.back() == 'a'));
    return !num.empty() && num.find_first_not_of("0123456789") == std::string::npos;
  }
  return gpu::amd_arch_caps(arch.c_str()).name[0] != '\0';
}

}  // namespace

void add_probe_layout(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("probe-layout", "Probe matrix instructions' register layouts against the kernels' fragment tables");
  struct Args {
    std::string instr, raw, arch, json, save_raw;
    bool no_map = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--instr", a->instr, "One instruction (default: every one the device has)")->check(non_empty());
  cmd->add_option("--raw", a->raw, "Analyse this raw dump (float32) instead of launching; needs --instr")->check(non_empty());
  cmd->add_option("--arch", a->arch, "With --raw: the arch the dump is from (sm_90, gfx942, gfx1100...)")->check(non_empty());
  cmd->add_option("--json", a->json, "Also write the maps and differences as JSON");
  cmd->add_option("--save-raw", a->save_raw, "With --instr, on a device: also write the launch's raw dump");
  cmd->add_flag("--no-map", a->no_map, "Print the differences and the summary only");
  cmd->callback([a, &status] {
    const std::vector<probe::Instr> all = gpu::probe_instructions();
    const probe::Instr* chosen = nullptr;
    for (const auto& in : all) chosen = in.name == a->instr ? &in : chosen;
    if (!a->instr.empty() && !chosen)
      throw InputError(kFlags, "--instr", fmt::format("unknown instruction '{}' (one of: {})", a->instr, names(all)));
    if (!a->raw.empty() && !chosen) throw InputError(kFlags, "--raw", "needs --instr NAME: the instruction the dump was taken of");
    if (!a->arch.empty() && a->raw.empty())
      throw InputError(kFlags, "--arch", "goes with --raw: a launch probes the device's own arch");
    if (!a->arch.empty() && !known_arch(a->arch))
      throw InputError(kFlags, "--arch", fmt::format("unknown arch '{}' (sm_80, sm_90a, or an AMD arch of kernels/device/arch_table.hpp)", a->arch));
    if (!a->save_raw.empty() && (!a->raw.empty() || !chosen))
      throw InputError(kFlags, "--save-raw", "goes with --instr and a launch (not with --raw)");

    std::vector<probe::Instr> todo;
    std::string arch = a->arch;
    if (!a->raw.empty()) {
      if (!arch.empty() && !gpu::probe_on_arch(*chosen, arch))
        throw InputError(kFlags, "--arch", fmt::format("{} has no {} (it has: {})", arch, chosen->name, names(gpu::probe_instructions_on(arch, true))));
      todo.push_back(*chosen);
    } else {
      const DeviceFacts d = probe_device();
      if (!d.gpu)
        throw InputError(kFlags, "--raw", fmt::format("no GPU to launch on ({}): analyse a dump taken elsewhere with --raw FILE --instr NAME", d.gpu_absent_why));
      arch = d.arch;
      todo = gpu::probe_instructions_on(arch, d.has_wgmma_sm90a);
      if (chosen) {
        const bool here = std::any_of(todo.begin(), todo.end(), [&](const probe::Instr& in) { return in.name == chosen->name; });
        if (!here) throw InputError(kFlags, "--instr", fmt::format("{} has no {} in this build (it has: {})", arch, chosen->name, names(todo)));
        todo = {*chosen};
      }
      if (todo.empty()) throw std::runtime_error(fmt::format("probe-layout knows no matrix instruction of {} ({})", d.name, arch));
    }
    const std::vector<std::string> inputs = a->raw.empty() ? std::vector<std::string>{} : std::vector<std::string>{a->raw};
    check_outputs({{"--json", a->json}, {"--save-raw", a->save_raw}}, inputs);

    nlohmann::json reports = nlohmann::json::array();
    size_t differences = 0;
    for (const probe::Instr& in : todo) {
      std::vector<float> dump;
      if (!a->raw.empty()) {
        dump = probe::read_dump(a->raw, in, "--raw");
      } else {
#ifdef FABENCH_HAS_GPU
        dump = gpu::probe_launch(in);
#endif
        if (!a->save_raw.empty())
          OutputFile(a->save_raw, inputs).replace_with(std::string(reinterpret_cast<const char*>(dump.data()), dump.size() * sizeof(float)));
      }
      const probe::Report r = probe::analyse(in, dump);
      if (!a->no_map) std::cout << probe::format_maps(in, r);
      std::cout << probe::format_differences(in, r) << probe::summary_line(in, r) << '\n';
      differences += r.diffs.size();
      reports.push_back(probe::report_json(in, r));
    }
    if (!a->json.empty())
      OutputFile(a->json, inputs).replace_with(nlohmann::json{{"arch", arch}, {"instructions", reports}}.dump(1) + "\n");
    status = differences ? 1 : 0;
  });
}

}  // namespace fa::cli
