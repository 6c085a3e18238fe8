// The FP8 pieces of mma's sm_90 kernel (kernels/mma/ws_fp8.hpp) on the CPU, against the PTX ISA's
// fragment layouts (kernels/device/fragment_layout.hpp): each byte of P's A operand packs the score of
// the key its slot stands for, on the same row; the transpose's items write every V^T byte once,
// with the value of that key's V row; so P V through the two sums the products the plain product
// does. Run: ctest -R WsFp8
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "kernels/device/fragment_layout.hpp"
#include "kernels/mma/ws_fp8.hpp"
#include "kernels/mma/ws_pipeline.hpp"
#include "kernels/mma/ws_tile_traits.hpp"

using namespace fa::ws;
namespace frag = fa::frag;

TEST(WsFp8, TheSlotsOfAK32StepStandForEachKeyOnce) {
  std::vector<int> keys;
  for (int c = 0; c < 32; ++c) keys.push_back(fp8_key_of_slot(c));
  std::vector<int> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> iota(32);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(keys, iota) << "the relabelling is not the identity (else no transpose trick were needed)";
}

TEST(WsFp8, EachPByteIsTheScoreOfItsSlotsKeyOnTheSameRow) {
  for (int BN : {64, 128}) {
    for (int t = 0; t < 128; ++t)
      for (int kn = 0; kn < BN / 32; ++kn)
        for (int r = 0; r < 4; ++r)
          for (int j = 0; j < 4; ++j) {
            const frag::Coord a = frag::wgmma_m64nNk32_a8(t, 4 * r + j);  // (row, slot column in the step)
            const int src = fp8_p_source(kn, r, j);
            ASSERT_LT(src, BN / 2) << "a slot of S's " << BN / 2 << " accumulators";
            const frag::Coord c = frag::wgmma_m64nNk16_c(t, src);
            ASSERT_EQ(c.row, a.row) << "thread " << t << " kn " << kn << " register " << r << " byte " << j;
            ASSERT_EQ(c.col, 32 * kn + fp8_key_of_slot(a.col)) << "thread " << t << " kn " << kn << " r " << r << " j " << j;
          }
  }
}

// pack_in_softmax packs a register of P as soon as its block pair of one row has its exponentials:
// the register fp8_p_reg_of_blocks names for (pair i, row hr) must take exactly that row's entries of
// blocks 2 i and 2 i + 1 (the softmax's at(hr, j, e) is slot 4 j + 2 hr + e), and the pairs of the
// tile's two rows must name every register of P once.
TEST(WsFp8, EachBlockPairOfARowFillsOneWholePRegister) {
  for (int BN : {128, 160, 224, 256}) {
    std::set<std::pair<int, int>> seen;
    for (int i = 0; i < BN / 16; ++i)
      for (int hr = 0; hr < 2; ++hr) {
        const Fp8PReg g = fp8_p_reg_of_blocks(i, hr);
        ASSERT_TRUE(g.kn >= 0 && g.kn < BN / 32 && g.r >= 0 && g.r < 4) << "BN " << BN << " pair " << i << " row " << hr;
        EXPECT_TRUE(seen.insert({g.kn, g.r}).second) << "BN " << BN << ": register (" << g.kn << ", " << g.r << ") twice";
        std::set<int> want, got;
        for (int j = 2 * i; j < 2 * i + 2; ++j)
          for (int e = 0; e < 2; ++e) want.insert(4 * j + 2 * hr + e);
        for (int b = 0; b < 4; ++b) got.insert(fp8_p_source(g.kn, g.r, b));
        EXPECT_EQ(got, want) << "BN " << BN << " pair " << i << " row " << hr;
        for (int t = 0; t < 128; ++t)  // every byte on the thread's row hr of the C layout
          for (int src : got) ASSERT_EQ(frag::wgmma_m64nNk16_c(t, src).row, frag::wgmma_m64nNk16_c(t, 2 * hr).row);
      }
    EXPECT_EQ(int(seen.size()), BN / 32 * 4) << "BN " << BN << ": every register of P";
  }
}

