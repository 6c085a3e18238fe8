// probe-layout's analysis (harness/probe/) on synthetic dumps: every instruction emulated from its
// vendor's documented layout (tests/probe_emulation.hpp) agrees with the kernels' fragment tables
// with no difference; one planted fault (a wrong table entry of each kind, a lane pair swapped in
// the hardware or in the dump, a slot never read, a value no pass writes) is reported alone, naming
// operand, lane and slot. Plain C++. Run: ctest -R ProbeLayout
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness/fp8.hpp"
#include "harness/input_error.hpp"
#include "harness/probe/probe_layout.hpp"
#include "harness/probe/probe_print.hpp"
#include "kernels/runtime/probe_layout.hpp"
#include "helpers.hpp"
#include "probe_emulation.hpp"

using fa::probe::Cell;
using fa::probe::Difference;
using fa::probe::Instr;
using fa::probe::Report;
using fa::test::documented_layout;
using fa::test::emulate_probe;

namespace {

Instr instr(const std::string& name) {
  for (const Instr& in : fa::gpu::probe_instructions())
    if (in.name == name) return in;
  throw std::invalid_argument(name);
}

// `in` with one table entry replaced: slot (lane, slot) of operand op ('A', 'B', 'C') reads `cell`.
Instr planted(Instr in, char op, int lane, int slot, Cell cell) {
  fa::probe::Operand& o = op == 'A' ? in.a : op == 'B' ? in.b : in.c;
  o.table = [t = o.table, lane, slot, cell](int l, int s) { return l == lane && s == slot ? cell : t(l, s); };
  return in;
}

std::string listed(const Report& r) {
  std::string out;
  for (const Difference& d : r.diffs) out += std::string(1, d.operand) + " " + std::to_string(d.lane) + "/" +
                                             std::to_string(d.slot) + " " + d.field + " " + d.table + " -> " + d.probed + "\n";
  return out;
}

int unread(const fa::probe::OperandReport& o) {
  int n = 0;
  for (bool u : o.unread) n += u;
  return n;
}

}  // namespace

TEST(ProbeLayout, EveryInstructionEmulatedFromItsDocumentAgreesWithTheKernelsTables) {
  for (const Instr& in : fa::gpu::probe_instructions()) {
    SCOPED_TRACE(in.name);
    const Report r = fa::probe::analyse(in, emulate_probe(in, documented_layout(in.name)));
    EXPECT_TRUE(r.diffs.empty()) << listed(r);
    EXPECT_EQ(r.odd_values, 0);
    for (const auto* o : {&r.a, &r.b, &r.c})
      for (size_t i = 0; i < o->table.size(); ++i)
        if (!o->unread[i]) {
          ASSERT_EQ(o->probed[i], o->table[i]) << "slot " << i;
        }
    // gfx11 WMMA, each half-wave reading its own copy: A's row r is read from the copy in the
    // half-wave that holds D's row r (parity), so half of A's slots are replicas never read.
    const bool wmma = in.name.rfind("wmma_", 0) == 0;
    EXPECT_EQ(unread(r.a), wmma ? in.a.count() / 2 : 0);
    EXPECT_EQ(unread(r.b), 0);
  }
}

TEST(ProbeLayout, WmmaReadingOnlyTheLowHalfWavesCopyLeavesTheOtherCopyUnreadNotWrong) {
  const Instr in = instr("wmma_16x16x16_f16");
  const Report r = fa::probe::analyse(in, emulate_probe(in, fa::test::amd_wmma_16x16x16(false)));
  EXPECT_TRUE(r.diffs.empty()) << listed(r);
  EXPECT_EQ(unread(r.a), 256);
  EXPECT_EQ(unread(r.b), 256);
  for (int i = 0; i < 256; ++i) EXPECT_FALSE(r.a.unread[i]) << "lanes 0-15 are the copy read";
}

