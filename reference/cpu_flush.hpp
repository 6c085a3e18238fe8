// Cold-mode cache eviction for host-timed paths (cpu-ref, cpu-flash, CPU plugin paths): streams a
// buffer twice this machine's last-level cache (8-256 MB) through the caches. Defined in
// reference/cpu_paths.cpp.
#pragma once

namespace fa {

void flush_cpu_caches();

}  // namespace fa
