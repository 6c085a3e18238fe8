// Fragment layouts (kernels/device/fragment_layout.hpp) on the CPU: every element of every operand lives
// in exactly one lane slot (WMMA inputs: in the replicated pair), entries from the vendor tables,
// an emulated tile product per instruction equal to the plain matrix product, and the accumulator
// reuse the mfma and wmma kernels rely on. Plain C++. Run: ctest -R FragmentLayout
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "kernels/device/fragment_layout.hpp"

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
const Instr kMfma8{"mfma_32x32x16_fp8", 64, 32, 32, 16, 1, {fa::frag::mfma_32x32x16_a8, 32, 16, 8},
                   {fa::frag::mfma_32x32x16_b8, 16, 32, 8}, {fa::frag::mfma_32x32x8_c, 32, 32, 16}};
const Instr kWmma12{"wmma12_16x16x16", 32, 16, 16, 16, 1, {fa::frag::wmma12_16x16x16_a, 16, 16, 8},
                    {fa::frag::wmma12_16x16x16_b, 16, 16, 8}, {fa::frag::wmma12_16x16x16_c, 16, 16, 8}};
const Instr kWmma12x8{"wmma12_16x16x16_fp8", 32, 16, 16, 16, 1, {fa::frag::wmma12_16x16x16_a8, 16, 16, 8},
                      {fa::frag::wmma12_16x16x16_b8, 16, 16, 8}, {fa::frag::wmma12_16x16x16_c, 16, 16, 8}};
const Instr kAll[] = {kMma, kMfma, kWmma, kMfma8, kWmma12, kWmma12x8};

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

// The calculator, `-a cdna3 -i v_mfma_f32_32x32x16_fp8_fp8 --get-register`: A[13][11] = v0{45}.[31:24]
// (slot 3), B[3][20] = v0{20}.[31:24] (slot 3), D[13][7] = v5{39} (as 32x32x8's).
TEST(FragmentLayout, Mfma32x32x16Fp8MatchesTheMatrixInstructionCalculator) {
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x16_a8, 45, 3, 13, 11));
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x16_b8, 20, 3, 3, 20));
  EXPECT_TRUE(holds(fa::frag::mfma_32x32x8_c, 39, 5, 13, 7));
}

// The calculator, `-a rdna4 -w 32 --get-register`. v_wmma_f32_16x16x16_f16: A[0][4] = v0{16}.[15:0]
// (slot 0), A[0][8] = v2{0}.[15:0] (slot 4), A[5][13] = v2{21}.[31:16] (slot 5), A[3][5] =
// v0{19}.[31:16] (slot 1), B[9][14] = v2{14}.[31:16] (slot 5), D[5][3] = v5{3}, D[9][3] = v1{19},
// D[15][15] = v7{31}. v_wmma_f32_16x16x16_fp8_fp8: A[3][5] = v1{3}.[15:8] (slot 5), A[3][13] =
// v1{19}.[15:8] (slot 5), A[2][6] = v1{2}.[23:16] (slot 6), B[13][2] = v1{18}.[15:8] (slot 5).
TEST(FragmentLayout, Wmma12MatchesTheMatrixInstructionCalculator) {
  using namespace fa::frag;
  EXPECT_TRUE(holds(wmma12_16x16x16_a, 16, 0, 0, 4));
  EXPECT_TRUE(holds(wmma12_16x16x16_a, 0, 4, 0, 8));
  EXPECT_TRUE(holds(wmma12_16x16x16_a, 21, 5, 5, 13));
  EXPECT_TRUE(holds(wmma12_16x16x16_a, 19, 1, 3, 5));
  EXPECT_TRUE(holds(wmma12_16x16x16_b, 14, 5, 9, 14));
  EXPECT_TRUE(holds(wmma12_16x16x16_c, 3, 5, 5, 3));
  EXPECT_TRUE(holds(wmma12_16x16x16_c, 19, 1, 9, 3));
  EXPECT_TRUE(holds(wmma12_16x16x16_c, 31, 7, 15, 15));
  EXPECT_TRUE(holds(wmma12_16x16x16_a8, 3, 5, 3, 5));
  EXPECT_TRUE(holds(wmma12_16x16x16_a8, 19, 5, 3, 13));
  EXPECT_TRUE(holds(wmma12_16x16x16_a8, 2, 6, 2, 6));
  EXPECT_TRUE(holds(wmma12_16x16x16_b8, 18, 5, 13, 2));
}

