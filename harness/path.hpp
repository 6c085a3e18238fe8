// What a kernel path is to the harness: a registry row (name, gate, preparer, auto rank, tiles)
// and the Execution it prepares for one (problem, G): poison outputs, run once, read back, take
// timed samples. CPU and GPU paths implement the same interface, so the runner treats them alike.
// Each path builds its row in its own file and registers it (harness/path_registry.hpp).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/capabilities.hpp"
#include "harness/inputs.hpp"
#include "harness/problem.hpp"
#include "harness/reference_result.hpp"
#include "harness/timing.hpp"

namespace fa {

// What the gates may ask about the machine.
struct DeviceFacts {
  bool gpu = false;           // a GPU backend is built in and a device answered
  int device_count = 0;       // the devices the runtime sees (ordinals 0 .. n-1); 0 without a GPU
  std::string gpu_absent_why; // why not, when !gpu
  std::string name, arch, runtime;
  int units = 0;              // SMs / CUs
  int wave_size = 32;
  bool has_wmma_gfx11 = false, has_wmma_gfx12 = false, has_mfma_gfx9 = false, has_mma_sm80 = false;
  // The FP8 formats the AMD matrix cores multiply (kernels/device/arch_table.hpp): gfx94x's MFMA
  // FNUZ, gfx12's WMMA OCP.
  bool matrix_fp8_fnuz = false, matrix_fp8_ocp = false;
  // An sm_90 device and sm_90a code in this binary: TMA, wgmma and setmaxnreg kernels can run.
  bool has_wgmma_sm90a = false;
  size_t memory_bytes = 0, l2_bytes = 0;
  // The cache past L2 in front of DRAM: AMD's Infinity Cache / MALL, which the runtime does not
  // report (the table in harness/device_model.cpp gives it); 0 on NVIDIA, where L2 is the last level.
  size_t llc_bytes = 0;
  int sm_clock_mhz = 0, mem_clock_mhz = 0;  // as the runtime reports them (NVIDIA: the max boost clock)
  int mem_bus_bits = 0;                     // DRAM interface width, for the bandwidth peak
  // Where the device sits on PCI: how NVML and AMD SMI find the device the runtime calls 0
  // (harness/run/clock_source.hpp); -1s when there is no GPU.
  struct Pci {
    int domain = -1, bus = -1, device = -1;
  } pci;
  int cpu_threads = 1;
};

struct GateContext {
  DeviceFacts device;
  double cpu_budget_flops = 50e9;  // beyond it CPU paths skip
};

// What a path hands back after one run.
struct RunOutputs {
  TypedBuffer o;                // in the problem's layout and dtype
  std::vector<float> lse;       // [B][H][S]
  TypedBuffer k_cache, v_cache; // kv_cache problems: the cache after the append
  int g_used = -1;              // splits the run used; -1: as requested
  std::string ran_path;         // the path that ran (differs from the row's for `auto`)
  int rz_accumulate_keys = -1;  // the ran path's PathRow::rz_accumulate_keys (`auto`); -1: the row's
  int fp8_accumulate_bits = -1; // the ran path's PathRow::fp8_accumulate_bits (`auto`); -1: the row's
  std::optional<DType> fp8_p;   // the ran path's PathRow::fp8_p (`auto`); empty: the row's
  // Non-empty when the run wrote outside its outputs (a plugin path's guard bytes changed): the
  // record fails with this reason whatever the output's errors.
  std::string fault;
};

class Execution {
 public:
  virtual ~Execution() = default;
  virtual void poison() = 0;  // outputs (and a kv cache's new slots) to the poison pattern
  virtual void run() = 0;
  virtual RunOutputs read_back() = 0;
  // One timed call (milliseconds); in cold mode caches are flushed first, outside the timing.
  virtual double timed_sample_ms(TimingMode mode) = 0;
  // n back-to-back calls timed as one (milliseconds for all n); cold mode flushes once, before.
  // The default times them one by one and sums; GPU paths put one pair of events around n launches.
  virtual double timed_batch_ms(TimingMode mode, int n) {
    double ms = 0;
    for (int i = 0; i < n; ++i) ms += timed_sample_ms(mode);
    return ms;
  }
  // Test only (--plant-slowdown): from now on every timed call also spends `ms_per_call` inside
  // its timed region (GPU paths: a spin kernel on the same stream, between the events). False
  // where the execution cannot; time_execution then busy-waits on the host after each sample.
  // A wrapping Execution forwards it to the one it wraps.
  virtual bool add_timed_delay(double ms_per_call) {
    (void)ms_per_call;
    return false;
  }
};

// A device allocation failed: the runner records `oom` and goes on.
struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The tile a path's blocks cover: query rows per block and keys per tile, and how many of its
// blocks one SM/CU holds at once (the split rules count row blocks, key tiles and slots with it).
struct TileShape {
  int block_m = 64, block_n = 64;
  int resident = 1;  // blocks resident per SM/CU (occupancy); 1 where the path does not say
  // Query heads one block's rows pack (a GQA group's heads x S in one tile, as FA3's PackGQA and
  // flash-decoding do): a block covers block_m rows of (query, head) pairs of one kv head. 1: each
  // block is one head's block_m queries. The split model takes the pairs query-major; mma-decode,
  // the one kernel that packs, holds all of a kv head's S x heads rows in one block, where the
  // order does not change which keys the block sees.
  int heads = 1;
};

// A gate: empty when the path runs (problem, G); otherwise the reason it does not.
using Gate = std::function<std::optional<std::string>(const Problem&, int G, const GateContext&)>;

struct PathRow {
  std::string name;
  std::string kind;      // "cpu" or "gpu"
  std::string summary;   // what it is
  std::string gate_doc;  // what its gate adds to its capabilities, in words (or all it takes, undeclared)
  bool oracle = false;   // the reference itself: timed, not validated
  Gate supports;         // the whole gate: gated(caps, its own limits) where caps are declared
  std::function<std::unique_ptr<Execution>(const Problem&, const HostInputs&, int G, const GateContext&)> prepare;
  // `auto` tries rows from the highest rank down; 0: never chosen by auto. Ranks are spaced by 10
  // so that a new path can slot in between; `fa-bench list` shows the resulting order.
  int auto_rank = 0;
  TileShape tiles{64, 64};  // for the split rules: the tile at G = 0
  // The tile a run at G uses, where it depends on the problem or G (mma's D=64 kernel changes
  // with the keys a block visits; occupancy comes from the device). Empty: `tiles` everywhere.
  std::function<TileShape(const Problem&, int G, const DeviceFacts&)> tile_at;
  // Non-empty for paths that size their own key split (decode chunks): the rule's name, recorded
  // as the record's split rule; under G=auto such a path runs with G = 0.
  std::string own_split_rule;
  // Keys one truncating (round-toward-zero) fp32 accumulate step of its PV product folds in: 16 for
  // NVIDIA mma.sync m16n8k16 and wgmma k16; 0 for round-to-nearest accumulation (scalar FMAs). The
  // bias check admits the drift it implies (harness/check/rounding_bias.hpp).
  int rz_accumulate_keys = 0;
  // On FP8 inputs, what P is rounded to before PV: fp8_e4m3 (FA3's wgmma path) or bf16. The low-
  // precision reference rounds P the same way (harness/reference_result.hpp: lowprec_p_dtype).
  DType fp8_p = kFp8PDefault;
  // On FP8 inputs, the fraction bits its tensor cores keep as they add Q K^T's products: 13 for
  // Hopper's FP8 wgmma (e8m13, truncating); 0 for fp32 rounding. The low-precision reference adds
  // the scores the same way (harness/fp8_accumulate.hpp), so the LSE rule admits what that moves.
  int fp8_accumulate_bits = 0;
  // Same inputs, same bits: the timed-launch check compares bit for bit; false: through the rule.
  bool deterministic = true;
  // Plugin paths (include/fa_bench/plugin.h): the library it came from and the version it declares;
  // empty for built-in paths. Both reach every record (results columns plugin, plugin_version).
  std::string plugin_file, plugin_version;

  // What the path takes (harness/capabilities.hpp): the shared gate applies it, `list` and the GPU
  // tests read it. Undeclared (placeholders, plugins): its gate alone speaks.
  Capabilities caps;

  TileShape tile_for(const Problem& p, int G, const DeviceFacts& d) const { return tile_at ? tile_at(p, G, d) : tiles; }
  std::string gate_words() const;  // describe(caps), then gate_doc
  // Declares what the path takes: caps, and supports = gated(name, caps, own).
  void declare(Capabilities c, Gate own);
};

// A row's whole gate: the capability gate of `caps`, then `own` (the limits the table cannot state).
Gate gated(const std::string& name, const Capabilities& caps, Gate own);

}  // namespace fa
