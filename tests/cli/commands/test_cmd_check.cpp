// `fa-bench check` end to end: folders of --save-tensors judged as they are pass; an o.npy made
// wrong fails naming the rule and the condition; no lse.npy is judged by O alone with --no-lse
// and is an input error without it; a folder without problem.json is an input error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "cli_helpers.hpp"
#include "harness/dtype.hpp"
#include "harness/check/row_sample.hpp"
#include "harness/results/tensors/check_dir.hpp"
#include "harness/results/tensors/npy.hpp"
#include "harness/results/tensors/tensor_files.hpp"
#include "helpers.hpp"
#include "reference/cpu_ref.hpp"

using fa::test::read_csv;
using fa::test::run_cli;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Saves the records of three rows (fp16 bshd, bf16 bhsd causal GQA, fp16 kv-cache) run by cpu-flash.
std::vector<std::string> saved(const std::string& dir) {
  const auto sweep = fa::test::temp_file(
      ".csv", "name,B,H,Hk,S,Sk,D,causal,dtype,layout,kv_cache,scale\n"
              "plain,1,2,2,20,30,32,0,fp16,bshd,0,\ngqa,1,4,2,9,17,64,1,bf16,bhsd,0,0.1\nkv,1,2,1,1,40,32,1,fp16,bshd,1,\n");
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " + csv + " --save-tensors " + dir);
  EXPECT_EQ(r.status, 0) << r.output;
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(dir)) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace

TEST(Check, SavedOutputsOfAPassingPathPassUnderTheSameRule) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  ASSERT_EQ(dirs.size(), 3u);
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("check " + d.path + " --path torch-flash --no-table -o " + csv);
  EXPECT_EQ(r.status, 0) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 3u) << r.output;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "pass") << row.at("sweep_file") << ": " << row.at("reason");
    EXPECT_EQ(row.at("path"), "torch-flash");
    EXPECT_EQ(row.at("rule"), "adaptive");
    EXPECT_EQ(row.at("median_ms"), "") << "check records carry no timing";
  }
  EXPECT_EQ(rows[0].at("scale"), "0.1") << "the problem comes back from problem.json, scale included";
  EXPECT_EQ(rows[0].at("layout"), "bhsd");
}

TEST(Check, ADeliberatelyWrongONpyFailsNamingTheRuleThatFailed) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  ASSERT_FALSE(dirs.empty());
  const std::string target = dirs.back() + "/o.npy";  // "plain": fp16, '<f2'
  fa::NpyArray o = fa::read_npy(target);
  ASSERT_EQ(o.descr, "<f2");
  for (int64_t i = 0; i < o.elements(); ++i) {  // every element 3% too large
    uint16_t b;
    std::memcpy(&b, o.data.data() + 2 * i, 2);
    b = uint16_t(fa::to_bits(fa::DType::fp16, 1.03f * fa::from_bits(fa::DType::fp16, b)));
    std::memcpy(o.data.data() + 2 * i, &b, 2);
  }
  fa::write_npy(target, o);
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = run_cli("check " + dirs.back() + " --no-table -o " + csv);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("status"), "fail");
  EXPECT_EQ(rows[0].at("rule"), "adaptive");
  EXPECT_TRUE(has(rows[0].at("reason"), "max |err|") && has(rows[0].at("reason"), "> tolerance")) << rows[0].at("reason");
}

