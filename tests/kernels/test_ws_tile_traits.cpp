// The tile table of mma's sm_90 kernel (kernels/mma/ws_tile_traits.hpp) on the CPU: the head
// dims it covers, and for every row a shape the kernel can run: one 64-row slice a consumer
// warpgroup, wgmma shapes that exist for both GEMMs, a swizzle for D, shared memory within sm_90's
// limit and fragments within the consumers' register budget. Plain C++. Run: ctest -R WsTileTraits
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "harness/dtype.hpp"
#include "harness/sweep/sweep.hpp"
#include "kernels/mma/ws_fp8.hpp"
#include "kernels/mma/ws_layout.hpp"
#include "kernels/mma/ws_pipeline.hpp"
#include "kernels/mma/ws_tile_traits.hpp"

using namespace fa::ws;

namespace {
// Every row of the table up to D = 256: each head dim's, in 16 bits and FP8, long and short, and the
// FP8 pre-pass instance's; f(r, D, elem_bytes) for each that exists.
template <typename F>
void each_row(F&& f) {
  for (int D = 8; D <= 256; D += 8)
    for (int eb : {1, 2})
      for (bool sr : {false, true})
        for (bool pp : {false, true}) {
          const WsTileRow r = ws_tile_row(D, eb, sr, pp);
          if (r.BM > 0) f(r, D, eb);
        }
}
}  // namespace

TEST(WsTileTraits, TheTableCoversD64_96_128And256In16BitTypesAnd64_128_256InFp8) {
  std::vector<int> dims, fp8;
  for (int D = 8; D <= 512; D += 8) {
    if (ws_has_row(D, 2)) dims.push_back(D);
    if (ws_has_row(D, 1)) fp8.push_back(D);
  }
  EXPECT_EQ(dims, (std::vector<int>{64, 96, 128, 256}));
  const std::vector<int> fp8_want = kWsFp8D256On ? std::vector<int>{64, 128, 256} : std::vector<int>{64, 128};
  EXPECT_EQ(fp8, fp8_want)
      << "D = 256 in FP8 only once kWsFp8D256On says a GPU run passed it";
  EXPECT_FALSE(ws_has_row(80, 2));
  EXPECT_FALSE(ws_has_row(128, 4));
}

