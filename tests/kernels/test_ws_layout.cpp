// mma's sm_90 kernel's layout arithmetic (kernels/mma/ws_layout.hpp) on the CPU: the swizzled tile
// is the address-bit swizzle the TMA and wgmma apply, every element has one slot, the TMA boxes tile
// it exactly, descriptors encode what they should, and the addresses wgmma reads through a
// descriptor (its canonical layouts, emulated) are the elements the tile layout put there, for every
// head dim of the tile table and every k16 step of both GEMMs. Plain C++. Run: ctest -R WsLayout
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "kernels/device/fragment_layout.hpp"
#include "kernels/mma/ws_fp8.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/ws_tile_traits.hpp"

using namespace fa::ws;

namespace {

// Every (D, rows) the kernel lays out: Q tiles of BM rows, K/V tiles of BN rows, per table row.
struct Case {
  int D, rows;
};
std::vector<Case> table_cases() {
  std::vector<Case> cs;
  for (int D = 16; D <= 256; D += 16)
    for (bool causal : {false, true})
      if (ws_has_row(D, 2)) {
        const WsTileRow r = ws_tile_row(D, 2, causal);
        cs.push_back({D, r.BM});
        cs.push_back({D, r.BN});
      }
  return cs;
}

// Linear (unswizzled) byte offset of (r, c) in the column-block layout.
int linear_offset(int r, int c, int rows, int sw) {
  const int bc = block_cols(sw);
  return (c / bc) * rows * sw + r * sw + (c % bc) * 2;
}

// The byte address wgmma reads for element (i, k) (i: row of A or of K-major B, 0..rows-1 from the
// descriptor's start; k: 0..15) of a K-major operand: canonical ((8, n), 2) : ((SW/16, SBO), 1) in
// 16-byte units from the start, then the swizzle on the address (CUTLASS make_gmma_desc<Major::K>).
uint32_t kmajor_read(uint64_t desc, int i, int k) {
  const DescFields f = decode_desc(desc);
  const uint32_t unit = uint32_t((i % 8) * (f.sw / 16)) * 16 + uint32_t(i / 8) * f.sbo + uint32_t(k / 8) * 16;
  return swizzle_address(f.start + unit, f.sw) + uint32_t(k % 8) * 2;
}
// The same for an MN-major operand, element (n, k): ((SW/16, n), (8, k)) : ((1, LBO), (SW/16, SBO))
// (make_gmma_desc<Major::MN>).
uint32_t mnmajor_read(uint64_t desc, int n, int k) {
  const DescFields f = decode_desc(desc);
  const int w = f.sw / 16, n16 = n / 8;
  const uint32_t unit = uint32_t(n16 % w) * 16 + uint32_t(n16 / w) * f.lbo + uint32_t((k % 8) * w) * 16 + uint32_t(k / 8) * f.sbo;
  return swizzle_address(f.start + unit, f.sw) + uint32_t(n % 8) * 2;
}

}  // namespace

TEST(WsLayout, TheTableUsesThe128ByteSwizzleWherePossibleAnd64ForD96) {
  EXPECT_EQ(swizzle_bytes(64), 128);
  EXPECT_EQ(swizzle_bytes(128), 128);
  EXPECT_EQ(swizzle_bytes(256), 128);
  EXPECT_EQ(swizzle_bytes(96), 64);
  EXPECT_EQ(swizzle_bytes(80), 0) << "D = 80 has no 64- or 128-byte swizzle: the gate refuses it";
  // FP8's V^T rows (BN bytes, BN / 2 columns) also take the 32-byte swizzle; Q, K and V rows do not.
  EXPECT_EQ(swizzle_bytes_vt(64), 128) << "128 keys";
  EXPECT_EQ(swizzle_bytes_vt(96), 64) << "192 keys";
  EXPECT_EQ(swizzle_bytes_vt(112), 32) << "224 keys";
  EXPECT_EQ(swizzle_bytes_vt(40), 0) << "80 keys: no 32-byte span divides them";
  TmaTile t = tma_tile_vt(224, 128, 896, 2, 1);
  EXPECT_EQ(t.swizzle, 32);
  EXPECT_EQ(tma_tile_problem(t), nullptr);
  t.walks_cols = false;  // a Q/K/V tile of 32-byte rows: the kernel's Q K^T and P V descriptors take none
  EXPECT_NE(tma_tile_problem(t), nullptr);
}

