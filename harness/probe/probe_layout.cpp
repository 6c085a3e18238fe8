// The probe dump's analysis: D's registers labelled by the table's A rows (pass R) and B columns
// (pass C) by majority, each input slot's probed row/column read back through those labels, its k
// from passes KA/KB, and every disagreement with the table named by operand, lane and slot.
// Majorities make one wrong table entry a difference of that entry alone (docs/probe-layout.md).
#include "harness/probe/probe_layout.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>

#include "harness/input_error.hpp"

namespace fa::probe {
namespace {

constexpr int kNone = -1, kSplit = -2;  // no vote; votes without a strict majority

int majority(const std::vector<int>& votes) {
  if (votes.empty()) return kNone;
  std::map<int, int> n;
  for (int v : votes) ++n[v];
  int best = kNone, most = 0, ties = 0;
  for (const auto& [v, c] : n) {
    if (c > most) best = v, most = c, ties = 0;
    else if (c == most) ++ties;
  }
  return ties ? kSplit : best;
}

std::string cell_text(int v) { return v == kNone ? "none" : v == kSplit ? "split" : std::to_string(v); }

struct Dump {
  const std::vector<float>& v;
  int nc;
  float at(int it, int c) const { return v[size_t(it) * nc + c]; }
  std::vector<int> lit(int it) const {
    std::vector<int> out;
    for (int c = 0; c < nc; ++c)
      if (at(it, c) != 0.f) out.push_back(c);
    return out;
  }
};

std::vector<Cell> table_of(const Operand& op) {
  std::vector<Cell> t(op.count());
  for (int i = 0; i < op.count(); ++i) t[i] = op.table(i / op.slots, i % op.slots);
  return t;
}

// One input operand's half of the analysis: X is A (label: row, k = col) or B (label: col, k = row).
struct Side {
  char name;
  const Operand& op;
  std::vector<Cell> table;
  std::vector<std::vector<int>> lit;  // pass R (A) or C (B): the D registers each slot lights
  int first_it, k_first_it;           // its one-hot iterations: label pass, first digit of its K pass
  bool is_b;
  int label(int i) const { return is_b ? table[i].col : table[i].row; }
  int k(int i) const { return is_b ? table[i].row : table[i].col; }
};

class Analysis {
 public:
  Analysis(const Instr& in, const std::vector<float>& dump) : in_(in), s_(in.shape()), d_{dump, s_.c_slots} {
    if ((long long)dump.size() != probe_floats(s_))
      throw std::invalid_argument(fmt::format("{}: a probe dump holds {} floats, not {}", in.name, probe_floats(s_), dump.size()));
  }

  Report run() {
    const int na = s_.a_slots, nb = s_.b_slots;
    Side a{'A', in_.a, table_of(in_.a), {}, 0, na + nb, false};
    Side b{'B', in_.b, table_of(in_.b), {}, na, na + nb + s_.digits * na, true};
    for (Side* x : {&a, &b}) {
      for (int i = 0; i < x->op.count(); ++i) x->lit.push_back(d_.lit(x->first_it + i));
    }
    check_values();
    const std::vector<int> row_of = labels(a), col_of = labels(b);
    r_.a = side_report(a, row_of);
    r_.b = side_report(b, col_of);
    const std::vector<Cell> tc = table_of(in_.c);
    r_.c.table = tc;
    r_.c.unread.assign(tc.size(), false);
    r_.c.differs.assign(tc.size(), false);
    for (int c = 0; c < s_.c_slots; ++c) {
      r_.c.probed.push_back({row_of[c], col_of[c]});
      const int lane = c / in_.c.slots, reg = c % in_.c.slots;
      if (row_of[c] < 0 || col_of[c] < 0) {
        r_.c.differs[c] = true;
        add('C', lane, reg, "unreached", fmt::format("{},{}", tc[c].row, tc[c].col),
            fmt::format("row {} col {} (labels from the A and B slots that light it)", cell_text(row_of[c]), cell_text(col_of[c])));
      } else if (!(r_.c.probed[c] == tc[c])) {
        r_.c.differs[c] = true;
        add('C', lane, reg, "cell", fmt::format("{},{}", tc[c].row, tc[c].col), fmt::format("{},{}", row_of[c], col_of[c]));
      }
    }
    return std::move(r_);
  }

 private:
  // Every value a pass can write: 0 or 1 in R and C; 0 or 1 + a digit in KA and KB.
  void check_values() {
    const int label_its = s_.a_slots + s_.b_slots;
    for (int it = 0; it < probe_iterations(s_); ++it)
      for (int c = 0; c < s_.c_slots; ++c) {
        const float v = d_.at(it, c);
        const bool ok = it < label_its ? (v == 0.f || v == 1.f)
                                       : (v == 0.f || (v == std::floor(v) && v >= 1.f && v <= float(s_.radix)));
        if (ok) continue;
        if (r_.odd_values++ == 0)
          r_.first_odd = fmt::format("{} in iteration {} at D lane {} register {}", v, it, c / in_.c.slots, c % in_.c.slots);
      }
    if (r_.odd_values)
      add('C', -1, -1, "value", fmt::format("0, 1 or 1 + a digit below {}", s_.radix),
          fmt::format("{} (and {} more)", r_.first_odd, r_.odd_values - 1));
  }

