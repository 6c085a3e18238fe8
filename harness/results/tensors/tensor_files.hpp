// --save-tensors / --load-tensors: a record's tensors as .npy files (harness/results/tensors/npy.hpp),
// one folder per record: q, k, v (the inputs), o and lse (the path's outputs), ref_o (the fp64
// reference) and problem.json (the problem, so that `fa-bench check` can judge an o.npy written by
// another program).
// Shapes are the problem's layout: Q and O (B,S,H,D) for bshd, (B,H,S,D) for bhsd, (total,H,D) for
// thd; K and V likewise with Sk, Hk, or the page pool (pages,page_size,Hk,D); LSE (B,H,S). Serving
// problems add what a varlen or paged API takes: cu_seqlens_q/k (B+1, int32), seqused_k (B, int32:
// each sequence's keys) and block_table (B, pages per sequence; int32, -1 past the end).
// fp16 is saved as '<f2' bit for bit; bf16 as '<f4' after widening, which is exact (a bf16 is the
// top half of an fp32); fp32 as '<f4'; FP8 inputs as their bits, '|u1' (numpy has no FP8 type:
// torch.from_numpy(a).view(torch.float8_e4m3fn)), with descale.npy ('<f4', (3,): q, k, v) beside
// them and O in bf16, widened; LSE '<f4'; ref_o '<f8'.
#pragma once
#include <string>
#include <vector>

#include "harness/path.hpp"
#include "harness/results/results.hpp"

namespace fa {

// The .npy shapes of Q (and O) and of K (and V) for problem p.
std::vector<int64_t> q_shape(const Problem& p);
std::vector<int64_t> kv_shape(const Problem& p);

// The folder name of a record under DIR: label, dtype, layout, seed, path and G, filesystem-safe.
std::string record_folder(const Record& r);

// The problem of a record folder, as JSON: {"problem": {column: text}, "path", "G_req", "G_used"}
// (harness/check_dir.hpp reads it back for `fa-bench check`).
constexpr const char* kProblemFile = "problem.json";
constexpr const char* kDescaleFile = "descale.npy";  // FP8 problems only
void write_problem_json(const std::string& dir, const Record& r);

// Writes DIR/record_folder(r)/{q,k,v,o,lse,ref_o}.npy and problem.json; ref_o is [B][H][S][D] fp64
// for every row.
void save_record_tensors(const std::string& dir, const Record& r, const HostInputs& in, const RunOutputs& out,
                         const std::vector<double>& ref_o_bhsd);

// Reads DIR/{q,k,v}.npy for problem p; throws InputError naming the file when a dtype or shape
// does not match the problem, or a bf16 problem's '<f4' value is not a bf16 value.
HostInputs load_inputs(const std::string& dir, const Problem& p);

}  // namespace fa