// FP8's P V: B = V^T (D rows of BN key bytes, K-major, the swizzle of its rows) at each k32 step kn,
// as the consumers' descriptors point into it (kmajor_start with V^T's swizzle, K-major strides):
// wgmma's reads are the tile's bytes fp8_vt_offset puts there, for every FP8 row, the pre-pass
// instances' wider tiles (224 keys at D = 128: the 32-byte swizzle) included.
TEST(WsLayout, WgmmaReadsOfFp8VtThroughItsDescriptorsAreTheTilesBytes) {
  const uint32_t base = 7 * 1024;
  for (int D : {64, 128, 256})
    for (bool prepass : {false, true}) {
      const WsTileRow r = D == 256 ? kWsFp8D256Row : ws_tile_row(D, 1, false, prepass);
      const int sw = swizzle_bytes_vt(r.BN / 2);
      ASSERT_GT(sw, 0) << "D " << D;
      const DescStrides st = kmajor_strides(sw);
      for (int kn = 0; kn < r.BN / 32; ++kn) {
        const uint64_t db = gmma_desc(base + uint32_t(kmajor_start(0, kn, D, sw)), st.lbo, st.sbo, sw);
        for (int n = 0; n < D; ++n)
          for (int k = 0; k < 16; ++k)  // 16-bit columns: key bytes 2 k and 2 k + 1 of the step
            ASSERT_EQ(kmajor_read(db, n, k), base + uint32_t(fp8_vt_offset(n, 32 * kn + 2 * k, r.BN, D)))
                << "D " << D << " BN " << r.BN << " kn " << kn << " (" << n << ", " << k << ")";
      }
    }
}

TEST(WsLayout, TheTileOffsetIsTheHardwareAddressSwizzleOfTheColumnBlockLayout) {
  for (const Case& cs : table_cases()) {
    const int sw = swizzle_bytes(cs.D);
    ASSERT_EQ(cs.rows * sw % swizzle_period(sw), 0) << "column blocks start on the swizzle period";
    for (int r = 0; r < cs.rows; ++r)
      for (int c = 0; c < cs.D; ++c)
        ASSERT_EQ(uint32_t(sw_offset(r, c, cs.rows, sw)), swizzle_address(uint32_t(linear_offset(r, c, cs.rows, sw)), sw))
            << "D " << cs.D << " rows " << cs.rows << " (" << r << ", " << c << ")";
  }
}

TEST(WsLayout, EveryElementOfATileHasItsOwnTwoBytes) {
  for (const Case& cs : table_cases()) {
    const int sw = swizzle_bytes(cs.D);
    std::set<int> seen;
    for (int r = 0; r < cs.rows; ++r)
      for (int c = 0; c < cs.D; ++c) {
        const int o = sw_offset(r, c, cs.rows, sw);
        ASSERT_TRUE(o >= 0 && o < cs.rows * cs.D * 2 && o % 2 == 0) << o;
        ASSERT_TRUE(seen.insert(o).second) << "D " << cs.D << " (" << r << ", " << c << ") collides";
      }
  }
}

TEST(WsLayout, The128ByteTileIsTheMmaKernelsLayout) {
  // mma's wgmma kernel (tested on the H100) fills its tiles with frag::wgmma_sw128_offset.
  for (int rows : {64, 80, 128})
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < 256; ++c) ASSERT_EQ(sw_offset(r, c, rows, 128), fa::frag::wgmma_sw128_offset(r, c, rows));
}