  // Each D register's label: the majority of the table labels of the slots that light it.
  std::vector<int> labels(const Side& x) {
    std::vector<std::vector<int>> votes(s_.c_slots);
    for (int i = 0; i < x.op.count(); ++i)
      for (int c : x.lit[i]) votes[c].push_back(x.label(i));
    std::vector<int> out(s_.c_slots);
    for (int c = 0; c < s_.c_slots; ++c) out[c] = majority(votes[c]);
    return out;
  }

  OperandReport side_report(const Side& x, const std::vector<int>& label_of) {
    const int n = x.op.count();
    OperandReport rep;
    rep.table = x.table;
    rep.probed.assign(n, {kNone, kNone});
    rep.unread.assign(n, false);
    rep.differs.assign(n, false);
    std::map<int, int> regs_of;  // label -> registers carrying it
    for (int l : label_of) ++regs_of[l];
    // A slot's label: the one its lit registers share, or kSplit.
    std::vector<int> lab(n, kNone);
    for (int i = 0; i < n; ++i)
      for (int c : x.lit[i]) lab[i] = lab[i] == kNone || lab[i] == label_of[c] ? label_of[c] : kSplit;
    // Slots holding one table element with one probed label (gfx11 WMMA's copies) together light
    // its registers: each copy may light only those of its half-wave.
    std::map<std::tuple<int, int, int>, std::set<int>> lit_by_element;
    for (int i = 0; i < n; ++i) lit_by_element[{x.table[i].row, x.table[i].col, lab[i]}].insert(x.lit[i].begin(), x.lit[i].end());
    for (int i = 0; i < n; ++i) {
      const int lane = i / x.op.slots, slot = i % x.op.slots;
      const std::string what = x.is_b ? "col" : "row";
      if (x.lit[i].empty()) {
        bool replica = false;
        for (int j = 0; j < n && !replica; ++j) replica = j != i && x.table[j] == x.table[i] && !x.lit[j].empty();
        rep.unread[i] = replica;
        if (!replica) {
          rep.differs[i] = true;
          add(x.name, lane, slot, "unread", cell(x, i), "lights no D register, and no other slot holds its element");
        }
        continue;
      }
      const int l = lab[i];
      const int k = probed_k(x, i);
      Cell& p = rep.probed[i];
      (x.is_b ? p.col : p.row) = l;
      (x.is_b ? p.row : p.col) = k;
      if (l != x.label(i)) {
        rep.differs[i] = true;
        add(x.name, lane, slot, what, std::to_string(x.label(i)),
            l == kSplit ? fmt::format("split: lights D registers of several {}s", what) : std::to_string(l));
      } else if (const size_t lit = lit_by_element[{x.table[i].row, x.table[i].col, l}].size(); int(lit) != regs_of[l]) {
        rep.differs[i] = true;
        add(x.name, lane, slot, what, std::to_string(x.label(i)),
            fmt::format("{} in part: its element lights {} of the {} D registers of that {}", l, lit, regs_of[l], what));
      }
      if (k != x.k(i)) {
        rep.differs[i] = true;
        add(x.name, lane, slot, "k", std::to_string(x.k(i)),
            k == kSplit ? "split: its D registers disagree" : k == kNone ? "none" : std::to_string(k));
      }
    }
    return rep;
  }

  // Slot i's k as the other operand's table labels it: per digit, the majority of (value - 1) over
  // the registers it lit in its label pass.
  int probed_k(const Side& x, int i) const {
    int k = 0, scale = 1;
    for (int dg = 0; dg < s_.digits; ++dg, scale *= s_.radix) {
      std::vector<int> votes;
      for (int c : x.lit[i]) {
        const float v = d_.at(x.k_first_it + dg * x.op.count() + i, c);  // odd ones: check_values names them
        votes.push_back(std::isfinite(v) && std::fabs(v) <= float(s_.radix + 1) ? int(v) - 1 : kSplit);
      }
      const int v = majority(votes);
      if (v < 0 || v >= s_.radix) return v == kNone ? kNone : kSplit;
      k += v * scale;
    }
    return k;
  }

  std::string cell(const Side& x, int i) const { return fmt::format("{},{}", x.table[i].row, x.table[i].col); }
  void add(char op, int lane, int slot, std::string field, std::string table, std::string probed) {
    r_.diffs.push_back({op, lane, slot, std::move(field), std::move(table), std::move(probed)});
  }

  const Instr& in_;
  ProbeShape s_;
  Dump d_;
  Report r_;
};

}  // namespace

Report analyse(const Instr& in, const std::vector<float>& dump) { return Analysis(in, dump).run(); }

std::vector<float> read_dump(const std::string& file, const Instr& in, const std::string& flag) {
  const long long want = probe_floats(in.shape());
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw InputError(SourceLoc{file, 0}, flag, "not a regular file (a raw probe dump is one)");
  std::ifstream f(file, std::ios::binary | std::ios::ate);
  if (!f) throw InputError(SourceLoc{file, 0}, flag, "cannot open the probe dump");
  const long long bytes = f.tellg();
  if (bytes != want * 4)
    throw InputError(SourceLoc{file, 0}, flag,
                     fmt::format("{} bytes; a raw dump of {} is {} float32 values ({} bytes: {} iterations x {} D registers)",
                                 bytes, in.name, want, want * 4, probe_iterations(in.shape()), in.shape().c_slots));
  std::vector<float> v(want);
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(v.data()), bytes)) throw InputError(SourceLoc{file, 0}, flag, "read failed");
  return v;
}

}  // namespace fa::probe