TEST(Check, AFloat32ONpyIsRoundedToTheDtypeAndJudgedLikeAStoredOutput) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  const std::string dir = dirs.back();
  const fa::NpyArray ref = fa::read_npy(dir + "/ref_o.npy");  // fp64: what a careful fp32 program gets
  fa::NpyArray o{"<f4", ref.shape, std::vector<uint8_t>(size_t(ref.elements()) * 4)};
  for (int64_t i = 0; i < ref.elements(); ++i) {
    double x;
    std::memcpy(&x, ref.data.data() + 8 * i, 8);
    const float f = float(x);
    std::memcpy(o.data.data() + 4 * i, &f, 4);
  }
  fa::write_npy(dir + "/o.npy", o);
  const auto r = run_cli("check " + dir + " --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(Check, WithoutLseNpyNoLseJudgesOAloneAndOtherwiseItIsAnInputError) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  std::filesystem::remove(dirs.back() + "/lse.npy");
  const auto missing = run_cli("check " + dirs.back() + " --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_TRUE(has(missing.output, "lse.npy")) << missing.output;
  const auto o_only = run_cli("check " + dirs.back() + " --no-lse --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(o_only.status, 0) << o_only.output;
}

TEST(Check, AFolderWithoutProblemJsonIsAnInputErrorNamingIt) {
  fa::test::TempDir d;
  const auto r = run_cli("check " + d.path + " --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, d.path) && has(r.output, "problem.json")) << r.output;
}

TEST(Check, Fp8FoldersHoldTheirBitsAndDescalesAndAnOutputWithoutVsDescaleFails) {
  fa::test::TempDir d;
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,Hk,S,Sk,D,causal,dtype\nf8,1,4,2,40,70,32,1,fp8_e4m3\n");
  const auto r = run_cli("sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " +
                         fa::test::temp_file(".csv", "") + " --save-tensors " + d.path);
  ASSERT_EQ(r.status, 0) << r.output;
  std::string dir;
  for (const auto& e : std::filesystem::directory_iterator(d.path)) dir = e.path().string();
  const fa::NpyArray q = fa::read_npy(dir + "/q.npy"), ds = fa::read_npy(dir + "/descale.npy");
  EXPECT_EQ(q.descr, "|u1") << "FP8 inputs are saved as their bits";
  EXPECT_EQ(q.shape, (std::vector<int64_t>{1, 40, 4, 32}));
  ASSERT_EQ(ds.descr, "<f4");
  ASSERT_EQ(ds.shape, std::vector<int64_t>{3});
  float dv;
  std::memcpy(&dv, ds.data.data() + 8, 4);
  EXPECT_GT(dv, 0.f);
  EXPECT_LT(dv, 0.05f) << "amax of a few thousand normals over 448";
  EXPECT_EQ(fa::read_npy(dir + "/o.npy").descr, "<f4") << "O is bf16, widened";

  const auto csv = fa::test::temp_file(".csv", "");
  const auto same = run_cli("check " + dir + " --no-table -o " + csv);
  EXPECT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(read_csv(csv).at(0).at("dtype"), "fp8_e4m3");

  fa::NpyArray o = fa::read_npy(dir + "/o.npy");  // a program that forgot v's descale
  for (int64_t i = 0; i < o.elements(); ++i) {
    float x;
    std::memcpy(&x, o.data.data() + 4 * i, 4);
    x /= dv;
    std::memcpy(o.data.data() + 4 * i, &x, 4);
  }
  fa::write_npy(dir + "/o.npy", o);
  const auto wrong = run_cli("check " + dir + " --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(wrong.status, 1) << wrong.output;

  std::filesystem::remove(dir + "/descale.npy");
  const auto missing = run_cli("check " + dir + " --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_TRUE(has(missing.output, "descale.npy")) << missing.output;
}

// The output policy of `sweep` (harness/results/output_file.hpp): no output may be a file of a
// record folder being judged; each is refused before anything is read or truncated.
TEST(Check, AnOutputThatIsAFileOfARecordFolderIsRefusedAndTheFileKept) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  ASSERT_FALSE(dirs.empty());
  for (const std::string name : {"o.npy", "problem.json", "q.npy"}) {
    const std::string file = dirs.back() + "/" + name;
    const auto before = std::filesystem::file_size(file);
    const auto csv = run_cli("check " + dirs.back() + " --no-table -o " + file);
    EXPECT_EQ(csv.status, 2) << csv.output;
    EXPECT_TRUE(has(csv.output, "-o") && has(csv.output, "refusing to overwrite")) << csv.output;
    const auto json = run_cli("check " + d.path + " --no-table -o " + fa::test::temp_file(".csv", "") + " --json " + file);
    EXPECT_EQ(json.status, 2) << json.output;
    EXPECT_TRUE(has(json.output, "--json")) << json.output;
    EXPECT_EQ(std::filesystem::file_size(file), before) << name << " was truncated";
  }
  const auto nodir = run_cli("check " + d.path + " --no-table -o " + d.path + "/no/such/dir/out.csv");
  EXPECT_EQ(nodir.status, 2) << nodir.output;
  EXPECT_TRUE(has(nodir.output, "does not exist")) << nodir.output;
}

// `run`'s flag rules: NaN is no threshold, and an empty or built-in path name is no outside program.
TEST(Check, FlagsRunRefusesAndBuiltInOrEmptyPathNamesAreInputErrors) {
  fa::test::TempDir d;
  saved(d.path);
  const auto csv = fa::test::temp_file(".csv", "");
  for (const std::string flags : {"--max-err nan", "--min-cosine nan", "--max-err inf", "--cpu-budget nan",
                                  "--check-rows -1", "--path ''", "--path cpu-flash", "--path auto",
                                  "--path 'cpu-flash '", "--path a,b", "--path 'a|b'", "--path 'my\\nkernel'"}) {
    const auto r = run_cli("check " + d.path + " --no-table -o " + csv + " " + flags);
    EXPECT_EQ(r.status, 2) << flags << ": " << r.output;
    const std::string flag = flags.substr(0, flags.find(' '));
    EXPECT_TRUE(has(r.output, flag)) << flags << ": " << r.output;
    EXPECT_TRUE(read_csv(csv).empty()) << flags << ": nothing may be judged";
  }
}

TEST(Check, ARecordFolderNamedTwiceIsAnInputError) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  ASSERT_FALSE(dirs.empty());
  const auto csv = fa::test::temp_file(".csv", "");
  for (const std::string& args : {dirs[0] + " " + dirs[0], d.path + " " + dirs[0], dirs[0] + " " + dirs[0] + "/."}) {
    const auto r = run_cli("check " + args + " --no-table -o " + csv);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_TRUE(has(r.output, "named twice")) << r.output;
  }
}

TEST(Check, AnInputLinkedToADeviceIsRefusedNotReadForever) {
  fa::test::TempDir d;
  const auto dirs = saved(d.path);
  ASSERT_FALSE(dirs.empty());
  for (const std::string name : {"q.npy", "o.npy", "problem.json"}) {
    fa::test::TempDir copy;
    std::filesystem::copy(dirs.back(), copy.path, std::filesystem::copy_options::recursive);
    std::filesystem::remove(copy.path + "/" + name);
    std::filesystem::create_symlink("/dev/zero", copy.path + "/" + name);
    const auto r = run_cli("check " + copy.path + " --no-table -o " + fa::test::temp_file(".csv", ""), "timeout 60");
    EXPECT_EQ(r.status, 2) << name << ": " << r.output;
    EXPECT_TRUE(has(r.output, name) && has(r.output, "not a regular file")) << r.output;
  }
}

TEST(Check, FnuzFoldersRoundTripTheirBitsAndTheNanCodeIsAnInputError) {
  fa::test::TempDir d;
  const auto sweep =
      fa::test::temp_file(".csv", "name,B,H,Hk,S,Sk,D,causal,dtype\nfz,1,4,2,40,70,32,1,fp8_e4m3fnuz\n");
  const auto r = run_cli("sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " +
                         fa::test::temp_file(".csv", "") + " --save-tensors " + d.path);
  ASSERT_EQ(r.status, 0) << r.output;
  std::string dir;
  for (const auto& e : std::filesystem::directory_iterator(d.path)) dir = e.path().string();
  fa::NpyArray q = fa::read_npy(dir + "/q.npy");
  EXPECT_EQ(q.descr, "|u1") << "FNUZ inputs are saved as their bits too (numpy has no FNUZ type)";
  // Bias 8, largest 240: the tensor's amax lands on 0x7f or 0xff, and no element is the NaN 0x80.
  int at_max = 0;
  for (uint8_t b : q.data) {
    EXPECT_NE(b, 0x80) << "a saturating conversion never gives FNUZ's NaN";
    at_max += (b & 0x7f) == 0x7f;
  }
  EXPECT_GE(at_max, 1) << "the amax element is +-240, code 0x7f/0xff";

  const auto csv = fa::test::temp_file(".csv", "");
  const auto same = run_cli("check " + dir + " --no-table -o " + csv + " --fp8-p fp8_e4m3fnuz");
  EXPECT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(read_csv(csv).at(0).at("dtype"), "fp8_e4m3fnuz");

  q.data[5] = 0x80;  // FNUZ's one NaN in an input
  fa::write_npy(dir + "/q.npy", q);
  const auto nan = run_cli("check " + dir + " --no-table -o " + fa::test::temp_file(".csv", ""));
  EXPECT_EQ(nan.status, 2) << nan.output;
  EXPECT_TRUE(has(nan.output, "q.npy") && has(nan.output, "FP8 NaN (bits 0x80)")) << nan.output;
}

// --fp8-accumulate-bits: an FP8 program whose tensor cores add Q K^T on 13 bits (its LSE here is the
// 13-bit low-precision reference's own, written into lse.npy) fails the LSE rule at softmax scale 10
// against fp32 scores, and passes where check is told how it adds; a width past fp32's is refused.
TEST(Check, Fp8AccumulateBitsJudgesTheLseOfAProgramThatAddsOnThirteenBits) {
  fa::test::TempDir d;
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,Hk,S,Sk,D,causal,dtype,scale\nh,1,2,2,48,160,128,0,fp8_e4m3,10\n");
  ASSERT_EQ(run_cli("sweep " + sweep + " --paths cpu-flash --no-timing --no-table -o " + fa::test::temp_file(".csv", "") +
                    " --save-tensors " + d.path).status,
            0);
  std::string dir;
  for (const auto& e : std::filesystem::directory_iterator(d.path)) dir = e.path().string();
  const fa::RecordDir rd = fa::read_record_dir(dir);
  const fa::HostInputs in = fa::load_inputs(dir, rd.problem);
  const fa::Reference h13 =
      fa::compute_reference(rd.problem, in, fa::sample_rows(rd.problem, 0, 0), fa::LowPrecision(fa::DType::fp8_e4m3, 13));
  fa::NpyArray lse = fa::read_npy(dir + "/lse.npy");
  ASSERT_EQ(lse.descr, "<f4");
  std::memcpy(lse.data.data(), h13.lse_lp.data(), h13.lse_lp.size() * sizeof(float));  // (B, H, S): the reference's order
  fa::write_npy(dir + "/lse.npy", lse);

  const auto csv = fa::test::temp_file(".csv", "");
  const auto fp32 = run_cli("check " + dir + " --no-table -o " + csv);
  EXPECT_EQ(fp32.status, 1) << fp32.output;
  EXPECT_TRUE(has(read_csv(csv).at(0).at("reason"), "LSE error")) << read_csv(csv).at(0).at("reason");
  const auto told = run_cli("check " + dir + " --no-table -o " + csv + " --fp8-accumulate-bits 13");
  EXPECT_EQ(told.status, 0) << told.output << read_csv(csv).at(0).at("reason");
  const auto wide = run_cli("check " + dir + " --no-table -o " + csv + " --fp8-accumulate-bits 24");
  EXPECT_EQ(wide.status, 2) << wide.output;
  EXPECT_TRUE(has(wide.output, "--fp8-accumulate-bits")) << wide.output;
}
