// NumPy .npy files, format version 1.0 (version 2.0 also read): the magic, a little-endian header
// length, a Python-dict header {'descr', 'fortran_order', 'shape'} padded with spaces to a
// multiple of 64 bytes and ending in '\n', then the data in C order. Little-endian descrs only
// ('<f2', '<f4', '<f8'); the host is little-endian (x86-64, AArch64), so data is copied as is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fa {

struct NpyArray {
  std::string descr;            // e.g. "<f2"
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;    // C order, product(shape) * item size bytes
  int64_t elements() const;
};

int npy_item_size(const std::string& descr);  // 2, 4, 8; 0 for a descr this reader does not take

// Throws WriteError naming the file on a failed write.
void write_npy(const std::string& path, const NpyArray& a);
// Throws InputError naming the file and what is wrong (not a regular file, magic, header, descr,
// order, size). The header is checked against the file's size before any data is read, and a file
// with more than `max_data_bytes` of data (what the caller's tensor can take at the widest dtype) is
// refused unread.
NpyArray read_npy(const std::string& path, size_t max_data_bytes = SIZE_MAX);
// The most data bytes an array of `shape` can hold in any dtype read_npy takes (8 bytes an element).
size_t npy_max_data_bytes(const std::vector<int64_t>& shape);

}  // namespace fa
