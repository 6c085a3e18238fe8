#!/usr/bin/env python3
"""scripts/peer_telemetry.py without a GPU: the join of samples to clock readings gives fa-bench's
clock columns (harness/timing.cpp's rule, worked out here by hand on made-up readings), the
nvidia-smi line parser and the NVML / AMD throttle bits, a stand-in nvidia-smi read through the
pseudo-terminal while it runs, a stand-in libnvidia-ml read through ctypes (built here with cc), the
polled reader's readings at both ends, and a timed call whose
record carries the columns and fa-bench's throttle note.
Run: python3 tests/scripts/test_peer_telemetry.py (ctest does this)."""
import datetime
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from types import SimpleNamespace

SOURCE = os.environ.get("FABENCH_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import peer_problems  # noqa: E402
import peer_telemetry as pt  # noqa: E402
import sdpa_baseline as sb  # noqa: E402

R = pt.Reading
POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, POWER_BRAKE, CURRENT = 1, 2, 4, 8, 16, 32


class JoinsSamplesToReadings(unittest.TestCase):
    # Three samples at t = [0,1], [2,3], [10,11] s; readings at 0.5 and 0.8 (inside the first), 2.4
    # (inside the second), 9.0 (before the third, 1 s away) and 13.0 (after it, 2 s away).
    WINDOWS = [(0.0, 1.0), (2.0, 3.0), (10.0, 11.0)]
    MS = [2.0, 4.0, 3.0]
    READINGS = [R(0.5, 1980, 300.0, 0), R(0.8, 1900, 650.0, POWER_CAP), R(2.4, 1500, 700.0, POWER_CAP | SW_THERMAL),
                R(9.0, 1600, -1.0, 0), R(13.0, 1000, 100.0, HW_SLOWDOWN)]

    def test_a_sample_takes_the_mean_clock_inside_its_window_else_the_nearest_reading(self):
        c = pt.clock_stats(self.WINDOWS, self.MS, self.READINGS, "nvml")
        clocks = [(1980 + 1900) / 2, 1500, 1600]  # the third: 9.0 is 1 s before, 13.0 is 2 s after
        self.assertEqual(c["mhz_min"], 1500)
        self.assertEqual(c["mhz_median"], 1600)
        cycles = sorted(ms * mhz * 1e3 for ms, mhz in zip(self.MS, clocks))
        self.assertAlmostEqual(c["cycles_median"], cycles[1])
        self.assertEqual(c["throttled_samples"], 2, "the first two samples saw a reason, the third's reading none")
        self.assertEqual(c["throttle_reasons"], "sw_power_cap|sw_thermal")
        self.assertEqual(c["power_w_max"], 700.0)
        self.assertEqual((c["source"], c["samples"]), ("nvml", 3))

    def test_the_nearest_reading_after_the_window_wins_a_tie_as_in_fa_bench(self):
        readings = [R(0.0, 1000), R(3.0, 2000, reasons=HW_THERMAL)]
        c = pt.clock_stats([(1.0, 2.0)], [1.0], readings, "nvml")
        self.assertEqual((c["mhz_median"], c["throttle_reasons"]), (2000, "hw_thermal"))
        c = pt.clock_stats([(1.0, 1.9)], [1.0], readings, "nvml")  # 1.0 s before, 1.1 s after
        self.assertEqual((c["mhz_median"], c["throttled_samples"]), (1000, 0))

    def test_no_readings_leave_every_clock_column_empty(self):
        self.assertIsNone(pt.clock_stats(self.WINDOWS, self.MS, [], "nvml"))
        cols = pt.clock_columns(None, peer_problems.g6)
        self.assertEqual(tuple(cols), pt.CLOCK_COLUMNS)
        self.assertTrue(all(v == "" for v in cols.values()))
        self.assertEqual(pt.throttle_note(None), "")

    def test_the_columns_are_fa_benchs_names_in_its_order_inside_the_records_columns(self):
        at = peer_problems.COLUMNS.index("timing_note") + 1
        self.assertEqual(tuple(peer_problems.COLUMNS[at:at + 7]), pt.CLOCK_COLUMNS)
        c = pt.clock_stats(self.WINDOWS, self.MS, self.READINGS, "nvidia-smi")
        cols = pt.clock_columns(c, peer_problems.g6)
        self.assertEqual((cols["clock_mhz_min"], cols["clock_mhz_median"], cols["power_w_max"]), ("1500", "1600", "700"))
        self.assertEqual((cols["throttled_samples"], cols["clock_source"]), ("2", "nvidia-smi"))
        self.assertEqual(pt.throttle_note(c), "throttled: 2 of 3 samples (sw_power_cap|sw_thermal)")

    def test_a_source_without_power_leaves_power_empty(self):
        c = pt.clock_stats([(0.0, 1.0)], [1.0], [R(0.5, 1700)], "amdsmi")
        self.assertEqual(pt.clock_columns(c, peer_problems.g6)["power_w_max"], "")


class ThrottleBits(unittest.TestCase):
    def test_nvml_power_and_thermal_reasons_count_and_idle_app_clocks_sync_boost_display_do_not(self):
        self.assertEqual(pt.nvml_bits(0x4), POWER_CAP)
        self.assertEqual(pt.nvml_bits(0x8 | 0x20 | 0x40 | 0x80), HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | POWER_BRAKE)
        self.assertEqual(pt.nvml_bits(0x1 | 0x2 | 0x10 | 0x100), 0)
        self.assertEqual(pt.throttle_names(0x3f), "sw_power_cap|hw_slowdown|sw_thermal|hw_thermal|power_brake|current_limit")

    def test_amd_independent_throttler_bits_map_by_their_group(self):
        for bit, ours in ((0, POWER_CAP), (7, POWER_CAP), (16, CURRENT), (23, CURRENT), (35, SW_THERMAL),
                          (45, SW_THERMAL), (46, HW_SLOWDOWN), (47, HW_SLOWDOWN), (56, 0), (57, 0), (8, 0)):
            self.assertEqual(pt.amd_bits(1 << bit), ours, f"bit {bit}")


def smi_line(t, mhz, power, mask):
    stamp = datetime.datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    return f"{stamp}, {mhz}, {power}, {mask}"


class ParsesNvidiaSmi(unittest.TestCase):
    def test_a_line_gives_its_time_clock_power_and_throttle_bits(self):
        r = pt.parse_smi_line("2026/11/28 16:43:13.250, 1755, 512.34, 0x0000000000000004")
        want = datetime.datetime(2026, 11, 28, 16, 43, 13, 250000).timestamp()
        self.assertEqual((r.t, r.mhz, r.power_w, r.reasons), (want, 1755.0, 512.34, POWER_CAP))

    def test_idle_is_no_throttle_and_a_board_without_power_reads_none(self):
        r = pt.parse_smi_line("2026/11/28 16:43:13.250, 345, [N/A], 0x0000000000000001\r")
        self.assertEqual((r.mhz, r.power_w, r.reasons), (345.0, -1.0, 0))

    def test_lines_that_are_not_readings_give_none(self):
        for line in ("", "Field \"clocks_event_reasons.active\" is not a valid field to query.",
                     "2026/11/28 16:43:13.250, [N/A], 100, 0x0", "1, 2, 3"):
            self.assertIsNone(pt.parse_smi_line(line), line)


# A stand-in nvidia-smi: answers the query with one reading, or with -lms a reading every 10 ms,
# printed without flushing (stdio buffers a pipe, not a terminal); refuses clocks_event_reasons
# when OLD_DRIVER is set, as drivers before 535 do.
FAKE_SMI = r'''#!{python}
import datetime, os, sys, time
if os.environ.get("OLD_DRIVER") and any("clocks_event_reasons" in a for a in sys.argv):
    print('Field "clocks_event_reasons.active" is not a valid field to query.'); sys.exit(2)
open(os.environ["SMI_ARGS"], "a").write(" ".join(sys.argv[1:]) + "\n")
def line(i):
    stamp = datetime.datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    print(f"{{stamp}}, {{1500 + i}}, 400.5, 0x{{4 if i % 2 else 0:016x}}")
if "-lms" not in sys.argv:
    line(0); sys.exit(0)
i = 0
while True:
    line(i); i += 1; time.sleep(0.01)
'''


class ReadsNvidiaSmiWhileItRuns(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="smi-test-")
        smi = os.path.join(self.tmp, "nvidia-smi")
        with open(smi, "w") as f:
            f.write(FAKE_SMI.format(python=sys.executable))
        os.chmod(smi, os.stat(smi).st_mode | stat.S_IXUSR)
        self.env = {"PATH": self.tmp + os.pathsep + os.environ.get("PATH", ""),
                    "SMI_ARGS": os.path.join(self.tmp, "args")}
        self.saved = {k: os.environ.get(k) for k in (*self.env, "OLD_DRIVER")}
        os.environ.update(self.env)

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def test_readings_arrive_during_the_loop_and_cover_its_end(self):
        reader, why = pt.open_smi((0, 0x19, 0))
        self.assertIsNone(why)
        monitor = reader.start()
        t0 = time.time()
        time.sleep(0.15)
        t1 = time.time()
        readings = monitor.stop()
        self.assertGreaterEqual(len(readings), 5, "a reading about every 10 ms")
        self.assertLessEqual(readings[0].t, t0 + 0.05)
        self.assertGreaterEqual(readings[-1].t, t1 - 0.01, "stop waits for a reading stamped after the loop")
        self.assertIn(POWER_CAP, {r.reasons for r in readings})
        with open(self.env["SMI_ARGS"]) as f:
            args = f.read().split("\n")[1]
        self.assertIn("--query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active", args)
        self.assertIn("-lms 10 -i 00000000:19:00.0", args)
        self.assertEqual(monitor.proc.poll() is not None, True, "nvidia-smi ends with the loop")

    def test_an_older_driver_is_asked_for_clocks_throttle_reasons(self):
        os.environ["OLD_DRIVER"] = "1"
        reader, why = pt.open_smi((0, 0x19, 0))
        self.assertIsNone(why)
        self.assertIn("--query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active", reader.cmd)


class PolledReaders(unittest.TestCase):
    def test_readings_at_the_start_every_interval_and_at_the_stop(self):
        reader = pt.PolledReader("fake", lambda: (1800.0, 350.0, POWER_CAP))
        t0 = time.time()
        reader.start()
        time.sleep(0.1)
        readings = reader.stop()
        t1 = time.time()
        self.assertGreaterEqual(len(readings), 5)
        self.assertTrue(t0 <= readings[0].t <= readings[-1].t <= t1)
        self.assertLess(readings[0].t - t0, 0.005, "one reading before the loop")
        self.assertLess(t1 - readings[-1].t, 0.005, "one when it stops")
        self.assertEqual((readings[0].mhz, readings[0].power_w, readings[0].reasons), (1800.0, 350.0, POWER_CAP))

    def test_no_reader_is_one_line_on_stderr_and_off_reads_none(self):
        props = SimpleNamespace()  # a torch that names no PCI address
        torch = SimpleNamespace(cuda=SimpleNamespace(get_device_properties=lambda i: props),
                                version=SimpleNamespace(hip=None))
        lines = []
        self.assertIsNone(pt.open_reader(torch, "auto", warn=SimpleNamespace(write=lines.append, flush=lambda: 0)))
        text = "".join(lines)
        self.assertEqual(text.count("\n"), 1)
        self.assertIn("clocks not read (torch gives no PCI address of the device)", text)
        lines.clear()
        self.assertIsNone(pt.open_reader(torch, "off", warn=SimpleNamespace(write=lines.append, flush=lambda: 0)))
        self.assertEqual(lines, [])


# A stand-in libnvidia-ml: one device at PCI 00000000:19:00.0 whose clock steps 1400, 1410, ... MHz
# and power 500.25 W, with SW power cap and idle as its clock-event reasons; only the older
# ...ThrottleReasons name, as drivers before 535 export it.
FAKE_NVML = r"""
#include <string.h>
static unsigned mhz = 1400;
int nvmlInit_v2(void) { return 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** dev) {
  if (strcmp(bus, "00000000:19:00.0") != 0) return 2;
  *dev = (void*)&mhz; return 0;
}
int nvmlDeviceGetClockInfo(void* dev, int type, unsigned* out) {
  if (dev != &mhz || type != 1) return 2;
  *out = mhz; mhz += 10; return 0;
}
int nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) { *mw = 500250; return 0; }
int nvmlDeviceGetCurrentClocksThrottleReasons(void* dev, unsigned long long* r) { *r = 0x5; return 0; }
"""


@unittest.skipUnless(shutil.which("cc"), "no C compiler for the stand-in NVML")
class ReadsNvmlThroughCtypes(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.mkdtemp(prefix="nvml-test-")
        src, self.lib = os.path.join(tmp, "nvml.c"), os.path.join(tmp, "libfake-nvml.so")
        with open(src, "w") as f:
            f.write(FAKE_NVML)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", self.lib, src], check=True)
        self.saved = os.environ.get("FABENCH_NVML_LIB")
        os.environ["FABENCH_NVML_LIB"] = self.lib

    def tearDown(self):
        if self.saved is None:
            os.environ.pop("FABENCH_NVML_LIB")
        else:
            os.environ["FABENCH_NVML_LIB"] = self.saved

    def test_the_device_at_torchs_pci_address_gives_clock_power_and_throttle_bits(self):
        reader, why = pt.open_nvml((0, 0x19, 0))
        self.assertIsNone(why)
        readings = reader.start().stop()
        self.assertEqual(readings[0].mhz - readings[-1].mhz, -10 * (len(readings) - 1), "a fresh reading each time")
        self.assertEqual((readings[0].power_w, readings[0].reasons), (500.25, POWER_CAP), "idle 0x1 is not throttling")
        self.assertEqual(reader.name, "nvml")

    def test_another_pci_address_or_library_is_refused_with_the_reason(self):
        self.assertEqual(pt.open_nvml((0, 0x1a, 0)), (None, "NVML has no device at PCI 00000000:1a:00.0"))
        os.environ["FABENCH_NVML_LIB"] = self.lib + ".missing"
        reader, why = pt.open_nvml((0, 0x19, 0))
        self.assertIsNone(reader)
        self.assertIn("libfake-nvml.so.missing does not load", why)


class TimedCallsCarryTheColumns(unittest.TestCase):
    def test_each_samples_window_is_joined_and_the_record_notes_throttling(self):
        class Event:  # each sample takes 2 ms of GPU time
            def __init__(self, enable_timing):
                pass

            def record(self):
                pass

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return 2.0

        class Reader:  # one reading in each sample's window: 1500 MHz under the power cap, then 2000
            name = "fake"

            def start(self):
                return self

            def stop(self):
                return [R(1.5, 1500, 600.0, POWER_CAP), R(3.5, 2000, 300.0, 0)]

        ticks = iter(range(1, 100))  # the host clock: windows (1, 2) and (3, 4)
        pol = sb.TimingPolicy(min_samples=2, max_samples=2, target_spread=0.0, time_cap_s=10, warmup=0, clocks=Reader())
        real_time, sb.time.time = sb.time.time, lambda: float(next(ticks))
        try:
            st = sb.time_call(SimpleNamespace(cuda=SimpleNamespace(Event=Event)), lambda: None, lambda: None, pol)
        finally:
            sb.time.time = real_time
        self.assertEqual((st["clocks"]["mhz_min"], st["clocks"]["mhz_median"]), (1500, 1750))
        self.assertEqual(st["clocks"]["cycles_median"], 2.0 * 1750 * 1e3)
        rec = sb.record_fields(sb.Problem(S=8, Sk=8), "torch-flash", "pass", "timed only", {
            "run_id": "t", "device": "d", "arch": "sm_90", "git_commit": "c"}, st)
        self.assertEqual((rec["schema"], rec["clock_mhz_median"], rec["throttled_samples"], rec["clock_source"]),
                         ("10", "1750", "1", "fake"))
        self.assertEqual(rec["timing_note"], "throttled: 1 of 2 samples (sw_power_cap)")


if __name__ == "__main__":
    unittest.main()