TEST(FragmentLayout, AnEmulatedTileProductThroughTheLayoutsEqualsTheMatrixProduct) {
  std::mt19937 g(7);
  for (const Instr& in : kAll) {
    const Mat a = random_mat(in.m, in.k, g), b = random_mat(in.k, in.n, g);
    const Mat d = scatter(in, emulate(in, load(in, in.a, a), load(in, in.b, b)));
    EXPECT_EQ(d, matmul(a, b)) << in.name;
  }
}

// fa_mfma.hip feeds S^T = K Q^T's accumulator straight into V^T P^T as B, 8 keys (k) a block.
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

// fa_mfma.hip's FP8 instances feed S^T's accumulator to V^T P^T as the 8-bit B operand (16 keys a
// block) from the lane's own slots, and read V^T's A operand at those slots' keys (C rows): the
// chained product equals V^T (K Q^T). So do fa_wmma.hip's gfx12 instances (16-bit and 8-bit).
TEST(FragmentLayout, AccumulatorSlotsAsBWithAReadAtTheirRowsGiveTheChainedProduct) {
  struct Chain {
    const Instr* in;
    Slot (*from_c)(int lane, int kb, int i);
  };
  const Chain chains[] = {{&kMfma8, fa::frag::mfma_32x32x16_b8_from_c},
                          {&kWmma12, [](int lane, int, int e) { return fa::frag::wmma12_16x16x16_b_from_c(lane, e); }},
                          {&kWmma12x8, [](int lane, int, int e) { return fa::frag::wmma12_16x16x16_b_from_c(lane, e); }}};
  std::mt19937 g(17);
  for (const Chain& ch : chains) {
    const Instr& in = *ch.in;
    // S^T = K Q^T over `keys` rows (M of the first product), then O^T = V^T P^T, K = keys in blocks.
    const int keys = in.m, blocks = keys / in.k;
    const Mat k = random_mat(keys, in.k, g), qt = random_mat(in.k, in.n, g), vt = random_mat(in.m, keys, g);
    const Regs s = emulate(in, load(in, in.a, k), load(in, in.b, qt));
    const Holders ha = holders(in, in.a), hb = holders(in, in.b);
    Mat o(size_t(in.m), std::vector<double>(size_t(in.n), 0.0));
    for (int kb = 0; kb < blocks; ++kb) {
      Regs p(size_t(in.lanes), std::vector<double>(size_t(in.b.slots))), a(p.size(), std::vector<double>(size_t(in.a.slots)));
      for (int lane = 0; lane < in.lanes; ++lane)
        for (int i = 0; i < in.b.slots; ++i) {
          const Slot src = ch.from_c(lane, kb, i);
          EXPECT_EQ(src.lane, lane) << in.name << ": P stays in its lane";
          p[lane][i] = s[src.lane][src.slot];
        }
      // A slot (lane, i) pairs with the B slots of its k; its key is theirs: the C row they came from.
      for (int lane = 0; lane < in.lanes; ++lane)
        for (int i = 0; i < in.a.slots; ++i) {
          const Coord ak = in.a.at(lane, i);
          const Slot b = hb.at({ak.col, 0})[0];
          const int key = in.c.at(b.lane, ch.from_c(b.lane, kb, b.slot).slot).row;
          a[lane][i] = vt[ak.row][key];
        }
      const Mat part = scatter(in, emulate(in, a, p));
      for (int r = 0; r < in.m; ++r)
        for (int c = 0; c < in.n; ++c) o[r][c] += part[r][c];
    }
    EXPECT_EQ(o, matmul(vt, matmul(k, qt))) << in.name;
  }
}

