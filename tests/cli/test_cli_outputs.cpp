// The fa-bench binary's outputs and exit rules end to end: --version, global flags after the
// subcommand, `run` lists, --fail-on-skip, --filter input errors, shards merged back into the
// unsharded record set (and merge's conflict and gap checks), --devices naming a missing device,
// --markdown/--table, and tensors saved as .npy and run again with --load-tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli_helpers.hpp"
#include "harness/results/results_reader.hpp"
#include "helpers.hpp"


namespace {

const char* kQuick = " --no-timing --no-table --paths cpu-flash,cpu-ref";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// record key -> status, from a results CSV.
std::map<std::string, std::string> statuses(const std::string& csv) {
  std::map<std::string, std::string> out;
  for (const auto& rr : fa::read_results_csv(csv).records) out[rr.record.resume_key()] = fa::status_name(rr.record.status);
  return out;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/fa-bench-test-dir-XXXXXX";
  return mkdtemp(tmpl);
}

}  // namespace

TEST(CliOutputs, VersionNamesTheReleaseCommitAndBackend) {
  const auto r = fa::test::run_cli("--version");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("fa-bench 0.1 (commit "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("backend " FABENCH_BACKEND ")"), std::string::npos) << "the build's own backend\n" << r.output;
}

TEST(CliOutputs, GlobalFlagsAreAcceptedAfterTheSubcommand) {
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string args = "run --B 1 --H 2 --S 4 --D 16 -o " + csv + kQuick;
  const auto loud = fa::test::run_cli(args);
  ASSERT_EQ(loud.status, 0) << loud.output;
  EXPECT_NE(loud.output.find("[info]"), std::string::npos) << loud.output;
  const auto quiet = fa::test::run_cli(args + " -q");
  EXPECT_EQ(quiet.status, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("[info]"), std::string::npos) << quiet.output;
}

TEST(CliOutputs, RunListsCoverTheCartesianProduct) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto r = fa::test::run_cli("run --B 1,2 --H 2 --S 4,8 --D 16 -o " + csv + kQuick);
  ASSERT_EQ(r.status, 0) << r.output;
  std::set<std::pair<int64_t, int64_t>> bs;
  for (const auto& rr : fa::read_results_csv(csv).records) bs.insert({rr.record.problem.B, rr.record.problem.S});
  EXPECT_EQ(bs, (std::set<std::pair<int64_t, int64_t>>{{1, 4}, {1, 8}, {2, 4}, {2, 8}}));
  EXPECT_EQ(fa::read_results_csv(csv).records.size(), 8u) << "4 problems x 2 paths";
}

TEST(CliOutputs, FailOnSkipTurnsASkippedRecordIntoExitOne) {
  const auto csv = fa::test::temp_file(".csv", "");
  // A CPU budget below the problem's FLOPs makes cpu-flash skip.
  const std::string args = "run --B 1 --H 2 --S 64 --D 64 --cpu-budget 0.000001 -o " + csv + kQuick;
  const auto plain = fa::test::run_cli(args);
  ASSERT_EQ(plain.status, 0) << plain.output;
  ASSERT_NE(statuses(csv).size(), 0u);
  bool any_skip = false;
  for (const auto& [k, st] : statuses(csv)) any_skip |= st == "skip";
  ASSERT_TRUE(any_skip) << slurp(csv);
  const auto strict = fa::test::run_cli(args + " --fail-on-skip");
  EXPECT_EQ(strict.status, 1) << strict.output;
  EXPECT_NE(strict.output.find("--fail-on-skip"), std::string::npos) << strict.output;
}

TEST(CliOutputs, AFilterThatCannotMatchIsAnInputErrorNamingTheFlag) {
  const auto csv = fa::test::temp_file(".csv", "");
  for (const std::string f : {"dtpye==bf16", "dtype==fp8", "S>1000"}) {
    const auto r = fa::test::run_cli("run --B 1 --H 2 --S 4 --D 16 -o " + csv + kQuick + " --filter '" + f + "'");
    EXPECT_EQ(r.status, 2) << f << "\n" << r.output;
    EXPECT_NE(r.output.find("field '--filter'"), std::string::npos) << f << "\n" << r.output;
  }
}

