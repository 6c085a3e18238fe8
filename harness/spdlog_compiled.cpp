// spdlog's definitions, compiled once here instead of in every file that logs. fabench_core defines
// SPDLOG_COMPILED_LIB for itself and everything that links it, so <spdlog/spdlog.h> only declares;
// header-only spdlog cost about 7.5 s of compile in each unity batch that logs, in each of CI's
// builds. Debian ships spdlog as a shared library only, and fa-bench travels to GPU machines that
// lack it, so the definitions are compiled in, following spdlog's compiled-mode layout (its src/):
// the -inl headers, and the sink and factory templates fa-bench uses instantiated (the default
// logger's colour stdout sink, the CLI's colour stderr logger, the base of the ring buffer sink that
// test_clock_source reads).
#ifndef SPDLOG_COMPILED_LIB
#error "built with SPDLOG_COMPILED_LIB (fabench_core's compile definitions)"
#endif
#include <mutex>

#include <spdlog/spdlog.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template std::shared_ptr<spdlog::logger> spdlog::stderr_color_mt<spdlog::synchronous_factory>(const std::string&,
                                                                                              spdlog::color_mode);
