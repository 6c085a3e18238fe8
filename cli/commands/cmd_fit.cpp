// `fa-bench fit RESULTS.csv... [--dispatch-from RESULTS.csv...]`: fits G's model on a sweep timed at
// every G on one path, and `auto`'s dispatch table on timings of several paths (default: the same
// files; one path only: no table, with a note), into one results/heuristics/<arch>.json; writes the G
// fit data and prints each rule's and the dispatch's scores, held out (k-fold, leave-one-family-out;
// leave-one-out, leave-shape-out). The default file is named by the results' `arch`, which must be a
// plain name ([A-Za-z0-9_.-]); every output is checked before anything is written.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "fit/dispatch_fit.hpp"
#include "fit/split_fit.hpp"
#include "gate/gate.hpp"
#include "harness/results/output_file.hpp"
#include "harness/results/results_reader.hpp"
#include "paths/builtin.hpp"

namespace fa::cli {
namespace {

// An arch read from a results file, made safe to name a file with, or an InputError.
std::string arch_file_name(const std::string& arch, const std::string& file) {
  const bool plain = !arch.empty() && arch != "." && arch != ".." &&
                     arch.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                         std::string::npos;
  if (!plain)
    throw InputError(SourceLoc{file, 0}, "arch",
                     fmt::format("'{}' cannot name the parameter file (letters, digits, _ . - only); pass --params", arch));
  return arch + ".json";
}

std::string fit_csv(const FitData& d, const std::vector<std::pair<std::string, std::vector<int>>>& picks) {
  std::string out = "name,B,H,Hk,S,Sk,D,causal,dtype,family,units,tile_m,tile_n,resident,tile_heads";
  for (int g : kSplitChoices) out += fmt::format(",t_G{}", g);
  for (int g : kSplitChoices) out += fmt::format(",band_G{}", g);
  out += ",best_G,tie_set";
  for (const auto& [rule, _] : picks) out += fmt::format(",{}_G,{}_regret", rule, rule);
  out += '\n';
  for (size_t i = 0; i < d.problems.size(); ++i) {
    const FitProblem& fp = d.problems[i];
    const Problem& p = fp.in.problem;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_escape(p.name), p.B, p.H, p.Hk, p.S, p.Sk,
                       p.D, p.causal ? 1 : 0, dtype_name(p.dtype), csv_escape(fp.family), fp.in.units,
                       fp.in.tiles[0].block_m, fp.in.tiles[0].block_n, fp.in.tiles[0].resident, fp.in.tiles[0].heads);
    for (double t : fp.t) out += fmt::format(",{:.6g}", t);
    for (double b : fp.band) out += fmt::format(",{:.3g}", b);
    std::string ties;
    for (int g : fp.tie_set()) ties += (ties.empty() ? "" : ";") + std::to_string(g);
    out += fmt::format(",{},{}", kSplitChoices[fp.best()], ties);
    for (const auto& [_, ps] : picks) out += fmt::format(",{},{:.4f}", ps[i], fp.regret(ps[i]));
    out += '\n';
  }
  return out;
}

// `auto`'s dispatch fitted on `records`: the table, or a note saying why there is none, and the
// scores as markdown (`short_text` for the terminal: only the rows some pick misses the bar on).
struct DispatchFit {
  std::optional<DispatchTable> table;
  std::string note, short_text, full_text;
};

DispatchFit fit_dispatch(const std::vector<Record>& records) {
  std::set<std::string> oracle;
  std::map<std::string, int> ranks;  // this binary's auto ranks: rank order where no neighbour decides
  const Registry reg = builtin_registry(DeviceFacts{});
  for (const auto& r : reg.rows()) {
    if (r.oracle) oracle.insert(r.name);
    ranks[r.name] = r.auto_rank;
  }
  const DispatchData d = collect_dispatch_data(records, oracle);
  for (const auto& why : d.notes) spdlog::info("dispatch: {}", why);
  DispatchFit f;
  if (d.rows.empty()) {
    f.note = "no problem was timed (and passing) on two or more paths at one requested G: no dispatch table is "
             "written (auto keeps the rank order); sweep every path, or pass such files with --dispatch-from";
    return f;
  }
  f.table = dispatch_table(d);
  auto rank = [&](const std::string& p) { return ranks.count(p) ? ranks.at(p) : 0; };
  auto some = [](const std::vector<DispatchOutcome>& v) { return std::vector<std::optional<DispatchOutcome>>(v.begin(), v.end()); };
  std::vector<DispatchScoreSet> sets{{"fitted, leave-one-out", some(dispatch_picks(d, *f.table, Holdout::row, rank))},
                                     {"fitted, leave-shape-out", some(dispatch_picks(d, *f.table, Holdout::shape, rank))},
                                     {"fitted, in-sample", some(dispatch_picks(d, *f.table, Holdout::none, rank))}};
  const auto recorded = recorded_auto(d);
  if (std::any_of(recorded.begin(), recorded.end(), [](const auto& o) { return o.has_value(); }))
    sets.push_back({"auto as recorded", recorded});
  const std::string head = fmt::format(
      "auto's dispatch on {} problems timed on {} paths ({}). Regret is t(pick) / t(best path) - 1 on the measured medians; "
      "a tie is a regret within the two records' noise: their noise bands (2 x stddev / sqrt(samples), at least 0.5%) or "
      "their spreads (each median x its stddev / mean), whichever is wider; the bar is 3%, a tie, or (for `auto` as "
      "recorded, `same kernel`) the kernel of a path record that meets the bar, run at that record's G: only the "
      "measurements differ. Leave-one-out picks each row from the table without it, leave-shape-out without any row of its "
      "shape in any dtype (its fp16/bf16 twin could answer for it otherwise): the held-out scores. In-sample is the "
      "table on its own rows; `auto as recorded` is what the input's `auto` records ran (the first per row).\n\n{}\nHow often a fixed path "
      "alone is faster than the pick, beyond both noise bands (share of the rows it ran):\n\n{}\n",
      d.rows.size(), d.paths.size(), fmt::join(d.paths, ", "), dispatch_summary(d, sets), dispatch_losses(d, sets));
  f.short_text = head + "Rows some pick misses the bar on:\n\n" + dispatch_rows(d, sets, true);
  f.full_text = head + "Every row:\n\n" + dispatch_rows(d, sets, false);
  return f;
}

}  // namespace