TEST(WsLayout, DescriptorsEncodeStartStridesAndTheSwizzleLayoutType) {
  const uint64_t d = gmma_desc(0x12340u, 16u, 1024u, 128);
  EXPECT_EQ(d & 0x3FFFu, 0x1234u) << "start address >> 4 in bits 0-13";
  EXPECT_EQ((d >> 16) & 0x3FFFu, 1u) << "LBO >> 4 in bits 16-29";
  EXPECT_EQ((d >> 32) & 0x3FFFu, 64u) << "SBO >> 4 in bits 32-45";
  EXPECT_EQ((d >> 49) & 7u, 0u) << "base offset 0";
  EXPECT_EQ(d >> 62, 1u) << "128-byte swizzle is layout type 1";
  EXPECT_EQ(gmma_desc(0, 16, 512, 64) >> 62, 2u) << "64-byte swizzle is layout type 2";
  const DescFields f = decode_desc(gmma_desc(0x3F800u, 80u * 128u, 1024u, 128));
  EXPECT_EQ(f.start, 0x3F800u);
  EXPECT_EQ(f.lbo, 80u * 128u);
  EXPECT_EQ(f.sbo, 1024u);
  EXPECT_EQ(f.sw, 128);
  // The largest offsets the kernel encodes fit the 14-bit fields: V's LBO (BN * SW) and any start
  // below the 227 KB of shared memory.
  for (const Case& cs : table_cases()) EXPECT_LT(uint32_t(cs.rows * swizzle_bytes(cs.D)) >> 4, 1u << 14);
  EXPECT_LT(uint32_t(kMaxDynamicSmem) >> 4, 1u << 14);
}

TEST(WsLayout, WgmmaReadsOfQAndKThroughTheirDescriptorsAreTheTilesElements) {
  // S = Q K^T: A = the warpgroup's 64 rows of Q (rows 64 cw ..), B = all BN rows of K, K-major, at
  // each k16 step kk. A nonzero tile base checks that only offsets, not absolute addresses, matter.
  const uint32_t base = 3 * 1024;
  for (int D = 16; D <= 256; D += 16)
    for (bool causal : {false, true}) {
      if (!ws_has_row(D, 2)) continue;
      const WsTileRow row = ws_tile_row(D, 2, causal);
      const int sw = swizzle_bytes(D);
      const DescStrides st = kmajor_strides(sw);
      for (int kk = 0; kk < D / 16; ++kk) {
        for (int cw = 0; cw < row.BM / 64; ++cw) {
          const uint64_t da = gmma_desc(base + uint32_t(kmajor_start(64 * cw, kk, row.BM, sw)), st.lbo, st.sbo, sw);
          for (int i = 0; i < 64; ++i)
            for (int k = 0; k < 16; ++k)
              ASSERT_EQ(kmajor_read(da, i, k), base + uint32_t(sw_offset(64 * cw + i, 16 * kk + k, row.BM, sw)))
                  << "Q: D " << D << " cw " << cw << " kk " << kk << " (" << i << ", " << k << ")";
        }
        const uint64_t db = gmma_desc(base + uint32_t(kmajor_start(0, kk, row.BN, sw)), st.lbo, st.sbo, sw);
        for (int n = 0; n < row.BN; ++n)
          for (int k = 0; k < 16; ++k)
            ASSERT_EQ(kmajor_read(db, n, k), base + uint32_t(sw_offset(n, 16 * kk + k, row.BN, sw)))
                << "K: D " << D << " kk " << kk << " (" << n << ", " << k << ")";
      }
    }
}

TEST(WsLayout, WgmmaReadsOfVThroughItsDescriptorAreTheTilesElements) {
  // O += P V: B = V's key rows [16 kn, 16 kn + 16) by all D columns, MN-major (N = D contiguous).
  const uint32_t base = 5 * 1024;
  for (int D = 16; D <= 256; D += 16)
    for (bool causal : {false, true}) {
      if (!ws_has_row(D, 2)) continue;
      const WsTileRow row = ws_tile_row(D, 2, causal);
      const int sw = swizzle_bytes(D);
      const DescStrides st = mnmajor_strides(row.BN, sw);
      for (int kn = 0; kn < row.BN / 16; ++kn) {
        const uint64_t db = gmma_desc(base + uint32_t(mnmajor_start(kn, row.BN, sw)), st.lbo, st.sbo, sw);
        for (int n = 0; n < D; ++n)
          for (int k = 0; k < 16; ++k)
            ASSERT_EQ(mnmajor_read(db, n, k), base + uint32_t(sw_offset(16 * kn + k, n, row.BN, sw)))
                << "V: D " << D << " kn " << kn << " (" << n << ", " << k << ")";
      }
    }
}

