// GpuExecution: allocation, upload, poison, launch + sync, read-back, event timing, and the
// checksums of what a path only reads (Q, K, V, the new tokens, the serving arrays and view).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "harness/device_model.hpp"
#include "kernels/runtime/gpu_execution.hpp"
#include "kernels/runtime/device_inputs.hpp"

namespace fa::gpu {

AttnArgs make_args(const Problem& p) {
  AttnArgs a{};
  const Strides qs = q_strides(p), ks = kv_strides(p);
  a.q_sb = qs.batch, a.q_ss = qs.seq, a.q_sh = qs.head;
  a.k_sb = ks.batch, a.k_ss = ks.seq, a.k_sh = ks.head;
  a.B = int(p.B), a.H = int(p.H), a.Hk = int(p.Hk), a.S = int(p.S), a.Sk = int(p.Sk), a.D = int(p.D);
  a.causal = p.causal;
  a.scale_log2 = float(p.softmax_scale()) * kLog2e;
  a.G = 0;
  a.v_descale = 1.f;
  a.serving = nullptr;  // GpuExecution points it at the problem's ServingView where it has one
  return a;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : n_(bytes) {
  if (bytes) FA_GPU_CHECK(malloc_device(&p_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) free_device(p_);
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) free_device(p_);
    p_ = o.p_, n_ = o.n_;
    o.p_ = nullptr, o.n_ = 0;
  }
  return *this;
}

namespace {

template <typename T, typename U>
DeviceBuffer upload_as(const std::vector<U>& host) {
  const std::vector<T> narrow(host.begin(), host.end());
  DeviceBuffer d(narrow.size() * sizeof(T));
  if (!narrow.empty()) FA_GPU_CHECK(copy_to_device(d.as<void>(), narrow.data(), narrow.size() * sizeof(T)));
  return d;
}

DeviceBuffer upload(const TypedBuffer& typed) {
  DeviceBuffer d(typed.bytes.size());
  FA_GPU_CHECK(copy_to_device(d.as<void>(), typed.bytes.data(), typed.bytes.size()));
  return d;
}

DeviceBuffer upload(DType t, const std::vector<float>& host) { return upload(to_typed(t, host)); }

// kv_cache: writes each appended token's K and V rows (D elements of `elem` bytes, kv head y of
// token x) at row[x] + y * head elements: copied from the compact [tokens][Hk][D] buffers, or the
// poison pattern (all-ones bits) where k_new is null. 16-byte words where a row is a multiple of 16
// bytes (every row then starts 16-byte aligned: the offsets are multiples of D), else bytes.
__global__ void kv_write_slots(const uint8_t* k_new, const uint8_t* v_new, uint8_t* k, uint8_t* v,
                               const int64_t* row, int64_t head, int row_bytes, int elem) {
  const int64_t t = blockIdx.x, h = blockIdx.y;
  const int64_t dst = (row[t] + h * head) * elem, src = (t * gridDim.y + h) * row_bytes;
  if (row_bytes % 16 == 0) {
    const uint4 ones = make_uint4(~0u, ~0u, ~0u, ~0u);
    for (int i = threadIdx.x; i < row_bytes / 16; i += blockDim.x) {
      reinterpret_cast<uint4*>(k + dst)[i] = k_new ? reinterpret_cast<const uint4*>(k_new + src)[i] : ones;
      reinterpret_cast<uint4*>(v + dst)[i] = k_new ? reinterpret_cast<const uint4*>(v_new + src)[i] : ones;
    }
  } else {
    for (int i = threadIdx.x; i < row_bytes; i += blockDim.x) {
      k[dst + i] = k_new ? k_new[src + i] : uint8_t(0xff);
      v[dst + i] = k_new ? v_new[src + i] : uint8_t(0xff);
    }
  }
}

// One thread spinning on the device clock: the planted delay (--plant-slowdown, test only).
__global__ void spin_kernel(uint64_t ticks) {
  const uint64_t t0 = wall_ticks();
  while (wall_ticks() - t0 < ticks) {
  }
}
void spin(uint64_t ticks, Stream st) {
  spin_kernel<<<1, 1, 0, st>>>(ticks);
  FA_GPU_CHECK_LAUNCH("spin_kernel");
}

// The cold flush: every 16 bytes of a 2 x (L2 + LLC) buffer read (MI300X: 2 x (4 + 256) MB; the
// Infinity Cache sits in front of HBM, and the old 2x-L2 flush left up to 256 MB of K and V warm),
// their XOR stored only if it equals a value the zeroed buffer cannot give (so the loads stay).
// Reading, not writing: a memset flush leaves L2 full of dirty lines, and the timed kernel that
// evicts them pays their write-back. On the H100 that
// was ~10 us of a 190 us decode (mma-decode, (1,32,8,1,131072,128) bf16: 200.6 us after a memset,
// 190.6 us after this read; torch cuDNN 197.4 / 184.6 us in the same call).
__global__ void read_flush_kernel(const uint4* buf, size_t n, uint4* sink) {
  uint32_t x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = buf[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = uint4{x, x, x, x};
}

// Order-free 64-bit checksum of n bytes: the sum over 8-byte words of splitmix64(word ^ index
// constant), the tail bytes folded in by one thread. A block sums in shared memory, then one atomic
// a block. One pass at memory bandwidth (a 1 GiB Q/K/V set: ~0.4 ms on an H100), so read_back()
// can checksum after the validated launch and the last timed one alike, where a copy back of the
// inputs would cost more than the launch it guards.
__device__ inline unsigned long long mix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__global__ void checksum_kernel(const uint8_t* p, size_t n, unsigned long long* out) {
  __shared__ unsigned long long part[256];
  unsigned long long acc = 0;
  const size_t words = n / 8;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    acc += mix64(reinterpret_cast<const unsigned long long*>(p)[i] ^ (i * 0xd6e8feb86659fd93ull));
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = words * 8; i < n; ++i) acc += mix64((unsigned long long)p[i] << 32 ^ i);
  part[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

// Milliseconds between two events recorded around what `enqueue` puts on the stream.
template <typename F>
double events_ms(Event start, Event stop, Stream st, F&& enqueue) {
  FA_GPU_CHECK(event_record(start, st));
  enqueue();
  FA_GPU_CHECK(event_record(stop, st));
  FA_GPU_CHECK(stream_sync(st));
  float ms = 0;
  FA_GPU_CHECK(event_elapsed_ms(&ms, start, stop));
  return double(ms);
}

// Elements [at, at + n) of the device's tensor against the host's values.
void check_window(const char* name, const DeviceBuffer& d, size_t at, const float* host, size_t n, DType t) {
  const size_t eb = size_t(dtype_bytes(t));
  std::vector<uint8_t> got(n * eb);
  FA_GPU_CHECK(copy_to_host(got.data(), d.as<uint8_t>() + at * eb, n * eb));
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, got.data() + i * eb, eb);
    if (const uint32_t want = to_bits(t, host[i]); bits != want)
      throw std::runtime_error(fmt::format("the device drew other inputs than the host: {}, element {}: bits {:#x}, the host's {:#x}",
                                           name, at + i, bits, want));
  }
}

// A tensor drawn on the device against the host's draw of it, on four 4 KiB windows (its start,
// thirds and end, each inside the tensor: a tensor under 4 KiB is one window): a device whose
// arithmetic drew other bits fails its records here, by name, rather than being validated against
// inputs it did not run on.
void check_drawn(const char* name, const DeviceBuffer& d, const std::vector<float>& host, DType t) {
  const size_t n = host.size(), w = std::min<size_t>(n, 4096 / size_t(dtype_bytes(t)));
  for (size_t third : {size_t(0), n / 3, 2 * n / 3, n - w}) {
    const size_t at = std::min(third, n - w);
    check_window(name, d, at, host.data() + at, w, t);
  }
}

// Q where the host drew only the oracle's rows: the first, third, two-thirds and last of them, in the
// first and last sequence, first and last head.
void check_drawn_rows(const Problem& p, const DeviceBuffer& q, const HostInputs& in) {
  const Strides qs = q_strides(p);
  const size_t R = in.q_rows.size();
  for (size_t i : {size_t(0), R / 3, 2 * R / 3, R - 1})
    for (int64_t b : {int64_t(0), p.B - 1})
      for (int64_t h : {int64_t(0), p.H - 1}) {
        const int64_t s = in.q_rows[i];
        check_window("Q", q, size_t(qs.at(b, s, h)), in.q.data() + in.q_offset(qs, b, s, h), size_t(p.D), p.dtype);
      }
}

}  // namespace

GpuExecution::GpuExecution(const Problem& p, const HostInputs& in, const GateContext& ctx, int partial_splits,
                           size_t guard_bytes)
    : p_(p), args_(make_args(p)), guard_bytes_(guard_bytes), flush_bytes_(cold_flush_bytes(ctx.device)) {
  const size_t eb = size_t(dtype_bytes(p.dtype));
  if (in.seeded && drawn_on_device(p)) {  // the seed's inputs, drawn here: nothing converted or uploaded
    const Descales d{draw_tensor(p, 1, q_, stream_), draw_tensor(p, 2, k_, stream_), draw_tensor(p, 3, v_, stream_)};
    if (d.q != in.descale.q || d.k != in.descale.k || d.v != in.descale.v)
      throw std::runtime_error(fmt::format("the device drew other inputs than the host: FP8 descales {} {} {}, the host's {} {} {}",
                                           d.q, d.k, d.v, in.descale.q, in.descale.k, in.descale.v));
    if (in.q_rows.empty()) check_drawn("Q", q_, in.q, p.dtype);
    else check_drawn_rows(p, q_, in);
    check_drawn("K", k_, in.k, p.dtype), check_drawn("V", v_, in.v, p.dtype);
    watch("Q", q_, eb, {}, 1), watch("K", k_, eb, {}, 2), watch("V", v_, eb, {}, 3);
  } else {  // converted once a tensor: uploaded from, then kept to name a changed element
    in.require_every_q_row("a GPU execution that uploads its inputs");
    TypedBuffer typed = to_typed(p.dtype, in.q);
    q_ = upload(typed);
    watch("Q", q_, eb, std::move(typed.bytes));
    typed = to_typed(p.dtype, in.k);
    k_ = upload(typed);
    watch("K", k_, eb, std::move(typed.bytes));
    typed = to_typed(p.dtype, in.v);
    v_ = upload(typed);
    watch("V", v_, eb, std::move(typed.bytes));
  }
  if (is_fp8(p.dtype)) {  // q's and k's descales fold into the scores' scale, v's into the epilogue
    args_.scale_log2 = float(p.softmax_scale() * double(in.descale.q) * double(in.descale.k)) * kLog2e;
    args_.v_descale = in.descale.v;
  }
  const size_t rows = size_t(p.B * p.H * p.S);
  o_bytes_ = size_t(p.q_elements()) * size_t(dtype_bytes(out_dtype(p.dtype)));
  lse_bytes_ = rows * sizeof(float);
  o_ = DeviceBuffer(o_bytes_ + 2 * guard_bytes);
  lse_ = DeviceBuffer(lse_bytes_ + 2 * guard_bytes);
  if (partial_splits > 1) {
    o_part_ = DeviceBuffer(rows * size_t(partial_splits) * size_t(p.D) * sizeof(float));
    lse_part_ = DeviceBuffer(rows * size_t(partial_splits) * sizeof(float));
  }
  if (p.kv_cache) {  // the appended tokens, compact [tokens][Hk][D], and the slots they go to
    const AppendedSlots a = appended_slots(p);
    k_new_ = upload(p.dtype, a.gather(in.k));
    v_new_ = upload(p.dtype, a.gather(in.v));
    kv_rows_ = upload_as<int64_t>(a.row);
    kv_tokens_ = a.tokens(), kv_head_ = a.head;
    kv_slot_.assign(k_.bytes() / eb, 0);  // the path writes these (the cache check judges them)
    a.each([&](int64_t at, int64_t) { kv_slot_[size_t(at)] = 1; });
    watch("the new keys", k_new_, eb, {});
    watch("the new values", v_new_, eb, {});
  }
  if (!p.serving_fields().empty()) {  // int32 on the device: lengths and pages fit (the gate's 2^31 rows)
    const ServingShape& sh = p.serving();
    if (p.layout == Layout::thd) cu_q_ = upload_as<int32_t>(sh.cu_q);
    if (p.layout == Layout::thd && !p.paged()) cu_k_ = upload_as<int32_t>(sh.cu_k);
    if (!p.seqlens_q.empty()) q_len_ = upload_as<int32_t>(sh.q_len);
    if (p.varlen()) k_len_ = upload_as<int32_t>(sh.k_len);
    if (p.paged()) table_ = upload_as<int32_t>(sh.table);
    if (p.has_alibi()) slopes_ = upload_as<float>(sh.slopes);
    ServingView v{};
    v.cu_q = cu_q_.as<int32_t>(), v.cu_k = cu_k_.as<int32_t>();
    v.q_len = q_len_.as<int32_t>(), v.k_len = k_len_.as<int32_t>();
    v.table = table_.as<int32_t>(), v.table_row = int(sh.pages_per_seq), v.page = int(p.page_size);
    v.window_left = int(p.window_left), v.window_right = int(p.window_right);
    v.slopes = slopes_.as<float>(), v.softcap = float(p.softcap);
    serving_view_ = DeviceBuffer(sizeof(ServingView));
    FA_GPU_CHECK(copy_to_device(serving_view_.as<void>(), &v, sizeof(v)));
    args_.serving = serving_view_.as<ServingView>();
    watch("cu_seqlens_q", cu_q_, 4, {}), watch("cu_seqlens_k", cu_k_, 4, {});
    watch("the query lengths", q_len_, 4, {}), watch("the key lengths", k_len_, 4, {});
    watch("the page table", table_, 4, {}), watch("the ALiBi slopes", slopes_, 4, {});
    watch("the serving view", serving_view_, 1, {});
  }
  args_.q = q_.as<uint16_t>(), args_.k = k_.as<uint16_t>(), args_.v = v_.as<uint16_t>();
  args_.o = reinterpret_cast<uint16_t*>(o_at()), args_.lse = reinterpret_cast<float*>(lse_at());
  args_.o_part = o_part_.as<float>(), args_.lse_part = lse_part_.as<float>();
  FA_GPU_CHECK(event_create(&start_));
  FA_GPU_CHECK(event_create(&stop_));
}

GpuExecution::~GpuExecution() {
  if (start_) event_destroy(start_);
  if (stop_) event_destroy(stop_);
}

void GpuExecution::poison() {
  FA_GPU_CHECK(memset_async(o_at(), 0xff, o_bytes_, stream_));
  FA_GPU_CHECK(memset_async(lse_at(), 0xff, lse_bytes_, stream_));
  write_kv_slots(/*poison=*/true);  // the cache's new slots
  FA_GPU_CHECK(stream_sync(stream_));
}

void GpuExecution::write_kv_slots(bool poison) {
  if (!kv_tokens_) return;
  const int row_bytes = int(p_.D) * dtype_bytes(p_.dtype);
  kv_write_slots<<<dim3(unsigned(kv_tokens_), unsigned(p_.Hk)), row_bytes % 16 == 0 ? 32 : 128, 0, stream_>>>(
      poison ? nullptr : k_new_.as<uint8_t>(), v_new_.as<uint8_t>(), k_.as<uint8_t>(), v_.as<uint8_t>(),
      kv_rows_.as<int64_t>(), kv_head_, row_bytes, dtype_bytes(p_.dtype));
  FA_GPU_CHECK_LAUNCH("kv_write_slots");
}

void GpuExecution::run() {
  launch();
  FA_GPU_CHECK(stream_sync(stream_));
}

RunOutputs GpuExecution::read_back() {
  RunOutputs out;
  out.o = TypedBuffer(out_dtype(p_.dtype), p_.q_elements());
  FA_GPU_CHECK(copy_to_host(out.o.bytes.data(), o_at(), o_bytes_));
  out.lse.resize(size_t(p_.B * p_.H * p_.S));
  FA_GPU_CHECK(copy_to_host(out.lse.data(), lse_at(), lse_bytes_));
  if (p_.kv_cache) {
    out.k_cache = TypedBuffer(p_.dtype, int64_t(k_.bytes()) / dtype_bytes(p_.dtype));
    out.v_cache = TypedBuffer(p_.dtype, int64_t(v_.bytes()) / dtype_bytes(p_.dtype));
    FA_GPU_CHECK(copy_to_host(out.k_cache.bytes.data(), k_.as<void>(), k_.bytes()));
    FA_GPU_CHECK(copy_to_host(out.v_cache.bytes.data(), v_.as<void>(), v_.bytes()));
  }
  out.g_used = g_used();
  out.fault = inputs_fault();
  return out;
}

// Buffers that are empty (a serving array the problem does not use) are not watched. Small ones
// (the serving arrays: B + 1 entries, the page table) keep their bytes from a copy back here;
// Q, K and V keep the typed bytes they were uploaded from, or, drawn on the device, none: they are
// drawn again to name a changed element.
void GpuExecution::watch(const char* name, const DeviceBuffer& b, size_t elem_bytes, std::vector<uint8_t> host,
                         uint32_t drawn) {
  if (!b.bytes()) return;
  if (host.empty() && !drawn) {
    host.resize(b.bytes());
    FA_GPU_CHECK(copy_to_host(host.data(), b.as<void>(), b.bytes()));
  }
  watched_.push_back({name, &b, elem_bytes, device_checksum(b), std::move(host), drawn});
}

uint64_t GpuExecution::device_checksum(const DeviceBuffer& b) {
  if (!sum_.bytes()) sum_ = DeviceBuffer(sizeof(unsigned long long));
  FA_GPU_CHECK(memset_async(sum_.as<void>(), 0, sum_.bytes(), stream_));
  const size_t blocks = std::min<size_t>(1024, std::max<size_t>(1, b.bytes() / (256 * 8 * 4)));
  checksum_kernel<<<unsigned(blocks), 256, 0, stream_>>>(b.as<uint8_t>(), b.bytes(), sum_.as<unsigned long long>());
  FA_GPU_CHECK_LAUNCH("checksum_kernel");
  uint64_t sum = 0;
  FA_GPU_CHECK(stream_sync(stream_));
  FA_GPU_CHECK(copy_to_host(&sum, sum_.as<void>(), sizeof sum));
  return sum;
}

// "" when every watched buffer checksums as uploaded; else "the path wrote its inputs (K, element
// N)". Only a changed buffer is copied back, to name its first changed element; K's and V's
// appended slots (kv_cache) are the path's to write, and a correct append restores them.
std::string GpuExecution::inputs_fault() {
  std::string out;
  for (const Watched& w : watched_) {
    if (device_checksum(*w.buffer) == w.sum) continue;
    std::vector<uint8_t> now(w.buffer->bytes());
    FA_GPU_CHECK(copy_to_host(now.data(), w.buffer->as<void>(), now.size()));
    const std::vector<uint8_t> was = w.drawn ? drawn_bytes(p_, w.drawn, stream_) : std::vector<uint8_t>();
    const std::vector<uint8_t>& host = w.drawn ? was : w.host;
    const bool kv = w.buffer == &k_ || w.buffer == &v_;
    size_t first = 0, count = 0;
    for (size_t e = 0; e < now.size() / w.elem_bytes; ++e) {
      if (std::memcmp(now.data() + e * w.elem_bytes, host.data() + e * w.elem_bytes, w.elem_bytes) == 0) continue;
      if (kv && e < kv_slot_.size() && kv_slot_[e]) continue;
      if (count++ == 0) first = e;
    }
    if (!count) continue;
    out += fmt::format("{}{}, element {}{}", out.empty() ? "" : "; ", w.name, first,
                       count > 1 ? fmt::format(" and {} more", count - 1) : "");
  }
  return out.empty() ? "" : "the path wrote its inputs (" + out + ")";
}

double GpuExecution::timed_sample_ms(TimingMode mode) { return timed_batch_ms(mode, 1); }

// The spin's clock rate is measured here, not looked up: spins of k and 2k ticks timed with the
// events, whose difference cancels the launch and event overhead.
bool GpuExecution::add_timed_delay(double ms_per_call) {
  auto spin_ms = [&](uint64_t ticks) { return events_ms(start_, stop_, stream_, [&] { spin(ticks, stream_); }); };
  constexpr uint64_t k = uint64_t(1) << 20;  // 1 ms at NVIDIA's 1 GHz (ns), 10 ms at AMD's 100 MHz
  spin_ms(k);                                // first launch: module load
  const double ms = spin_ms(2 * k) - spin_ms(k);
  if (!(ms > 0)) throw std::runtime_error("--plant-slowdown: the device clock did not advance during a timed spin");
  delay_ticks_per_call_ = ms_per_call * double(k) / ms;
  return true;
}

double GpuExecution::timed_batch_ms(TimingMode mode, int n) {
  if (mode == TimingMode::cold) {  // 2 x (L2 + LLC), allocated (and zeroed) on the first cold sample only
    constexpr size_t sink = sizeof(uint4);  // the last 16 bytes: the flush kernel's sink, never read
    if (!flush_.bytes()) {
      flush_ = DeviceBuffer(flush_bytes_ + sink);
      FA_GPU_CHECK(memset_async(flush_.as<void>(), 0, flush_.bytes(), stream_));  // once: defined bytes
    }
    const size_t n = (flush_.bytes() - sink) / sizeof(uint4);
    read_flush_kernel<<<1024, 256, 0, stream_>>>(flush_.as<uint4>(), n, flush_.as<uint4>() + n);
    FA_GPU_CHECK_LAUNCH("read_flush_kernel");
  }
  return events_ms(start_, stop_, stream_, [&] {
    for (int i = 0; i < n; ++i) launch();  // cold: only the first launch of a batch finds L2 flushed
    if (delay_ticks_per_call_ > 0) spin(uint64_t(delay_ticks_per_call_ * n), stream_);
  });
}

}  // namespace fa::gpu