// The FP8 rows; the D = 256 row as kWsFp8D256Row, on or off (it is checked as the row it would be).
TEST(WsTileTraits, Fp8RowsAreShapesTheKernelCanRun) {
  for (int D : {64, 128, 256})
    for (bool causal : {false, true}) {
      const WsTileRow r = D == 256 ? kWsFp8D256Row : ws_tile_row(D, 1, causal);
      EXPECT_EQ(r.D, D);
      EXPECT_EQ(r.elem_bytes, 1);
      EXPECT_TRUE(r.consumer_wgs == 2 || r.consumer_wgs == 3) << "D " << D;
      EXPECT_EQ(r.BM, 64 * r.consumer_wgs);
      EXPECT_EQ(r.BN % 32, 0) << "P V takes BN in k32 steps";
      EXPECT_EQ(r.BN, 128) << "V^T's rows are one 128-byte swizzle span";
      EXPECT_TRUE(r.exp2_poly_of_8 >= 0 && r.exp2_poly_of_8 <= 8) << "D " << D << ": a share of 8 exponentials";
      EXPECT_TRUE(wgmma8_ss_has_n(r.BN) && wgmma8_rs_has_n(D));
      const WsSmem L = ws_smem(r.BM, r.BN, D, r.stages, 1);
      EXPECT_EQ(L.vt(0) - L.v(0), r.stages * L.stage_bytes) << "the transposes follow the V ring";
      EXPECT_EQ(L.stage_bytes, r.BN * D);
      EXPECT_LE(L.total, kMaxDynamicSmem) << "D " << D;
      EXPECT_LE(ws_fragment_registers(r) + kRegisterHeadroom, consumer_regs(r.consumer_wgs, true, D)) << "D " << D;
      EXPECT_LE(128 * producer_regs(r.consumer_wgs, true, D) + 128 * r.consumer_wgs * consumer_regs(r.consumer_wgs, true, D),
                register_pool(r.consumer_wgs))
          << "D " << D << ": the registers the block enters with (setmaxnreg moves them, it adds none)";
      EXPECT_EQ(ws_fragment_registers(r), D / 2 + r.BN / 2 + r.BN / 8) << "P: four E4M3 values a register";
      // With the V^T pre-pass the V ring holds V^T, no third ring, and the block splits its registers as
      // a 16-bit one (no transposer).
      EXPECT_GE(r.vt_prepass_rows, 0);
      if (r.vt_prepass_rows > 0) {
        const WsSmem P = ws_smem(r.BM, r.BN, D, r.stages, 1, false, 1, true);
        EXPECT_EQ(P.ring_bars, 4);
        EXPECT_EQ(P.total, L.total - r.stages * (L.stage_bytes + 16)) << "D " << D << ": the V^T ring and its barriers gone";
        EXPECT_LE(ws_fragment_registers(r) + kRegisterHeadroom, consumer_regs(r.consumer_wgs, false, D)) << "D " << D;
        EXPECT_TRUE(budgets_fit(r.consumer_wgs, false, D));
        EXPECT_TRUE(ws_vt_prepass(r, r.vt_prepass_rows, 8, 8) && !ws_vt_prepass(r, r.vt_prepass_rows - 1, 8, 8));
        EXPECT_TRUE(ws_vt_prepass(r, (r.vt_prepass_rows + 3) / 4, 32, 8)) << "query rows a kv head: S x H / Hk";
      }
    }
  // The pre-pass instance's own rows (ws_fp8_row's `prepass`): the transposing row's threshold and
  // block, and a tile the pre-pass's V^T rows and the TMA can feed (no transposer, so not only 128 keys).
  for (int D : {64, 128, 256}) {
    const bool as_would_be = D == 256 && !kWsFp8D256On;  // the D = 256 row checked as the row it would be
    const WsTileRow t = as_would_be ? kWsFp8D256Row : ws_tile_row(D, 1);
    const WsTileRow r = as_would_be ? kWsFp8D256Row : ws_tile_row(D, 1, false, true);
    if (t.vt_prepass_rows == 0) {
      EXPECT_TRUE(same_row(r, t)) << "D " << D << ": no pre-pass, no row of its own";
      continue;
    }
    EXPECT_EQ(r.vt_prepass_rows, t.vt_prepass_rows) << "D " << D << ": the host decides on the transposing row's threshold";
    EXPECT_EQ(r.BM, t.BM);
    EXPECT_EQ(r.consumer_wgs, t.consumer_wgs);
    EXPECT_EQ(r.BN % 32, 0) << "P V takes BN in k32 steps; the pre-pass's key order repeats every 32";
    EXPECT_TRUE(wgmma8_ss_has_n(r.BN) && wgmma8_rs_has_n(D));
    const int sw = swizzle_bytes_vt(r.BN / 2);
    EXPECT_TRUE(sw == 32 || sw == 64 || sw == 128) << "D " << D << ": V^T's rows of BN bytes in whole TMA boxes";
    EXPECT_EQ((r.BN / 2) % block_cols(sw), 0);
    EXPECT_EQ(vt_keys_round(r.BN) % r.BN, 0) << "a tile's window lies inside the pre-pass's rows";
    EXPECT_EQ(vt_keys_round(r.BN) % kVtChunkKeys, 0) << "whole pre-pass chunks";
    EXPECT_LE(ws_smem(r.BM, r.BN, D, r.stages, 1, false, 1, true).total, kMaxDynamicSmem) << "D " << D;
    // The one row that leaves less: D = 64 at its 160 keys; a wider tile there must leave the table's 32.
    const int headroom = D == 64 && r.BN == 160 ? kRegisterHeadroomFp8D64Prepass : kRegisterHeadroom;
    EXPECT_LE(ws_fragment_registers(r) + headroom, consumer_regs(r.consumer_wgs, false, D)) << "D " << D;
  }
  EXPECT_EQ(ws_tile_row(128, 1, false, true).BN, 224) << "D = 128's pre-pass row (measured in its comment)";
  EXPECT_EQ(ws_tile_row(64, 1, false, true).BN, 160) << "D = 64's pre-pass row (measured in its comment)";
  EXPECT_EQ(ws_tile_row(64, 1).BN, 128) << "D = 64's transposing row: the transposer's loops are written for 128 keys";
  EXPECT_EQ(swizzle_bytes_vt(160 / 2), 32) << "its V^T rows: five 32-byte swizzle blocks";
  EXPECT_TRUE(ws_vt_prepass(ws_tile_row(64, 1), 4096, 16, 16) && !ws_vt_prepass(ws_tile_row(64, 1), 2048, 16, 16))
      << "FP8 D = 64 takes the pre-pass from 4096 query rows a kv head (2048: the pre-pass lost 4.4%)";
  EXPECT_EQ(swizzle_bytes_vt(224 / 2), 32) << "its V^T rows: seven 32-byte swizzle blocks";
  for (int D : {64, 128})
    for (bool prepass : {false, true}) EXPECT_FALSE(ws_tile_row(D, 1, false, prepass).take_turns) << "FP8 D " << D;
  EXPECT_FALSE(kWsFp8D256Row.take_turns);
  for (int D : {64, 96, 128, 256}) EXPECT_TRUE(ws_tile_row(D, 2).take_turns && ws_tile_row(D, 2, true).take_turns) << "D " << D;
  // O's rescale under S_t: on but where it was measured to lose (the field's comment).
  EXPECT_FALSE(ws_tile_row(64, 1).rescale_under_s) << "FP8 D = 64 (three warpgroups, eager)";
  EXPECT_FALSE(ws_tile_row(256, 2).rescale_under_s) << "16-bit D = 256";
  for (bool prepass : {false, true}) EXPECT_TRUE(ws_tile_row(128, 1, false, prepass).rescale_under_s);
  EXPECT_TRUE(kWsFp8D256Row.rescale_under_s);
  for (int D : {64, 96, 128})
    EXPECT_TRUE(ws_tile_row(D, 2).rescale_under_s && ws_tile_row(D, 2, true).rescale_under_s) << "D " << D;
  WsTileRow moved = ws_tile_row(128, 2);
  moved.rescale_under_s = false;
  EXPECT_FALSE(same_row(moved, ws_tile_row(128, 2))) << "rows differing only there are different instances";
  WsTileRow r16 = ws_tile_row(128, 2);
  r16.vt_prepass_rows = 1;
  EXPECT_FALSE(ws_vt_prepass(r16, 1 << 20, 8, 8)) << "16-bit rows read V as it is (wgmma's 16-bit B takes MN-major)";
  EXPECT_FALSE(ws_vt_prepass(ws_tile_row(128, 1), 1 << 20, 8, 0)) << "no kv heads: nothing to transpose";
}

TEST(WsTileTraits, EveryRowIsAShapeTheKernelCanRun) {
  for (int D = 16; D <= 256; D += 16)
    for (bool causal : {false, true}) {
      if (!ws_has_row(D, 2)) continue;
      const WsTileRow r = ws_tile_row(D, 2, causal);
      EXPECT_EQ(r.D, D);
      EXPECT_EQ(r.elem_bytes, 2);
      EXPECT_TRUE(r.consumer_wgs >= 2 && r.consumer_wgs <= kMaxConsumerWgs)
          << "D " << D << ": the kernel's round robin takes 2 or 3 consumer warpgroups";
      EXPECT_EQ(r.BM, 64 * r.consumer_wgs) << "D " << D << ": one wgmma M = 64 slice a warpgroup";
      EXPECT_EQ(r.BN % 16, 0) << "D " << D << ": P V takes BN in k16 steps";
      EXPECT_TRUE(wgmma_has_n(r.BN)) << "D " << D << ": S = Q K^T is m64n" << r.BN << "k16";
      EXPECT_TRUE(wgmma_has_n(D)) << "O += P V is m64n" << D << "k16";
      EXPECT_EQ(D % 16, 0);
      EXPECT_GT(swizzle_bytes(D), 0) << "D " << D << " has a swizzle span";
      EXPECT_LE(r.BN, 256) << "a TMA box is at most 256 rows";
      EXPECT_LE(r.BM, 256);
      EXPECT_GE(r.stages, 2);
      EXPECT_TRUE(r.exp2_poly_of_8 >= 0 && r.exp2_poly_of_8 <= 8) << "D " << D << ": a share of 8 exponentials";
      EXPECT_LE(ws_smem(r.BM, r.BN, D, r.stages).total, kMaxDynamicSmem) << "D " << D;
      EXPECT_LE(ws_fragment_registers(r) + kRegisterHeadroom, consumer_regs(r.consumer_wgs))
          << "D " << D << ": room beside the fragments";
    }
}