TEST(WsLayout, TmaBoxesTileATileExactlyInItsColumnBlocks) {
  // Box j brings columns [j BC, (j + 1) BC) of `rows` rows to j * box_bytes: with the TMA's
  // address swizzle that is sw_offset for each of its elements, and the boxes' bytes add up to the
  // tile (the mbarrier's expect_tx).
  for (const Case& cs : table_cases()) {
    const TmaTile t = tma_tile(cs.D, cs.rows, 1000, 8, 2, 8 * cs.D, cs.D, 1000 * 8 * cs.D);  // BSHD
    ASSERT_EQ(tma_tile_problem(t), nullptr) << tma_tile_problem(t);
    EXPECT_EQ(t.box[0] * 2, uint32_t(t.swizzle)) << "one box row is one swizzle span";
    EXPECT_EQ(t.box[1], uint32_t(cs.rows));
    EXPECT_EQ(t.copies * int(t.box[0]), cs.D);
    EXPECT_EQ(uint32_t(t.copies * t.box_bytes), t.tile_bytes);
    EXPECT_EQ(t.tile_bytes, uint32_t(cs.rows * cs.D * 2));
    for (int j = 0; j < t.copies; ++j)
      for (int r = 0; r < cs.rows; ++r)
        for (int c = 0; c < int(t.box[0]); ++c) {
          const uint32_t in_box = uint32_t(r * t.swizzle + c * 2);  // the box's row-major bytes, then the swizzle
          ASSERT_EQ(uint32_t(j * t.box_bytes) + swizzle_address(in_box, t.swizzle),
                    uint32_t(sw_offset(r, j * int(t.box[0]) + c, cs.rows, t.swizzle)));
        }
  }
}

TEST(WsLayout, TheOneCopyTileReadsAndLandsEachElementWhereTheColumnBlockBoxesDo) {
  // The TMA walks a box innermost dimension first: element (c, r, j) of the 5-D box (columns, rows,
  // column blocks) reads c * 2 + r * stride[0] + j * stride[1] bytes past the box's origin and lands
  // ((j * rows + r) * box[0] + c) * 2 bytes past its destination, before the address swizzle. Box j
  // of the 4-D form reads (j * box[0] + c) * 2 + r * stride[0] and lands at j * box_bytes + (r *
  // box[0] + c) * 2. Both forms must agree on every element, for BSHD and BHSD strides.
  for (const int D : {64, 128, 256})
    for (const int rows : {16, 32})
      for (const bool bshd : {true, false}) {
        const int64_t S = 1000, H = 8, B = 2;
        const TmaTile t = bshd ? tma_tile(D, rows, S, H, B, H * D, D, S * H * D) : tma_tile(D, rows, S, H, B, D, S * D, H * S * D);
        const TmaTile one = tma_tile_one_copy(t);
        ASSERT_EQ(tma_tile_problem(one), nullptr) << tma_tile_problem(one);
        EXPECT_EQ(one.rank, 5);
        EXPECT_EQ(one.copies, 1);
        EXPECT_EQ(one.tile_bytes, t.tile_bytes) << "the same expect_tx";
        EXPECT_EQ(uint32_t(one.box_bytes), t.tile_bytes);
        EXPECT_EQ(one.dim[1], uint64_t(S));
        EXPECT_EQ(one.dim[3], uint64_t(H));
        EXPECT_EQ(one.dim[4], uint64_t(B));
        EXPECT_EQ(one.stride[2], t.stride[1]) << "heads";
        EXPECT_EQ(one.stride[3], t.stride[2]) << "batches";
        EXPECT_EQ(uint64_t(one.box[0] * one.box[2]), uint64_t(D)) << "the column blocks cover the head dimension";
        const uint64_t bc = t.box[0];
        for (uint64_t j = 0; j < one.box[2]; ++j)
          for (uint64_t r = 0; r < one.box[1]; ++r)
            for (uint64_t c = 0; c < one.box[0]; ++c) {
              ASSERT_EQ(c * 2 + r * one.stride[0] + j * one.stride[1], (j * bc + c) * 2 + r * t.stride[0])
                  << "D " << D << " (" << c << ", " << r << ", " << j << "): read";
              ASSERT_EQ(((j * one.box[1] + r) * one.box[0] + c) * 2, j * uint64_t(t.box_bytes) + (r * bc + c) * 2)
                  << "D " << D << " (" << c << ", " << r << ", " << j << "): landed";
            }
      }
  const TmaTile wide = tma_tile_one_copy(tma_tile(128, 32, 1000, 8, 2, 8 * 128, 128, 1000 * 8 * 128));
  TmaTile bad = wide;
  bad.box[2] = 300;
  EXPECT_NE(tma_tile_problem(bad), nullptr) << "the fifth dimension's box is checked too";
  bad = wide;
  bad.stride[3] = 8;
  EXPECT_NE(tma_tile_problem(bad), nullptr) << "the fourth stride is checked too";
}

