// Printing a probe-layout report: each operand's map as probed (a lane x slot grid of "row,col";
// wgmma's shared-memory B as 16-byte chunks by byte offset), the differences, one summary line,
// and the same as JSON (--json). Differences are marked '*' in the maps; '-' is a replica slot the
// instruction does not read, '?' a label no slot gave.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "harness/probe/probe_layout.hpp"

namespace fa::probe {

std::string format_maps(const Instr& in, const Report& r);
std::string format_differences(const Instr& in, const Report& r);
// "<name>: no difference from <tables> (...)" or "<name>: N differences from <tables>".
std::string summary_line(const Instr& in, const Report& r);
// Where a slot of an operand is: "lane 5 slot 2", "smem byte 0x40 (element 32)", "D lane 3 register 1".
std::string where(const Instr& in, char operand, int lane, int slot);
// One instruction's report as JSON: its maps (probed and table cell, unread, differs per slot) and differences.
nlohmann::json report_json(const Instr& in, const Report& r);

}  // namespace fa::probe
