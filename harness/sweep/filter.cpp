// Recursive-descent parser and evaluator for --filter expressions.
#include "harness/sweep/filter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <variant>

#include "harness/input_error.hpp"
#include "harness/problem_fields.hpp"

namespace fa {

using Value = std::variant<double, std::string>;

struct Filter::Node {
  enum Kind { Num, Col, Word, Not, And, Or, Cmp } kind;
  double num = 0;
  std::string text;  // column name, word, or comparison operator
  std::unique_ptr<Node> a, b;
  int depth = 1;  // of the tree below and including this node
};

namespace {

// Parsing and evaluation recurse once per level; 1000 levels is far beyond any hand-written filter
// and far within the stack (20k nested parentheses used to overflow it).
constexpr int kMaxDepth = 1000;

bool is_column(const std::string& s) { return find_problem_field(s) != nullptr; }

// A number for the numeric fields (scale: the scale in effect), the cell's text for the words.
Value column_value(const Problem& p, const std::string& c) {
  const ProblemField& f = *find_problem_field(c);
  if (f.number) return f.number(p);
  return f.cell(p);
}

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  std::unique_ptr<Filter::Node> parse() {
    auto n = parse_or();
    skip();
    if (pos_ != s_.size()) fail(fmt::format("unexpected '{}'", s_.substr(pos_)));
    return n;
  }

