// Fragment layouts (kernels/fragment_layout.hpp) on the CPU: every element of every operand lives
// in exactly one lane slot (WMMA inputs: in the replicated pair), entries from the vendor tables,
// an emulated tile product per instruction equal to the plain matrix product, and the accumulator
// reuse the mfma and wmma kernels rely on. Plain C++. Run: ctest -R FragmentLayout
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "kernels/fragment_layout.hpp"

using fa::frag::Coord;
using fa::frag::Slot;

namespace {

using LayoutFn = Coord (*)(int lane, int i);

struct Operand {
  LayoutFn at;
  int rows, cols, slots;
};

// One instruction D = A * B + C, A rows x k, B k x cols; `copies`: lanes holding each input element.
struct Instr {
  const char* name;
  int lanes, m, n, k, copies;
  Operand a, b, c;
};

const Instr kMma{"mma_m16n8k16", 32, 16, 8, 16, 1, {fa::frag::mma_m16n8k16_a, 16, 16, 8},
                 {fa::frag::mma_m16n8k16_b, 16, 8, 4}, {fa::frag::mma_m16n8k16_c, 16, 8, 4}};
const Instr kMfma{"mfma_32x32x8", 64, 32, 32, 8, 1, {fa::frag::mfma_32x32x8_a, 32, 8, 4},
                  {fa::frag::mfma_32x32x8_b, 8, 32, 4}, {fa::frag::mfma_32x32x8_c, 32, 32, 16}};
const Instr kWmma{"wmma_16x16x16", 32, 16, 16, 16, 2, {fa::frag::wmma_16x16x16_a, 16, 16, 16},
                  {fa::frag::wmma_16x16x16_b, 16, 16, 16}, {fa::frag::wmma_16x16x16_c, 16, 16, 8}};
const Instr kAll[] = {kMma, kMfma, kWmma};

using Holders = std::map<std::pair<int, int>, std::vector<Slot>>;

// Every (row, col) of the operand and the (lane, slot)s that hold it; fails on an out-of-range coordinate.
Holders holders(const Instr& in, const Operand& op) {
  Holders h;
  for (int lane = 0; lane < in.lanes; ++lane)
    for (int i = 0; i < op.slots; ++i) {
      const Coord c = op.at(lane, i);
      EXPECT_TRUE(c.row >= 0 && c.row < op.rows && c.col >= 0 && c.col < op.cols)
          << in.name << " lane " << lane << " slot " << i << " -> (" << c.row << ", " << c.col << ")";
      h[{c.row, c.col}].push_back(Slot{lane, i});
    }
  return h;
}

using Mat = std::vector<std::vector<double>>;

Mat random_mat(int r, int c, std::mt19937& g) {
  std::uniform_int_distribution<int> d(-4, 4);  // small integers: every product below is exact
  Mat m{size_t(r), std::vector<double>(size_t(c))};
  for (auto& row : m)
    for (auto& x : row) x = d(g);
  return m;
}

using Regs = std::vector<std::vector<double>>;  // [lane][slot]

Regs load(const Instr& in, const Operand& op, const Mat& m) {
  Regs r{size_t(in.lanes), std::vector<double>(size_t(op.slots))};
  for (int lane = 0; lane < in.lanes; ++lane)
    for (int i = 0; i < op.slots; ++i) {
      const Coord c = op.at(lane, i);
      r[lane][i] = m[c.row][c.col];
    }
  return r;
}

// The element (row, col) as the instruction reads it from the registers: every copy must agree
// (a WMMA input whose half-waves differ is undefined; here it fails the test).
double gather(const Holders& h, const Regs& r, int row, int col) {
  const auto& slots = h.at({row, col});
  const double v = r[slots[0].lane][slots[0].slot];
  for (const Slot& s : slots) EXPECT_EQ(r[s.lane][s.slot], v) << "copies of (" << row << ", " << col << ") differ";
  return v;
}

// What the instruction computes, lane by lane: each accumulator slot is its (i, j)'s dot product
// over k of A and B gathered from the registers; returns the accumulator registers.
Regs emulate(const Instr& in, const Regs& a, const Regs& b) {
  const Holders ha = holders(in, in.a), hb = holders(in, in.b);
  Regs d{size_t(in.lanes), std::vector<double>(size_t(in.c.slots))};
  for (int lane = 0; lane < in.lanes; ++lane)
    for (int s = 0; s < in.c.slots; ++s) {
      const Coord ij = in.c.at(lane, s);
      double acc = 0;
      for (int k = 0; k < in.k; ++k) acc += gather(ha, a, ij.row, k) * gather(hb, b, k, ij.col);
      d[lane][s] = acc;
    }
  return d;
}

Mat scatter(const Instr& in, const Regs& d) {
  Mat m{size_t(in.m), std::vector<double>(size_t(in.n), 0.0)};
  for (int lane = 0; lane < in.lanes; ++lane)
    for (int s = 0; s < in.c.slots; ++s) {
      const Coord c = in.c.at(lane, s);
      m[c.row][c.col] = d[lane][s];
    }
  return m;
}

Mat matmul(const Mat& a, const Mat& b) {
  Mat m(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < b[0].size(); ++j)
      for (size_t k = 0; k < b.size(); ++k) m[i][j] += a[i][k] * b[k][j];
  return m;
}

bool holds(LayoutFn f, int lane, int slot, int row, int col) {
  const Coord c = f(lane, slot);
  return c.row == row && c.col == col;
}

}  // namespace