// fa_wmma.hip exchanges P across the half-waves (lane ^ 16) to build the replicated B operand; the
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

// fa_mma_decode.hip's narrow instances compute S^T = K Q^T (16 keys x 8 query rows), turn each
// 8x8 half of its accumulator into P^T's B operand with movmatrix.trans, and take O^T = V^T P^T:
// B slot i of a lane is register i / 2 (the accumulator's rows 8 (i / 2) ..) at half i % 2, which
// movmatrix fetched from the accumulator's (row, col) = movmatrix_m8n8_trans(lane, i % 2) of that
// half, held by lane 4 row + col / 2, slot 2 (i / 2) + col % 2 (the accumulator's layout).
TEST(FragmentLayout, MmaAccumulatorTransposedByMovmatrixIsTheNextProductsBOperand) {
  EXPECT_EQ(fa::frag::movmatrix_m8n8_trans(1, 0).row, 2);  // lane 1 takes column 0 of rows 2, 3
  EXPECT_EQ(fa::frag::movmatrix_m8n8_trans(1, 1).row, 3);
  EXPECT_EQ(fa::frag::movmatrix_m8n8_trans(13, 1).col, 3);
  std::mt19937 g(13);
  const Mat k = random_mat(16, 16, g), qt = random_mat(16, 8, g), vt = random_mat(16, 16, g);
  const Regs s = emulate(kMma, load(kMma, kMma.a, k), load(kMma, kMma.b, qt));
  Regs p(32, std::vector<double>(4));
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const Coord e = fa::frag::movmatrix_m8n8_trans(lane, i % 2);
      const Coord c = fa::frag::mma_m16n8k16_c(4 * e.row + e.col / 2, 2 * (i / 2) + e.col % 2);
      EXPECT_EQ(c.row, 8 * (i / 2) + e.row) << "lane " << lane << " slot " << i;
      EXPECT_EQ(c.col, e.col) << "lane " << lane << " slot " << i;
      p[lane][i] = s[4 * e.row + e.col / 2][2 * (i / 2) + e.col % 2];
    }
  const Mat o = scatter(kMma, emulate(kMma, load(kMma, kMma.a, vt), p));
  EXPECT_EQ(o, matmul(vt, matmul(k, qt)));
}

// ---- wgmma (sm_90a): register fragments and the swizzled shared-memory layout ----------------

namespace {

// PTX ISA, "Matrix Descriptor" / "Shared Memory Matrix Layout", as CUTLASS writes the canonical
// 128-byte-swizzle layouts (cute/atom/mma_traits_sm90_gmma.hpp, make_gmma_desc), in elements with
// T = 8 16-bit elements (16 bytes): K-major ((8,m),(T,2k)):((8T,SBO),(1,T)), MN-major
// ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)); the address then goes through Swizzle<3,4,3> (bits 4-6 ^=
// bits 7-9). These give the byte the hardware reads for element (mn, k) of one k16 step from a
// descriptor (start, LBO, SBO): independent of wgmma_sw128_offset, which says where the kernels store.
int swizzle128(int addr) { return addr ^ (((addr >> 7) & 7) << 4); }
int kmajor_addr(int start, fa::frag::DescStrides d, int mn, int k) {
  return swizzle128(start + (mn % 8) * 128 + (mn / 8) * d.sbo + k * 2);
}
int mnmajor_addr(int start, fa::frag::DescStrides d, int mn, int k) {
  return swizzle128(start + (mn % 64) * 2 + (mn / 64) * d.lbo + (k % 8) * 128 + (k / 8) * d.sbo);
}

// A tile of `rows` x `cols` 16-bit values stored the kernels' way; returns [byte / 2] -> value.
std::vector<double> store_sw128(const Mat& m) {
  const int rows = int(m.size()), cols = int(m[0].size());
  std::vector<double> smem(size_t(rows * cols), -1e9);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int off = fa::frag::wgmma_sw128_offset(r, c, rows);
      EXPECT_TRUE(off % 2 == 0 && off >= 0 && off < rows * cols * 2) << r << ", " << c;
      EXPECT_EQ(smem[size_t(off / 2)], -1e9) << "two elements at byte " << off;
      smem[size_t(off / 2)] = m[r][c];
    }
  return smem;
}

}  // namespace

