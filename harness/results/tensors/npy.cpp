// .npy header writing and parsing.
#include "harness/results/tensors/npy.hpp"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/input_error.hpp"
#include "harness/results/output_file.hpp"

namespace fa {

int64_t NpyArray::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int npy_item_size(const std::string& descr) {
  if (descr == "|u1") return 1;  // FP8 bits (numpy has no FP8 type; torch reads them with .view(float8_*))
  if (descr == "<f2") return 2;
  if (descr == "<f4") return 4;
  if (descr == "<f8") return 8;
  return 0;
}

void write_npy(const std::string& path, const NpyArray& a) {
  std::string shape = "(";
  for (int64_t d : a.shape) shape += std::to_string(d) + (a.shape.size() == 1 ? ",)" : ", ");
  if (a.shape.size() != 1) shape = (a.shape.empty() ? shape : shape.substr(0, shape.size() - 2)) + ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", a.descr, shape);
  const size_t total = 10 + header.size() + 1;  // magic(6) version(2) length(2), header, '\n'
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += char(header.size() & 0xff);
  head += char(header.size() >> 8);
  std::ofstream f(path, std::ios::binary);
  f << head << header;
  f.write(reinterpret_cast<const char*>(a.data.data()), std::streamsize(a.data.size()));
  if (!f.flush()) throw WriteError(fmt::format("cannot write '{}'", path));
}

namespace {

// The text after `'key':` in the header dict, trimmed of leading spaces.
std::string after_key(const std::string& h, const std::string& key, const std::string& path) {
  const size_t at = h.find("'" + key + "'");
  if (at == std::string::npos) throw InputError(SourceLoc{path, 0}, "npy", fmt::format("header has no '{}'", key));
  size_t v = h.find(':', at);
  while (v + 1 < h.size() && h[v + 1] == ' ') ++v;
  return h.substr(v + 1);
}

}  // namespace

size_t npy_max_data_bytes(const std::vector<int64_t>& shape) {
  size_t n = 8;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > SIZE_MAX / size_t(d))) return SIZE_MAX;
    n *= size_t(d);
  }
  return n;
}

NpyArray read_npy(const std::string& path, size_t max_data_bytes) {
  auto fail = [&](const std::string& why) { return InputError(SourceLoc{path, 0}, "npy", why); };
  // A regular file only, its size known before a byte is read: /dev/zero or a FIFO would be read
  // forever, and the data is read only once the header says how much there must be.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw fail("cannot open the file");
  if (!std::filesystem::is_regular_file(st)) throw fail("not a regular file (a device, FIFO or folder)");
  const uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw fail("cannot read the file's size");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw fail("cannot open the file");
  auto read_at_most = [&](size_t n) {
    std::string out(n, '\0');
    f.read(out.data(), std::streamsize(n));
    out.resize(size_t(f.gcount()));
    return out;
  };
  const std::string lead = read_at_most(12);
  if (lead.size() < 10 || lead.compare(0, 6, "\x93NUMPY") != 0) throw fail("not a .npy file (no \\x93NUMPY magic)");
  const int major = (unsigned char)lead[6];
  const size_t len_bytes = major == 1 ? 2 : major == 2 ? 4 : 0;
  if (!len_bytes) throw fail(fmt::format("unsupported .npy version {}", major));
  if (lead.size() < 8 + len_bytes) throw fail("truncated header");
  size_t hlen = 0;
  for (size_t i = 0; i < len_bytes; ++i) hlen |= size_t((unsigned char)lead[8 + i]) << (8 * i);
  const size_t data_at = 8 + len_bytes + hlen;
  if (file_size < data_at) throw fail("truncated header");
  f.clear();
  f.seekg(std::streamoff(8 + len_bytes));
  const std::string h = read_at_most(hlen);
  if (h.size() != hlen) throw fail("truncated header");
  NpyArray a;
  const std::string d = after_key(h, "descr", path);
  a.descr = d.substr(1, d.find('\'', 1) - 1);
  if (!npy_item_size(a.descr))
    throw fail(fmt::format("dtype '{}' is not one of '|u1' (FP8 bits), '<f2' (fp16), '<f4' (fp32, or bf16 widened), '<f8'", a.descr));
  if (after_key(h, "fortran_order", path).rfind("False", 0) != 0) throw fail("fortran_order must be False (C order)");
  const std::string s = after_key(h, "shape", path);
  // Each dimension, and their product, must fit in what the file holds: a header cannot ask for
  // more elements than there are bytes (which also keeps the product far from overflow).
  const size_t data_bytes = size_t(file_size - data_at);
  if (data_bytes > max_data_bytes)
    throw fail(fmt::format("{} data bytes, more than the {} its tensor can take: not read", data_bytes, max_data_bytes));
  size_t product = 1;
  for (size_t i = 1; i < s.size() && s[i] != ')';) {
    if (std::isdigit((unsigned char)s[i])) {
      const size_t n = s.find_first_not_of("0123456789", i) == std::string::npos ? s.size() - i : s.find_first_not_of("0123456789", i) - i;
      const std::string digits = s.substr(i, n);
      if (n > 18 || std::stoull(digits) > data_bytes)
        throw fail(fmt::format("dimension {} is larger than the file's {} data bytes allow", digits, data_bytes));
      a.shape.push_back(int64_t(std::stoull(digits)));
      product = a.shape.back() == 0 ? 0 : product * size_t(a.shape.back());
      if (product > data_bytes) throw fail(fmt::format("shape needs more elements than the file's {} data bytes hold", data_bytes));
      i += n;
    } else ++i;
  }
  const size_t want = size_t(a.elements()) * size_t(npy_item_size(a.descr));
  if (data_bytes != want) throw fail(fmt::format("{} data bytes, but shape and dtype need {}", data_bytes, want));
  a.data.resize(want);
  f.read(reinterpret_cast<char*>(a.data.data()), std::streamsize(want));
  if (size_t(f.gcount()) != want) throw fail(fmt::format("read {} of its {} data bytes", size_t(f.gcount()), want));
  return a;
}

}  // namespace fa
