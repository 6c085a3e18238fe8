// The output policy: checks by identity (st_dev, st_ino; a file not yet there by its canonical
// path) before anything runs, open without truncating, flock, and writes that either land
// completely or throw naming the file.
#include "harness/results/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "harness/input_error.hpp"

namespace fa {
namespace {

struct stat stat_of(int fd) {
  struct stat st {};
  fstat(fd, &st);
  return st;
}

// What makes two names one file: device and inode where it exists, else its canonical path.
std::string identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return fmt::format("inode {}:{}", st.st_dev, st.st_ino);
  std::error_code ec;
  return "path " + std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec).string();
}

}  // namespace

void check_outputs(const std::vector<OutputSpec>& outputs, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  const SourceLoc cli = command_line();
  std::vector<std::pair<const OutputSpec*, std::string>> seen;  // earlier outputs and their identity
  for (const auto& o : outputs) {
    if (o.path.empty()) continue;
    struct stat st {};
    const bool exists = ::stat(o.path.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) throw InputError(cli, o.flag, fmt::format("'{}' is a directory, not a file", o.path));
    const fs::path dir = fs::path(o.path).parent_path().empty() ? fs::path(".") : fs::path(o.path).parent_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw InputError(cli, o.flag, fmt::format("cannot write '{}': directory '{}' does not exist", o.path, dir.string()));
    if (exists && !S_ISREG(st.st_mode)) continue;  // a device: writing it overwrites nothing
    for (const auto& in : inputs)
      if (!in.empty() && same_file(o.path, in))
        throw InputError(cli, o.flag, fmt::format("'{}' is the input '{}'; refusing to overwrite it", o.path, in));
    const std::string id = identity(o.path);
    for (const auto& [other, other_id] : seen)
      if (other_id == id)
        throw InputError(cli, o.flag, fmt::format("'{}' is also the file of {}; give each output its own file", o.path, other->flag));
    seen.emplace_back(&o, id);
  }
}

void check_stdout() {
  errno = 0;
  std::cout.flush();
  const bool failed = std::cout.fail() || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (failed) throw WriteError(fmt::format("writing stdout failed: {}", errno ? std::strerror(errno) : "stream error"));
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat x {}, y {};
  return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

OutputFile::OutputFile(const std::string& path, const std::vector<std::string>& inputs) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw WriteError(fmt::format("cannot write results file '{}': {}", path, std::strerror(errno)));
  if (S_ISREG(stat_of(fd_).st_mode) && flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    throw WriteError(err == EWOULDBLOCK
                         ? fmt::format("results file '{}' is locked by another fa-bench run", path)
                         : fmt::format("cannot lock results file '{}': {}", path, std::strerror(err)));
  }
  for (const auto& in : inputs)
    if (same_file(path, in)) {
      ::close(fd_);
      throw WriteError(fmt::format("results file '{}' is the input '{}'; refusing to overwrite it", path, in));
    }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

OutputFile::OutputFile(OutputFile&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }

bool OutputFile::empty() const { return stat_of(fd_).st_size == 0; }

void OutputFile::truncate() {
  if (S_ISREG(stat_of(fd_).st_mode) && ::ftruncate(fd_, 0) != 0)
    throw WriteError(fmt::format("cannot truncate results file '{}': {}", path_, std::strerror(errno)));
}

void OutputFile::truncate_to(long long size) {
  if (S_ISREG(stat_of(fd_).st_mode) && ::ftruncate(fd_, off_t(size)) != 0)
    throw WriteError(fmt::format("cannot truncate results file '{}': {}", path_, std::strerror(errno)));
}

void OutputFile::replace_with(const std::string& text) {
  truncate();
  write(text);
}

void OutputFile::write(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw WriteError(fmt::format("writing results file '{}' failed: {}", path_,
                                   n < 0 ? std::strerror(errno) : "no bytes written"));
    done += size_t(n);
  }
}

}  // namespace fa