// Each kind of wrong table entry, planted alone, is the one difference, with the table's and the
// probed value. The dump is taken with the planted table, as the kernel would feed it.
TEST(ProbeLayout, AWrongTableEntryIsTheOnlyDifferenceAndNamesItsSlot) {
  struct Plant {
    const char* instr;
    char op;
    int lane, slot;
    const char* field;
  };
  const Plant plants[] = {{"mma_m16n8k16_f16", 'A', 5, 2, "row"}, {"mma_m16n8k16_bf16", 'A', 5, 2, "k"},
                          {"mfma_32x32x8_f16", 'B', 9, 1, "col"}, {"mfma_32x32x8_f16", 'B', 40, 3, "k"},
                          {"wmma_16x16x16_f16", 'C', 20, 3, "cell"}, {"wgmma_m64n64k16_f16", 'B', 0, 77, "k"},
                          {"wgmma_m64n64k16_f16", 'A', 100, 6, "row"}, {"wgmma_m64n128k16_f16", 'C', 33, 50, "cell"},
                          {"mfma_32x32x16_fp8", 'A', 40, 7, "k"}, {"wmma12_16x16x16_f16", 'B', 17, 5, "k"},
                          {"wmma12_16x16x16_fp8", 'A', 30, 0, "k"}, {"wmma12_16x16x16_bf16", 'C', 8, 2, "cell"}};
  for (const Plant& p : plants) {
    SCOPED_TRACE(std::string(p.instr) + " " + p.op + " " + p.field);
    const Instr good = instr(p.instr);
    const fa::probe::Operand& o = p.op == 'A' ? good.a : p.op == 'B' ? good.b : good.c;
    const Cell right = o.table(p.lane, p.slot);
    const std::string f = p.field;
    // row/col/k one off, wrapped inside the matrix (rows of A, C: M; k: K; columns of B, C: N).
    const bool row_field = (p.op == 'A' && f == "row") || (p.op == 'B' && f == "k") || f == "cell";
    const int rows = p.op == 'B' ? good.K : good.M, cols = p.op == 'A' ? good.K : good.N;
    const Cell wrong = row_field ? Cell{(right.row + 1) % rows, right.col} : Cell{right.row, (right.col + 1) % cols};
    const Instr bad = planted(good, p.op, p.lane, p.slot, wrong);
    const Report r = fa::probe::analyse(bad, emulate_probe(bad, documented_layout(p.instr)));
    ASSERT_EQ(r.diffs.size(), 1u) << listed(r);
    const Difference& d = r.diffs[0];
    EXPECT_EQ(d.operand, p.op);
    EXPECT_EQ(d.lane, p.lane);
    EXPECT_EQ(d.slot, p.slot);
    EXPECT_EQ(d.field, f);
    if (f == "cell") {
      EXPECT_EQ(d.table, std::to_string(wrong.row) + "," + std::to_string(wrong.col));
      EXPECT_EQ(d.probed, std::to_string(right.row) + "," + std::to_string(right.col));
    } else {
      const bool rowwise = (p.op == 'A' && f == "row") || (p.op == 'B' && f == "k");
      EXPECT_EQ(d.table, std::to_string(rowwise ? wrong.row : wrong.col));
      EXPECT_EQ(d.probed, std::to_string(rowwise ? right.row : right.col));
    }
  }
}

TEST(ProbeLayout, HardwareWithTwoALanesSwappedIsReportedOnThoseLanesOnly) {
  const Instr in = instr("mma_m16n8k16_f16");
  fa::test::HwLayout hw = fa::test::ptx_mma_m16n8k16();
  hw.a = [a = hw.a](int m, int k, int h) {
    const int s = a(m, k, h), lane = s / 8;
    return lane == 1 ? s + 8 : lane == 2 ? s - 8 : s;
  };
  const Report r = fa::probe::analyse(in, emulate_probe(in, hw));
  ASSERT_EQ(r.diffs.size(), 16u) << listed(r);  // 8 slots of each lane; same rows, other k
  for (const Difference& d : r.diffs) {
    EXPECT_EQ(d.operand, 'A');
    EXPECT_TRUE(d.lane == 1 || d.lane == 2);
    EXPECT_EQ(d.field, "k");
  }
}

