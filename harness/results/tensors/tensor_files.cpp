// Tensor folders: layout-shaped .npy writing and the checked reading of inputs.
#include "harness/results/tensors/tensor_files.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/input_error.hpp"
#include "harness/results/tensors/npy.hpp"

namespace fa {
namespace {

std::vector<int64_t> shape_of(const Problem& p, int64_t seq, int64_t heads) {
  return p.layout == Layout::bhsd ? std::vector<int64_t>{p.B, heads, seq, p.D} : std::vector<int64_t>{p.B, seq, heads, p.D};
}

NpyArray int32_array(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  std::vector<int32_t> narrow(v.begin(), v.end());
  NpyArray a{"<i4", std::move(shape), std::vector<uint8_t>(narrow.size() * 4)};
  std::memcpy(a.data.data(), narrow.data(), a.data.size());
  return a;
}

}  // namespace

std::vector<int64_t> q_shape(const Problem& p) {
  if (p.layout == Layout::thd) return {p.serving().cu_q[size_t(p.B)], p.H, p.D};
  return shape_of(p, p.S, p.H);
}

std::vector<int64_t> kv_shape(const Problem& p) {
  if (p.paged()) return {p.serving().pages, p.page_size, p.Hk, p.D};
  if (p.layout == Layout::thd) return {p.serving().cu_k[size_t(p.B)], p.Hk, p.D};
  return shape_of(p, p.Sk, p.Hk);
}

namespace {

// The dtype table's .npy column: fp16 as itself, bf16 widened to fp32 (exact), FP8 as its bits
// ('|u1', with descale.npy beside them: numpy has no FP8 type, OCP or FNUZ; torch reads the bits
// with .view(torch.float8_e4m3fnuz) and the like). '<f4' is the one widened descr.
std::string descr_of(DType t) { return std::string(dtype_row(t).npy_descr); }
bool widened(DType t) { return dtype_row(t).npy_descr == "<f4"; }

template <typename T>
NpyArray array_of(const std::string& descr, std::vector<int64_t> shape, const std::vector<T>& v) {
  NpyArray a{descr, std::move(shape), std::vector<uint8_t>(v.size() * sizeof(T))};
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

// Values already rounded to the dtype, as the dtype's file type.
NpyArray typed_array(DType t, std::vector<int64_t> shape, const std::vector<float>& v) {
  if (widened(t)) return array_of("<f4", std::move(shape), v);  // bf16 widened: exact
  return array_of(descr_of(t), std::move(shape), to_typed(t, v).bytes);
}

NpyArray output_array(const Problem& p, const TypedBuffer& o) {
  if (!widened(o.dtype)) return array_of(descr_of(o.dtype), q_shape(p), o.bytes);
  std::vector<float> wide(size_t(o.size()));
  for (int64_t i = 0; i < o.size(); ++i) wide[size_t(i)] = o.at(i);
  return array_of("<f4", q_shape(p), wide);
}

void make_dir(const std::string& d) {
  if (mkdir(d.c_str(), 0777) != 0 && errno != EEXIST) throw WriteError(fmt::format("cannot create folder '{}'", d));
}

}  // namespace

std::string record_folder(const Record& r) {
  const Problem& p = r.problem;
  std::string s = fmt::format("{}-{}-{}-seed{}-{}-G{}", p.label(), dtype_name(p.dtype), layout_name(p.layout), p.seed,
                              r.path, r.g_req.str());
  if (!p.serving_fields().empty()) {  // rows of one name differ in lengths, pages, window...: FNV-1a of the key
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : p.key()) h = (h ^ ch) * 1099511628211ull;
    s += fmt::format("-{:08x}", uint32_t(h ^ (h >> 32)));
  }
  for (char& c : s)
    if (!std::isalnum((unsigned char)c) && c != '-' && c != '.') c = '_';
  return s;
}

void save_record_tensors(const std::string& dir, const Record& r, const HostInputs& in, const RunOutputs& out,
                         const std::vector<double>& ref_o_bhsd) {
  in.require_every_q_row("--save-tensors");
  const Problem& p = r.problem;
  make_dir(dir);
  const std::string d = dir + "/" + record_folder(r);
  make_dir(d);
  write_npy(d + "/q.npy", typed_array(p.dtype, q_shape(p), in.q));
  write_npy(d + "/k.npy", typed_array(p.dtype, kv_shape(p), in.k));
  write_npy(d + "/v.npy", typed_array(p.dtype, kv_shape(p), in.v));
  write_npy(d + "/o.npy", output_array(p, out.o));
  write_npy(d + "/lse.npy", array_of("<f4", {p.B, p.H, p.S}, out.lse));
  if (is_fp8(p.dtype))  // per-tensor descales, q, k, v: element e of Q means q[e] * descale[0]
    write_npy(d + "/" + kDescaleFile, array_of("<f4", {3}, std::vector<float>{in.descale.q, in.descale.k, in.descale.v}));
  if (p.varlen() || p.layout == Layout::thd || p.paged()) {
    const ServingShape& sh = p.serving();
    write_npy(d + "/cu_seqlens_q.npy", int32_array({p.B + 1}, sh.cu_q));
    write_npy(d + "/cu_seqlens_k.npy", int32_array({p.B + 1}, sh.cu_k));
    write_npy(d + "/seqused_k.npy", int32_array({p.B}, sh.k_len));
    if (p.paged()) write_npy(d + "/block_table.npy", int32_array({p.B, sh.pages_per_seq}, sh.table));
  }
  std::vector<double> ref(size_t(p.q_elements()), 0.0);  // [B][H][S][D] -> the problem's layout
  const Strides qs = q_strides(p);
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < p.q_len(b); ++s)
        for (int64_t x = 0; x < p.D; ++x)
          ref[size_t(qs.at(b, s, h) + x)] = ref_o_bhsd[size_t(((b * p.H + h) * p.S + s) * p.D + x)];
  write_npy(d + "/ref_o.npy", array_of("<f8", q_shape(p), ref));
  write_problem_json(d, r);
}