// PTX ISA, "Register Fragments and Shared Memory Matrix Layouts", figures "WGMMA .m64nNk16
// register fragment layout for accumulator matrix D" and "... for matrix A": warp w of the
// warpgroup holds rows 16w..16w+15; d0,d1 row T/4 cols 2(T%4)+{0,1}; d2,d3 row T/4 + 8; d4.. the next
// 8 columns; a0,a1 row T/4, a2,a3 row T/4 + 8, a4..a7 the same 8 columns on.
TEST(FragmentLayout, WgmmaM64nNk16MatchesThePtxFragmentFigures) {
  using fa::frag::wgmma_m64nNk16_a;
  using fa::frag::wgmma_m64nNk16_c;
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 0, 1, 0, 1));
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 0, 2, 8, 0));
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 0, 4, 0, 8));
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 1, 0, 0, 2));
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 4, 0, 1, 0));
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 32, 0, 16, 0));
  EXPECT_TRUE(holds(wgmma_m64nNk16_c, 127, 63, 63, 127));  // the last register of N = 128
  EXPECT_TRUE(holds(wgmma_m64nNk16_a, 0, 2, 8, 0));
  EXPECT_TRUE(holds(wgmma_m64nNk16_a, 0, 4, 0, 8));
  EXPECT_TRUE(holds(wgmma_m64nNk16_a, 37, 3, 25, 3));  // warp 1, lane 5: row 16 + 1 + 8, col 2 + 1
  for (int n : {64, 128}) {  // every accumulator element once, every A element once
    std::map<std::pair<int, int>, int> c, a;
    for (int t = 0; t < 128; ++t) {
      for (int i = 0; i < n / 2; ++i) ++c[{wgmma_m64nNk16_c(t, i).row, wgmma_m64nNk16_c(t, i).col}];
      for (int i = 0; i < 8; ++i) ++a[{wgmma_m64nNk16_a(t, i).row, wgmma_m64nNk16_a(t, i).col}];
    }
    EXPECT_EQ(int(c.size()), 64 * n);
    EXPECT_EQ(int(a.size()), 64 * 16);
    for (const auto& [rc, count] : c) EXPECT_EQ(count, 1) << rc.first << ", " << rc.second;
    for (const auto& [rc, count] : a) EXPECT_EQ(count, 1) << rc.first << ", " << rc.second;
    EXPECT_LT(c.rbegin()->first.first, 64);
    EXPECT_LT(c.rbegin()->first.second, n);
  }
}

// The kernel's descriptors (start = the tile's offset of the step's first row and column, the
// strides of wgmma_sw128_kmajor / _mnmajor) make the hardware read exactly the element the
// kernel's copies stored, for every k16 step of Q and K (K-major) and V (MN-major) at D 64 and 128.
TEST(FragmentLayout, WgmmaDescriptorsReadWhatTheSwizzledCopiesStored) {
  for (const int rows : {64, 128})
    for (const int d : {64, 128}) {
      const fa::frag::DescStrides km = fa::frag::wgmma_sw128_kmajor(), mn = fa::frag::wgmma_sw128_mnmajor(rows);
      for (int r0 = 0; r0 < rows; r0 += 64)  // a warpgroup's 64 rows of Q, or all of K (N = rows)
        for (int kk = 0; kk < d / 16; ++kk) {
          const int start = fa::frag::wgmma_sw128_offset(r0, 16 * kk, rows);
          for (int m = 0; m < std::min(64, rows - r0); ++m)
            for (int k = 0; k < 16; ++k)
              ASSERT_EQ(kmajor_addr(start, km, m, k), fa::frag::wgmma_sw128_offset(r0 + m, 16 * kk + k, rows))
                  << "K-major rows " << rows << " D " << d << " row " << r0 + m << " k step " << kk << " k " << k;
        }
      for (int kn = 0; kn < rows / 16; ++kn) {  // V: k16 steps over the keys, N = d
        const int start = fa::frag::wgmma_sw128_offset(16 * kn, 0, rows);
        for (int n = 0; n < d; ++n)
          for (int k = 0; k < 16; ++k)
            ASSERT_EQ(mnmajor_addr(start, mn, n, k), fa::frag::wgmma_sw128_offset(16 * kn + k, n, rows))
                << "MN-major keys " << rows << " D " << d << " key " << 16 * kn + k << " col " << n;
      }
    }
}

