// Fit data and evaluation for the G rules (`fa-bench fit`). From a sweep that timed every G in
// {0, 2, 4, 8, 16} on one path: per problem the time of each G with its noise band, the best G and
// the tie set; each rule's pick and its regret t(G_pick) / t(G_best) - 1; the model's parameters fitted
// by non-negative least squares on relative time error, its margin by held-out-free grid search on
// the training problems; held-out picks by k-fold and leave-one-family-out cross-validation.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/results/results.hpp"
#include "harness/split/split_rules.hpp"

namespace fa {

struct FitProblem {
  SplitInputs in;
  std::array<double, kNumSplitChoices> t{};     // median ms at kSplitChoices[i]
  std::array<double, kNumSplitChoices> band{};  // noise half-width, ms
  std::string family;                           // "B=1 H=16 D=64": leave-one-family-out groups
  std::string label;

  size_t best() const;                // index of the fastest G
  std::vector<int> tie_set() const;   // every G whose time is within both noise bands of the best
  double regret(int G) const;         // t(G) / t(best) - 1
};

// Noise half-width of a median: 2 x stddev / sqrt(samples), at least 0.5% (run-to-run drift).
double noise_band_ms(const TimingStats& t);

struct FitData {
  std::string path;
  std::vector<FitProblem> problems;
  std::vector<std::string> dropped;  // problems left out, and why
};
// Groups timed, passing records of `path` (empty: the path with the most complete problems) by
// problem; a problem needs all five G. Throws std::runtime_error when no path qualifies or the
// records lack the rule inputs (units, tile columns: schema 4).
FitData collect_fit_data(const std::vector<Record>& records, const std::string& path);

// The model's parameters: non-negative least squares of sum(((pred - t) / t)^2) over every (problem,
// G) of `train`, then the margin (from kMargins) that minimises the training picks' summed log regret.
ModelParams fit_model(const std::vector<FitProblem>& train);
inline constexpr std::array<double, 10> kMargins{0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1};

// Held-out model picks: k folds by a seeded hash of the index; leave-one-family-out.
std::vector<int> kfold_picks(const std::vector<FitProblem>& ps, int k, uint64_t seed);
std::vector<int> lofo_picks(const std::vector<FitProblem>& ps);

struct RuleScore {
  std::string rule;
  size_t n = 0;
  double within1 = 0, within5 = 0, within10 = 0;  // shares of problems with regret <= 1%, 5%, 10%
  double geomean_regret = 0, p90_regret = 0, max_regret = 0;
  double harm = 0;             // share with t(pick) > 1.02 t(G=0)
  double speedup_vs_0 = 0;     // geomean t(G=0) / t(pick)
  double oracle_capture = 0;   // sum(t0 - t_pick) / sum(t0 - t_best); NaN when G=0 is always best
};
RuleScore score_picks(const std::string& rule, const std::vector<FitProblem>& ps, const std::vector<int>& picks);
std::string score_table(const std::vector<RuleScore>& scores);  // markdown

}  // namespace fa
