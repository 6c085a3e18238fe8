// --filter expressions over a problem's columns, e.g. `S>=1024 && dtype==bf16 || !causal`.
// Grammar: or := and ('||' and)*; and := unary ('&&' unary)*; unary := '!' unary | '(' or ')' | cmp
//          cmp := operand [('=='|'!='|'<'|'<='|'>'|'>=') operand]; operand := number | column | word
// Columns: every problem field (harness/problem_fields.hpp): the numbers compare as numbers (scale:
// the scale in effect), dtype, layout and name as words.
// A bare operand is true when non-zero. Parse errors name the column and position.
#pragma once
#include <memory>
#include <string>

#include "harness/problem.hpp"

namespace fa {

class Filter {
 public:
  explicit Filter(const std::string& expr);  // throws InputError(field "--filter")
  ~Filter();
  Filter(Filter&&) noexcept;
  bool operator()(const Problem& p) const;
  struct Node;

 private:
  std::unique_ptr<Node> root_;
};

}  // namespace fa