// The padded head dims (ws_run_d): each runs on a wider row of its element size, as a tile the TMA
// can describe over the tensor's own columns, and only once kWsPadOn says a GPU run passed them.
TEST(WsTileTraits, APaddedHeadDimRunsOnAWiderRowThatItsTensorMapsCanDescribe) {
  for (const WsPad& p : kWsPads) {
    EXPECT_FALSE(ws_has_row(p.D, p.elem_bytes)) << "D " << p.D << " has a row of its own";
    EXPECT_TRUE(ws_has_row(p.run_D, p.elem_bytes)) << "D " << p.D << " pads to " << p.run_D << ", which has no row";
    EXPECT_GT(p.run_D, p.D);
    EXPECT_EQ(p.D * p.elem_bytes % 16, 0) << "D " << p.D << ": a row's bytes are the TMA's 16-byte stride unit";
    EXPECT_EQ(ws_run_d(p.D, p.elem_bytes), kWsPadOn ? p.run_D : 0) << "D " << p.D;
    const int cols = p.D * p.elem_bytes / 2, run = p.run_D * p.elem_bytes / 2;  // 16-bit columns
    for (const int rows : {ws_tile_row(p.run_D, p.elem_bytes).BM, ws_tile_row(p.run_D, p.elem_bytes).BN}) {
      const TmaTile t = tma_tile_padded(cols, run, rows, 4096, 8, 2, 8 * cols, cols, 4096 * 8 * cols);
      EXPECT_EQ(tma_tile_problem(t), nullptr) << "D " << p.D << ": " << tma_tile_problem(t);
    }
  }
  for (int D = 8; D <= 256; D += 8)
    if (ws_has_row(D, 2)) EXPECT_EQ(ws_run_d(D, 2), D) << "a row of its own runs as itself";
  EXPECT_EQ(ws_run_d(72, 2), 0);
}

TEST(WsTileTraits, ShortRowsTake128KeysAtD128And128QueryRowsAtD64) {
  EXPECT_EQ(ws_tile_row(128, 2, false).BN, 176);
  EXPECT_EQ(ws_tile_row(128, 2, true).BN, 128) << "short rows lost 5-15% with 176 keys";
  EXPECT_EQ(ws_tile_row(128, 2, true).BM, ws_tile_row(128, 2, false).BM);
  EXPECT_EQ(ws_tile_row(64, 2, false).BM, 192);
  EXPECT_EQ(ws_tile_row(64, 2, false).consumer_wgs, 3);
  EXPECT_EQ(ws_tile_row(64, 2, true).BM, 128) << "short causal rows: 8-11% faster on 128 x 128";
  EXPECT_EQ(ws_tile_row(64, 2, true).consumer_wgs, 2);
  for (int D : {96, 256}) EXPECT_FALSE(ws_short_row_differs(D, 2)) << D;
  for (int D : {64, 128}) EXPECT_TRUE(ws_short_row_differs(D, 2)) << D;
  for (int D : {64, 128, 256}) EXPECT_FALSE(ws_short_row_differs(D, 1)) << "FP8 D=" << D;
}

// The instance a problem runs on (ws_run_row, the dispatch's and the GPU tests' one rule), against the
// thresholds the rows' comments give: FP8 takes the pre-pass from 4096 query rows a kv head at D = 64
// (160 keys), 2048 at D = 128 (224 keys) and 256 at D = 256 (128 keys); D = 80 runs on D = 96's row;
// causal D = 128 at 2k takes the short row (128 keys).
TEST(WsTileTraits, AProblemRunsOnItsHeadDimsRowShortOrLongAndItsPrepassInstanceByThresholds) {
  struct Case {
    int D, eb;
    bool causal;
    int64_t S, Sk, H, Hk;
    int row_D, BM, BN;
    bool short_row, prepass;
  };
  const Case cases[] = {
      {64, 1, false, 4096, 4096, 16, 16, 64, 192, 160, false, true},    // 4096 rows a kv head
      {64, 1, false, 4095, 4096, 16, 16, 64, 192, 128, false, false},   // one row short of it
      {64, 1, false, 256, 3000, 32, 2, 64, 192, 160, false, true},      // GQA: 256 x 16 rows a kv head
      {64, 1, false, 2048, 2048, 16, 16, 64, 192, 128, false, false},   // the 2k row the pre-pass lost on
      {128, 1, true, 2048, 2048, 16, 16, 128, 128, 224, false, true},   // 2048 rows: D = 128's threshold
      {128, 1, false, 1024, 1024, 16, 16, 128, 128, 128, false, false},
      {256, 1, false, 256, 700, 8, 8, 256, 128, 128, false, true},      // 256 rows: D = 256's threshold
      {256, 1, false, 255, 700, 8, 8, 256, 128, 128, false, false},
      {128, 2, true, 2048, 2048, 16, 16, 128, 128, 128, true, false},   // 16-bit: no pre-pass, short row
      {128, 2, false, 8192, 8192, 16, 16, 128, 128, 176, false, false},
      {80, 2, false, 4096, 4096, 32, 32, 96, 128, 128, false, false},   // padded onto D = 96's row
      {64, 2, true, 512, 512, 16, 16, 64, 128, 128, true, false},       // D = 64's short row: its causal area
      {64, 2, false, 512, 512, 16, 16, 64, 192, 128, false, false},     // not causal: the 192-row row
  };
  for (const Case& c : cases) {
    const WsRunRow r = ws_run_row(c.D, c.eb, c.causal, c.S, c.Sk, c.H, c.Hk);
    const std::string what = "D " + std::to_string(c.D) + " eb " + std::to_string(c.eb) + " S " + std::to_string(c.S) +
                             " H/Hk " + std::to_string(c.H) + "/" + std::to_string(c.Hk);
    EXPECT_EQ(r.row.D, c.row_D) << what;
    EXPECT_EQ(r.row.BM, c.BM) << what;
    EXPECT_EQ(r.row.BN, c.BN) << what;
    EXPECT_EQ(r.short_row, c.short_row) << what;
    EXPECT_EQ(r.prepass, c.prepass) << what;
    // the whole row, fields past BM and BN too (FP8 D = 256's two instances differ in dense_wave_tiles alone)
    EXPECT_TRUE(same_row(r.row, ws_tile_row(c.row_D, c.eb, c.short_row, c.prepass))) << what;
  }
  EXPECT_EQ(ws_run_row(72, 2, false, 1024, 1024, 8, 8).row.BM, 0) << "D = 72 has no row and pads onto none";
  const WsRunRow fp8_72 = ws_run_row(72, 1, false, 8192, 8192, 8, 8);
  EXPECT_EQ(fp8_72.row.BM, 0);
  EXPECT_FALSE(fp8_72.prepass);
}

