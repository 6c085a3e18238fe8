// Text cells that keep one record on one line and stay valid UTF-8 in every printer: a backslash
// becomes `\\`, a newline `\n`, a carriage return `\r`, a tab `\t`, any other control byte or a
// byte that is not part of valid UTF-8 `\xNN`. unescape_text() reverses it exactly, so a name with
// a newline or stray Latin-1 bytes round-trips through CSV, JSON Lines and --resume.
#pragma once
#include <string>

namespace fa {

std::string escape_text(const std::string& s);
// Reverses escape_text; a backslash sequence it never writes is kept as it stands.
std::string unescape_text(const std::string& s);

}  // namespace fa
