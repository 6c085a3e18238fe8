// Where an input came from (file:line) and the error that names it: every reader of user input
// (sweep files, results files, flags, parameter files) throws InputError with the place, the
// field and what is wrong, so a message always reads "file:line: field 'X': reason".
#pragma once
#include <stdexcept>
#include <string>

namespace fa {

struct SourceLoc {
  std::string file;
  int line = 0;
  std::string str() const { return line > 0 ? file + ":" + std::to_string(line) : file; }
};
// The place of a flag's value: the command line, which has no line numbers.
inline SourceLoc command_line() { return SourceLoc{"command line", 0}; }

class InputError : public std::runtime_error {
 public:
  InputError(const SourceLoc& w, const std::string& f, const std::string& msg)
      : std::runtime_error(w.str() + ": field '" + f + "': " + msg), where(w), field(f) {}
  SourceLoc where;
  std::string field;
};

}  // namespace fa