// The area a row's blocks compute, counted by hand: 192 x 128 tiles on causal S = Sk = 512 are q tiles
// [0,192), [192,384), [384,512) over 256, 384 and 512 keys; 128 x 128 tiles over 128, 256, 384, 512.
TEST(WsTileTraits, TileAreaCountsWholeTilesOverEachBlocksKeys) {
  const WsTileRow l = ws_tile_row(64, 2, false), s = ws_tile_row(64, 2, true);
  EXPECT_EQ(ws_tile_area(l, true, 512, 512), 192 * (256 + 384 + 512));
  EXPECT_EQ(ws_tile_area(s, true, 512, 512), 128 * (128 + 256 + 384 + 512));
  EXPECT_EQ(ws_tile_area(l, false, 512, 512), 3 * 192 * 512) << "padding rows 512-575 count";
  EXPECT_EQ(ws_tile_area(s, false, 512, 512), 4 * 128 * 512);
  EXPECT_EQ(ws_tile_area(l, true, 130, 64), 192 * 128) << "S > Sk: the block's last row sees all 64 keys";
  EXPECT_EQ(ws_tile_area(s, true, int64_t(1) << 30, 1000), 128 * 128 * 36)
      << "S >> Sk: only the last 8 blocks see keys, 104, 232, ..., 1000 of them: 1 + 2 + ... + 8 tiles";
  EXPECT_EQ(ws_tile_area(s, true, 130, 64), 128 * 128 * 2) << "rows 0-127 see up to key 62, rows 128-129 all 64";
  EXPECT_EQ(ws_tile_area(l, true, 100, 300), 192 * 384) << "S < Sk: the last row sees 300 keys, 3 tiles";
  EXPECT_EQ(ws_tile_area(s, true, 300, 100), 128 * 128 * 2) << "rows 0-199 see no key: the first block none";
}

// D = 64's short row (two warpgroups, 128 x 128) is taken by short causal problems where its tiles
// cover at most kWsShortAreaPct of the 192-row tiles' area (measured: 512, 1k, 2k won, 3k lost, every
// non-causal row lost); D = 128's by length alone; FP8 rows have no short row.
TEST(WsTileTraits, D64TakesItsShortRowOnlyWhereItsCausalAreaIsSmall) {
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 512, 512)) << "area 0.741: 0.0873 -> 0.0801 ms";
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 1024, 1024)) << "area 0.750: 0.2475 -> 0.2200 ms";
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 2048, 2048)) << "area 0.898: 0.1880 -> 0.1846 ms";
  EXPECT_FALSE(ws_takes_short_row(64, 2, true, 3072, 3072)) << "area 0.962: 0.1868 -> 0.1984 ms";
  EXPECT_FALSE(ws_takes_short_row(64, 2, true, 1536, 1536)) << "area 0.929: the short row 3.5% slower";
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 1280, 1280)) << "area 0.853: 2.2% faster";
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 1792, 1792)) << "area 0.833: 6.7% faster";
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 2560, 2560)) << "area 0.875: 2.3% faster";
  EXPECT_FALSE(ws_takes_short_row(64, 2, true, 192, 192)) << "one whole 192-row tile";
  EXPECT_TRUE(ws_takes_short_row(64, 2, true, 200, 200));
  EXPECT_FALSE(ws_takes_short_row(64, 2, true, 130, 64)) << "S > Sk: more area on the short row";
  EXPECT_FALSE(ws_takes_short_row(64, 2, false, 512, 512)) << "not causal: 0.0931 -> 0.0975 ms";
  EXPECT_FALSE(ws_takes_short_row(64, 2, false, 1500, 1500)) << "whisper-enc-b4: 0.0862 -> 0.0975 ms";
  EXPECT_FALSE(ws_takes_short_row(64, 2, true, 8192, 8192)) << "not short";
  EXPECT_TRUE(ws_takes_short_row(128, 2, false, 512, 512)) << "D = 128: by length";
  EXPECT_TRUE(ws_takes_short_row(128, 2, true, 3072, 3072));
  EXPECT_FALSE(ws_takes_short_row(128, 2, true, 8192, 8192));
  EXPECT_FALSE(ws_takes_short_row(96, 2, true, 512, 512)) << "no short row";
  EXPECT_FALSE(ws_takes_short_row(64, 1, true, 512, 512)) << "FP8: no short row";
  EXPECT_FALSE(ws_takes_short_row(0, 2, true, 512, 512)) << "no row";
}

