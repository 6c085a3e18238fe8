// Worker threads over devices, one lock around the shared sinks and progress.
#include "harness/run/device_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

namespace fa {

std::vector<int> parse_devices(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  for (std::string item : split_list([&] {
         std::string s = text;
         std::replace(s.begin(), s.end(), ',', '|');
         return s;
       }())) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > 1023)
      throw InputError(command_line(), flag, fmt::format("'{}' is not a device ordinal", item));
    if (std::find(out.begin(), out.end(), int(v)) != out.end())
      throw InputError(command_line(), flag, fmt::format("device {} is listed twice", v));
    out.push_back(int(v));
  }
  if (out.empty()) throw InputError(command_line(), flag, "no device ordinals given");
  return out;
}

void check_devices_present(const std::vector<int>& devices, const DeviceFacts& d, const std::string& flag) {
  if (devices.empty()) return;
  if (d.device_count <= 0)
    throw InputError(command_line(), flag,
                     fmt::format("no GPU on this host: {}", d.gpu_absent_why.empty() ? "the runtime sees none" : d.gpu_absent_why));
  for (int v : devices)
    if (v >= d.device_count)
      throw InputError(command_line(), flag,
                       fmt::format("device {} is not on this host: the runtime sees {} device{} (ordinals 0-{})", v,
                                   d.device_count, d.device_count == 1 ? "" : "s", d.device_count - 1));
}

namespace {

// Forwards one worker's records to the shared sinks under the shared lock, tagged with its device.
class TaggingSink : public RecordSink {
 public:
  TaggingSink(int device, std::mutex& mu, const std::vector<RecordSink*>& sinks) : device_(device), mu_(mu), sinks_(sinks) {}
  void write(const Record& r) override {
    Record tagged = r;
    tagged.device_index = device_;
    const std::lock_guard<std::mutex> lock(mu_);
    for (auto* s : sinks_) s->write(tagged);
  }

 private:
  int device_;
  std::mutex& mu_;
  const std::vector<RecordSink*>& sinks_;
};

}  // namespace

std::vector<Record> run_on_devices(const Sweep& sweep, const RunOptions& opt, const Registry& reg,
                                   const GateContext& ctx, const std::vector<RecordSink*>& sinks,
                                   const std::vector<int>& devices, const SelectDevice& select,
                                   const ProgressFn& progress) {
  const size_t n = devices.size();
  std::vector<Sweep> parts(n, Sweep{{}, sweep.paths, sweep.thresholds, sweep.files});
  for (size_t k = 0; k < sweep.rows.size(); ++k) parts[k % n].rows.push_back(sweep.rows[k]);
  size_t total = 0;
  for (const auto& row : sweep.rows) total += row.invalid ? 1 : opt.paths.size() * row.splits.size();

  std::mutex mu;  // guards the sinks, the progress count and the callback
  size_t done = 0;
  std::vector<std::vector<Record>> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> workers;
  for (size_t w = 0; w < n; ++w)
    workers.emplace_back([&, w] {
      try {
        GateContext mine = ctx;
        mine.device.pci = select(devices[w]);
        TaggingSink sink(devices[w], mu, sinks);
        results[w] = run_sweep(parts[w], opt, reg, mine, {&sink}, [&](size_t, size_t, const Record& last) {
          const std::lock_guard<std::mutex> lock(mu);
          ++done;
          if (progress) progress(done, total, last);
        });
        for (auto& r : results[w]) r.device_index = devices[w];
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  for (auto& t : workers) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<Record> all;
  for (auto& rs : results) all.insert(all.end(), std::make_move_iterator(rs.begin()), std::make_move_iterator(rs.end()));
  return all;
}

}  // namespace fa
