// --devices 0,1,...: the GPUs of one host, one worker thread each. Problem k goes to the k % n-th
// listed device (the --shard rule, within one process); each worker first calls `select` with its
// device ordinal (the backend's set-device; per-thread in CUDA and HIP), then runs its problems
// through run_sweep. Records reach the shared sinks under one lock, tagged with the ordinal, so
// the run writes one results file. A worker's exception stops nothing else and is rethrown after
// all have joined.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/run/runner.hpp"

namespace fa {

// "0,1,3" -> {0, 1, 3}: distinct non-negative integers; anything else throws InputError naming flag.
std::vector<int> parse_devices(const std::string& text, const std::string& flag);

// Every listed ordinal is a device this host's runtime sees (DeviceFacts::device_count, the probe's);
// else an InputError naming flag, before anything runs (a worker whose device is missing would
// otherwise fail only after the others had run their shares).
void check_devices_present(const std::vector<int>& devices, const DeviceFacts& d, const std::string& flag);

// Makes the ordinal the calling thread's device; returns its PCI address, which the worker's records
// read their clocks by (harness/run/clock_source.hpp): each device's own, not the probed one's.
using SelectDevice = std::function<DeviceFacts::Pci(int ordinal)>;

std::vector<Record> run_on_devices(const Sweep& sweep, const RunOptions& opt, const Registry& reg,
                                   const GateContext& ctx, const std::vector<RecordSink*>& sinks,
                                   const std::vector<int>& devices, const SelectDevice& select,
                                   const ProgressFn& progress = nullptr);

}  // namespace fa