// Causal blocks go in LPT order where the longest item has 16 key tiles or more (measured: 2k and
// longer won, issue 46's 512-1024 rows lost); never without causal.
TEST(WsTileTraits, CausalProblemsOfLongItemsTakeTheLptOrder) {
  EXPECT_TRUE(ws_lpt_order(true, 2048, 128, 0)) << "(4,16,16,2048,2048,128) causal: 16 tiles, won 7%";
  EXPECT_FALSE(ws_lpt_order(true, 1024, 128, 0)) << "(32,16,16,1024,1024,128) causal: 8 tiles, lost 2%";
  EXPECT_FALSE(ws_lpt_order(true, 512, 128, 1)) << "(32,16,16,512,512,128) causal: lost 3%";
  EXPECT_TRUE(ws_lpt_order(true, 4096, 80, 0)) << "D = 256's 80-key tiles: 52";
  EXPECT_TRUE(ws_lpt_order(true, 8192, 224, 0));
  EXPECT_FALSE(ws_lpt_order(true, 2048, 128, 2)) << "a split's items: 8 tiles each";
  EXPECT_TRUE(ws_lpt_order(true, 4096, 128, 2));
  EXPECT_FALSE(ws_lpt_order(true, 15 * 128, 128, 0));
  EXPECT_TRUE(ws_lpt_order(true, 15 * 128 + 1, 128, 0)) << "a partial 16th tile counts";
  EXPECT_FALSE(ws_lpt_order(false, 8192, 176, 0)) << "non-causal items cost alike";
  // The table's causal rows as the dispatch picks them: S = 2048 takes D = 128's short row (128 keys).
  EXPECT_TRUE(ws_lpt_order(true, 2048, ws_tile_row(128, 2, ws_short_row(true, 2048, 2048)).BN, 0));
  EXPECT_FALSE(ws_lpt_order(true, 1024, ws_tile_row(64, 2, ws_takes_short_row(64, 2, true, 1024, 1024)).BN, 0))
      << "(16,32,32,1024,1024,64) causal";
}

TEST(WsTileTraits, OnlyShortProblemsTakeTheShortRow) {
  EXPECT_TRUE(ws_short_row(true, 2048, 2048)) << "sweeps/ci.yaml's causal-2k-d128";
  EXPECT_TRUE(ws_short_row(true, 1024, 8192)) << "a short query block: unmeasured, so the short row";
  EXPECT_TRUE(ws_short_row(true, 8192, 1024));
  EXPECT_FALSE(ws_short_row(true, 8192, 8192)) << "the 8k causal rows won 2-3% with 176 keys";
  EXPECT_FALSE(ws_short_row(true, kWsLongCausal, kWsLongCausal));
  EXPECT_TRUE(ws_short_row(true, kWsLongCausal - 1, kWsLongCausal));
  EXPECT_TRUE(ws_short_row(false, 512, 512)) << "issue 46's batch-32 row: 0.1514 -> 0.1315 ms with 128 keys";
  EXPECT_TRUE(ws_short_row(false, 1024, 1024));
  EXPECT_TRUE(ws_short_row(false, kWsLongDense - 1, kWsLongDense - 1));
  EXPECT_FALSE(ws_short_row(false, kWsLongDense, kWsLongDense));
  EXPECT_FALSE(ws_short_row(false, 512, 8192)) << "long items: unmeasured, so the 8k rows' 176 keys";
  EXPECT_FALSE(ws_short_row(false, 8192, 8192)) << "non-causal 8k: 667 with 176 keys, 645 with 128";
}

// The lazy rescale (softmax_rows): a 16-bit row's kept max leaves P below 2^lazy_rescale_log2, which
// fp16 holds up to 2^15; FP8 rows may only skip where no max moved (0) or run eager (-1), since P is
// E4M3 there and a kept max leaves the largest P inexact (test_gpu_paths' FP8 rows failed the
// validator's rule at 8).
TEST(WsTileTraits, OnlySixteenBitRowsKeepAStaleMax) {
  for (int D = 8; D <= 256; D += 8)
    for (bool sr : {false, true}) {
      const WsTileRow r16 = ws_tile_row(D, 2, sr), r8 = ws_tile_row(D, 1, sr);
      if (r16.BM > 0)
        EXPECT_TRUE(r16.lazy_rescale_log2 >= -1 && r16.lazy_rescale_log2 <= 15) << "D " << D << ": fp16 P";
      if (r8.BM > 0) EXPECT_TRUE(r8.lazy_rescale_log2 >= -1 && r8.lazy_rescale_log2 <= 0) << "D " << D << ": E4M3 P";
    }
  EXPECT_LE(kWsFp8D256Row.lazy_rescale_log2, 0);
  EXPECT_GE(kWsFp8D256Row.lazy_rescale_log2, -1);
}

// trim_keys: a trimmed softmax is whole column blocks short of its tile. The FP8 rows of D = 64 and
// 128 take it; the 16-bit rows and FP8 D = 256 lost with it (ws_tile_traits.hpp's measurements), and
// D = 128's pre-pass row trims the last tile of every power-of-two key count from 1024 to 32768.
TEST(WsTileTraits, Fp8RowsTrimTheirMaskedTilesToWholeColumnBlocks) {
  each_row([](const WsTileRow& r, int D, int eb) {
    EXPECT_EQ(r.trim_keys % 8, 0) << "D " << D << ", " << eb << "-byte: column blocks of 8 keys";
    EXPECT_TRUE(r.trim_keys >= 0 && r.trim_keys < r.BN) << "D " << D << ", " << eb << "-byte: shorter than BN";
    if (eb == 2) EXPECT_EQ(r.trim_keys, 0) << "D " << D << ": the 16-bit rows lost with it";
  });
  EXPECT_EQ(kWsFp8D256Row.trim_keys, 0);
  EXPECT_GT(ws_tile_row(64, 1).trim_keys, 0);
  for (bool pp : {false, true}) EXPECT_GT(ws_tile_row(128, 1, false, pp).trim_keys, 0) << "pre-pass " << pp;
  const WsTileRow pre = ws_tile_row(128, 1, false, true);
  ASSERT_EQ(pre.BN, 224);
  for (int64_t sk = 1024; sk <= 32768; sk *= 2) {
    EXPECT_GT(sk % pre.BN, 0) << sk << " keys: a partial last tile";
    EXPECT_LE(sk % pre.BN, pre.trim_keys) << sk << " keys: its last tile is trimmed";
  }
  WsTileRow untrimmed = ws_tile_row(128, 1);
  untrimmed.trim_keys = 0;
  EXPECT_FALSE(same_row(untrimmed, ws_tile_row(128, 1))) << "rows differing only there are different instances";
}

