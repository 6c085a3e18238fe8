// Child processes for --isolate: fork + exec of /proc/self/exe, job as JSON on the command line
// (the record's plugin library as its own argument: a file name may hold any byte but NUL),
// outcome as JSON through a pipe, the child's stderr through another (passed on, its tail kept for
// the record), poll() for the timeout and for stop requests, waitpid for the cause of death. The
// child asks the kernel for SIGKILL when its parent dies (PR_SET_PDEATHSIG), so a parent killed
// with SIGKILL leaves no child spinning on a hung kernel. Every field a child fills is listed in visit_outcome(), and every RunOptions field
// the runner consumes in visit_options(): a new field must be added there to survive isolation
// (tests/harness/run/test_isolate.cpp round-trips each one). Text travels escaped (harness/results/text_escape.hpp), so
// a name that is not UTF-8 cannot make the JSON throw.
#include "harness/run/isolate.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "harness/problem_fields.hpp"
#include "harness/run/clock_source.hpp"
#include "harness/run/tensor_hooks.hpp"
#include "harness/results/text_escape.hpp"

namespace fa {
namespace {

using nlohmann::json;

// Doubles travel as text (fmt's shortest round-trip form) so that inf and NaN survive JSON.
struct JsonOut {
  json j = json::object();
  void operator()(const char* k, double v) { j[k] = fmt::format("{}", v); }
  void operator()(const char* k, const std::string& v) { j[k] = escape_text(v); }
  template <class T>
  void operator()(const char* k, const T& v) {
    if constexpr (std::is_enum_v<T>) j[k] = int(v);
    else j[k] = v;
  }
};

struct JsonIn {
  const json& j;
  void operator()(const char* k, double& v) { v = std::strtod(j.at(k).get_ref<const std::string&>().c_str(), nullptr); }
  void operator()(const char* k, std::string& v) { v = unescape_text(j.at(k).get<std::string>()); }
  template <class T>
  void operator()(const char* k, T& v) {
    if constexpr (std::is_enum_v<T>) v = T(j.at(k).get<int>());
    else v = j.at(k).get<T>();
  }
};

// The problem as its field table's text (harness/problem_fields.hpp), exact where a results cell
// would round, so the child runs the very problem.
json problem_json(const Problem& p) {
  json j = json::object();
  for (const auto& f : problem_field_table()) j[f.name] = escape_text(f.exact ? f.exact(p) : f.cell(p));
  return j;
}

void problem_from_json(const json& j, Problem& p) {
  for (const auto& f : problem_field_table())
    if (auto why = f.set(p, unescape_text(j.at(f.name).get<std::string>())))
      throw std::runtime_error(fmt::format("isolated record: field '{}': {}", f.name, *why));
}

template <class IO, class M>
void visit_metrics(IO& io, M& m) {
  io("max_abs", m.max_abs), io("mean_abs", m.mean_abs), io("rel_l2", m.rel_l2), io("cosine", m.cosine);
  io("lse_max_err", m.lse_max_err), io("nan_inf", m.nan_inf), io("unwritten", m.unwritten);
  io("cache_mismatch", m.cache_mismatch), io("rows_checked", m.rows_checked), io("rows_total", m.rows_total);
  io("lp_max_abs", m.lp_max_abs), io("lp_lse_err", m.lp_lse_err), io("bias_mean_ulp", m.bias.mean_ulp);
  io("bias_row_sd_ulp", m.bias.row_sd_ulp), io("bias_elements", m.bias.elements), io("bias_rows", m.bias.rows);
}

template <class IO, class T>
void visit_timing(IO& io, T& t) {
  io("median_ms", t.median_ms), io("min_ms", t.min_ms), io("max_ms", t.max_ms), io("mean_ms", t.mean_ms);
  io("spread", t.spread), io("samples", t.samples), io("mode", t.mode), io("stopped_by", t.stopped_by);
  io("batch", t.batch), io("note", t.note), io("total_ms", t.total_ms);
}

template <class IO, class C>
void visit_clocks(IO& io, C& c) {
  io("mhz_min", c.mhz_min), io("mhz_median", c.mhz_median), io("power_w_max", c.power_w_max);
  io("cycles_median", c.cycles_median), io("throttled_samples", c.throttled_samples);
  io("throttle_reasons", c.throttle_reasons), io("source", c.source), io("readings", c.readings);
}

template <class IO, class R>
void visit_outcome(IO& io, R& r) {
  io("ran_path", r.ran_path), io("g_used", r.g_used), io("status", r.status), io("reason", r.reason);
  io("rule", r.rule), io("tol", r.tol), io("bias_bound", r.bias_bound), io("repeat_runs", r.repeat_runs);
  io("repeat_diffs", r.repeat_diffs), io("timed_check", r.timed_check), io("tflops", r.tflops), io("gbps", r.gbps);
  io("flush_bytes", r.flush_bytes);
}

template <class IO, class O>
void visit_options(IO& io, O& o) {
  io("warmup", o.timing.warmup), io("min_samples", o.timing.min_samples), io("max_samples", o.timing.max_samples);
  io("target_spread", o.timing.target_spread), io("time_cap_s", o.timing.time_cap_s), io("mode", o.timing.mode);
  io("time_limit_s", o.timing.time_limit_s), io("check_timed", o.check_timed);
  io("planted_slowdown", o.timing.planted_slowdown), io("time_paths", o.time_paths), io("check_rows", o.check_rows);
  io("repeat_check", o.repeat_check), io("load_tensors", o.load_tensors), io("save_tensors", o.save_tensors);
  io("throttle_policy", o.throttle.policy), io("throttle_retries", o.throttle.retries);
  io("throttle_wait_s", o.throttle.wait_s), io("gpu_reference", o.gpu_reference);
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error(fmt::format("--isolate: cannot find this binary: {}", std::strerror(errno)));
  return std::string(buf, size_t(n));
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{} ({})", abbrev, strsignal(sig)) : fmt::format("signal {}", sig);
}

void write_all(int fd, const std::string& s) {
  for (size_t at = 0; at < s.size();) {
    const ssize_t n = write(fd, s.data() + at, s.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("isolated record: cannot write the outcome: {}", std::strerror(errno)));
    at += size_t(n);
  }
}

// The last kTailBytes of a child's stderr, for a record whose child died without writing one.
constexpr size_t kTailBytes = 1500;

void keep_tail(std::string& tail, const char* buf, size_t n) {
  tail.append(buf, n);
  if (tail.size() > 2 * kTailBytes) tail.erase(0, tail.size() - kTailBytes);
}

std::string tail_text(std::string tail) {
  if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  for (char& c : tail)
    if (c == '\n') c = '|';
  return tail.empty() ? "its stderr is empty" : "its stderr ends: " + tail;
}

}  // namespace

std::string encode_job(const Record& r, int G, const RunOptions& opt, const GateContext& ctx) {
  JsonOut options;
  visit_options(options, opt);
  const Thresholds& t = opt.thresholds;
  return json{{"problem", problem_json(r.problem)}, {"options", options.j}, {"path", escape_text(r.path)}, {"G", G},
              {"g_auto", r.g_req.is_auto}, {"g_value", r.g_req.value}, {"file", escape_text(r.where.file)},
              {"line", r.where.line}, {"max_err", t.max_err ? fmt::format("{}", *t.max_err) : ""},
              {"cosine", t.cosine ? fmt::format("{}", *t.cosine) : ""},
              {"cpu_budget_flops", fmt::format("{}", ctx.cpu_budget_flops)}, {"log_level", int(spdlog::get_level())}}
      .dump();
}

std::string encode_outcome(const Record& r) {
  JsonOut out;
  visit_outcome(out, r);
  if (r.metrics) {
    JsonOut m;
    visit_metrics(m, *r.metrics);
    out.j["metrics"] = m.j;
  }
  if (r.timing) {
    JsonOut t;
    visit_timing(t, *r.timing);
    if (r.timing->clocks) {
      JsonOut c;
      visit_clocks(c, *r.timing->clocks);
      t.j["clocks"] = c.j;
    }
    out.j["timing"] = t.j;
  }
  if (r.roof) {
    JsonOut roof;
    roof("bound", r.roof->bound), roof("pct_peak", r.roof->pct_peak);
    out.j["roof"] = roof.j;
  }
  return out.j.dump();
}

void decode_outcome(const std::string& text, Record& r) {
  const json j = json::parse(text);
  JsonIn in{j};
  visit_outcome(in, r);
  if (j.contains("metrics")) {
    JsonIn m{j["metrics"]};
    visit_metrics(m, r.metrics.emplace());
  }
  if (j.contains("timing")) {
    JsonIn t{j["timing"]};
    visit_timing(t, r.timing.emplace());
    if (j["timing"].contains("clocks")) {
      JsonIn c{j["timing"]["clocks"]};
      visit_clocks(c, r.timing->clocks.emplace());
    }
  }
  if (j.contains("roof")) {
    JsonIn roof{j["roof"]};
    Roofline& x = r.roof.emplace();
    roof("bound", x.bound), roof("pct_peak", x.pct_peak);
  }
}

void run_isolated(Record& r, int G, const RunOptions& opt, const GateContext& ctx) {
  const std::string exe = self_exe(), job = encode_job(r, G, opt, ctx);
  int out_fds[2], err_fds[2];
  if (pipe2(out_fds, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("--isolate: pipe: {}", std::strerror(errno)));
  if (pipe2(err_fds, O_CLOEXEC) != 0) {
    close(out_fds[0]), close(out_fds[1]);
    throw std::runtime_error(fmt::format("--isolate: pipe: {}", std::strerror(errno)));
  }
  const std::string result_fd = std::to_string(out_fds[1]);
  std::vector<const char*> argv = {exe.c_str(), kIsolatedCommand, "--job", job.c_str(), "--result-fd", result_fd.c_str()};
  if (!r.plugin_file.empty()) argv.insert(argv.end(), {kIsolatedPluginFlag, r.plugin_file.c_str()});
  if (!opt.heuristic_file.empty()) argv.insert(argv.end(), {kIsolatedHeuristicFlag, opt.heuristic_file.c_str()});
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls until exec: the parent may have other threads
    // Die with the parent. Its death between fork and prctl would go unseen: getppid() then names
    // the reaper that adopted this child, not the parent.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    setpgid(0, 0);  // its own group: a terminal's Ctrl-C reaches the parent, which decides
    fcntl(out_fds[1], F_SETFD, 0);
    dup2(err_fds[1], STDERR_FILENO);  // dup2 clears FD_CLOEXEC on the copy
    execv(exe.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  close(out_fds[1]), close(err_fds[1]);
  if (pid < 0) {
    close(out_fds[0]), close(err_fds[0]);
    throw std::runtime_error(fmt::format("--isolate: fork: {}", std::strerror(errno)));
  }
  setpgid(pid, pid);  // also here, so a kill below cannot race the child's own setpgid
  const auto start = std::chrono::steady_clock::now();
  std::string outcome, tail, killed_why;
  bool out_open = true, err_open = true;
  for (char buf[4096]; out_open || err_open;) {
    pollfd pfd[2] = {{out_open ? out_fds[0] : -1, POLLIN, 0}, {err_open ? err_fds[0] : -1, POLLIN, 0}};
    if (poll(pfd, 2, 100) > 0) {
      for (int i = 0; i < 2; ++i) {
        if (!pfd[i].revents) continue;
        const ssize_t n = read(pfd[i].fd, buf, sizeof buf);
        if (n > 0 && i == 0) outcome.append(buf, size_t(n));
        if (n > 0 && i == 1) {  // passed on as it comes, as before the pipe
          keep_tail(tail, buf, size_t(n));
          for (ssize_t at = 0, w; at < n; at += w > 0 ? w : n) w = write(STDERR_FILENO, buf + at, size_t(n - at));
        }
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) (i == 0 ? out_open : err_open) = false;
      }
      continue;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (const int sig = opt.stop ? opt.stop() : 0) killed_why = "interrupted by " + signal_text(sig);
    else if (opt.row_timeout_s > 0 && elapsed > opt.row_timeout_s)
      killed_why = fmt::format("timeout after {:g} s (--row-timeout)", opt.row_timeout_s);
    if (!killed_why.empty()) {
      kill(-pid, SIGKILL);
      break;
    }
  }
  close(out_fds[0]), close(err_fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.status = Status::error;
  if (!killed_why.empty()) r.reason = killed_why;
  else if (WIFSIGNALED(st)) r.reason = "crashed: " + signal_text(WTERMSIG(st));
  else if (WEXITSTATUS(st) != 0 || outcome.empty())
    r.reason = fmt::format("isolated child exited with status {} without writing its record; {}", WEXITSTATUS(st),
                           tail_text(tail));
  else decode_outcome(outcome, r);
  if (r.status == Status::skip) r.tile = TileShape{0, 0, 0};  // the child's gate said no: nothing ran
}

IsolatedJob decode_job(const std::string& job_text) {
  const json job = json::parse(job_text);
  IsolatedJob out;
  Record& r = out.record;
  RunOptions& opt = out.options;
  JsonIn options{job.at("options")};
  problem_from_json(job.at("problem"), r.problem);
  visit_options(options, opt);
  auto threshold = [&](const char* k) -> std::optional<double> {
    const std::string& v = job.at(k).get_ref<const std::string&>();
    return v.empty() ? std::nullopt : std::optional<double>(std::strtod(v.c_str(), nullptr));
  };
  opt.thresholds.max_err = threshold("max_err");
  opt.thresholds.cosine = threshold("cosine");
  out.log_level = job.at("log_level").get<int>();
  r.path = unescape_text(job.at("path").get<std::string>());
  r.g_req = SplitRequest{job.at("g_auto").get<bool>(), job.at("g_value").get<int>()};
  r.where = SourceLoc{unescape_text(job.at("file").get<std::string>()), job.at("line").get<int>()};
  out.G = job.at("G").get<int>();
  r.g_used = out.G;
  out.cpu_budget_flops = std::strtod(job.at("cpu_budget_flops").get_ref<const std::string&>().c_str(), nullptr);
  return out;
}

int run_isolated_child(const std::string& job_text, int result_fd, const std::function<DeviceFacts()>& probe,
                       ReferenceFn reference, const std::function<Registry(const DeviceFacts&)>& make_registry) {
  IsolatedJob job = decode_job(job_text);
  Record& r = job.record;
  RunOptions& opt = job.options;
  const int G = job.G;
  spdlog::set_level(spdlog::level::level_enum(job.log_level));
  clock_reasons_logged_elsewhere();  // the parent warned (runner.cpp)
  GateContext ctx;
  ctx.device = probe();
  ctx.cpu_budget_flops = job.cpu_budget_flops;
  const Registry reg = make_registry(ctx.device);
  const PathRow* pr = reg.find(r.path);
  if (!pr) throw std::runtime_error(fmt::format("isolated record: unknown path '{}'", r.path));
  opt.reference = reference;
  install_tensor_hooks(opt);  // --load-tensors and --save-tensors, as in the parent
  // The gate calls into the path (a plugin's supports()): it runs here, where a crash is one record's.
  if (const std::optional<std::string> no = pr->supports(r.problem, G, ctx)) {
    r.status = Status::skip;
    r.reason = *no;
  } else {
    RowData data;
    run_record(r, *pr, G, opt, ctx, data);
  }
  write_all(result_fd, encode_outcome(r));
  return 0;
}

}  // namespace fa