void add_fit(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand(
      "fit", "Fit the G model on a sweep timed at G 0,2,4,8,16 and auto's dispatch table on timings of several paths; "
      "score fa2, aiter and model, and the dispatch (held out)");
  struct Args {
    std::vector<std::string> files, dispatch_from;
    std::string path, out = "fa-bench-fit.csv", params, report;
    bool no_params = false;
    int folds = 5;
    uint64_t seed = 1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("files", a->files, "Results CSVs of one device (sweep ... --G 0,2,4,8,16)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--dispatch-from", a->dispatch_from,
                  "Results CSVs timing several paths on the same problems, for auto's dispatch table (default: the files above)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--path", a->path, "The path whose timings to fit (default: the one with the most complete problems)");
  cmd->add_option("-o,--output", a->out, "Fit data CSV, one row per problem")->capture_default_str();
  cmd->add_option("--params", a->params, "Parameter file to write (default: results/heuristics/<arch>.json)");
  cmd->add_flag("--no-params", a->no_params, "Score only; write no parameter file");
  cmd->add_option("--report", a->report, "Also write the scores as markdown to this file");
  cmd->add_option("--folds", a->folds, "k of the k-fold cross-validation")->check(CLI::Range(2, 100))->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the k-fold assignment")->check(whole_in(0))->capture_default_str();
  cmd->callback([a, &status] {
    const std::string sources = fmt::format("{}", fmt::join(a->files, ", "));
    std::string arch, device;
    auto read = [&](const std::vector<std::string>& files) {
      std::vector<Record> records;
      for (const auto& f : files) {
        ResultsFile rf = read_results_csv(f);
        if (arch.empty()) arch = rf.arch, device = rf.device;
        else if (!rf.arch.empty() && rf.arch != arch)
          throw InputError(SourceLoc{f, 0}, "arch", fmt::format("is '{}' but {} is '{}': fit one device at a time", rf.arch, a->files[0], arch));
        for (auto& r : rf.records) {
          if (r.record.timing)
            if (const std::string why = untimeable(*r.record.timing); !why.empty()) throw InputError(r.at, "median_ms", why);
          records.push_back(std::move(r.record));
        }
      }
      return records;
    };
    const std::vector<Record> records = read(a->files);
    const std::vector<Record> dispatch_records = a->dispatch_from.empty() ? records : read(a->dispatch_from);
    std::vector<std::string> inputs = a->files;
    inputs.insert(inputs.end(), a->dispatch_from.begin(), a->dispatch_from.end());
    std::string params_file;
    if (!a->no_params)
      params_file = !a->params.empty() ? a->params
                                       : (std::filesystem::path("results") / "heuristics" / arch_file_name(arch, a->files[0])).string();
    if (!params_file.empty() && a->params.empty()) std::filesystem::create_directories(std::filesystem::path(params_file).parent_path());
    check_outputs({{"-o", a->out}, {"--report", a->report}, {"--params", params_file}}, inputs);
    const FitData d = collect_fit_data(records, a->path);
    for (const auto& why : d.dropped) spdlog::warn("left out: {}", why);
    if (d.problems.size() < size_t(a->folds))
      throw InputError(SourceLoc{a->files[0], 0}, "records",
                       fmt::format("{} complete problems of path {}: fewer than --folds {}", d.problems.size(), d.path, a->folds));
    spdlog::info("fit: {} problems of path {} on {} ({}); {} left out", d.problems.size(), d.path, device, arch, d.dropped.size());

    std::vector<int> zero(d.problems.size(), 0), fa2, aiter, oracle;
    for (const auto& p : d.problems) {
      fa2.push_back(split_fa2(p.in));
      aiter.push_back(split_aiter(p.in));
      oracle.push_back(kSplitChoices[p.best()]);
    }
    const std::vector<int> kfold = kfold_picks(d.problems, a->folds, a->seed);
    const std::vector<int> lofo = lofo_picks(d.problems);
    const ModelParams all = fit_model(d.problems);
    std::vector<int> in_sample;
    for (const auto& p : d.problems) in_sample.push_back(split_model(p.in, all));

    const std::vector<RuleScore> scores = {
        score_picks("G=0 always", d.problems, zero),
        score_picks("fa2", d.problems, fa2),
        score_picks("aiter", d.problems, aiter),
        score_picks(fmt::format("model, {}-fold held out", a->folds), d.problems, kfold),
        score_picks("model, leave-one-family-out", d.problems, lofo),
        score_picks("model, in-sample (not held out)", d.problems, in_sample),
        score_picks("best G (oracle)", d.problems, oracle),
    };
    const std::string table = score_table(scores);
    std::string params_line;
    for (size_t i = 0; i < kModelCoefNames.size(); ++i) params_line += fmt::format("{}={:.4g} ", kModelCoefNames[i], all.coef[i]);
    params_line += fmt::format("margin={:g}", all.margin);
    std::cout << fmt::format("G rules on {} problems of path `{}` ({}, {}):\n\n{}\nmodel fitted on all: {}\n",
                             d.problems.size(), d.path, device, arch, table, params_line);
    const DispatchFit dispatch = fit_dispatch(dispatch_records);
    if (dispatch.table) std::cout << "\n" << dispatch.short_text;
    else spdlog::warn("dispatch: {}", dispatch.note);

    OutputFile(a->out, inputs).replace_with(fit_csv(d, {{"fa2", fa2}, {"aiter", aiter}, {"model", kfold}, {"model_lofo", lofo}}));
    spdlog::info("fit data: {}", a->out);
    if (!a->report.empty()) {
      const std::string g_part = fmt::format(
          "# G rules on {} ({})\n\n{} problems of path `{}` from {}; {} left out. Regret is "
          "t(G_pick) / t(G_best) - 1 on the measured medians; harm: t(G_pick) > 1.02 t(G=0); "
          "oracle capture: sum(t0 - t_pick) / sum(t0 - t_best). The model's rows are held out "
          "({}-fold, seed {}; leave-one-family-out by (B, H, D)) except the in-sample one.\n\n{}\n"
          "Model fitted on all problems: {}\n",
          device, arch, d.problems.size(), d.path, sources, d.dropped.size(), a->folds, a->seed, table, params_line);
      const std::string dispatch_part = dispatch.table ? dispatch.full_text : dispatch.note + "\n";
      OutputFile(a->report, inputs).replace_with(g_part + "\n## auto's dispatch\n\n" + dispatch_part);
      spdlog::info("report: {}", a->report);
    }
    if (!params_file.empty()) {
      const std::string& file = params_file;
      HeuristicFile h;
      h.arch = arch, h.path = d.path, h.device = device, h.units = d.problems.front().in.units;
      h.params = all;
      h.problems = int(d.problems.size());
      auto names = [](const std::vector<std::string>& files) {
        std::string s;
        for (const auto& f : files) s += (s.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
        return s;
      };
      h.fitted_from = names(a->files);
      h.dispatch = dispatch.table;
      if (h.dispatch) h.dispatch_from = names(a->dispatch_from.empty() ? a->files : a->dispatch_from);
      save_heuristic_file(file, h);
      spdlog::info("model parameters{}: {}", h.dispatch ? " and dispatch table" : "", file);
    }
    status = 0;
  });
}

}  // namespace fa::cli