// group_tiles (each warpgroup's own tiles) is a row's choice, measured: on where the rows take no turns
// (a turn counts every tile of the item, and the kernel's static_assert refuses the pair), on FP8
// D = 64, whose 192-row blocks span one and a half key tiles, off on D = 128's pre-pass row (its
// waves lost) and, being a row's, part of what makes two rows one instance.
TEST(WsTileTraits, OnlyRowsWithoutTurnsComputeEachWarpgroupsOwnTiles) {
  each_row([](const WsTileRow& r, int D, int eb) {
    if (r.group_tiles) EXPECT_FALSE(r.take_turns) << "D " << D << ", " << eb << "-byte";
  });
  EXPECT_TRUE(ws_tile_row(64, 1).group_tiles);
  EXPECT_GT(ws_tile_row(64, 1).BM, ws_tile_row(64, 1).BN) << "a block's rows span more than one key tile";
  EXPECT_FALSE(ws_tile_row(128, 1, false, true).group_tiles) << "the pre-pass row's waves lost with it";
  EXPECT_FALSE(ws_tile_row(64, 2).group_tiles) << "the 16-bit rows take turns";
  WsTileRow all = ws_tile_row(64, 1);
  all.group_tiles = false;
  EXPECT_FALSE(same_row(all, ws_tile_row(64, 1))) << "rows differing only there are different instances";
}

// sweeps/edge.csv runs the class of a bug the shipped sweeps once missed (a kernel that freed Q
// before an item's last S = QK^T): mma's wave with one Q stage, non-causal 16-bit, D=128 and D=256,
// G=0 and G=2, S a whole number of q tiles and not, each item two key tiles or more. The wave's
// rule is launch_ws_cfg's (kernels/mma/fa_mma_ws.hpp): items outnumber an H100's 132 SMs and each has
// at most kWsPersistentTiles = 16 key tiles.
TEST(WsTileTraits, EdgeCsvRunsTheOneQStageWaveAtD128AndD256WithAndWithoutASplit) {
  const fa::Sweep s = fa::load_sweep(std::string(FABENCH_SOURCE_DIR) + "/sweeps/edge.csv", fa::Overrides{});
  std::set<std::tuple<int, int, bool>> hit;  // (D, G, S a multiple of BM)
  for (const auto& row : s.rows) {
    const fa::Problem& p = row.problem;
    if (p.causal || fa::dtype_bytes(p.dtype) != 2) continue;
    const WsTileRow t = ws_tile_row(int(p.D), 2, ws_takes_short_row(int(p.D), 2, false, p.S, p.Sk));  // the host's row
    if (t.BM == 0) continue;
    const int q_stages = ws_q_stages(t.BM, t.BN, t.D, t.stages, 2, ws_stage_o(t.BM, t.BN, t.D, t.stages, 2));
    for (const auto& g : row.splits) {
      if (g.is_auto) continue;
      const int64_t splits = std::max(g.value, 1), nq = (p.S + t.BM - 1) / t.BM;
      const int64_t items = nq * p.H * p.B * splits, item_tiles = (p.Sk + splits * t.BN - 1) / (splits * t.BN);
      if (q_stages == 1 && items > 132 && item_tiles >= 2 && item_tiles <= 16)
        hit.insert({int(p.D), g.value, p.S % t.BM == 0});
    }
  }
  for (int D : {128, 256})
    for (int G : {0, 2})
      for (bool whole : {true, false})
        EXPECT_TRUE(hit.count({D, G, whole})) << "no edge.csv row runs the one-Q-stage wave at D=" << D << " G=" << G
                                              << (whole ? " with S a multiple of the q tile" : " with a partial q tile");
}

// The wave's rule (ws_wave) on worked cases, 132 SMs: (32,16,512,512) at D = 128's short row is 4 q
// tiles x 16 heads x 32 = 2048 items of 4 key tiles; a 17-tile item, as many items as SMs, or
// indices past INT32_MAX - SMs (where a causal wave's counter answers atomicAdd + gridDim.x) are not.
TEST(WsTileTraits, AWaveIsManyShortItemsWhoseIndicesStayInts) {
  EXPECT_EQ(ws_items(512, 16, 32, 1, 128), 2048);
  EXPECT_EQ(ws_items(520, 4, 8, 2, 192), 3 * 4 * 8 * 2) << "a partial q tile counts, and each split";
  EXPECT_TRUE(ws_wave(2048, ws_item_tiles(512, 128, 1), 132));
  EXPECT_TRUE(ws_wave(133, 16, 132));
  EXPECT_FALSE(ws_wave(133, 17, 132));
  EXPECT_FALSE(ws_wave(132, 1, 132));
  EXPECT_TRUE(ws_wave(INT32_MAX - 132, 1, 132));
  EXPECT_FALSE(ws_wave(INT32_MAX - 131, 1, 132));
}

