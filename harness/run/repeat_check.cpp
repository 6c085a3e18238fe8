// Bitwise comparison of run outputs, the rerun loop behind --repeat-check, and the timed-launch check.
#include "harness/run/repeat_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fa {

bool bit_identical(const RunOutputs& a, const RunOutputs& b) {
  // LSE compared as bits: -inf and NaN patterns count, and 0.0 vs -0.0 is a difference.
  const bool lse_same = a.lse.size() == b.lse.size() &&
                        std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * sizeof(float)) == 0;
  return lse_same && a.o.dtype == b.o.dtype && a.o.bytes == b.o.bytes && a.k_cache.bytes == b.k_cache.bytes &&
         a.v_cache.bytes == b.v_cache.bytes;
}

int count_differing_reruns(Execution& exec, const RunOutputs& first, int n) {
  int differing = 0;
  for (int i = 0; i < n; ++i) {
    exec.poison();
    exec.run();
    differing += !bit_identical(first, exec.read_back());
  }
  return differing;
}

namespace {

// "k of n <what>" where k elements differ in bits, with the largest finite |difference| of values.
std::string typed_difference(const TypedBuffer& a, const TypedBuffer& b, const char* what) {
  if (a.size() != b.size() || a.dtype != b.dtype) return fmt::format("{} of another size or dtype", what);
  int64_t k = 0;
  double max_diff = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    if (a.bits(i) == b.bits(i)) continue;
    ++k;
    const double d = std::fabs(double(from_bits(a.dtype, a.bits(i))) - double(from_bits(b.dtype, b.bits(i))));
    if (std::isfinite(d)) max_diff = std::max(max_diff, d);
    else max_diff = HUGE_VAL;  // NaN or the poison pattern against a value
  }
  if (k == 0) return "";
  return fmt::format("{} of {} {} (max |diff| {:.3g})", k, a.size(), what, max_diff);
}

}  // namespace

std::string describe_difference(const RunOutputs& first, const RunOutputs& other) {
  std::string out;
  auto add = [&](const std::string& part) {
    if (!part.empty()) out += (out.empty() ? "" : ", ") + part;
  };
  add(typed_difference(first.o, other.o, "O elements"));
  if (first.lse.size() != other.lse.size()) {
    add("LSE of another size");
  } else {
    int64_t k = 0;
    for (size_t i = 0; i < first.lse.size(); ++i) k += std::memcmp(&first.lse[i], &other.lse[i], sizeof(float)) != 0;
    if (k) add(fmt::format("{} of {} LSE values", k, first.lse.size()));
  }
  add(typed_difference(first.k_cache, other.k_cache, "K-cache elements"));
  add(typed_difference(first.v_cache, other.v_cache, "V-cache elements"));
  return out;
}

TimedCheck check_timed_outputs(const RunOutputs& first, const RunOutputs& timed, bool deterministic,
                               const std::function<std::string(const RunOutputs&)>& rule_failure) {
  if (bit_identical(first, timed)) return {"same", ""};
  const std::string diff = describe_difference(first, timed);
  if (deterministic)
    return {"differs", fmt::format("timed launches differ from the validated run: the last timed launch's {} differ "
                                   "bit for bit (a deterministic path)", diff)};
  const std::string why = rule_failure(timed);
  if (why.empty()) return {"rule", ""};
  return {"differs", fmt::format("timed launches differ from the validated run: the last timed launch fails the rule: "
                                 "{} ({} differ)", why, diff)};
}

}  // namespace fa
