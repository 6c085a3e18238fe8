"""Clock, power and throttling of the GPU while scripts/sdpa_baseline.py's peers are timed: results
schema 10's columns clock_mhz_min, clock_mhz_median, power_w_max, throttled_samples,
throttle_reasons, cycles_median and clock_source, computed as fa-bench's harness/timing.cpp does. A
reader polls the device every 10 ms during the timed loop; each sample (a host window around its
launch and synchronize) gets the mean clock of the readings taken in it, else the nearest reading.
Readers, first that opens: NVML (libnvidia-ml through ctypes, the library pynvml wraps, so no
package is needed), the amdsmi Python package, `nvidia-smi -lms 10` as a subprocess. Stdlib only.
"""
import bisect
import ctypes
import datetime
import os
import pty
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

POLL_S = 0.010  # fa-bench's clock_poll_ms: a reading per 10 ms, or per sample where samples are longer

# harness/timing.hpp's ThrottleBit, in its order, with the names throttle_names() writes.
THROTTLE_NAMES = ((1, "sw_power_cap"), (2, "hw_slowdown"), (4, "sw_thermal"), (8, "hw_thermal"),
                  (16, "power_brake"), (32, "current_limit"))
# NVML's clocks-event reasons (nvmlClocksEventReason*, docs.nvidia.com/deploy/nvml-api) that are
# throttling, as harness/run/clock_nvml.cpp maps them: SW power cap, HW slowdown, SW thermal, HW
# thermal, HW power brake. Idle 0x1, application clocks 0x2, sync boost 0x10, display 0x100 are not.
NVML_REASONS = ((0x4, 1), (0x8, 2), (0x20, 4), (0x40, 8), (0x80, 16))
# amdgpu's independent throttler bits (linux drivers/gpu/drm/amd/pm/swsmu/inc/amdgpu_smu.h,
# SMU_THROTTLER_*_BIT), the `indep_throttle_status` of AMD SMI's GPU metrics, grouped as
# harness/timing.hpp's ThrottleBit comments: PPT/SPL/FPPT/SPPT bits 0-7 power, TDC/EDC/APCC 16-23
# current, TEMP_*/VRHOT 32-45 thermal, PROCHOT 46-47 the hardware slowdown.
AMD_REASONS = ((range(0, 8), 1), (range(16, 24), 32), (range(32, 46), 4), (range(46, 48), 2))
CLOCK_COLUMNS = ("clock_mhz_min", "clock_mhz_median", "power_w_max", "throttled_samples", "throttle_reasons",
                 "cycles_median", "clock_source")


@dataclass
class Reading:
    t: float  # time.time() seconds (nvidia-smi's timestamps are wall-clock, so every reader uses it)
    mhz: float
    power_w: float = -1.0  # < 0: not read
    reasons: int = 0  # THROTTLE_NAMES bits


def throttle_names(bits):
    """'sw_power_cap|hw_slowdown' in THROTTLE_NAMES' order; '' for 0."""
    return "|".join(name for bit, name in THROTTLE_NAMES if bits & bit)


def nvml_bits(mask):
    return sum(ours for bit, ours in NVML_REASONS if mask & bit)


def amd_bits(mask):
    return sum(ours for bits, ours in AMD_REASONS if any(mask >> b & 1 for b in bits))


def clock_stats(windows, ms, readings, source):
    """The clock columns' numbers over samples (host windows (t0, t1) and their ms) joined to readings
    (sorted by t), as harness/timing.cpp's clock_stats: a sample's clock is the mean MHz of the
    readings inside its window, else the nearest one's; it is throttled if any such reading has a
    reason. None without readings or samples."""
    if not readings or not windows or len(windows) != len(ms):
        return None
    times = [r.t for r in readings]
    mhz, cycles, throttled, union = [], [], 0, 0
    for (t0, t1), x in zip(windows, ms):
        first, last = bisect.bisect_left(times, t0), bisect.bisect_right(times, t1)
        inside = readings[first:last]
        if not inside:  # the nearest: the one after the window unless the one before is strictly nearer
            before = readings[first - 1] if first > 0 else None
            after = readings[first] if first < len(readings) else None
            inside = [before if before and (not after or t0 - before.t < after.t - t1) else after]
        clock = sum(r.mhz for r in inside) / len(inside)
        reasons = 0
        for r in inside:
            reasons |= r.reasons
        mhz.append(clock)
        cycles.append(x * clock * 1e3)
        throttled += bool(reasons)
        union |= reasons
    return {"mhz_min": min(mhz), "mhz_median": statistics.median(mhz),
            "power_w_max": max(r.power_w for r in readings), "throttled_samples": throttled,
            "throttle_reasons": throttle_names(union), "cycles_median": statistics.median(cycles), "source": source,
            "samples": len(ms)}


