// fa-bench probe-layout's host half: a matrix instruction's description (sizes, lanes, the fragment
// table under test for A, B and C), the analysis of a probe dump (harness/probe/probe_plan.hpp)
// into the probed layout and its differences from the table, and the raw dump's reader. Pure C++:
// tests build synthetic dumps (tests/harness/test_probe_layout.cpp). The instructions themselves,
// with the kernels' tables, are kernels/runtime/probe_layout.hpp; printing is probe_print.hpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/probe/probe_plan.hpp"

namespace fa::probe {

struct Cell {
  int row, col;
  bool operator==(const Cell& o) const { return row == o.row && col == o.col; }
};

// One operand: `lanes` x `slots` register slots (lane-major), or, in_smem, `slots` 16-bit
// shared-memory elements (lanes 1). table(lane, slot): A (row m, col k), B (row k, col n), C (m, n).
struct Operand {
  int lanes = 0, slots = 0;
  std::function<Cell(int lane, int slot)> table;
  bool in_smem = false;
  int count() const { return lanes * slots; }
};

struct Instr {
  std::string name;    // --instr: "mma_m16n8k16_f16"
  std::string kernel;  // the probe kernel's symbol (extern "C")
  std::string isa;     // the instruction as the ISA spells it
  std::string tables;  // the table functions under test, for the report
  std::string family;  // "nvidia" | "amd"
  std::string elem;    // input type: fp16, bf16, fp8
  int M = 0, N = 0, K = 0;
  Operand a, b, c;
  int radix = 0, digits = 1;  // pass K's labels (probe_plan.hpp)
  ProbeShape shape() const { return {a.count(), b.count(), c.count(), radix, digits}; }
};

// A slot's probed cell differs from its table's, or the slot cannot be labelled.
struct Difference {
  char operand;  // 'A', 'B', 'C'
  int lane, slot;
  std::string field;  // row, col, k, unread (lights no register), unreached (no slot lights it), value
  std::string table, probed;
};

// What the probe found for one operand: probed[i] is slot i's cell (-1: unknown), unread[i] marks
// an input slot the instruction never reads while another slot holds the same table element
// (gfx11 WMMA's replicated halves), which is not a difference.
struct OperandReport {
  std::vector<Cell> table, probed;
  std::vector<bool> unread, differs;
};

struct Report {
  OperandReport a, b, c;
  std::vector<Difference> diffs;
  long long odd_values = 0;  // dump values no pass can produce (not 0, 1 or 1 + a digit)
  std::string first_odd;     // the first of them, located
};

// The analysis (docs/probe-layout.md "The method"). Throws std::invalid_argument when the dump's
// size is not the instruction's probe_floats.
Report analyse(const Instr& in, const std::vector<float>& dump);

// The raw dump of `in` from `file` (float32, native byte order): an InputError naming the file and
// `flag` when it cannot be read or its size is not probe_floats(in.shape()) * 4 bytes.
std::vector<float> read_dump(const std::string& file, const Instr& in, const std::string& flag);

}  // namespace fa::probe