TEST(ProbeLayout, ADumpWithTwoDLanesSwappedIsReportedOnThoseLanesOnly) {
  const Instr in = instr("mfma_32x32x8_f16");
  std::vector<float> dump = emulate_probe(in, documented_layout(in.name));
  const int regs = in.c.slots;
  for (size_t it = 0; it < dump.size() / in.c.count(); ++it)
    for (int v = 0; v < regs; ++v) std::swap(dump[it * in.c.count() + 3 * regs + v], dump[it * in.c.count() + 7 * regs + v]);
  const Report r = fa::probe::analyse(in, dump);
  ASSERT_EQ(r.diffs.size(), 2u * regs) << listed(r);
  for (const Difference& d : r.diffs) {
    EXPECT_EQ(d.operand, 'C');
    EXPECT_TRUE(d.lane == 3 || d.lane == 7);
    EXPECT_EQ(d.field, "cell");
  }
  const std::string text = fa::probe::format_differences(in, r);
  EXPECT_NE(text.find("C lane 3 register 0: cell: table 0,3, probed 0,7"), std::string::npos) << text;
}

TEST(ProbeLayout, ASlotThatLightsNothingWithoutAReplicaIsADifference) {
  const Instr in = instr("mfma_32x32x8_f16");
  std::vector<float> dump = emulate_probe(in, documented_layout(in.name));
  std::fill_n(dump.begin() + 7 * in.c.count(), in.c.count(), 0.f);  // pass R, A slot 7: lane 1 slot 3
  const Report r = fa::probe::analyse(in, dump);
  ASSERT_EQ(r.diffs.size(), 1u) << listed(r);
  EXPECT_EQ(r.diffs[0].operand, 'A');
  EXPECT_EQ(r.diffs[0].lane, 1);
  EXPECT_EQ(r.diffs[0].slot, 3);
  EXPECT_EQ(r.diffs[0].field, "unread");
}

TEST(ProbeLayout, ValuesNoPassWritesAreCountedAndLocated) {
  const Instr in = instr("mma_m16n8k16_f16");
  std::vector<float> dump = emulate_probe(in, documented_layout(in.name));
  dump[5 * in.c.count() + 9] = std::nanf("");  // the kernel's poison where it wrote nothing
  dump[600 * in.c.count() + 2] = 2.5f;
  const Report r = fa::probe::analyse(in, dump);
  EXPECT_EQ(r.odd_values, 2);
  ASSERT_FALSE(r.diffs.empty());
  EXPECT_EQ(r.diffs[0].field, "value");
  EXPECT_NE(r.diffs[0].probed.find("iteration 5 at D lane 2 register 1"), std::string::npos) << r.diffs[0].probed;
}

TEST(ProbeLayout, AWrongSizedDumpIsRefused) {
  const Instr in = instr("mma_m16n8k16_f16");
  EXPECT_THROW(fa::probe::analyse(in, std::vector<float>(100)), std::invalid_argument);
  const fa::test::TempDir dir;
  const std::string file = dir.path + "/probe_short.f32";
  std::ofstream(file, std::ios::binary) << "12345678";
  try {
    fa::probe::read_dump(file, in, "--raw");
    FAIL() << "an 8-byte dump was read";
  } catch (const fa::InputError& e) {
    EXPECT_EQ(e.field, "--raw");
    EXPECT_NE(std::string(e.what()).find(file + ": field '--raw': 8 bytes; a raw dump of mma_m16n8k16_f16 is 98304"),
              std::string::npos) << e.what();
  }
}

