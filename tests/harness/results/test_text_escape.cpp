// Text cells: a newline, a backslash, control bytes and bytes that are not UTF-8 become backslash
// escapes that keep a record on one line and valid UTF-8, and come back exactly.
#include <gtest/gtest.h>

#include "harness/results/text_escape.hpp"

using namespace fa;

TEST(TextEscape, NewlinesBackslashesAndNonUtf8BytesRoundTripOnOneValidLine) {
  const std::string names[] = {"plain", "two\nlines", "back\\slash \\n literal", "latin1 \xe9t\xe9", "cr\r tab\t bell\x07",
                               "valid \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "overlong \xc0\xaf surrogate \xed\xa0\x80"};
  for (const auto& n : names) {
    const std::string e = escape_text(n);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(unescape_text(e), n) << e;
  }
  EXPECT_EQ(escape_text("two\nlines"), "two\\nlines");
  EXPECT_EQ(escape_text("\xe9"), "\\xe9");
  EXPECT_EQ(escape_text("\xc3\xa9"), "\xc3\xa9") << "valid UTF-8 stays as it is";
  EXPECT_EQ(unescape_text("C:\\q"), "C:\\q") << "a sequence the writer never makes is kept";
}
