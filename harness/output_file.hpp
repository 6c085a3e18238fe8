// A results file held for one run: opened without truncating, locked (flock, exclusive,
// non-blocking; regular files only, so `-o /dev/null` stays shareable) so two runs cannot interleave, refused when it is one of the run's inputs (same
// device and inode, whatever the name), truncated only once every output has passed those checks,
// and written with every byte checked: a failed write throws WriteError naming the file.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace fa {

class WriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether two paths name one existing file (device and inode), whatever the names.
bool same_file(const std::string& a, const std::string& b);

class OutputFile {
 public:
  // Opens and locks `path`; throws WriteError if it cannot be written, is locked by another
  // run, or is the same file as one of `inputs` (paths that do not exist are ignored).
  OutputFile(const std::string& path, const std::vector<std::string>& inputs);
  ~OutputFile();
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;

  bool empty() const;  // no bytes yet (a new file, or an empty one)
  void truncate();     // regular files only; a device such as /dev/full is left as it is
  void write(const std::string& text);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace fa