TEST(WsLayout, TmaTilesTakeBshdAndBhsdStridesAndNameWhatTheEncoderWouldRefuse) {
  const int64_t S = 333, H = 4, B = 3, D = 128;
  const TmaTile bshd = tma_tile(D, 128, S, H, B, H * D, D, S * H * D);
  const TmaTile bhsd = tma_tile(D, 128, S, H, B, D, S * D, H * S * D);
  EXPECT_EQ(tma_tile_problem(bshd), nullptr);
  EXPECT_EQ(tma_tile_problem(bhsd), nullptr);
  EXPECT_EQ(bshd.dim[1], uint64_t(S));
  EXPECT_EQ(bshd.stride[0], uint64_t(H * D * 2)) << "row stride in bytes";
  EXPECT_EQ(bhsd.stride[1], uint64_t(S * D * 2)) << "head stride in bytes";
  EXPECT_NE(tma_tile_problem(tma_tile(80, 128, S, H, B, H * 80, 80, S * H * 80)), nullptr) << "D = 80: no swizzle span";
  EXPECT_NE(tma_tile_problem(tma_tile(D, 128, S, H, B, H * D + 4, D, S * H * D)), nullptr) << "row stride of 8 bytes past 16";
  EXPECT_NE(tma_tile_problem(tma_tile(D, 128, S, H, B, H * D, D, int64_t(1) << 40)), nullptr) << "stride >= 2^40 bytes";
  EXPECT_NE(tma_tile_problem(tma_tile(D, 300, S, H, B, H * D, D, S * H * D)), nullptr) << "box rows > 256";
  EXPECT_NE(tma_tile_problem(tma_tile(D, 128, 0, H, B, H * D, D, S * H * D)), nullptr) << "an empty dimension";
}

// A padded tile (tma_tile_padded: D = 80 through D = 96's tile) under the TMA's documented rules:
// box j reads columns [j BC, (j + 1) BC) of its rows, an element outside the tensor's dimensions
// reads as zero, and lands at j * box_bytes plus the swizzled box offset. The tile in shared memory
// is then the tensor's D columns where D = 96's layout puts them and zeros in the rest, from the
// whole boxes' bytes (the mbarrier's expect_tx), for BSHD and BHSD strides and a tile past the
// last row.
TEST(WsLayout, APaddedTileLandsTheTensorsColumnsAndZerosInTheWiderTilesLayout) {
  const int D = 80, run = 96, rows = 64;
  const int64_t S = 100, H = 3, B = 2;
  for (const bool bshd : {true, false}) {
    const int64_t s_row = bshd ? H * D : D, s_head = bshd ? D : S * D, s_batch = S * H * D;
    const TmaTile t = tma_tile_padded(D, run, rows, S, H, B, s_row, s_head, s_batch);
    ASSERT_EQ(tma_tile_problem(t), nullptr) << tma_tile_problem(t);
    const TmaTile wide = tma_tile(run, rows, S, H, B, s_row, s_head, s_batch);
    EXPECT_EQ(t.dim[0], uint64_t(D));
    EXPECT_EQ(t.copies, wide.copies);
    EXPECT_EQ(t.tile_bytes, wide.tile_bytes) << "expect_tx: the boxes' bytes, zero-filled or not";
    EXPECT_EQ(uint32_t(t.copies * t.box_bytes), uint32_t(rows * run * 2));
    std::vector<uint16_t> g(size_t(B * S * H * D));
    for (size_t i = 0; i < g.size(); ++i) g[i] = uint16_t(1 + i % 65000);  // no zero: a zero in the tile is a fill
    for (const int64_t row0 : {int64_t(0), S - 40}) {  // the second tile runs 24 rows past S
      const int64_t h = 2, b = 1;
      std::vector<uint16_t> smem(size_t(t.tile_bytes / 2), 0xFFFF);
      for (int j = 0; j < t.copies; ++j)
        for (uint32_t r = 0; r < t.box[1]; ++r)
          for (uint32_t c = 0; c < t.box[0]; ++c) {
            const uint64_t col = uint64_t(j) * t.box[0] + c, row = uint64_t(row0) + r;
            const bool in = col < t.dim[0] && row < t.dim[1];
            const uint16_t v = in ? g[size_t((int64_t(b) * int64_t(t.stride[2]) + h * int64_t(t.stride[1]) +
                                              int64_t(row) * int64_t(t.stride[0])) / 2 + int64_t(col))]
                                  : uint16_t(0);
            smem[(uint32_t(j * t.box_bytes) + swizzle_address(r * uint32_t(t.swizzle) + c * 2, t.swizzle)) / 2] = v;
          }
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < run; ++c) {
          const uint16_t got = smem[size_t(sw_offset(r, c, rows, t.swizzle)) / 2];
          const bool in = c < D && row0 + r < S;
          const uint16_t want = in ? g[size_t(b * s_batch + h * s_head + (row0 + r) * s_row + c)] : uint16_t(0);
          ASSERT_EQ(got, want) << (bshd ? "BSHD" : "BHSD") << " row " << row0 + r << " column " << c;
        }
    }
  }
  // What has no padded form: a last box that holds none of the tensor's columns, and the one-copy
  // form (its last column block would read the next row's first columns).
  EXPECT_NE(tma_tile_problem(tma_tile_padded(64, 96, rows, S, H, B, H * 64, 64, S * H * 64)), nullptr);
  EXPECT_NE(tma_tile_problem(tma_tile_one_copy(tma_tile_padded(D, run, rows, S, H, B, H * D, D, S * H * D))), nullptr);
  EXPECT_EQ(tma_tile_problem(tma_tile_one_copy(tma_tile(run, rows, S, H, B, H * run, run, S * H * run))), nullptr);
}

