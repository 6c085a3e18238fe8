// `fa-bench info`: machine and device facts (caches and the cold flush, the peaks and where each
// came from), the build, the capability predicates, the clock reader timing would use, and the
// paths of any plugin loaded (--plugin, FABENCH_PLUGINS). Plugins load before anything is printed,
// so a bad one (exit 2 naming the file) leaves no half-printed report above its error.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "harness/check/peaks.hpp"
#include "harness/device_model.hpp"
#include "harness/results/metadata.hpp"
#include "harness/run/clock_source.hpp"
#include "paths/builtin.hpp"
#include "paths/plugin_paths.hpp"

namespace fa::cli {

void add_info(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("info", "Print machine, device and build facts");
  auto plugins = std::make_shared<std::vector<std::string>>();
  add_plugin_option(*cmd, *plugins);
  cmd->callback([&status, plugins] {
    const DeviceFacts d = probe_device();
    const Registry reg = registry_with_plugins(d, *plugins);
    const RunMeta m = collect_meta(d, TimingMode::cold);
    std::string mem;
    std::ifstream mi("/proc/meminfo");
    std::getline(mi, mem);
    std::cout << fmt::format("host        {}\ncpu         {} ({} threads)\nmemory      {}\n", m.host, m.cpu,
                             d.cpu_threads, mem.substr(mem.find(':') + 1).erase(0, mem.substr(mem.find(':') + 1).find_first_not_of(' ')));
    std::cout << fmt::format("build       backend={} commit={} compiler={}\n", m.backend, m.git_commit, m.compiler);
    if (!d.gpu) {
      std::cout << fmt::format("gpu         none: {}\n", d.gpu_absent_why);
    } else {
      std::cout << fmt::format("gpu         {} ({})\nunits       {} SMs/CUs, wave size {}\n", d.name, d.arch, d.units,
                               d.wave_size);
      const double mib = double(1 << 20);
      std::cout << fmt::format("memory      {:.1f} GiB\nclocks      sm {} MHz, memory {} MHz, bus {}-bit\n",
                               double(d.memory_bytes) / (1 << 30), d.sm_clock_mhz, d.mem_clock_mhz, d.mem_bus_bits);
      std::cout << fmt::format("caches      L2 {:.1f} MiB (runtime), LLC {}, cold flush {:.1f} MiB = max(2 x (L2 + LLC), {} MiB)\n",
                               double(d.l2_bytes) / mib,
                               llc_bytes(d) ? fmt::format("{:.1f} MiB (arch table, harness/device_model.cpp)", double(llc_bytes(d)) / mib)
                                            : std::string("none past L2"),
                               double(cold_flush_bytes(d)) / mib, kFlushFloorBytes >> 20);
      const auto peaks = peak_report(d);
      if (peaks.empty()) std::cout << fmt::format("peaks       none: no rate for arch {} (harness/check/peaks.cpp)\n", d.arch);
      for (const auto& line : peaks) std::cout << "peak        " << line << '\n';
      std::cout << fmt::format("runtime     {}\ncapability  has_mma_sm80={} has_wgmma_sm90a={} has_mfma_gfx9={} "
                               "has_wmma_gfx11={} has_wmma_gfx12={} matrix_fp8={}\n",
                               d.runtime, d.has_mma_sm80, d.has_wgmma_sm90a, d.has_mfma_gfx9, d.has_wmma_gfx11, d.has_wmma_gfx12,
                               d.matrix_fp8_fnuz ? "fnuz" : d.matrix_fp8_ocp ? "ocp" : "none");
      const auto clocks = clock_source_for(d);  // when none opens, it logs why (stderr)
      std::cout << fmt::format("telemetry   {}\n", clocks ? clocks->name() + " (clock, power, throttling while timing)"
                                                           : std::string("none: records carry no clock columns"));
    }
    for (const auto& r : reg.rows())
      if (!r.plugin_file.empty())
        std::cout << fmt::format("plugin      {} ({}) from {} (version {})\n", r.name, r.kind, r.plugin_file, r.plugin_version);
    status = 0;
  });
}

}  // namespace fa::cli