TEST(WsFp8, TheTransposeWritesEveryVtByteOnceWithItsSlotsKeysValue) {
  std::mt19937 rng(7);
  for (int D : {64, 128, 256})
    for (int BN : {64, 128}) {
      std::vector<uint8_t> v(size_t(BN) * D), src(size_t(BN) * D, 0), dst(size_t(BN) * D, 0);
      std::vector<int> writes(size_t(BN) * D, 0);
      for (auto& x : v) x = uint8_t(rng());
      for (int key = 0; key < BN; ++key)
        for (int d = 0; d < D; ++d) src[size_t(fp8_v_offset(key, d, BN, D))] = v[size_t(key) * D + d];
      for (int i = 0; i < fp8_items(BN, D); ++i) {  // the producer warps' loop, one item at a time
        const Fp8Item it = fp8_item(i, BN);
        uint32_t lo[4], hi[4], out[4];
        auto word = [&](int at) {
          return uint32_t(src[size_t(at)]) | uint32_t(src[size_t(at) + 1]) << 8 | uint32_t(src[size_t(at) + 2]) << 16 |
                 uint32_t(src[size_t(at) + 3]) << 24;
        };
        for (int j = 0; j < 4; ++j) {
          const int at = fp8_v_offset(fp8_item_src_key(it, j), 8 * it.d8, BN, D);
          ASSERT_EQ(at % 8, 0) << "a 64-bit load";
          lo[j] = word(at), hi[j] = word(at + 4);
        }
        for (int half = 0; half < 2; ++half) {
          transpose_4x4_bytes(half ? hi : lo, out);
          for (int r = 0; r < 4; ++r) {
            const int at = fp8_vt_offset(8 * it.d8 + 4 * half + r, 4 * it.c4, BN, D);
            ASSERT_EQ(at % 4, 0) << "a 32-bit store";
            for (int b = 0; b < 4; ++b) dst[size_t(at + b)] = uint8_t(out[r] >> (8 * b)), ++writes[size_t(at + b)];
          }
        }
      }
      for (int w : writes) ASSERT_EQ(w, 1) << "D " << D << " BN " << BN;
      for (int d = 0; d < D; ++d)
        for (int c = 0; c < BN; ++c)
          ASSERT_EQ(dst[size_t(fp8_vt_offset(d, c, BN, D))], v[size_t(32 * (c / 32) + fp8_key_of_slot(c % 32)) * D + d])
              << "D " << D << " BN " << BN << " V^T (" << d << ", " << c << ")";
    }
}

TEST(WsFp8, PVThroughThePackedOperandAndTheTransposeIsThePlainProduct) {
  // Small integers, so that every sum is exact: P (64 x BN) in S's accumulator layout, V (BN x D).
  constexpr int BN = 128, D = 64;
  std::mt19937 rng(3);
  std::vector<int> p(64 * BN), v(BN * D);
  for (auto& x : p) x = int(rng() % 7) - 3;
  for (auto& x : v) x = int(rng() % 5) - 2;
  // Each thread's accumulator slots, as the kernel holds S.
  std::vector<std::vector<int>> s(128, std::vector<int>(BN / 2));
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < BN / 2; ++i) {
      const frag::Coord c = frag::wgmma_m64nNk16_c(t, i);
      s[size_t(t)][size_t(i)] = p[size_t(c.row * BN + c.col)];
    }
  std::vector<int> o(64 * D, 0), want(64 * D, 0);
  for (int r = 0; r < 64; ++r)
    for (int d = 0; d < D; ++d)
      for (int k = 0; k < BN; ++k) want[size_t(r * D + d)] += p[size_t(r * BN + k)] * v[size_t(k * D + d)];
  // wgmma's view: A (row, 32 kn + c) from the packed registers, B (k = 32 kn + c, n = d) = V^T (d, 32 kn + c).
  for (int t = 0; t < 128; ++t)
    for (int kn = 0; kn < BN / 32; ++kn)
      for (int i = 0; i < 16; ++i) {
        const frag::Coord a = frag::wgmma_m64nNk32_a8(t, i);
        const int pv = s[size_t(t)][size_t(fp8_p_source(kn, i / 4, i % 4))];
        const int key = 32 * kn + fp8_key_of_slot(a.col);  // V^T's column 32 kn + a.col holds this key's row
        for (int d = 0; d < D; ++d) o[size_t(a.row * D + d)] += pv * v[size_t(key * D + d)];
      }
  EXPECT_EQ(o, want);
}