TEST(WsLayout, OneBlocksSharedMemoryHoldsQTheRingAndTheBarriersAlignedAndApart) {
  for (int D = 16; D <= 256; D += 16)
    for (bool causal : {false, true}) {
      if (!ws_has_row(D, 2)) continue;
      const WsTileRow r = ws_tile_row(D, 2, causal);
      const bool stage_o = ws_stage_o(r.BM, r.BN, D, r.stages, 2);  // the kernel's layout (WsTraits)
      const int q_stages = ws_q_stages(r.BM, r.BN, D, r.stages, 2, stage_o);
      const WsSmem L = ws_smem(r.BM, r.BN, D, r.stages, 2, stage_o, q_stages);
      EXPECT_LE(L.total, kMaxDynamicSmem) << "D " << D;
      EXPECT_EQ(L.total - L.used, kSmemAlign) << "room to round the dynamic base up to 1024";
      EXPECT_EQ(L.o >= 0, stage_o);
      std::vector<std::pair<int, int>> regions = {{L.q, L.q_bytes}};  // [begin, bytes)
      if (stage_o) regions.push_back({L.o, L.q_bytes});
      EXPECT_EQ(L.q1 >= 0, q_stages == 2);
      if (q_stages == 2) regions.push_back({L.q1, L.q_bytes});
      for (int s = 0; s < r.stages; ++s) regions.push_back({L.k(s), L.stage_bytes}), regions.push_back({L.v(s), L.stage_bytes});
      for (const auto& [b, n] : regions) {
        EXPECT_EQ(b % kSmemAlign, 0) << "D " << D << ": a tile at " << b << " is off the swizzle period";
        EXPECT_LE(b + n, L.bar);
      }
      for (size_t i = 0; i < regions.size(); ++i)
        for (size_t j = i + 1; j < regions.size(); ++j)
          EXPECT_TRUE(regions[i].first + regions[i].second <= regions[j].first ||
                      regions[j].first + regions[j].second <= regions[i].first)
              << "D " << D << ": tiles overlap";
      std::set<int> bars;
      for (int i = 0; i < q_stages; ++i)
        for (int b : {L.q_full(i), L.q_empty(i)}) EXPECT_TRUE(bars.insert(b).second) << "Q stage " << i;
      EXPECT_EQ(L.q_tile(0), L.q);
      for (int s = 0; s < r.stages; ++s)
        for (int b : {L.k_full(s), L.k_empty(s), L.v_full(s), L.v_empty(s)}) EXPECT_TRUE(bars.insert(b).second);
      for (int b : bars) {
        EXPECT_EQ(b % 8, 0) << "an mbarrier is 8-byte aligned";
        EXPECT_LE(b + 8, L.items) << "the item slots come after every barrier";
        EXPECT_GE(b, L.bar);
      }
      for (int i = 0; i < q_stages; ++i) {  // a wave's item slots: one a Q stage, 16-byte aligned, inside the block's bytes
        EXPECT_EQ(L.item(i) % 16, 0);
        EXPECT_LE(L.item(i) + kItemSlotBytes, L.used);
      }
    }
}