 private:
  using NodeP = std::unique_ptr<Filter::Node>;
  [[noreturn]] void fail(const std::string& msg) const {
    const std::string shown = s_.size() <= 80 ? s_ : s_.substr(0, 77) + "...";
    throw InputError(command_line(), "--filter", fmt::format("{} at position {} in '{}'", msg, pos_, shown));
  }
  void skip() { while (pos_ < s_.size() && std::isspace((unsigned char)s_[pos_])) ++pos_; }
  bool eat(const char* tok) {
    skip();
    const size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  void too_deep() const { fail(fmt::format("expression nested too deeply (more than {} levels)", kMaxDepth)); }
  NodeP make(Filter::Node::Kind k, NodeP a = nullptr, NodeP b = nullptr, std::string text = {}) const {
    auto n = std::make_unique<Filter::Node>();
    n->depth = 1 + std::max(a ? a->depth : 0, b ? b->depth : 0);
    if (n->depth > kMaxDepth) too_deep();
    n->kind = k;
    n->a = std::move(a);
    n->b = std::move(b);
    n->text = std::move(text);
    return n;
  }
  NodeP parse_or() {
    auto n = parse_and();
    while (eat("||")) n = make(Filter::Node::Or, std::move(n), parse_and());
    return n;
  }
  NodeP parse_and() {
    auto n = parse_unary();
    while (eat("&&")) n = make(Filter::Node::And, std::move(n), parse_unary());
    return n;
  }
  // Guards the recursion through '!' and '(' before any node exists to measure.
  struct Level {
    Level(Parser& p) : p_(p) {
      if (++p_.level_ > kMaxDepth) p_.too_deep();
    }
    ~Level() { --p_.level_; }
    Parser& p_;
  };
  NodeP parse_unary() {
    const Level level(*this);
    if (eat("!")) {
      if (s_.compare(pos_, 1, "=") == 0) fail("'!' must precede an operand");
      return make(Filter::Node::Not, parse_unary());
    }
    if (eat("(")) {
      auto n = parse_or();
      if (!eat(")")) fail("expected ')'");
      return n;
    }
    auto lhs = parse_operand();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (eat(op)) return make(Filter::Node::Cmp, std::move(lhs), parse_operand(), op);
    if (lhs->kind == Filter::Node::Word) fail(fmt::format("unknown column '{}'", lhs->text));
    return lhs;
  }
  NodeP parse_operand() {
    skip();
    const size_t start = pos_;
    if (pos_ < s_.size() && (std::isdigit((unsigned char)s_[pos_]) || s_[pos_] == '.' || s_[pos_] == '-')) {
      char* end = nullptr;
      const double v = std::strtod(s_.c_str() + pos_, &end);
      if (end == s_.c_str() + pos_) fail("expected a number");
      pos_ = size_t(end - s_.c_str());
      auto n = make(Filter::Node::Num);
      n->num = v;
      return n;
    }
    while (pos_ < s_.size() && (std::isalnum((unsigned char)s_[pos_]) || s_[pos_] == '_' || s_[pos_] == '-')) ++pos_;
    if (start == pos_) fail("expected a column, number or word");
    std::string word = s_.substr(start, pos_ - start);
    return make(is_column(word) ? Filter::Node::Col : Filter::Node::Word, nullptr, nullptr, word);
  }
  const std::string& s_;
  size_t pos_ = 0;
  int level_ = 0;
};

Value eval_value(const Filter::Node& n, const Problem& p);

[[noreturn]] void filter_error(const std::string& msg) { throw InputError(command_line(), "--filter", msg); }

// A word compared with a word: one side must be a column, and a dtype or layout can only equal
// a value it can take. Without this, `dtpye==bf16` or `dtype==fp8` kept zero rows silently.
void check_words(const Filter::Node& a, const Filter::Node& b) {
  using K = Filter::Node::Kind;
  if (a.kind != K::Col && b.kind != K::Col) {
    std::string cols;
    for (const auto& f : problem_field_table()) cols += std::string(cols.empty() ? "" : " ") + f.name;
    filter_error(fmt::format("unknown column '{}' (columns: {})", a.text, cols));
  }
  const Filter::Node& col = a.kind == K::Col ? a : b;
  const Filter::Node& word = a.kind == K::Col ? b : a;
  if (word.kind != K::Word) return;
  if (col.text == "dtype" && !parse_dtype(word.text))
    filter_error(fmt::format("dtype is never '{}' ({})", word.text, kDtypeNames));
  if (col.text == "layout" && !parse_layout(word.text))
    filter_error(fmt::format("layout is never '{}' (bshd, bhsd, thd)", word.text));
}

bool truthy(const Value& v) { return std::holds_alternative<double>(v) ? std::get<double>(v) != 0 : !std::get<std::string>(v).empty(); }

Value eval_value(const Filter::Node& n, const Problem& p) {
  using K = Filter::Node::Kind;
  switch (n.kind) {
    case K::Num: return n.num;
    case K::Col: return column_value(p, n.text);
    case K::Word: return n.text;
    case K::Not: return double(!truthy(eval_value(*n.a, p)));
    case K::And: return double(truthy(eval_value(*n.a, p)) && truthy(eval_value(*n.b, p)));
    case K::Or: return double(truthy(eval_value(*n.a, p)) || truthy(eval_value(*n.b, p)));
    case K::Cmp: {
      const Value a = eval_value(*n.a, p), b = eval_value(*n.b, p);
      if (a.index() != b.index()) {
        const auto& word = std::holds_alternative<std::string>(a) ? *n.a : *n.b;
        throw InputError(command_line(), "--filter",
                         fmt::format("cannot compare '{}' with a number (unknown column?)", word.text));
      }
      const std::string& op = n.text;
      if (std::holds_alternative<std::string>(a)) {
        check_words(*n.a, *n.b);
        if (op == "==") return double(a == b);
        if (op == "!=") return double(a != b);
        throw InputError(command_line(), "--filter", "words compare only with == and !=");
      }
      const double x = std::get<double>(a), y = std::get<double>(b);
      if (op == "==") return double(x == y);
      if (op == "!=") return double(x != y);
      if (op == "<") return double(x < y);
      if (op == "<=") return double(x <= y);
      if (op == ">") return double(x > y);
      return double(x >= y);
    }
  }
  return 0.0;
}

// Every comparison once, on a default problem: type and value errors surface at parse time, not
// mid-sweep, including those behind a `||` or `&&` that evaluation would short-circuit.
void check_tree(const Filter::Node& n) {
  if (n.a) check_tree(*n.a);
  if (n.b) check_tree(*n.b);
  if (n.kind == Filter::Node::Cmp) eval_value(n, Problem{});
}

}  // namespace

Filter::Filter(const std::string& expr) : root_(Parser(expr).parse()) { check_tree(*root_); }
Filter::~Filter() = default;
Filter::Filter(Filter&&) noexcept = default;
bool Filter::operator()(const Problem& p) const { return truthy(eval_value(*root_, p)); }

}  // namespace fa