void write_problem_json(const std::string& dir, const Record& r) {
  nlohmann::json cells;
  for (const auto& [k, v] : problem_fields(r.problem)) cells[k] = v;
  cells["scale"] = fmt::format("{}", r.problem.scale);  // shortest round trip: the reference sees the same scale
  const nlohmann::json j = {{"problem", cells}, {"path", r.path}, {"G_req", r.g_req.str()}, {"G_used", r.g_used}};
  const std::string file = dir + "/" + kProblemFile;
  std::ofstream out(file);
  out << j.dump(1) << "\n";
  if (!out.flush()) throw WriteError(fmt::format("cannot write '{}'", file));
}

namespace {

std::vector<float> load_one(const std::string& file, const Problem& p, const std::vector<int64_t>& shape) {
  const NpyArray a = read_npy(file, npy_max_data_bytes(shape));
  auto fail = [&](const std::string& why) { return InputError(SourceLoc{file, 0}, "--load-tensors", why); };
  if (a.descr != descr_of(p.dtype))
    throw fail(fmt::format("dtype '{}' but a {} problem needs '{}'{}", a.descr, dtype_name(p.dtype), descr_of(p.dtype),
                           p.dtype == DType::bf16 ? " (bf16 widened to fp32)" : ""));
  if (a.shape != shape) {
    auto str = [](const std::vector<int64_t>& v) {
      std::string s;
      for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
      return "(" + s + ")";
    };
    throw fail(fmt::format("shape {} but the problem ({} layout) needs {}", str(a.shape), layout_name(p.layout), str(shape)));
  }
  std::vector<float> v(size_t(a.elements()));
  const size_t width = widened(p.dtype) ? 4 : size_t(dtype_bytes(p.dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits = 0;  // little-endian, as the descrs say
    std::memcpy(&bits, a.data.data() + width * i, width);
    if (widened(p.dtype)) {
      v[i] = from_bits(DType::fp32, bits);
      if (round_to(p.dtype, v[i]) != v[i] && v[i] == v[i])
        throw fail(fmt::format("element {} ({}) is not a {} value; round the tensor to {} first", i, v[i],
                               dtype_name(p.dtype), dtype_name(p.dtype)));
    } else {
      v[i] = from_bits(p.dtype, bits);
      if (is_fp8(p.dtype) && v[i] != v[i])
        throw fail(fmt::format("element {} is an FP8 NaN (bits 0x{:02x})", i, bits));
    }
  }
  return v;
}

}  // namespace

HostInputs load_inputs(const std::string& dir, const Problem& p) {
  HostInputs in;
  in.q = load_one(dir + "/q.npy", p, q_shape(p));
  in.k = load_one(dir + "/k.npy", p, kv_shape(p));
  in.v = load_one(dir + "/v.npy", p, kv_shape(p));
  if (is_fp8(p.dtype)) {
    const std::string file = dir + "/" + kDescaleFile;
    const NpyArray a = read_npy(file, npy_max_data_bytes({3}));
    auto fail = [&](const std::string& why) { return InputError(SourceLoc{file, 0}, "--load-tensors", why); };
    if (a.descr != "<f4" || a.shape != std::vector<int64_t>{3})
      throw fail(fmt::format("an {} problem needs the descales of q, k and v as '<f4' of shape (3,)", dtype_name(p.dtype)));
    float d[3];
    std::memcpy(d, a.data.data(), sizeof d);
    for (int i = 0; i < 3; ++i)
      if (!(d[i] > 0) || !std::isfinite(d[i]))
        throw fail(fmt::format("descale {} ({}) is not a positive finite number", "qkv"[i], d[i]));
    in.descale = {d[0], d[1], d[2]};
  }
  return in;
}

}  // namespace fa