// One P V step of the kernel, emulated: P (64 x 16) in registers by the A layout, V (16 keys x D)
// read from the swizzled tile through the MN-major descriptor; the accumulator, scattered by the C
// layout, equals the matrix product. And one S = Q K^T step with both operands through K-major
// descriptors.
TEST(FragmentLayout, AnEmulatedWgmmaStepThroughLayoutsAndDescriptorsEqualsTheMatrixProduct) {
  std::mt19937 g(13);
  const int n = 128, keys = 128;
  const Mat p = random_mat(64, 16, g), v = random_mat(keys, n, g);
  const std::vector<double> vs = store_sw128(v);
  const int kn = 3, start = fa::frag::wgmma_sw128_offset(16 * kn, 0, keys);
  Regs a(128, std::vector<double>(8));  // P loaded into the warpgroup's registers
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 8; ++i) a[t][i] = p[fa::frag::wgmma_m64nNk16_a(t, i).row][fa::frag::wgmma_m64nNk16_a(t, i).col];
  std::map<std::pair<int, int>, Slot> a_at;  // which register holds A(row, k)
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 8; ++i) a_at[{fa::frag::wgmma_m64nNk16_a(t, i).row, fa::frag::wgmma_m64nNk16_a(t, i).col}] = {t, i};
  Mat o(64, std::vector<double>(size_t(n), 0.0));
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < n / 2; ++i) {
      const Coord c = fa::frag::wgmma_m64nNk16_c(t, i);
      for (int k = 0; k < 16; ++k) {
        const Slot h = a_at.at({c.row, k});
        o[c.row][c.col] += a[h.lane][h.slot] * vs[size_t(mnmajor_addr(start, fa::frag::wgmma_sw128_mnmajor(keys), c.col, k) / 2)];
      }
    }
  Mat vk(16, std::vector<double>(size_t(n)));
  for (int k = 0; k < 16; ++k) vk[k] = v[16 * kn + k];
  EXPECT_EQ(o, matmul(p, vk));

  const Mat q = random_mat(128, 64, g), kt = random_mat(keys, 64, g);  // D = 64, warpgroup 1
  const std::vector<double> qs = store_sw128(q), ks = store_sw128(kt);
  Mat s(64, std::vector<double>(size_t(keys), 0.0)), want(64, std::vector<double>(size_t(keys), 0.0));
  for (int kk = 0; kk < 4; ++kk) {
    const int qa = fa::frag::wgmma_sw128_offset(64, 16 * kk, 128), kb = fa::frag::wgmma_sw128_offset(0, 16 * kk, keys);
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < keys / 2; ++i) {
        const Coord c = fa::frag::wgmma_m64nNk16_c(t, i);
        for (int k = 0; k < 16; ++k)
          s[c.row][c.col] += qs[size_t(kmajor_addr(qa, fa::frag::wgmma_sw128_kmajor(), c.row, k) / 2)] *
                             ks[size_t(kmajor_addr(kb, fa::frag::wgmma_sw128_kmajor(), c.col, k) / 2)];
      }
  }
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < keys; ++j)
      for (int k = 0; k < 64; ++k) want[i][j] += q[64 + i][k] * kt[j][k];
  EXPECT_EQ(s, want);
}