TEST(FragmentLayout, EveryAccumulatorElementIsHeldByExactlyOneLaneSlot) {
  for (const Instr& in : kAll) {
    const Holders h = holders(in, in.c);
    EXPECT_EQ(int(h.size()), in.m * in.n) << in.name;
    for (const auto& [rc, slots] : h) EXPECT_EQ(slots.size(), 1u) << in.name << " C(" << rc.first << ", " << rc.second << ")";
  }
}

TEST(FragmentLayout, EveryInputElementIsHeldOnceOrByTheWmmaReplicatedPair) {
  for (const Instr& in : kAll)
    for (const Operand* op : {&in.a, &in.b}) {
      const Holders h = holders(in, *op);
      EXPECT_EQ(int(h.size()), op->rows * op->cols) << in.name;
      for (const auto& [rc, slots] : h) {
        ASSERT_EQ(int(slots.size()), in.copies) << in.name << " (" << rc.first << ", " << rc.second << ")";
        if (in.copies == 2) {  // RDNA3: lanes l and l + 16, the same slot
          EXPECT_EQ(slots[1].lane, slots[0].lane + 16) << in.name;
          EXPECT_EQ(slots[1].slot, slots[0].slot) << in.name;
        }
      }
    }
}

// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" (the fragment figures:
// groupID = lane >> 2, threadID_in_group = lane % 4).
TEST(FragmentLayout, MmaM16n8k16MatchesThePtxFragmentFigures) {
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_a, 0, 0, 0, 0));   // a0: (groupID, 2 * tig)
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_a, 0, 2, 8, 0));   // a2: row groupID + 8
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_a, 0, 4, 0, 8));   // a4: col 2 * tig + 8
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_a, 5, 3, 9, 3));   // lane 5 (group 1, tig 1), a3
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_b, 4, 2, 8, 1));   // b2 of lane 4: row 2 * tig + 8, col groupID
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_c, 4, 2, 9, 0));   // c2 of lane 4: row groupID + 8
  EXPECT_TRUE(holds(fa::frag::mma_m16n8k16_c, 31, 1, 7, 7));  // c1 of lane 31
}