TEST(WsFp8, TheByteTransposeMovesByteROfWordJToByteJOfWordR) {
  const uint32_t in[4] = {0x03020100u, 0x13121110u, 0x23222120u, 0x33323130u};
  uint32_t out[4];
  transpose_4x4_bytes(in, out);
  EXPECT_EQ(out[0], 0x30201000u);
  EXPECT_EQ(out[1], 0x31211101u);
  EXPECT_EQ(out[2], 0x32221202u);
  EXPECT_EQ(out[3], 0x33231303u);
  EXPECT_EQ(byte_perm(0x33221100u, 0x77665544u, 0x7531), 0x77553311u) << "prmt's selector: byte k from nibble k";
}

template <int D>
void check_incremental_offsets() {
  constexpr int BN = 128;
  const int sw = swizzle_bytes(D / 2);
  for (int key = 0; key < BN; ++key)
    for (int d8 = 0; d8 < D / 8; ++d8)
      ASSERT_EQ((fp8_v_load_at<D, BN>(uint32_t(key * sw), uint32_t(swizzle_phase(key, sw)), uint32_t(d8))),
                uint32_t(fp8_v_offset(key, 8 * d8, BN, D)))
          << "D " << D << " key " << key << " d8 " << d8;
}

TEST(WsFp8, ATransposingThreadsIncrementalOffsetsAreTheTilesOffsets) {
  check_incremental_offsets<64>();
  check_incremental_offsets<128>();
  check_incremental_offsets<256>();  // V's two column blocks
  constexpr int BN = 128;
  for (int D : {64, 128, 256}) {
    for (int d8 = 0; d8 < D / 8; ++d8)
      for (int r = 0; r < 8; ++r)
        for (int c4 = 0; c4 < BN / 4; ++c4)
          ASSERT_EQ(fp8_vt_at(uint32_t(d8), uint32_t(r), uint32_t(c4)), uint32_t(fp8_vt_offset(8 * d8 + r, 4 * c4, BN, D)))
              << "D " << D << " d8 " << d8 << " r " << r << " c4 " << c4;
  }
}

// Shared-memory wavefronts of one warp-wide access under the bank model: 32 banks of 4 bytes, a bank
// serving one 4-byte word a wavefront; 64-bit accesses go as two half-warps (lanes 0-15, 16-31), each
// at least one wavefront, 32-bit ones as one warp.
static int wavefronts(const std::vector<uint32_t>& lane_addr, int bytes) {
  const size_t group = bytes == 8 ? 16 : 32;
  int total = 0;
  for (size_t g0 = 0; g0 < lane_addr.size(); g0 += group) {
    std::vector<std::vector<uint32_t>> bank(32);
    for (size_t l = g0; l < g0 + group && l < lane_addr.size(); ++l)
      for (int b = 0; b < bytes; b += 4) {
        const uint32_t word = (lane_addr[l] + uint32_t(b)) / 4;
        auto& words = bank[word % 32];
        if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(word);
      }
    size_t most = 0;
    for (const auto& words : bank) most = std::max(most, words.size());
    total += int(most);
  }
  return total;
}