// O's staging tile (BM rows of D 16-bit columns) is added where it still fits the 227 KB a block may
// have. By hand: D=64 (192 x 128, 2 stages): Q 24 KB + K/V 64 KB + O 24 KB; D=128 causal (128 x 128):
// 32 + 128 + 32 KB; D=128 (128 x 176): 32 + 176 + 32 = 240 KB, over; D=256 (128 x 80): 64 + 160 + 64,
// over; FP8 rows never (O is bf16 there, not the input's layout).
TEST(WsLayout, OStagingTileIsAddedWhereTheRowLeavesRoomForIt) {
  auto staged = [](int D, bool causal, int eb = 2) {
    const WsTileRow r = ws_tile_row(D, eb, causal);
    return ws_stage_o(r.BM, r.BN, D, r.stages, eb);
  };
  EXPECT_TRUE(staged(64, false));
  EXPECT_TRUE(staged(96, true));
  EXPECT_TRUE(staged(128, true));
  EXPECT_FALSE(staged(128, false));
  EXPECT_FALSE(staged(256, true));
  EXPECT_FALSE(staged(64, false, 1));
  EXPECT_FALSE(staged(128, false, 1));
  const WsSmem with = ws_smem(192, 128, 64, 2, 2, true), without = ws_smem(192, 128, 64, 2, 2, false);
  EXPECT_EQ(without.o, -1);
  EXPECT_EQ(with.o, 24576 + 4 * 16384) << "after Q and the K/V ring";
  EXPECT_EQ(with.bar - without.bar, 24576) << "the barriers move up by one Q tile";
  EXPECT_EQ(with.o % kSmemAlign, 0) << "on the swizzle period";
}

// Q's second stage where it fits too (by hand, with O staged): D=64 112 KB + 24 KB; D=96 causal
// 24 + 96 + 24 + 24 KB; D=128 causal 32 + 128 + 32 = 192 KB + 32 = 224 KB (229376 bytes, with the
// barriers and the 1024 of slack under 232448); D=128 non-causal and D=256 have no room for O already.
TEST(WsLayout, QHasTwoStagesWhereTheyFit) {
  auto q_stages = [](int D, bool causal) {
    const WsTileRow r = ws_tile_row(D, 2, causal);
    return ws_q_stages(r.BM, r.BN, D, r.stages, 2, ws_stage_o(r.BM, r.BN, D, r.stages, 2));
  };
  EXPECT_EQ(q_stages(64, false), 2);
  EXPECT_EQ(q_stages(96, true), 2);
  EXPECT_EQ(q_stages(128, true), 2);
  EXPECT_EQ(q_stages(128, false), 1);
  EXPECT_EQ(q_stages(256, true), 1);
  const WsSmem two = ws_smem(192, 128, 64, 2, 2, true, 2);
  EXPECT_EQ(two.q1, 24576 + 4 * 16384 + 24576) << "after O's staging tile";
  EXPECT_EQ(two.q_tile(1), two.q1);
  EXPECT_EQ(two.q_full(1) - two.q_empty(0), 8) << "stage 1's barriers after the ring's and q_empty";
  EXPECT_EQ(two.q_empty(1), two.q_full(1) + 8);
  EXPECT_EQ(two.items, (two.q_empty(1) + 8 + 15) / 16 * 16) << "the item slots after the last barrier, 16-byte aligned";
  EXPECT_EQ(two.item(1), two.item(0) + kItemSlotBytes);
  EXPECT_EQ(two.used, two.items + 2 * kItemSlotBytes);
}