def clock_columns(c, fmt):
    """Record cells (column -> text) of clock_stats' result; every column empty for None. fmt
    formats numbers (peer_problems.g6, fa-bench's {:.6g})."""
    if not c:
        return dict.fromkeys(CLOCK_COLUMNS, "")
    return {"clock_mhz_min": fmt(c["mhz_min"]), "clock_mhz_median": fmt(c["mhz_median"]),
            "power_w_max": fmt(c["power_w_max"]) if c["power_w_max"] >= 0 else "",
            "throttled_samples": str(c["throttled_samples"]), "throttle_reasons": c["throttle_reasons"],
            "cycles_median": fmt(c["cycles_median"]), "clock_source": c["source"]}


def throttle_note(c):
    """harness/run/timed_run.cpp's note for a record that ran throttled, or ''."""
    if not c or not c["throttled_samples"]:
        return ""
    return f"throttled: {c['throttled_samples']} of {c['samples']} samples ({c['throttle_reasons']})"


# ---- nvidia-smi ------------------------------------------------------------------------------

# `nvidia-smi --query-gpu` fields (nvidia-smi --help-query-gpu): the timestamp (YYYY/MM/DD
# HH:MM:SS.msec, local time), the SM clock, board power, and the active clock-event reasons as a
# hex mask of NVML's bits; drivers before 535 spell the last clocks_throttle_reasons.active.
SMI_FIELDS = ("timestamp", "clocks.sm", "power.draw")
SMI_REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


def parse_smi_line(line):
    """One `--format=csv,noheader,nounits` line of SMI_FIELDS + a reasons field to a Reading, or None
    for a line that is no reading (blank, an error text, a clock of N/A)."""
    cells = [c.strip() for c in line.split(",")]
    if len(cells) != 4:
        return None
    try:
        t = datetime.datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        mhz = float(cells[1])
    except ValueError:
        return None
    try:
        power = float(cells[2])
    except ValueError:  # [N/A] on boards that read no power
        power = -1.0
    try:
        reasons = nvml_bits(int(cells[3], 16))
    except ValueError:
        reasons = 0
    return Reading(t, mhz, power, reasons)


class SmiReader:
    """`nvidia-smi --query-gpu=... -lms 10 -i BUS` for the duration of one timed loop. It writes to a
    pseudo-terminal, so each line arrives as it is printed (a pipe would hold them in stdio's
    buffer), and its timestamps, not the arrival, place the readings."""
    name = "nvidia-smi"

    def __init__(self, binary, device, reasons_field):
        self.cmd = [binary, "--query-gpu=" + ",".join(SMI_FIELDS + (reasons_field,)),
                    "--format=csv,noheader,nounits", "-lms", str(round(POLL_S * 1000)), "-i", device]

    def start(self):
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(self.cmd, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        os.close(slave)
        self.readings, self.cv = [], threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(master,), daemon=True)
        self.thread.start()
        with self.cv:  # nvidia-smi takes ~0.1-0.3 s to its first line: the loop starts after it
            self.cv.wait_for(lambda: self.readings or self.proc.poll() is not None, timeout=3.0)
        return self

    def _read(self, fd):
        buf = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            got = [r for r in map(parse_smi_line, (x.decode(errors="replace") for x in lines)) if r]
            if got:
                with self.cv:
                    self.readings += got
                    self.cv.notify_all()
        os.close(fd)

    def stop(self):
        """The readings, after one stamped at or after now (the last sample's end), or 0.2 s."""
        now = time.time()
        with self.cv:
            self.cv.wait_for(lambda: (self.readings and self.readings[-1].t >= now) or self.proc.poll() is not None,
                             timeout=0.2)
        self.proc.terminate()
        self.proc.wait()
        self.thread.join(timeout=1.0)
        with self.cv:
            return sorted(self.readings, key=lambda r: r.t)


def open_smi(pci):
    """(SmiReader, None), or (None, why): nvidia-smi found, and one query of the device answers with a
    clock under one of SMI_REASONS' spellings."""
    device = nvml_bus_id(pci)
    binary = shutil.which("nvidia-smi")
    if not binary:
        return None, "nvidia-smi is not on PATH"
    why = ""
    for field in SMI_REASONS:
        res = subprocess.run([binary, "--query-gpu=" + ",".join(SMI_FIELDS + (field,)), "--format=csv,noheader,nounits",
                              "-i", device], capture_output=True, text=True)
        if res.returncode == 0 and parse_smi_line(res.stdout.strip().splitlines()[0] if res.stdout.strip() else ""):
            return SmiReader(binary, device, field), None
        why = (res.stdout + res.stderr).strip().splitlines()[:1]
    return None, f"nvidia-smi -i {device} gave no clock ({why[0] if why else 'no output'})"


# ---- polled readers: NVML, AMD SMI -------------------------------------------------------------

class PolledReader:
    """read() on a thread every POLL_S from start() to stop(), which takes one last reading: a loop
    shorter than the interval still has readings at both ends (harness/timing.cpp's ClockPoller)."""

    def __init__(self, name, read):
        self.name, self.read = name, read

    def start(self):
        self.readings, self.done = [], threading.Event()
        self._take()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _take(self):
        t0 = time.time()
        r = self.read()
        if r:
            self.readings.append(Reading(0.5 * (t0 + time.time()), *r))

    def _run(self):
        while not self.done.wait(POLL_S):
            self._take()

    def stop(self):
        self.done.set()
        self.thread.join()
        self._take()
        return self.readings