// The transposing warps' loop as ws_transpose_v runs it (warp w at row groups w, w + 3, ..., lane c4
// at fp8_lane_d8 of that): every (d8, c4) item once a tile, each 64-bit load at the fewest wavefronts
// its 256 bytes allow at D = 128 (2; 4 at D = 64, where a bank line holds two 64-byte rows and the
// rows' parity is the load's j), and each 32-bit store at one. With every lane at its warp's d8 the
// loads took 8, and ncu counted 6 conflicts a load, the model's 8 less the 2 it allows.
TEST(WsFp8, TheTransposingWarpsCoverEachItemOnceAndLoadWithoutBankConflicts) {
  constexpr int BN = 128;
  for (int D : {64, 128, 256}) {
    const int want = D == 64 ? 4 : 2;  // D = 256: each of V's column blocks is D = 128's case
    std::vector<int> seen(size_t(fp8_items(BN, D)), 0);
    int worst_staggered = 0, worst_plain = 0;
    for (uint32_t w = 0; w < uint32_t(kTransposeWarps); ++w)
      for (uint32_t dw = w; dw < uint32_t(D / 8); dw += uint32_t(kTransposeWarps)) {
        for (uint32_t c4 = 0; c4 < 32; ++c4) ++seen[size_t(fp8_lane_d8(dw, c4)) * (BN / 4) + c4];
        for (int j = 0; j < 4; ++j) {
          std::vector<uint32_t> staggered, plain;
          for (uint32_t c4 = 0; c4 < 32; ++c4) {
            const int key = fp8_item_src_key(Fp8Item{0, int(c4)}, j);
            staggered.push_back(uint32_t(fp8_v_offset(key, 8 * int(fp8_lane_d8(dw, c4)), BN, D)));
            plain.push_back(uint32_t(fp8_v_offset(key, 8 * int(dw), BN, D)));
          }
          worst_staggered = std::max(worst_staggered, wavefronts(staggered, 8));
          worst_plain = std::max(worst_plain, wavefronts(plain, 8));
        }
        for (uint32_t r = 0; r < 8; ++r) {
          std::vector<uint32_t> st;
          for (uint32_t c4 = 0; c4 < 32; ++c4) st.push_back(fp8_vt_at(fp8_lane_d8(dw, c4), r, c4));
          ASSERT_EQ(wavefronts(st, 4), 1) << "D " << D << " store row " << r;
        }
      }
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "D " << D << " item " << i;
    EXPECT_EQ(worst_staggered, want) << "D " << D;
    EXPECT_EQ(worst_plain, 8) << "D " << D << ": the model no longer sees the conflicts the kernel had";
  }
}

// The V^T pre-pass's loops (ws_vt_prepass.hpp's kernel, item by item on the CPU: the load phase's
// rows into the padded chunk, then ws_fp8.hpp's vt_item / vt_prepass_word / transpose_4x4_bytes) over
// V in BSHD or BHSD; `writes` counts each V^T byte's stores.
namespace {
std::vector<uint8_t> prepass_on_cpu(const std::vector<uint8_t>& v, int D, int BN, int64_t Sk, int64_t Hk, int64_t B,
                                    int64_t s_row, int64_t s_head, int64_t s_batch, std::vector<int>& writes) {
  const int64_t keys = vt_keys(Sk, BN);
  std::vector<uint8_t> vt(size_t(vt_bytes(B, Hk, D, Sk, BN)), 0xEE);  // the scratch MmaExecution allocates
  writes.assign(vt.size(), 0);
  const int pitch = vt_chunk_pitch(D);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hk; ++h)
      for (int64_t k0 = 0; k0 < keys; k0 += kVtChunkKeys) {
        std::vector<uint32_t> chunk(size_t(kVtChunkKeys * pitch), 0xDEADBEEFu);
        for (int i = 0; i < kVtChunkKeys * D / 16; ++i) {  // 16-byte pieces: row r, piece c
          const int r = i / (D / 16), c = i % (D / 16);
          for (int word = 0; word < 4; ++word) {
            uint32_t x = 0;
            if (k0 + r < Sk)
              for (int e = 0; e < 4; ++e)
                x |= uint32_t(v[size_t(b * s_batch + h * s_head + (k0 + r) * s_row + 16 * c + 4 * word + e)]) << (8 * e);
            chunk[size_t(r * pitch + 4 * c + word)] = x;
          }
        }
        for (int i = 0; i < vt_items(D); ++i) {
          const VtItem it = vt_item(i);
          uint32_t in[4], out[4];
          for (int j = 0; j < 4; ++j) in[j] = chunk[size_t(vt_prepass_word(it, j, D))];
          transpose_4x4_bytes(in, out);
          for (int r = 0; r < 4; ++r)
            for (int e = 0; e < 4; ++e) {
              const size_t at = size_t(((b * Hk + h) * D + 4 * it.dg + r) * keys + k0 + 4 * it.w + e);
              vt[at] = uint8_t(out[r] >> (8 * e)), ++writes[at];
            }
        }
      }
  return vt;
}
}  // namespace