TEST(CliOutputs, ThreeShardsMergedAreTheUnshardedRecordSet) {
  const auto sweep = fa::test::temp_file(
      ".csv", "B,H,S,Sk,D,causal,G,dtype\n1,2,5,9,16,1,0|2,fp16|bf16\n1,2,3,3,16,0,0,fp32\n2,2,1,17,16,0,0|4,fp16\n"
              "1,4,2,2,8,1,0,bf16\n1,2,2,2,0,0,0,fp16\n");  // the last row is invalid (D=0)
  const auto all = fa::test::temp_file(".csv", "");
  ASSERT_EQ(fa::test::run_cli("sweep " + sweep + " -o " + all + kQuick).status, 2) << "the invalid row";
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(fa::test::temp_file(".csv", ""));
    const auto r = fa::test::run_cli("sweep " + sweep + " --shard " + std::to_string(i) + "/3 -o " + parts.back() + kQuick);
    ASSERT_EQ(r.status, i == 2 ? 2 : 0) << "problem 5, the invalid row, is in shard 2\n" << r.output;
    EXPECT_NE(slurp(parts.back()).find("," + std::to_string(i) + "/3,"), std::string::npos) << "records carry the shard";
  }
  const auto merged = fa::test::temp_file(".csv", "");
  const auto m = fa::test::run_cli("merge " + parts[0] + " " + parts[1] + " " + parts[2] + " -o " + merged + " --expect " +
                              sweep + " --shards 3");
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_EQ(statuses(merged), statuses(all));
  EXPECT_GT(statuses(all).size(), 10u);

  const auto gap = fa::test::run_cli("merge " + parts[0] + " " + parts[2] + " -o " + merged + " --expect " + sweep +
                                " --shards 3");
  EXPECT_EQ(gap.status, 1) << gap.output;
  EXPECT_NE(gap.output.find("shard 1/3)"), std::string::npos) << gap.output;
  EXPECT_EQ(gap.output.find("shard 0/3)"), std::string::npos) << gap.output;

  const auto same = fa::test::run_cli("merge " + parts[0] + " " + parts[0] + " -o " + merged);
  EXPECT_EQ(same.status, 0) << "the same lines twice are one record\n" << same.output;
  EXPECT_NE(same.output.find("identical duplicates dropped"), std::string::npos) << same.output;

  const auto clash = fa::test::run_cli("merge " + all + " " + parts[1] + " -o " + merged);
  EXPECT_EQ(clash.status, 2) << "one record, two different results\n" << clash.output;
  EXPECT_NE(clash.output.find("conflict"), std::string::npos) << clash.output;
}

TEST(CliOutputs, BadShardsAndMissingDevicesAreInputErrors) {
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string args = "run --B 1 --H 2 --S 4 --D 16 -o " + csv + kQuick;
  for (const std::string s : {"3/3", "1", "a/b", "-1/2"}) {
    const auto r = fa::test::run_cli(args + " --shard " + s);
    EXPECT_EQ(r.status, 2) << s << "\n" << r.output;
    EXPECT_NE(r.output.find("field '--shard'"), std::string::npos) << r.output;
  }
  // No host has a device 1023: an input error naming the flag in every build, before any record.
  const auto d = fa::test::run_cli(args + " --devices 0,1023");
  EXPECT_EQ(d.status, 2) << d.output;
  EXPECT_NE(d.output.find("field '--devices'"), std::string::npos) << d.output;
#ifdef FABENCH_HAS_GPU
  const bool why = d.output.find("device 1023 is not on this host") != std::string::npos ||
                   d.output.find("no GPU on this host") != std::string::npos;
  EXPECT_TRUE(why) << "a GPU build: the device is missing, or every GPU is\n" << d.output;
#else
  EXPECT_NE(d.output.find("no GPU backend"), std::string::npos) << d.output;
#endif
  EXPECT_EQ(slurp(csv), "") << "nothing ran";
}

