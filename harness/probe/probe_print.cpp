// Text and JSON forms of a probe-layout report (harness/probe/probe_print.hpp). Register operands
// print 16 slots a block, one line a lane; shared memory prints one 16-byte chunk (8 elements) a line.
#include "harness/probe/probe_print.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fa::probe {
namespace {

std::string part(int v) { return v < 0 ? "?" : std::to_string(v); }

std::string cell_text(const OperandReport& r, int i) {
  if (r.unread[i]) return "-";
  return part(r.probed[i].row) + "," + part(r.probed[i].col) + (r.differs[i] ? "*" : "");
}

std::string grid(const Operand& op, const OperandReport& r, const char* what) {
  size_t w = 1;
  for (int i = 0; i < op.count(); ++i) w = std::max(w, cell_text(r, i).size());
  std::string out;
  const int per = op.in_smem ? 8 : 16;
  const int blocks = op.in_smem ? 1 : (op.slots + per - 1) / per;
  for (int bl = 0; bl < blocks; ++bl) {
    if (op.in_smem) {
      out += fmt::format("{} in shared memory, 8 elements (16 bytes) a line:\n", what);
      for (int e = 0; e < op.slots; e += per) {
        out += fmt::format("  byte {:#06x} ", 2 * e);
        for (int j = e; j < std::min(op.slots, e + per); ++j) out += fmt::format(" {:>{}}", cell_text(r, j), w);
        out += '\n';
      }
      continue;
    }
    const int s0 = bl * per, s1 = std::min(op.slots, s0 + per);
    out += fmt::format("{}, lane x slot {}..{}:\n  lane", what, s0, s1 - 1);
    for (int s = s0; s < s1; ++s) out += fmt::format(" {:>{}}", s, w);
    out += '\n';
    for (int lane = 0; lane < op.lanes; ++lane) {
      out += fmt::format("  {:>4}", lane);
      for (int s = s0; s < s1; ++s) out += fmt::format(" {:>{}}", cell_text(r, lane * op.slots + s), w);
      out += '\n';
    }
  }
  return out;
}

}  // namespace

std::string where(const Instr& in, char operand, int lane, int slot) {
  if (lane < 0) return "D";
  if (operand == 'B' && in.b.in_smem) return fmt::format("smem byte {:#06x} (element {})", 2 * slot, slot);
  return fmt::format("lane {} {} {}", lane, operand == 'C' ? "register" : "slot", slot);
}

std::string format_maps(const Instr& in, const Report& r) {
  std::string out = fmt::format("{} ({}): M{} N{} K{}, {} inputs; tables {}\n", in.name, in.isa, in.M, in.N, in.K, in.elem,
                                in.tables);
  out += grid(in.a, r.a, "A (row,k) as probed");
  out += grid(in.b, r.b, "B (k,col) as probed");
  out += grid(in.c, r.c, "C/D (row,col) as probed");
  return out;
}

std::string format_differences(const Instr& in, const Report& r) {
  std::string out;
  for (const Difference& d : r.diffs)
    out += fmt::format("  {} {}: {}: table {}, probed {}\n", d.operand, where(in, d.operand, d.lane, d.slot), d.field,
                       d.table, d.probed);
  return out.empty() ? out : fmt::format("differences from {} ({}):\n", in.tables, r.diffs.size()) + out;
}

std::string summary_line(const Instr& in, const Report& r) {
  int unread = 0;
  for (const OperandReport* o : {&r.a, &r.b})
    for (bool u : o->unread) unread += u;
  const std::string counts = fmt::format("A {} slots, B {}, C {}{}", in.a.count(), in.b.count(), in.c.count(),
                                         unread ? fmt::format("; {} replica slots not read", unread) : "");
  if (r.diffs.empty()) return fmt::format("{}: no difference from {} ({})", in.name, in.tables, counts);
  return fmt::format("{}: {} difference{} from {} ({})", in.name, r.diffs.size(), r.diffs.size() == 1 ? "" : "s", in.tables,
                     counts);
}

nlohmann::json report_json(const Instr& in, const Report& r) {
  using nlohmann::json;
  auto op_json = [](const Operand& op, const OperandReport& o) {
    json lanes = json::array();
    for (int lane = 0; lane < op.lanes; ++lane) {
      json slots = json::array();
      for (int s = 0; s < op.slots; ++s) {
        const int i = lane * op.slots + s;
        slots.push_back(json{{"probed", {o.probed[i].row, o.probed[i].col}},
                             {"table", {o.table[i].row, o.table[i].col}},
                             {"unread", bool(o.unread[i])},
                             {"differs", bool(o.differs[i])}});
      }
      lanes.push_back(slots);
    }
    return json{{"lanes", op.lanes}, {"slots", op.slots}, {"in_smem", op.in_smem}, {"map", lanes}};
  };
  json diffs = json::array();
  for (const Difference& d : r.diffs)
    diffs.push_back(json{{"operand", std::string(1, d.operand)}, {"lane", d.lane}, {"slot", d.slot}, {"field", d.field},
                         {"table", d.table}, {"probed", d.probed}});
  json j{{"instr", in.name}, {"isa", in.isa}, {"kernel", in.kernel}, {"tables", in.tables},
         {"M", in.M}, {"N", in.N}, {"K", in.K}, {"A", op_json(in.a, r.a)}, {"B", op_json(in.b, r.b)},
         {"C", op_json(in.c, r.c)}, {"differences", diffs}};
  return j;
}

}  // namespace fa::probe