// AMD Matrix Instruction Calculator (ROCm/amd_matrix_instruction_calculator 2ef9189),
// `-a cdna3 -i v_mfma_f32_32x32x8_f16 --get-register`: A[13][6] = v1{45}.[15:0] (slot 2 * 1 + 0),
// B[3][20] = v1{20}.[31:16] (slot 3), D[13][7] = v5{39}, D[31][31] = v15{63}, D[4][0] = v0{32}.
TEST(FragmentLayout, Mfma32x32x8MatchesTheMatrixInstructionCalculator) {
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x8_a, 45, 2, 13, 6));
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x8_b, 20, 3, 3, 20));
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x8_c, 39, 5, 13, 7));
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x8_c, 63, 15, 31, 31));
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x8_c, 32, 0, 4, 0));
}

// The calculator, `-a rdna3 -i v_wmma_f32_16x16x16_f16 --get-register` (wave32):
// A[3][5] = v2{3}.[31:16] and v2{19}.[31:16] (slot 5), B[14][9] = v7{25}.[15:0] (slot 14),
// D[5][3] = v2{19}, D[15][15] = v7{31}.
TEST(FragmentLayout, Wmma16x16x16MatchesTheMatrixInstructionCalculator) {
  EXPECT_TRUE(holds(fa::frag::wmma_16x16x16_a, 3, 5, 3, 5));
  EXPECT_TRUE(holds(fa::frag::wmma_16x16x16_a, 19, 5, 3, 5));
  EXPECT_TRUE(holds(fa::frag::wmma_16x16x16_b, 25, 14, 14, 9));
  EXPECT_TRUE(holds(fa::frag::wmma_16x16x16_c, 19, 2, 5, 3));
  EXPECT_TRUE(holds(fa::frag::wmma_16x16x16_c, 31, 7, 15, 15));
}

TEST(FragmentLayout, AnEmulatedTileProductThroughTheLayoutsEqualsTheMatrixProduct) {
  std::mt19937 g(7);
  for (const Instr& in : kAll) {
    const Mat a = random_mat(in.m, in.k, g), b = random_mat(in.k, in.n, g);
    const Mat d = scatter(in, emulate(in, load(in, in.a, a), load(in, in.b, b)));
    EXPECT_EQ(d, matmul(a, b)) << in.name;
  }
}

// mfma.hip feeds S^T = K Q^T's accumulator straight into V^T P^T as B, 8 keys (k) a block.
TEST(FragmentLayout, MfmaAccumulatorSlotsAreTheNextProductsBOperand) {
  for (int lane = 0; lane < 64; ++lane)
    for (int kb = 0; kb < 4; ++kb)
      for (int i = 0; i < 4; ++i) {
        const Slot src = fa::frag::mfma_32x32x8_b_from_c(lane, kb, i);
        const Coord want = fa::frag::mfma_32x32x8_b(lane, i), got = fa::frag::mfma_32x32x8_c(src.lane, src.slot);
        EXPECT_EQ(src.lane, lane);
        EXPECT_EQ(got.row, 8 * kb + want.row) << "lane " << lane << " kb " << kb << " slot " << i;
        EXPECT_EQ(got.col, want.col) << "lane " << lane << " kb " << kb << " slot " << i;
      }
}

// wmma.hip exchanges P across the half-waves (lane ^ 16) to build the replicated B operand; the
// chained product (K Q^T)^T-as-B must equal the plain product of V^T with the first result.
TEST(FragmentLayout, WmmaAccumulatorExchangedAcrossHalfWavesIsTheNextProductsBOperand) {
  std::mt19937 g(11);
  const Mat k = random_mat(16, 16, g), qt = random_mat(16, 16, g), vt = random_mat(16, 16, g);
  const Regs s = emulate(kWmma, load(kWmma, kWmma.a, k), load(kWmma, kWmma.b, qt));
  Regs p(32, std::vector<double>(16));
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 16; ++i) {
      const Slot src = fa::frag::wmma_16x16x16_b_from_c(lane, i);
      EXPECT_TRUE(src.lane == lane || src.lane == (lane ^ 16)) << "lane " << lane << " slot " << i;
      p[lane][i] = s[src.lane][src.slot];
    }
  const Mat o = scatter(kWmma, emulate(kWmma, load(kWmma, kWmma.a, vt), p));
  EXPECT_EQ(o, matmul(vt, matmul(k, qt)));
}
