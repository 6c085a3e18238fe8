// fa-bench: validate and time flash-attention forward paths over shape sweeps.
//   fa-bench sweep sweeps/whisper.csv          every available path, table + fa-bench-results.csv
//   fa-bench run --B 1 --H 16 --S 1 --Sk 448 --D 64 --paths decode
//   fa-bench list | fa-bench info
//   fa-bench compare OLD.csv NEW.csv | fa-bench gate --baseline BASE.csv NEW.csv | fa-bench expand FILE
//   fa-bench table fa.csv torch.csv   (one compact table over results files)
//   fa-bench sweep F --plugin ./libmine.so ; fa-bench check SAVED_DIR --path mine   (kernels from outside)
//   fa-bench sweep F --shard 0/4 -o part0.csv ... ; fa-bench merge part*.csv -o all.csv --expect F --shards 4
//   fa-bench probe-layout [--instr mfma_32x32x8_f16 --raw dump.f32 --arch gfx942]   (matrix-instruction layouts)
// Exit status: 0 all pass, 1 any fail/error, 2 usage, input or output error (file named),
// 130/143 stopped by SIGINT/SIGTERM.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "harness/build_info.hpp"
#include "harness/results/output_file.hpp"
#include "harness/sweep/sweep.hpp"

namespace {

// A flag given too often, without its value or with a value its check refuses is named as the user
// typed it: CLI11 names an option by its first long name, so `-o a -o b` read "--csv: At Most 1
// required but received 2", a bare `-o` "--csv: 1 required TEXT:TEXT missing" and `-o ''` "--csv:
// an empty value is not allowed". The option is found by that name in the subcommand being parsed, and
// which of its names were typed is read from the command line.
std::string named_as_typed(const CLI::App& app, const CLI::Error& e, int argc, char** argv) {
  const std::string what = e.what();
  const size_t colon = what.find(": ");
  if (colon == std::string::npos || what.rfind("--", 0) != 0) return what;
  const std::string name = what.substr(0, colon);
  std::vector<const CLI::App*> apps = {&app};
  for (const CLI::App* sub : app.get_subcommands({})) apps.push_back(sub);
  for (const CLI::App* a : apps) {
    const CLI::Option* opt = a == &app || a->parsed() ? a->get_option_no_throw(name) : nullptr;
    if (!opt) continue;
    std::vector<std::string> typed;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--") break;
      for (const std::string& n : CLI::detail::split_names(opt->get_name(false, true))) {
        const bool is_short = n.size() == 2;  // -o: also -oFILE; --csv: also --csv=FILE
        if (arg == n || (is_short ? arg.rfind(n, 0) == 0 : arg.rfind(n + "=", 0) == 0)) {
          if (std::find(typed.begin(), typed.end(), n) == typed.end()) typed.push_back(n);
          break;
        }
      }
    }
    if (typed.empty()) return what;
    std::string names;
    for (const auto& n : typed) names += (names.empty() ? "" : " and ") + n;
    const int most = opt->get_items_expected_max();
    if (opt->count() <= size_t(most)) return names + what.substr(colon);  // CLI11's words, the typed name
    return fmt::format("{}: given {} times{}; it takes {} value{}", names, opt->count(),
                       typed.size() > 1 ? " (one flag, two names)" : "", most, most == 1 ? "" : "s");
  }
  return what;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("fa-bench"));
  spdlog::set_pattern("[%l] %v");
  CLI::App app{"fa-bench: validate and time flash-attention forward kernels"};
  app.require_subcommand(1);
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "More log output (-vv: trace)");
  app.add_flag("-q,--quiet", quiet, "Warnings and errors only");
  app.set_version_flag("--version", fmt::format("fa-bench {} (commit {}, backend {})", FABENCH_VERSION,
                                                fa::build_git_commit(), FABENCH_BACKEND));
  app.fallthrough();  // global flags also after the subcommand (`fa-bench sweep F -q`); set before adding them
  int status = 0;
  fa::cli::add_sweep(app, status);
  fa::cli::add_run(app, status);
  fa::cli::add_list(app, status);
  fa::cli::add_info(app, status);
  fa::cli::add_compare(app, status);
  fa::cli::add_gate(app, status);
  fa::cli::add_expand(app, status);
  fa::cli::add_isolated(app, status);
  fa::cli::add_merge(app, status);
  fa::cli::add_fit(app, status);
  fa::cli::add_table(app, status);
  fa::cli::add_check(app, status);
  fa::cli::add_probe_layout(app, status);
  app.parse_complete_callback([&] {
    spdlog::set_level(quiet ? spdlog::level::warn : verbose >= 2 ? spdlog::level::trace
                                                : verbose == 1   ? spdlog::level::debug
                                                                 : spdlog::level::info);
  });
  try {
    // A first word that is no subcommand is named, with the list, rather than CLI11's generic
    // "arguments were not expected".
    std::string known;
    bool found = false;
    for (const CLI::App* sub : std::as_const(app).get_subcommands({})) {
      found |= argc > 1 && sub->get_name() == argv[1];
      if (!sub->get_group().empty()) known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (argc > 1 && argv[1][0] != '-' && !found)
      throw fa::InputError(fa::command_line(), "subcommand", fmt::format("unknown subcommand '{}' (one of: {})", argv[1], known));
    app.parse(argc, argv);
    fa::check_stdout();  // every command's stdout, checked once it is done (the one policy's last step)
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    spdlog::error("{}", named_as_typed(app, e, argc, argv));
    return 2;
  } catch (const CLI::ValidationError& e) {
    spdlog::error("{}", named_as_typed(app, e, argc, argv));
    return 2;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const fa::InputError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  return status;
}
