// Results files: open without truncating, flock, input/output identity by (st_dev, st_ino),
// and writes that either land completely or throw naming the file.
#include "harness/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fa {
namespace {

struct stat stat_of(int fd) {
  struct stat st {};
  fstat(fd, &st);
  return st;
}

}  // namespace

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
