// InputWatch (harness/run/input_watch.hpp): an untouched tensor passes; one changed element is
// named with its index, several with a count; slots marked the path's own are not blamed; without
// the original bytes the tensor is still named; bytes_checksum sees a change of any single bit.
#include "harness/run/input_watch.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdint>
#include <vector>

using fa::InputWatch;

namespace {

std::vector<uint8_t> bytes_of(const std::vector<uint16_t>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * 2);
}

}  // namespace

TEST(InputWatch, AnUntouchedTensorGivesNoFault) {
  std::vector<uint16_t> q(1000, 7);
  InputWatch w;
  w.add("Q", q.data(), q.size() * 2, 2, [was = bytes_of(q)] { return was; });
  EXPECT_EQ(w.check(), "");
}

TEST(InputWatch, AChangedElementIsNamedWithItsIndex) {
  std::vector<uint16_t> k(999, 3);
  InputWatch w;
  w.add("K", k.data(), k.size() * 2, 2, [was = bytes_of(k)] { return was; });
  k[998] ^= 0x100;  // the high byte of the last element
  EXPECT_EQ(w.check(), "the path wrote its inputs (K, element 998)");
  k[3] = 4;
  EXPECT_EQ(w.check(), "the path wrote its inputs (K, element 3 and 1 more)");
}

TEST(InputWatch, SlotsThePathOwnsAreNotBlamedButOthersAre) {
  std::vector<uint16_t> v(64, 1);
  InputWatch w;
  w.add("V", v.data(), v.size() * 2, 2, [was = bytes_of(v)] { return was; }, [](size_t e) { return e >= 60; });
  v[61] = 9;
  EXPECT_EQ(w.check(), "") << "an appended slot written wrongly is the cache check's to judge";
  v[0] = 9;
  EXPECT_EQ(w.check(), "the path wrote its inputs (V, element 0)");
}

TEST(InputWatch, WithoutTheOriginalTheTensorIsStillNamed) {
  std::vector<int64_t> table(10, 5);
  InputWatch w;
  w.add("the page table", table.data(), table.size() * 8, 8);
  table[4] = -1;
  EXPECT_EQ(w.check(), "the path wrote its inputs (the page table: its checksum changed)");
}

TEST(InputWatch, TheChecksumSeesAnySingleBitFlip) {
  std::vector<uint8_t> b(77);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 37);
  const uint64_t h = fa::bytes_checksum(b.data(), b.size());
  for (size_t i = 0; i < b.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      b[i] ^= uint8_t(1u << bit);
      EXPECT_NE(fa::bytes_checksum(b.data(), b.size()), h) << "byte " << i << " bit " << bit;
      b[i] ^= uint8_t(1u << bit);
    }
}

// Past 32 MiB the checksum is taken over chunks in parallel: a change in any chunk, at its first or
// last byte, or two chunks swapped, still changes it.
TEST(InputWatch, TheChunkedChecksumSeesAChangeInAnyChunkAndTheirOrder) {
  constexpr size_t chunk = size_t(32) << 20;
  std::vector<uint8_t> b(3 * chunk + 1000);
  for (size_t i = 0; i < b.size(); ++i) {  // no period: the chunks differ
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31;
    b[i] = uint8_t((x * 0xbf58476d1ce4e5b9ull) >> 56);
  }
  ASSERT_FALSE(std::equal(b.begin(), b.begin() + chunk, b.begin() + chunk));
  const uint64_t h = fa::bytes_checksum(b.data(), b.size());
  EXPECT_EQ(fa::bytes_checksum(b.data(), b.size()), h);
  for (size_t at : {size_t(0), chunk - 1, chunk, 2 * chunk + 17, b.size() - 1}) {
    b[at] ^= 0x10;
    EXPECT_NE(fa::bytes_checksum(b.data(), b.size()), h) << "byte " << at;
    b[at] ^= 0x10;
  }
  std::swap_ranges(b.begin(), b.begin() + chunk, b.begin() + chunk);
  EXPECT_NE(fa::bytes_checksum(b.data(), b.size()), h) << "chunks 0 and 1 swapped";
}