// Long causal items (more than kWsPersistentTiles key tiles, at most kWsLongWaveTiles = 48) run as a
// wave on the rows that say so (long_causal_wave): (1,32,8,8192,8192,128,causal) bf16 is 64 q tiles x
// 32 heads = 2048 items of up to 47 key tiles (176 keys), a wave; its non-causal twin, D = 64's 8k
// causal row (64 tiles) and D = 256's and D = 96's rows (where the wave lost) stay one-item grids, and
// the rule's other bounds still hold.
TEST(WsTileTraits, LongCausalItemsRunAsAWaveOnlyOnTheRowsThatWonWithIt) {
  const WsTileRow d128 = ws_tile_row(128, 2, ws_takes_short_row(128, 2, true, 8192, 8192));
  const int64_t items = ws_items(8192, 32, 1, 1, d128.BM), tiles = ws_item_tiles(8192, d128.BN, 1);
  EXPECT_EQ(items, 2048);
  EXPECT_EQ(tiles, 47);
  EXPECT_TRUE(ws_wave(items, tiles, 132, ws_long_wave(d128, true)));
  EXPECT_FALSE(ws_wave(items, tiles, 132, ws_long_wave(d128, false))) << "not causal";
  EXPECT_FALSE(ws_wave(132, tiles, 132, ws_long_wave(d128, true))) << "no more items than SMs";
  EXPECT_FALSE(ws_wave(INT32_MAX - 131, tiles, 132, ws_long_wave(d128, true)));
  EXPECT_TRUE(ws_wave(items, 48, 132, true));
  EXPECT_FALSE(ws_wave(items, 49, 132, true)) << "past kWsLongWaveTiles";
  EXPECT_TRUE(ws_launch_wave(d128, 8192, 8192, 32, 1, 0, true, 132)) << "the launch's question, the same answer";
  EXPECT_FALSE(ws_launch_wave(d128, 8192, 8192, 32, 1, 0, false, 132));
  const WsTileRow d64 = ws_tile_row(64, 2);  // (2,16,16,8192,8192,64,causal): 64 tiles, past the cap
  EXPECT_FALSE(ws_wave(ws_items(8192, 16, 2, 1, d64.BM), ws_item_tiles(8192, d64.BN, 1), 132, ws_long_wave(d64, true)));
  for (int D : {96, 256}) {  // at 3072 keys: 24 and 39 tiles, under the cap, so only the row's field says no
    const WsTileRow r = ws_tile_row(D, 2, ws_takes_short_row(D, 2, true, 3072, 3072));
    EXPECT_FALSE(ws_long_wave(r, true)) << "D=" << D;
    EXPECT_GT(ws_item_tiles(3072, r.BN, 1), kWsPersistentTiles) << "D=" << D;
    EXPECT_LE(ws_item_tiles(3072, r.BN, 1), kWsLongWaveTiles) << "D=" << D;
    EXPECT_FALSE(ws_launch_wave(r, 3072, 3072, 32, 2, 0, true, 132)) << "D=" << D;
  }
  EXPECT_TRUE(ws_long_wave(ws_tile_row(64, 2), true));
  EXPECT_TRUE(ws_long_wave(ws_tile_row(128, 2, true), true)) << "D = 128's short row, causal 2k-4k";
  EXPECT_TRUE(ws_long_wave(ws_tile_row(128, 1, false, true), true)) << "FP8 D = 128's pre-pass row";
  EXPECT_FALSE(ws_long_wave(ws_tile_row(128, 1), true)) << "FP8 D = 128's transposing row: unmeasured";
  EXPECT_FALSE(ws_long_wave(ws_tile_row(64, 1), true)) << "FP8 D = 64: unmeasured";
  EXPECT_FALSE(ws_long_wave(ws_tile_row(256, 1), true)) << "FP8 D = 256: unmeasured";
}