// The pre-pass writes every byte of V^T once: V^T[d][c] is key vt_source_key(c)'s byte d, zero past
// Sk, in both layouts; the key rows an item reads sit in at most 4 banks' worth of conflict (each of
// a warp's 32 items' 4-byte loads: 8 distinct banks at least).
TEST(WsFp8, ThePrepassWritesEveryVtByteOnceWithTheKeyItsSlotStandsFor) {
  std::mt19937 rng(5);
  for (int D : {64, 128, 256})
    for (const bool bshd : {true, false}) {
      const int BN = ws_tile_row(D, 1, false, true).BN;  // the pre-pass instance's tile: its rows' rounding
      const int64_t Sk = 300, Hk = 2, B = 2, keys = vt_keys(Sk, BN);
      const int64_t s_row = bshd ? Hk * D : D, s_head = bshd ? D : Sk * D, s_batch = Sk * Hk * D;
      std::vector<uint8_t> v(size_t(B * Sk * Hk * D));
      for (auto& x : v) x = uint8_t(1 + rng() % 255);
      std::vector<int> writes;
      const std::vector<uint8_t> vt = prepass_on_cpu(v, D, BN, Sk, Hk, B, s_row, s_head, s_batch, writes);
      for (int w : writes) ASSERT_EQ(w, 1) << "D " << D;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hk; ++h)
          for (int d = 0; d < D; ++d)
            for (int64_t c = 0; c < keys; ++c) {
              const int64_t key = vt_source_key(c);
              const uint8_t want = key < Sk ? v[size_t(b * s_batch + h * s_head + key * s_row + d)] : 0;
              ASSERT_EQ(vt[size_t(((b * Hk + h) * D + d) * keys + c)], want)
                  << "D " << D << (bshd ? " BSHD" : " BHSD") << " (" << b << ", " << h << ") V^T (" << d << ", " << c << ")";
            }
      for (int dg = 0; dg < D / 4; ++dg)
        for (int j = 0; j < 4; ++j) {
          std::vector<int> banks;
          for (int w = 0; w < 32; ++w) banks.push_back(vt_prepass_word(VtItem{dg, w}, j, D) % 32);
          std::sort(banks.begin(), banks.end());
          EXPECT_GE(std::unique(banks.begin(), banks.end()) - banks.begin(), 8) << "D " << D << " dg " << dg << " j " << j;
        }
    }
}

