// The one output policy of every command that writes. check_outputs() runs before anything is
// read, run or truncated: each output's directory exists, it is not a directory, not one of the
// inputs and not another output of the same run (same device and inode, whatever the name).
// OutputFile then holds one file: opened without truncating, locked (flock, regular files only, so
// `-o /dev/null` stays shareable), truncated on request, every byte written checked (WriteError
// naming the file); check_stdout() does the same for stdout once a command is done.
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

// One output of a command: the flag that names it, and its path (empty: not requested).
struct OutputSpec {
  std::string flag, path;
};

// Throws InputError naming the flag when an output breaks the policy above. Devices (/dev/null,
// /dev/full) are never an input's or another output's file.
void check_outputs(const std::vector<OutputSpec>& outputs, const std::vector<std::string>& inputs);

// Flushes stdout; throws WriteError naming it when any write to it failed (a full disk, /dev/full).
void check_stdout();

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
  void truncate_to(long long size);  // drops a torn tail (--resume); regular files only
  // truncate() and one checked write: the whole file at once.
  void replace_with(const std::string& text);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace fa
