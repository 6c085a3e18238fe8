// Reading record folders back: problem.json through the sweep row builder (the same checks a
// sweep file gets), outputs through harness/npy.hpp.
#include "harness/results/tensors/check_dir.hpp"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/results/tensors/npy.hpp"
#include "harness/sweep/sweep.hpp"
#include "harness/results/tensors/tensor_files.hpp"

namespace fa {
namespace {

bool is_file(const std::string& f) {
  struct stat st;
  return stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool exists(const std::string& f) {
  struct stat st;
  return stat(f.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

std::string shape_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return "(" + s + ")";
}

// An array of the expected shape as doubles; '<f2' only where `half_ok`.
std::vector<double> read_values(const std::string& file, const std::vector<int64_t>& shape, bool half_ok) {
  if (!is_file(file)) throw InputError(SourceLoc{file, 0}, "check", "no such file");
  const NpyArray a = read_npy(file, npy_max_data_bytes(shape));
  auto fail = [&](const std::string& why) { return InputError(SourceLoc{file, 0}, "check", why); };
  if (a.shape != shape) throw fail(fmt::format("shape {} but the problem needs {}", shape_text(a.shape), shape_text(shape)));
  std::vector<double> v(size_t(a.elements()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (a.descr == "<f2" && half_ok) {
      uint16_t b;
      std::memcpy(&b, a.data.data() + 2 * i, 2);
      v[i] = from_bits(DType::fp16, b);
    } else if (a.descr == "<f4") {
      float x;
      std::memcpy(&x, a.data.data() + 4 * i, 4);
      v[i] = x;
    } else if (a.descr == "<f8") {
      std::memcpy(&v[i], a.data.data() + 8 * i, 8);
    } else {
      throw fail(fmt::format("dtype '{}': O takes '<f2' (fp16 problems), '<f4' or '<f8'; LSE '<f4' or '<f8'", a.descr));
    }
  }
  return v;
}

// Every file check reads must be a regular file: a q.npy linked to /dev/zero (or a FIFO) would be
// read forever, or block, before any shape check could refuse it.
void refuse_non_regular(const std::string& dir) {
  for (const char* name : {kProblemFile, "q.npy", "k.npy", "v.npy", kDescaleFile, "o.npy", "lse.npy"}) {
    const std::string file = dir + "/" + name;
    struct stat st;
    if (stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw InputError(SourceLoc{file, 0}, "check",
                       "not a regular file (a device, FIFO or socket, or a link to one); check reads files only");
  }
}

}  // namespace

std::vector<std::string> record_dirs(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  for (const auto& d : dirs) {
    if (exists(d + "/" + kProblemFile)) {  // a record folder; read_record_dir refuses a non-regular one
      out.push_back(d);
      continue;
    }
    std::vector<std::string> found;
    if (DIR* h = opendir(d.c_str())) {
      while (const dirent* e = readdir(h))
        if (e->d_name[0] != '.' && is_file(d + "/" + e->d_name + "/" + kProblemFile)) found.push_back(d + "/" + e->d_name);
      closedir(h);
    }
    if (found.empty())
      throw InputError(SourceLoc{d, 0}, "check",
                       fmt::format("neither a record folder (no {}) nor a folder of them: write it with --save-tensors",
                                   kProblemFile));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

RecordDir read_record_dir(const std::string& dir) {
  refuse_non_regular(dir);
  const std::string file = dir + "/" + kProblemFile;
  const SourceLoc at{file, 0};
  nlohmann::json j;
  try {
    std::ifstream in(file);
    if (!in) throw InputError(at, "check", "cannot read it");
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, "check", fmt::format("not JSON: {}", e.what()));
  }
  if (!j.is_object() || !j.contains("problem") || !j["problem"].is_object())
    throw InputError(at, "problem", "no \"problem\" object (written by --save-tensors)");
  RawRow raw;
  raw.where = at;
  for (const auto& [k, v] : j["problem"].items()) {
    if (!v.is_string()) throw InputError(at, k, "not a string");
    if (!v.get_ref<const std::string&>().empty()) raw.cells[k] = v.get<std::string>();
  }
  const std::vector<SweepRow> rows = build_rows(raw, {}, Overrides{});
  if (rows.size() != 1) throw InputError(at, "problem", "describes more than one problem");
  if (rows[0].invalid) throw InputError(at, rows[0].invalid->field, rows[0].invalid->reason);
  RecordDir r{dir, rows[0].problem, j.value("path", std::string()), SplitRequest{}, j.value("G_used", 0)};
  if (const auto g = parse_split(j.value("G_req", std::string("0")))) r.g_req = *g;
  return r;
}

RunOutputs read_outputs(const std::string& dir, const Problem& p, bool with_lse) {
  RunOutputs out;
  const std::vector<double> o = read_values(dir + "/o.npy", q_shape(p), dtype_row(out_dtype(p.dtype)).npy_descr == "<f2");
  out.o = TypedBuffer(out_dtype(p.dtype), int64_t(o.size()));  // FP8 problems: O in bf16
  for (size_t i = 0; i < o.size(); ++i) out.o.set(int64_t(i), float(o[i]));  // rounds to the dtype (RNE)
  if (with_lse) {
    const std::vector<double> lse = read_values(dir + "/lse.npy", {p.B, p.H, p.S}, false);
    out.lse.assign(lse.begin(), lse.end());
  }
  return out;
}

}  // namespace fa
