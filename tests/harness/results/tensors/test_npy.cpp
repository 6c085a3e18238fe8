// .npy files: a v1.0 header NumPy reads (magic, version, length, dict, padding to 64 bytes,
// '\n'), little-endian dtypes, C-order shapes, and data that round-trips bit for bit; errors name
// the file; NumPy itself loads what we write where it is installed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/results/tensors/npy.hpp"
#include "harness/sweep/sweep.hpp"
#include "helpers.hpp"

using namespace fa;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

NpyArray iota_f4(std::vector<int64_t> shape) {
  NpyArray a{"<f4", std::move(shape), {}};
  std::vector<float> v(size_t(a.elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) + 0.5f;
  a.data.resize(v.size() * 4);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

}  // namespace

TEST(Npy, TheHeaderIsVersionOnePaddedToSixtyFourBytes) {
  const auto path = test::temp_file(".npy", "");
  write_npy(path, iota_f4({2, 3, 4}));
  const std::string b = slurp(path);
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t hlen = size_t((unsigned char)b[8]) | size_t((unsigned char)b[9]) << 8;
  EXPECT_EQ((10 + hlen) % 64, 0u);
  const std::string h = b.substr(10, hlen);
  EXPECT_EQ(h.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }", 0), 0u) << h;
  EXPECT_EQ(h.back(), '\n');
  EXPECT_EQ(b.size(), 10 + hlen + 24 * 4);
}

TEST(Npy, ArraysRoundTripWithDtypeShapeAndCOrder) {
  const auto path = test::temp_file(".npy", "");
  const NpyArray a = iota_f4({3, 2});
  write_npy(path, a);
  const NpyArray b = read_npy(path);
  EXPECT_EQ(b.descr, "<f4");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(b.data, a.data);
  float second_row_first;
  std::memcpy(&second_row_first, b.data.data() + 2 * 4, 4);
  EXPECT_EQ(second_row_first, 2.5f) << "element [1][0] is the third in C order";
}

TEST(Npy, OneDimensionalShapesKeepTheirTrailingComma) {
  const auto path = test::temp_file(".npy", "");
  write_npy(path, iota_f4({5}));
  EXPECT_NE(slurp(path).find("'shape': (5,), }"), std::string::npos);
  EXPECT_EQ(read_npy(path).shape, (std::vector<int64_t>{5}));
}

TEST(Npy, UnreadableFilesAreInputErrorsNamingTheFile) {
  const auto junk = test::temp_file(".npy", "not numpy");
  try {
    read_npy(junk);
    FAIL() << "no error for a file without the magic";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(junk), std::string::npos) << e.what();
  }
  const auto path = test::temp_file(".npy", "");
  NpyArray big_endian = iota_f4({2});
  big_endian.descr = ">f4";
  write_npy(path, big_endian);
  EXPECT_THROW(read_npy(path), InputError);
}

TEST(Npy, NumPyLoadsTheFilesWithTheirShapeDtypeAndValues) {
  const std::string py = test::python_with("numpy");
  if (py.empty()) GTEST_SKIP() << "numpy is not installed";
  const auto path = test::temp_file(".npy", "");
  write_npy(path, iota_f4({2, 3}));
  const std::string check = py + " -c \"import numpy as np; a = np.load('" + path +
                            "'); assert a.dtype == np.float32 and a.shape == (2, 3) and a[1, 0] == 3.5, a\"";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(Npy, AHugeDimensionInTheHeaderIsAClearErrorNamingTheFile) {
  for (const std::string huge : {"99999999999999999999999", "4611686018427387904"}) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + huge + ", 3), }";
    header.append(size_t(64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8);
    const auto path = test::temp_file(".npy", bytes + header + std::string(24, '\0'));
    try {
      read_npy(path);
      FAIL() << "no error for dimension " << huge;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("dimension " + huge), std::string::npos) << e.what();
    }
  }
}

// A device or FIFO is refused without being opened for reading (/dev/zero was read until memory
// ran out, a FIFO blocked), and the data is read only once the header and the file's size agree
// and fit what the caller's tensor can take.
TEST(Npy, ADeviceOrFifoIsRefusedAndDataIsReadOnlyOnceItsSizeIsKnownToFit) {
  test::TempDir d;
  const std::string dev = d.path + "/zero.npy", fifo = d.path + "/fifo.npy";
  std::filesystem::create_symlink("/dev/zero", dev);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& f : {dev, fifo}) {
    try {
      read_npy(f);
      FAIL() << "no error for " << f;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
  const auto path = test::temp_file(".npy", "");
  write_npy(path, iota_f4({2, 3}));  // 24 data bytes
  EXPECT_EQ(read_npy(path, 24).elements(), 6);
  try {
    read_npy(path, 16);
    FAIL() << "24 data bytes read under a 16-byte cap";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not read"), std::string::npos) << e.what();
  }
  EXPECT_EQ(npy_max_data_bytes({2, 3}), 48u) << "8 bytes an element: the widest dtype read_npy takes";
  std::ofstream(path, std::ios::app) << "grown";  // a header that no longer matches the file's size
  try {
    read_npy(path);
    FAIL() << "a file longer than its header says";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("29 data bytes, but shape and dtype need 24"), std::string::npos) << e.what();
  }
}