// Long non-causal items (more than kWsPersistentTiles key tiles) run as a wave up to their row's
// dense_wave_tiles, and take their items from the counter; short non-causal waves take theirs in turn,
// causal waves from the counter. Worked on 132 SMs: (4,16,16,4096,4096,128) is 32 q tiles x 64 = 2048
// items of 24 key tiles on the 16-bit row (176 keys) and 19 on FP8's pre-pass row (224); at 8192 keys
// they are 47 and 37 tiles, past the rows' 32; FP8 D = 256's 8k row is 64 tiles of 128 keys, at its
// pre-pass instance's cap. Each cap is checked at its edge (cap x BN keys, and one more). D = 96's
// row (D = 80 padded) lost at both lengths measured (32 and 64 tiles), and the unmeasured rows (16-bit
// D = 256, FP8 D = 128's and D = 256's transposing instances) stay grids from 17 tiles.
TEST(WsTileTraits, LongNonCausalItemsRunAsAWaveFromTheCounterOnlyOnTheRowsThatWonWithIt) {
  const WsTileRow b128 = ws_tile_row(128, 2, ws_takes_short_row(128, 2, false, 4096, 4096));
  EXPECT_EQ(b128.BN, 176);
  EXPECT_EQ(ws_item_tiles(4096, b128.BN, 1), 24);
  EXPECT_TRUE(ws_launch_wave(b128, 4096, 4096, 16, 4, 0, false, 132));
  EXPECT_TRUE(ws_wave_from_counter(b128, 4096, 4096, 16, 4, 0, false, 132));
  EXPECT_EQ(ws_item_tiles(8192, b128.BN, 1), 47);
  EXPECT_FALSE(ws_launch_wave(b128, 8192, 8192, 16, 2, 0, false, 132)) << "47 tiles: past the row's 32";
  EXPECT_FALSE(ws_wave_from_counter(b128, 8192, 8192, 16, 2, 0, false, 132));
  EXPECT_FALSE(ws_launch_wave(b128, 4096, 4096, 4, 1, 0, false, 132)) << "32 x 4 items: fewer than the SMs";
  EXPECT_TRUE(ws_launch_wave(b128, 4096, 32 * 176, 16, 4, 0, false, 132)) << "32 tiles";
  EXPECT_FALSE(ws_launch_wave(b128, 4096, 32 * 176 + 1, 16, 4, 0, false, 132)) << "33 tiles";

  const WsTileRow f128 = ws_tile_row(128, 1, false, ws_vt_prepass(ws_tile_row(128, 1), 4096, 16, 16));
  EXPECT_EQ(f128.BN, 224) << "the pre-pass row";
  EXPECT_TRUE(ws_wave_from_counter(f128, 4096, 4096, 16, 4, 0, false, 132)) << "19 tiles";
  EXPECT_FALSE(ws_launch_wave(f128, 8192, 8192, 16, 2, 0, false, 132)) << "37 tiles";
  EXPECT_TRUE(ws_launch_wave(f128, 4096, 32 * 224, 16, 4, 0, false, 132)) << "32 tiles";
  EXPECT_FALSE(ws_launch_wave(f128, 4096, 32 * 224 + 1, 16, 4, 0, false, 132)) << "33 tiles";

  const WsTileRow d64 = ws_tile_row(64, 2), f64 = ws_tile_row(64, 1);
  for (const WsTileRow& r : {d64, f64}) {  // 128 keys a tile: 4096 keys are 32 tiles, 4097 are 33
    EXPECT_TRUE(ws_launch_wave(r, 4096, 4096, 16, 8, 0, false, 132)) << r.elem_bytes;
    EXPECT_FALSE(ws_launch_wave(r, 4096, 4097, 16, 8, 0, false, 132)) << r.elem_bytes;
    EXPECT_TRUE(ws_launch_wave(r, 4096, 8192, 16, 8, 2, false, 132)) << "a split's 32 tiles, " << r.elem_bytes;
  }
  const WsTileRow f256 = ws_tile_row(256, 1, false, true);
  EXPECT_EQ(ws_item_tiles(8192, f256.BN, 1), 64);
  EXPECT_TRUE(ws_wave_from_counter(f256, 8192, 8192, 16, 1, 0, false, 132)) << "64 q tiles x 16 heads, 64 tiles";
  EXPECT_FALSE(ws_launch_wave(f256, 8192, 8193, 16, 1, 0, false, 132)) << "65 tiles";
  const WsTileRow d96 = ws_tile_row(ws_run_d(80, 2), 2), b256 = ws_tile_row(256, 2);
  EXPECT_EQ(d96.D, 96);
  EXPECT_EQ(ws_item_tiles(4096, d96.BN, 1), 32);
  EXPECT_FALSE(ws_launch_wave(d96, 4096, 4096, 32, 1, 0, false, 132)) << "D = 96: the wave lost";
  // 17 tiles, the shortest long item, on the rows that stay grids.
  EXPECT_FALSE(ws_launch_wave(d96, 4096, 17 * d96.BN, 32, 1, 0, false, 132)) << "D = 96";
  EXPECT_FALSE(ws_launch_wave(b256, 4096, 17 * b256.BN, 16, 4, 0, false, 132)) << "16-bit D = 256: unmeasured";
  EXPECT_FALSE(ws_launch_wave(ws_tile_row(256, 1), 4096, 17 * 128, 16, 4, 0, false, 132))
      << "FP8 D = 256's transposing instance: unmeasured";
  WsTileRow capped = d64;
  capped.dense_wave_tiles = 0;
  EXPECT_FALSE(same_row(capped, d64)) << "rows differing only there are different instances";

  // The rule's other sides: causal waves take the counter whatever their length, short non-causal
  // waves theirs in turn, and a long causal item is not a dense one.
  EXPECT_TRUE(ws_wave_from_counter(ws_tile_row(128, 2, true), 512, 512, 16, 32, 0, true, 132));
  EXPECT_TRUE(ws_launch_wave(ws_tile_row(128, 2, true), 512, 512, 16, 32, 0, false, 132));
  EXPECT_FALSE(ws_wave_from_counter(ws_tile_row(128, 2, true), 512, 512, 16, 32, 0, false, 132));
  EXPECT_FALSE(ws_dense_wave(d64, true, 2048, 24, 132));
  EXPECT_FALSE(ws_dense_wave(d64, false, 2048, 16, 132)) << "16 tiles: a short wave's";
  EXPECT_TRUE(ws_dense_wave(d64, false, 2048, 17, 132));
  EXPECT_FALSE(ws_dense_wave(d64, false, 132, 17, 132));
  EXPECT_FALSE(ws_dense_wave(d64, false, INT32_MAX - 131, 17, 132));
  EXPECT_FALSE(ws_dense_wave(ws_tile_row(128, 1), false, 2048, 17, 132)) << "FP8 D = 128's transposing row";
}

// sweeps/edge.csv runs mma's causal wave (the counter's LPT order, ws_produce_wave) on a 132-SM card:
// at D = 64 on each of its rows (three consumer warpgroups, and the short row's two), at D = 256 (one Q stage) and where S > Sk leaves items with
// no key tile, each at G = 0, and a split one.
TEST(WsTileTraits, EdgeCsvRunsTheCausalWaveWithItemsThatHaveNoTile) {
  const fa::Sweep s = fa::load_sweep(std::string(FABENCH_SOURCE_DIR) + "/sweeps/edge.csv", fa::Overrides{});
  bool d64_long = false, d64_short = false, d256 = false, empty_items = false, split = false;
  for (const auto& row : s.rows) {
    const fa::Problem& p = row.problem;
    if (!p.causal || p.kv_cache || fa::dtype_bytes(p.dtype) != 2) continue;
    const WsRunRow r = ws_run_row(int(p.D), 2, true, p.S, p.Sk, p.H, p.Hk);  // the host's instance
    const WsTileRow& t = r.row;
    const bool short_row = r.short_row;
    if (t.BM == 0) continue;
    for (const auto& g : row.splits) {
      if (g.is_auto) continue;
      const int splits = std::max(g.value, 1);
      if (!ws_launch_wave(t, p.S, p.Sk, p.H, p.B, splits, true, 132)) continue;
      d64_long |= t.D == 64 && !short_row, d64_short |= t.D == 64 && short_row;
      d256 |= t.D == 256, split |= splits > 1;
      empty_items |= p.S - p.Sk >= t.BM;  // the first q tile's rows see no key
    }
  }
  EXPECT_TRUE(d64_long) << "D = 64's 192-row tile on three warpgroups";
  EXPECT_TRUE(d64_short) << "D = 64's 128-row short tile on two";
  EXPECT_TRUE(d256);
  EXPECT_TRUE(empty_items);
  EXPECT_TRUE(split);
}