TEST(CliOutputs, TheCompactTableAloneAndAMarkdownFile) {
  const auto csv = fa::test::temp_file(".csv", "");
  const auto md = fa::test::temp_file(".md", "");
  const auto r = fa::test::run_cli("run --B 1 --H 2 --S 4,1 --Sk 8 --D 16 --paths cpu-flash,cpu-ref --time-cap 0.001 "
                              "--min-samples 2 --table compact --markdown " + md + " -o " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("| problem | unit | cpu-flash | cpu-ref |"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("| path | G | status"), std::string::npos) << "no detail tables\n" << r.output;
  EXPECT_NE(r.output.find("| B1 H2 S1 Sk8 D16 fp16 | GB/s |"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(" 0.00 "), std::string::npos) << r.output;
  const std::string file = slurp(md);
  EXPECT_NE(file.find("| problem | unit | cpu-flash | cpu-ref |"), std::string::npos) << file;
  EXPECT_NE(file.find("4 records: 4 pass"), std::string::npos) << file;
}

TEST(CliOutputs, SavedTensorsRunAgainWithLoadTensorsAndWrongShapesAreRefused) {
  const std::string dir = temp_dir();
  const auto csv = fa::test::temp_file(".csv", "");
  const std::string shape = "run --B 1 --H 4 --Hk 2 --S 5 --Sk 9 --D 16 --causal --dtype bf16";
  const auto r = fa::test::run_cli(shape + " --paths cpu-flash --no-timing --no-table --save-tensors " + dir + " -o " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string rec = dir + "/B1_H4_2_S5_Sk9_D16_causal-bf16-bshd-seed1-cpu-flash-G0";
  for (const char* t : {"q", "k", "v", "o", "lse", "ref_o"})
    EXPECT_TRUE(std::ifstream(rec + "/" + t + ".npy").good()) << rec << "/" << t << ".npy";
  EXPECT_NE(slurp(rec + "/q.npy").find("'descr': '<f4', 'fortran_order': False, 'shape': (1, 5, 4, 16)"),
            std::string::npos) << "bf16 widened to <f4, BSHD";
  EXPECT_NE(slurp(rec + "/k.npy").find("'shape': (1, 9, 2, 16)"), std::string::npos);
  EXPECT_NE(slurp(rec + "/lse.npy").find("'shape': (1, 4, 5)"), std::string::npos);

  const auto again = fa::test::run_cli(shape + " --seed 99 --paths cpu-flash --no-timing --no-table --load-tensors " + rec +
                                  " -o " + csv);
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(statuses(csv).begin()->second, "pass");

  const auto wrong = fa::test::run_cli("run --B 1 --H 4 --Hk 2 --S 6 --Sk 9 --D 16 --dtype bf16 --paths cpu-flash --no-timing "
                                  "--no-table --load-tensors " + rec + " -o " + csv);
  EXPECT_EQ(wrong.status, 2) << "checked before anything runs\n" << wrong.output;
  EXPECT_NE(wrong.output.find(rec + "/q.npy"), std::string::npos) << wrong.output;
  EXPECT_NE(wrong.output.find("shape (1,5,4,16) but the problem (bshd layout) needs (1,6,4,16)"), std::string::npos)
      << wrong.output;

  // A q.npy that is /dev/zero is refused before anything runs, not read until memory runs out.
  fa::test::TempDir zero;
  for (const char* n : {"k.npy", "v.npy"}) std::filesystem::copy_file(rec + "/" + n, zero.path + "/" + n);
  std::filesystem::create_symlink("/dev/zero", zero.path + "/q.npy");
  const auto dev = fa::test::run_cli(shape + " --paths cpu-flash --no-timing --no-table --load-tensors " + zero.path +
                                     " -o " + csv, "timeout 60");
  EXPECT_EQ(dev.status, 2) << dev.output;
  EXPECT_NE(dev.output.find(zero.path + "/q.npy"), std::string::npos) << dev.output;
  EXPECT_NE(dev.output.find("not a regular file"), std::string::npos) << dev.output;

  const std::string python = fa::test::python_with("numpy");
  if (python.empty()) return;
  // The saved reference is attention of the saved inputs (bottom-right causal, GQA), and O is near it.
  const std::string py =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "q, k, v, o, ref = (np.load(f'{d}/{n}.npy').astype(np.float64) for n in ('q', 'k', 'v', 'o', 'ref_o'))\n"
      "B, S, H, D = q.shape; Sk, Hk = k.shape[1], k.shape[2]\n"
      "k = np.repeat(k, H // Hk, axis=2); v = np.repeat(v, H // Hk, axis=2)\n"
      "s = np.einsum('bshd,bthd->bhst', q, k) / np.sqrt(D)\n"
      "mask = np.arange(Sk)[None, :] > np.arange(S)[:, None] + (Sk - S)\n"
      "s[:, :, mask] = -np.inf\n"
      "p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)\n"
      "want = np.einsum('bhst,bthd->bshd', p, v)\n"
      "assert np.abs(want - ref).max() < 1e-9, np.abs(want - ref).max()\n"
      "assert np.abs(o - ref).max() < 2e-2, np.abs(o - ref).max()\n";
  const auto script = fa::test::temp_file(".py", py);
  EXPECT_EQ(std::system((python + " " + script + " " + rec).c_str()), 0);
}

TEST(CliOutputs, PlotScriptWritesThroughputSpeedupAndSplitPngs) {
  const std::string python = fa::test::python_with("matplotlib");
  if (python.empty()) GTEST_SKIP() << "matplotlib is not installed (scripts/setup.sh installs it)";
  const auto csv = fa::test::temp_file(".csv", "");
  ASSERT_EQ(fa::test::run_cli("run --B 1 --H 2 --S 1,16 --Sk 64 --D 16 --G 0,2 --paths cpu-flash,cpu-ref --time-cap 0.001 "
                         "--min-samples 2 --no-table -o " + csv).status, 0);
  const std::string dir = temp_dir();
  const auto r = std::system((python + " " + fa::test::source_dir() + "/scripts/plot.py " + csv + " -o " + dir +
                              " --baseline cpu-ref > /dev/null").c_str());
  ASSERT_EQ(r, 0);
  for (const char* png : {"throughput.png", "speedup.png", "splits.png"})
    EXPECT_EQ(slurp(dir + "/" + png).substr(1, 3), "PNG") << png;
}

// Rows of one name that differ only in a serving field (a grid over page_size) save to folders of
// their own, and a thd/paged folder holds the packed and pool shapes with the varlen/paged arrays.
TEST(CliOutputs, SavedTensorsOfServingRowsGetTheirOwnFoldersAndPackedShapes) {
  const std::string dir = temp_dir();
  const auto csv = fa::test::temp_file(".csv", "");
  const auto yaml = fa::test::temp_file(".yaml",
                                        "problems:\n"
                                        "  - grid: {page_size: [2, 4]}\n"
                                        "    name: paged\n"
                                        "    B: 3\n    H: 2\n    S: 5\n    Sk: 7\n    D: 16\n    layout: thd\n"
                                        "    seqlens_q: [5, 0, 2]\n    seqlens_k: [7, 3, 2]\n");
  const auto r = fa::test::run_cli("sweep " + yaml + " --paths cpu-flash --no-timing --no-table --save-tensors " + dir + " -o " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  std::set<std::string> folders;
  for (const auto& e : std::filesystem::directory_iterator(dir)) folders.insert(e.path().string());
  ASSERT_EQ(folders.size(), 2u) << "page 2 and page 4 must not share a folder";
  for (const auto& f : folders) {
    EXPECT_NE(slurp(f + "/q.npy").find("'shape': (7, 2, 16)"), std::string::npos) << f << ": 5 + 0 + 2 packed rows";
    EXPECT_NE(slurp(f + "/cu_seqlens_q.npy").find("'descr': '<i4'"), std::string::npos) << f;
    EXPECT_TRUE(std::ifstream(f + "/block_table.npy").good()) << f;
  }
  const bool page2 = slurp(*folders.begin() + "/k.npy").find("'shape': (7, 2, 2, 16)") != std::string::npos;
  const bool page4 = slurp(*folders.begin() + "/k.npy").find("'shape': (4, 4, 2, 16)") != std::string::npos;
  EXPECT_TRUE(page2 || page4) << "pool [pages, page_size, Hk, D]: 4+2+1 pages of 2, or 2+1+1 of 4";
}

// --save-tensors is checked before any record runs: a folder that cannot be made or written is an
// input error naming the flag, and no record is written (it used to be found after every record ran).
TEST(CliOutputs, AnUnwritableSaveTensorsFolderIsFoundBeforeAnyRecordRuns) {
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D\na,1,2,8,16\nb,1,2,9,16\n");
  const auto file = fa::test::temp_file(".txt", "a file, not a folder\n");
  for (const std::string& dir : {file + "/sub", std::string("/proc/fa-bench-no-such-folder"), file}) {
    const auto csv = fa::test::temp_file(".csv", "");
    const auto r = fa::test::run_cli("sweep " + sweep + kQuick + " -o " + csv + " --save-tensors " + dir);
    EXPECT_EQ(r.status, 2) << dir << ": " << r.output;
    EXPECT_NE(r.output.find("--save-tensors"), std::string::npos) << r.output;
    EXPECT_TRUE(slurp(csv).empty()) << dir << ": no record may run before the folder is known good";
  }
}

// --dry-run: the sweep expanded and every flag, input and output checked, nothing written; exit 0
// for a good run, 2 naming the flag or file:line:field for a bad one.
TEST(CliOutputs, DryRunChecksEverythingAndWritesNothing) {
  const std::string dir = temp_dir();
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D,G\na,1,2,8,16,0|2\nb,1,2,9,16,0\n");
  const std::string csv = dir + "/out.csv", json = dir + "/out.jsonl", md = dir + "/out.md", saved = dir + "/saved";
  const auto ok = fa::test::run_cli("sweep " + sweep + kQuick + " -o " + csv + " --json " + json + " --markdown " + md +
                                    " --save-tensors " + saved + " --dry-run");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("2 rows x 2 paths (cpu-flash,cpu-ref): 6 records"), std::string::npos) << ok.output;
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a dry run writes nothing, the tensor folder included";
  const auto bad_sweep = fa::test::temp_file(".csv", "name,B,H,S,D\na,1,2,8,16\nb,1,2,9,300\n");
  const std::pair<std::string, std::string> bad[] = {
      {"sweep " + sweep + kQuick + " -o " + dir + "/no/out.csv", "-o"},
      {"sweep " + sweep + kQuick + " -o " + sweep, "refusing to overwrite"},
      {"sweep " + sweep + kQuick + " -o " + csv + " --time-cap nan", "--time-cap"},
      {"sweep " + sweep + kQuick + " -o " + csv + " --shard 99999999999999999999/2", "--shard"},
      {"sweep " + sweep + " --no-timing --paths no-such-path -o " + csv, "no-such-path"},
      {"sweep " + sweep + kQuick + " -o " + csv + " --save-tensors " + sweep + "/x", "--save-tensors"},
      {"sweep " + bad_sweep + kQuick + " -o " + csv + " --max-rows 1", "--max-rows"},
      {"sweep " + bad_sweep + kQuick + " -o " + csv, bad_sweep + ":3: field 'D'"}};
  for (const auto& [cmd, named] : bad) {
    const auto r = fa::test::run_cli(cmd + " --dry-run");
    EXPECT_EQ(r.status, 2) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find(named), std::string::npos) << cmd << ": " << r.output;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  EXPECT_EQ(slurp(sweep), "name,B,H,S,D,G\na,1,2,8,16,0|2\nb,1,2,9,16,0\n");
  // --resume's file is read as a real run reads it: one of another schema is refused.
  std::ofstream(csv) << "schema,name\n1,a\n";
  const auto resume = fa::test::run_cli("sweep " + sweep + kQuick + " -o " + csv + " --resume --dry-run");
  EXPECT_EQ(resume.status, 2) << resume.output;
  EXPECT_EQ(slurp(csv), "schema,name\n1,a\n") << "the resumed file is left as it is";
}

// scripts/slurm-array.sh runs the dry run before sbatch: bad flags after --, a bad sweep or an
// overflowing shard count queue nothing and leave no results folder (a stand-in sbatch on PATH
// records any call).
TEST(CliOutputs, SlurmArrayRefusesWhatATaskWouldRefuseBeforeQueueingAnything) {
  const std::string dir = temp_dir();
  const std::string calls = dir + "/sbatch-calls";
  std::ofstream(dir + "/sbatch") << "#!/bin/sh\necho \"$@\" >> " << calls << "\necho 1234\n";
  std::filesystem::permissions(dir + "/sbatch", std::filesystem::perms::owner_all);
  const auto good = fa::test::temp_file(".csv", "name,B,H,S,D\na,1,2,8,16\n");
  const auto bad = fa::test::temp_file(".csv", "name,B,H,S,D\na,1,2,8,300\n");
  const std::string script = "PATH=" + dir + ":$PATH " + fa::test::source_dir() + "/scripts/slurm-array.sh --bin " +
                             FABENCH_BINARY + " --out " + dir + "/res";
  auto submit = [&](const std::string& args) {
    const std::string cmd = script + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) out += buf;
    const int st = pclose(p);
    return std::make_pair(WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
  };
  const std::pair<std::string, std::string> refused[] = {
      {"--shards 2 " + good + " -- --time-cap nan", "--time-cap"},
      {"--shards 2 " + good + " -- --no-such-flag", "no-such-flag"},
      {"--shards 2 " + bad + " -- --paths cpu-flash", bad + ":2"},
      {"--shards 99999999999999999999 " + good, "--shards"},
      {"--shards 4000002 " + good, "--shards"}};
  for (const auto& [args, named] : refused) {
    const auto [status, out] = submit(args);
    EXPECT_EQ(status, 2) << args << ": " << out;
    EXPECT_NE(out.find(named), std::string::npos) << args << ": " << out;
    EXPECT_FALSE(std::filesystem::exists(calls)) << args << ": sbatch was called";
    EXPECT_FALSE(std::filesystem::exists(dir + "/res")) << args << ": a refusal leaves no results folder behind";
  }
  const auto [status, out] = submit("--shards 2 " + good + " -- --paths cpu-flash --no-timing");
  EXPECT_EQ(status, 0) << out;
  const std::string queued = slurp(calls);
  EXPECT_EQ(std::count(queued.begin(), queued.end(), '\n'), 2) << "the array and the merge: " << queued;
}

// Vague messages made clear: a softcap fp32 cannot hold names the flag or the sweep's field, and
// `expand` of a paged row whose pool overflows says so instead of a std::vector length error.
TEST(CliOutputs, ASoftcapOutsideFp32AndAnOverflowingPoolAreNamed) {
  const auto csv = fa::test::temp_file(".csv", "");
  for (const std::string cap : {"1e-300", "1e-39", "1e39"}) {
    const auto r = fa::test::run_cli("run --B 1 --H 2 --S 8 --Sk 8 --D 16 --softcap " + cap + kQuick + " -o " + csv);
    EXPECT_EQ(r.status, 2) << cap << ": " << r.output;
    EXPECT_NE(r.output.find("softcap"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("fp32"), std::string::npos) << r.output;
  }
  const auto ok = fa::test::run_cli("run --B 1 --H 2 --S 8 --Sk 8 --D 16 --softcap 1e-30" + std::string(kQuick) + " -o " + csv);
  EXPECT_EQ(ok.status, 0) << "a small cap fp32 holds is a cap: " << ok.output;
  const auto sweep = fa::test::temp_file(".csv", "name,B,H,S,D,softcap\na,1,2,8,16,1e-300\n");
  const auto row = fa::test::run_cli("sweep " + sweep + kQuick + " -o " + csv);
  EXPECT_NE(row.output.find(sweep + ":2: field 'softcap'"), std::string::npos) << row.output;
  // 2^60 + 1 one-key pages (more than a std::vector holds; its bytes overflow too), and 2^40 (8 TB of
  // page numbers): the row is invalid with its reason, and reading it allocates no page table.
  const std::pair<std::string, std::string> rows[] = {{"p,1,1,1,1152921504606846977,1,1", "overflow int64"},
                                                      {"p,1,1,1,1099511627776,64,1", "int32 entries"}};
  for (const auto& [row, why] : rows) {
    const auto paged = fa::test::temp_file(".csv", "name,B,H,S,Sk,D,page_size\n" + row + "\n");
    const auto e = fa::test::run_cli("expand " + paged);
    EXPECT_EQ(e.status, 0) << e.output;
    EXPECT_EQ(e.output.find("max_size"), std::string::npos) << e.output;
    EXPECT_NE(e.output.find(why), std::string::npos) << e.output;
    const auto run = fa::test::run_cli("sweep " + paged + kQuick + " -o " + csv);
    for (const auto& rec : fa::test::read_csv(csv)) {
      EXPECT_EQ(rec.at("status"), "invalid") << run.output;
      EXPECT_NE(rec.at("reason").find(why), std::string::npos) << rec.at("reason");
    }
  }
}