def open_nvml(pci):
    """NVML through ctypes (FABENCH_NVML_LIB names another file, as for fa-bench): (PolledReader,
    None) or (None, why). Calls and constants as harness/run/clock_nvml.cpp (NVML's API reference)."""
    bus_id = nvml_bus_id(pci)
    file = os.environ.get("FABENCH_NVML_LIB") or "libnvidia-ml.so.1"
    try:
        lib = ctypes.CDLL(file)
    except OSError as e:
        return None, f"{file} does not load ({e})"
    if lib.nvmlInit_v2() != 0:
        return None, "nvmlInit_v2 failed"
    dev = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByPciBusId_v2(bus_id.encode(), ctypes.byref(dev)) != 0:
        return None, f"NVML has no device at PCI {bus_id}"
    reasons_fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    mhz, mw, mask = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()

    def read():
        if lib.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(mhz)) != 0:  # NVML_CLOCK_SM
            return None
        power = mw.value * 1e-3 if lib.nvmlDeviceGetPowerUsage(dev, ctypes.byref(mw)) == 0 else -1.0
        bits = nvml_bits(mask.value) if reasons_fn and reasons_fn(dev, ctypes.byref(mask)) == 0 else 0
        return float(mhz.value), power, bits
    return (PolledReader("nvml", read), None) if read() else (None, f"NVML reads no SM clock at PCI {bus_id}")


def amd_number(d, *keys):
    """The first of keys in an amdsmi dict that holds a number (they rename fields across versions
    and write 'N/A' where a board has none), else None."""
    for k in keys:
        v = d.get(k) if isinstance(d, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def open_amdsmi(pci):
    """The amdsmi package (ROCm's): GFX clock, socket power and GPU metrics' independent throttle
    status, of the device at bus_id. (PolledReader, None) or (None, why)."""
    try:
        import amdsmi
        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
        bdf = "{:04x}:{:02x}:{:02x}.0".format(*pci)  # AMD SMI's spelling
        match = [h for h in handles if amdsmi.amdsmi_get_gpu_device_bdf(h).lower() == bdf]
    except Exception as e:  # ImportError, or the library's own: no driver, no permission
        return None, f"amdsmi: {type(e).__name__}: {e}"
    if not match:
        return None, f"amdsmi has no device at PCI {bdf}"
    h = match[0]

    def read():
        try:
            mhz = amd_number(amdsmi.amdsmi_get_clock_info(h, amdsmi.AmdSmiClkType.GFX), "clk", "cur_clk")
        except Exception:
            return None
        try:
            power = amd_number(amdsmi.amdsmi_get_power_info(h), "current_socket_power", "average_socket_power",
                               "socket_power")
        except Exception:
            power = None
        try:
            metrics = amdsmi.amdsmi_get_gpu_metrics_info(h)
            mask = amd_number(metrics, "indep_throttle_status")
        except Exception:
            mask = None
        return (mhz, -1.0 if power is None else power, amd_bits(int(mask or 0))) if mhz is not None else None
    return (PolledReader("amdsmi", read), None) if read() else (None, f"amdsmi reads no GFX clock at PCI {bdf}")


def pci_address(torch, index=0):
    """(domain, bus, device) of torch's device `index`, or None where torch does not say: NVML, AMD SMI
    and nvidia-smi number devices apart from CUDA_VISIBLE_DEVICES, so the address names the device."""
    props = torch.cuda.get_device_properties(index)
    if getattr(props, "pci_bus_id", None) is None:
        return None
    return getattr(props, "pci_domain_id", 0), props.pci_bus_id, getattr(props, "pci_device_id", 0)


def nvml_bus_id(pci):
    """NVML's and nvidia-smi's spelling, as harness/run/clock_nvml.cpp: 00000000:19:00.0."""
    return "{:08x}:{:02x}:{:02x}.0".format(*pci)


READERS = ("nvml", "amdsmi", "nvidia-smi")


def open_reader(torch, choice="auto", warn=sys.stderr):
    """The clock reader for torch's device 0 (choice: auto, a READERS name, or off), or None with one
    line on `warn` saying why; FABENCH_CLOCKS=off reads none, as for fa-bench."""
    if choice == "off" or os.environ.get("FABENCH_CLOCKS") == "off":
        return None
    pci = pci_address(torch)
    whys = []
    if pci is None:
        whys.append("torch gives no PCI address of the device")
    else:
        hip = bool(getattr(torch.version, "hip", None))
        order = [choice] if choice != "auto" else ["amdsmi"] if hip else ["nvml", "nvidia-smi"]
        for name in order:
            reader, why = {"nvml": open_nvml, "amdsmi": open_amdsmi, "nvidia-smi": open_smi}[name](pci)
            if reader:
                return reader
            whys.append(why)
    print(f"sdpa_baseline.py: clocks not read ({'; '.join(whys)}): records have no clock, power or throttling "
          "columns", file=warn)
    return None
