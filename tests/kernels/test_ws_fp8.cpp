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
#include <vector>

#include "kernels/device/fragment_layout.hpp"
#include "kernels/mma/ws_fp8.hpp"
#include "kernels/mma/ws_pipeline.hpp"

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