// The plan's order, as docs/probe-layout.md gives the raw dump's: R (A one-hot), C (B one-hot), then
// KA and KB digit by digit, each operand otherwise all 1 or 1 + a digit of its k.
TEST(ProbeLayout, ThePlanRunsRThenCThenKaThenKbDigitByDigit) {
  using fa::probe::probe_input;
  constexpr fa::probe::ProbeShape s{6, 4, 3, 4, 2};  // k < 16 in two base-4 digits
  EXPECT_EQ(fa::probe::probe_iterations(s), (6 + 4) * 3);
  EXPECT_EQ(fa::probe::probe_floats(s), 30 * 3);
  const int k = 13;  // digits 1, 3 (low first)
  EXPECT_EQ(probe_input(s, false, 2, 2, k), 1.f);  // R: A slot 2 hot
  EXPECT_EQ(probe_input(s, false, 2, 3, k), 0.f);
  EXPECT_EQ(probe_input(s, true, 2, 0, k), 1.f);
  EXPECT_EQ(probe_input(s, true, 6 + 3, 3, k), 1.f);  // C: B slot 3 hot, A all 1
  EXPECT_EQ(probe_input(s, true, 6 + 3, 2, k), 0.f);
  EXPECT_EQ(probe_input(s, false, 6 + 3, 5, k), 1.f);
  EXPECT_EQ(probe_input(s, false, 10 + 4, 4, k), 1.f);  // KA digit 0: A slot 4 hot, B = 1 + 1
  EXPECT_EQ(probe_input(s, true, 10 + 4, 0, k), 2.f);
  EXPECT_EQ(probe_input(s, true, 10 + 6 + 4, 0, k), 4.f);  // KA digit 1: B = 1 + 3
  EXPECT_EQ(probe_input(s, true, 22 + 1, 1, k), 1.f);      // KB digit 0: B slot 1 hot, A = 1 + 1
  EXPECT_EQ(probe_input(s, false, 22 + 1, 0, k), 2.f);
  EXPECT_EQ(probe_input(s, false, 22 + 4 + 1, 0, k), 4.f);  // KB digit 1: A = 1 + 3
}

// The FP8 probes feed 0 .. 16 as e4m3 bytes: each must decode (harness/fp8.hpp) to itself in the
// format the arch multiplies, OCP (gfx12) and FNUZ (gfx94x).
TEST(ProbeLayout, ProbeValuesAreExactInBothE4m3Formats) {
  for (int v = 0; v <= 16; ++v) {
    EXPECT_EQ(fa::fp8_to_float(fa::probe::probe_e4m3_bits(v, 7), fa::kE4M3), float(v)) << v;
    EXPECT_EQ(fa::fp8_to_float(fa::probe::probe_e4m3_bits(v, 8), fa::kE4M3Fnuz), float(v)) << v;
  }
}

TEST(ProbeLayout, InstructionsBelongToTheArchsThatHaveThem) {
  using fa::gpu::probe_on_arch;
  EXPECT_TRUE(probe_on_arch(instr("mma_m16n8k16_f16"), "sm_80"));
  EXPECT_TRUE(probe_on_arch(instr("mma_m16n8k16_f16"), "sm_90"));
  EXPECT_FALSE(probe_on_arch(instr("mma_m16n8k16_f16"), "sm_75"));
  EXPECT_TRUE(probe_on_arch(instr("wgmma_m64n128k16_f16"), "sm_90a"));
  EXPECT_FALSE(probe_on_arch(instr("wgmma_m64n128k16_f16"), "sm_80"));
  EXPECT_TRUE(probe_on_arch(instr("mfma_32x32x8_bf16"), "gfx942:sramecc+:xnack-"));
  EXPECT_FALSE(probe_on_arch(instr("mfma_32x32x8_bf16"), "gfx1100"));
  EXPECT_TRUE(probe_on_arch(instr("wmma_16x16x16_f16"), "gfx1100"));
  EXPECT_FALSE(probe_on_arch(instr("wmma_16x16x16_f16"), "gfx942"));
  EXPECT_FALSE(probe_on_arch(instr("wmma_16x16x16_f16"), "gfx1201"));
  EXPECT_TRUE(probe_on_arch(instr("mfma_32x32x16_fp8"), "gfx942"));
  EXPECT_FALSE(probe_on_arch(instr("mfma_32x32x16_fp8"), "gfx90a"));  // no FP8 MFMA
  EXPECT_FALSE(probe_on_arch(instr("mfma_32x32x16_fp8"), "gfx950"));  // OCP, not built (arch table)
  EXPECT_TRUE(probe_on_arch(instr("wmma12_16x16x16_fp8"), "gfx1201"));
  EXPECT_TRUE(probe_on_arch(instr("wmma12_16x16x16_bf16"), "gfx1200"));
  EXPECT_FALSE(probe_on_arch(instr("wmma12_16x16x16_f16"), "gfx1100"));
}