// The pre-pass's V^T through its tensor map (ws_layout.hpp's tma_tile_vt) under the TMA's documented
// rules (box j reads columns [j BC, (j + 1) BC) from the tile's first key, an element outside the
// tensor reads as zero, it lands at j * box_bytes plus the swizzled box offset) puts in shared memory
// what the producer's transposer writes there (TheTransposeWritesEveryVtByteOnceWithItsSlotsKeysValue):
// at fp8_vt_offset(d, c), the byte of the key A slot c stands for, or zero past Sk; every tile of a
// ragged Sk, V in BHSD. Also for the pre-pass instance's own row where its tile is wider (D = 128: 224
// keys, seven 32-byte swizzle blocks a V^T row), where fp8_vt_offset is where the consumers' V^T
// descriptors read (test_ws_layout.cpp's WgmmaReadsOfFp8VtThroughItsDescriptorsAreTheTilesBytes).
TEST(WsFp8, ThePrepassesVtTilesLandAsTheTransposerWritesThem) {
  // The pre-pass's rows: Sk rounded up to whole chunks of 128 keys and whole tiles of the instance's
  // BN, the least such multiple: 896 keys for 224, 640 for 160, 128 for 128.
  EXPECT_EQ(vt_keys_round(224), 896);
  EXPECT_EQ(vt_keys_round(160), 640);
  EXPECT_EQ(vt_keys_round(128), 128);
  EXPECT_EQ(vt_keys_round(96), 384);
  EXPECT_EQ(vt_keys(1, 224), 896);
  EXPECT_EQ(vt_keys(896, 224), 896);
  EXPECT_EQ(vt_keys(897, 224), 1792);
  EXPECT_EQ(vt_keys(8192, 224), 8960);
  EXPECT_EQ(vt_keys(8192, 160), 8320);
  EXPECT_EQ(vt_keys(4096, 160), 4480);
  EXPECT_EQ(vt_keys(8192, 128), 8192);
  EXPECT_EQ(vt_keys(300, 128), 384);
  EXPECT_EQ(vt_bytes(2, 3, 64, 641, 160), 2 * 3 * 64 * 1280);
  std::mt19937 rng(11);
  for (int D : {64, 128, 256})
    for (const int BN : std::set<int>{128, ws_tile_row(D, 1, false, true).BN})
      for (const int64_t Sk : {100, 300, 385, 900}) {
        const int64_t Hk = 2, B = 2, keys = vt_keys(Sk, BN);
        const int64_t s_row = D, s_head = Sk * D, s_batch = Sk * Hk * D;  // BHSD
        std::vector<uint8_t> v(size_t(B * Sk * Hk * D));
        for (auto& x : v) x = uint8_t(1 + rng() % 255);  // no zero: a zero in a tile is a key past Sk
        std::vector<int> writes;
        const std::vector<uint8_t> vt = prepass_on_cpu(v, D, BN, Sk, Hk, B, s_row, s_head, s_batch, writes);
        const TmaTile t = tma_tile_vt(BN, D, keys, Hk, B);
        ASSERT_EQ(tma_tile_problem(t), nullptr) << tma_tile_problem(t);
        EXPECT_EQ(t.tile_bytes, uint32_t(BN * D)) << "expect_tx: a V stage's bytes";
        // 128 keys: one 128-byte swizzle block a V^T row; 224 and 160: seven and five 32-byte ones
        // (wgmma's layout type 3).
        EXPECT_EQ(t.swizzle, BN == 128 ? 128 : 32);
        EXPECT_EQ(t.copies, BN == 224 ? 7 : BN == 160 ? 5 : 1);
        EXPECT_EQ(int64_t(t.box_bytes), int64_t(D) * t.swizzle) << "box j lands D rows of one swizzle block on";
        for (int64_t kv0 = 0; kv0 < Sk; kv0 += BN) {
          EXPECT_LE(uint64_t(kv0 / 2) + uint64_t(t.copies) * t.box[0], t.dim[0]) << "the tile's window inside the row";
          const int64_t h = 1, b = 1;
          std::vector<uint8_t> smem(t.tile_bytes, 0xCD);
          for (int j = 0; j < t.copies; ++j)
            for (uint32_t r = 0; r < t.box[1]; ++r)
              for (uint32_t c = 0; c < t.box[0]; ++c) {  // 16-bit columns: two key bytes each
                const uint64_t col = uint64_t(kv0 / 2) + uint64_t(j) * t.box[0] + c;
                const uint32_t at = uint32_t(j * t.box_bytes) + swizzle_address(r * uint32_t(t.swizzle) + c * 2, t.swizzle);
                for (int e = 0; e < 2; ++e)
                  smem[at + uint32_t(e)] = col < t.dim[0] && r < t.dim[1]
                                               ? vt[size_t(b * int64_t(t.stride[2]) + h * int64_t(t.stride[1]) +
                                                           int64_t(r) * int64_t(t.stride[0]) + int64_t(col) * 2 + e)]
                                               : uint8_t(0);
              }
          for (int d = 0; d < D; ++d)
            for (int c = 0; c < BN; ++c) {
              const int64_t key = kv0 + 32 * (c / 32) + fp8_key_of_slot(c % 32);
              const uint8_t want = key < Sk ? v[size_t(b * s_batch + h * s_head + key * s_row + d)] : 0;
              ASSERT_EQ(smem[size_t(fp8_vt_offset(d, c, BN, D))], want)
                  << "D " << D << " BN " << BN << " Sk " << Sk << " tile at " << kv0 << " V^T (" << d << ", " << c << ")";
            }
        }
      }
}
