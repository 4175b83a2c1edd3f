// Reads a bash launch script as bash would run it: lexer, parser and an executor that runs no program.
#include "framework/shell_script.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "framework/shell_internal.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace shell {
namespace {

constexpr std::size_t kMaxScriptBytes = std::size_t{1} << 20;
// A script that runs more simple commands than this (loops over long lists) is not a launch script.
constexpr int kMaxCommandsRun = 100000;
// What an array element costs beyond its text (a map node, its string and flags), charged to the expansion budget
// as bytes so that ARGS+=("${ARGS[@]}") doubling short words stops as soon as doubling long ones would.
constexpr std::size_t kArrayElementBytes = 96;

// ---- Lexer ----

enum class TokenKind { Word, ArrayAssignment, IoNumber, Operator, Newline, Arithmetic, End };

struct Token {
  TokenKind kind = TokenKind::End;
  // Word and IoNumber: the word as written; ArrayAssignment: its NAME= or NAME+=; Operator: the operator;
  // Arithmetic: the expression between (( and )).
  RawWord word;
  std::vector<RawWord> elements;  // ArrayAssignment: the words between ( and )
  int here_document = -1;         // << and <<-: index of its body
};

struct HereDocument {
  std::string_view body;    // as written, up to the delimiter line
  int line = 0;             // line of the body's first line
  bool expand = true;       // the delimiter was not quoted
  bool strip_tabs = false;  // <<-
};

// Longest first, so that "<<-" is not read as "<<" and "-".
constexpr std::string_view kOperators[] = {";;&", "<<<", "<<-", "&>>", ";;", ";&", "&&", "||", "|&", "&>", "<<", "<&",
                                           "<>",  ">>",  ">&",  ">|",  ";",  "&",  "|",  "<",  ">",  "(",  ")"};
constexpr std::string_view kRedirections[] = {"<<<", "<<-", "&>>", "&>", "<<", "<&", "<>", ">>", ">&", ">|", "<", ">"};
// Words after which a command starts, so that (( there opens an arithmetic command.
constexpr std::string_view kCommandStartWords[] = {"if",    "then", "elif", "else", "do",  "while",
                                                   "until", "!",    "{",    "for",  "time"};
constexpr std::string_view kCommandStartOperators[] = {";", "&", "&&", "||", "|", "|&", "(", ")", ";;", ";&", ";;&"};

bool is_metacharacter(char c) { return std::string_view(" \t\n;&|<>()").find(c) != std::string_view::npos; }

// NAME= or NAME+=, the start of an assignment that a ( turns into an array assignment.
bool is_array_prefix(std::string_view word) {
  if (word.ends_with("+=")) return is_name(word.substr(0, word.size() - 2));
  return word.ends_with('=') && is_name(word.substr(0, word.size() - 1));
}

// A here-document delimiter with its quotes removed; `quoted` tells whether it had any (no expansion then).
std::string delimiter_text(std::string_view raw, bool& quoted) {
  std::string out;
  quoted = false;
  for (std::size_t pos = 0; pos < raw.size(); ++pos) {
    if (raw[pos] == '\'' || raw[pos] == '"') {
      quoted = true;
    } else if (raw[pos] == '\\' && pos + 1 < raw.size()) {
      quoted = true;
      out += raw[++pos];
    } else {
      out += raw[pos];
    }
  }
  return out;
}

// Splits the script into tokens as bash's lexer does, here-document bodies included.
class Lexer {
 public:
  Lexer(const Source& source, Notes& notes) : source_(source), notes_(notes), text_(source.text()) {}

  std::vector<Token> tokenize();
  std::vector<HereDocument> take_here_documents() { return std::move(documents_); }

 private:
  int line_at(std::size_t pos) const { return source_.line_at(std::min(pos, text_.size())); }
  Scanner scanner() const { return Scanner(source_, text_, 0); }
  void push(TokenKind kind, std::size_t start, std::size_t end);
  void skip_blanks();
  bool at_command_start() const;
  bool read_arithmetic_command();
  void read_operator();
  std::size_t word_end(std::size_t start) const;
  void read_word();
  void read_array(Token& token);
  void read_here_document_bodies();
  void check_no_delimiter_expected() const;

  struct PendingDocument {
    std::string delimiter;
    std::size_t index = 0;
  };

  const Source& source_;
  Notes& notes_;
  std::string_view text_;
  std::size_t pos_ = 0;
  std::vector<Token> tokens_;
  std::vector<HereDocument> documents_;
  std::vector<PendingDocument> pending_;
  bool delimiter_expected_ = false;
};

std::vector<Token> Lexer::tokenize() {
  while (true) {
    skip_blanks();
    if (pos_ >= text_.size()) break;
    const char c = text_[pos_];
    const char next = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
    if (c == '#') {
      pos_ = std::min(text_.find('\n', pos_), text_.size());
    } else if (c == '\n') {
      check_no_delimiter_expected();
      push(TokenKind::Newline, pos_, pos_ + 1);
      ++pos_;
      read_here_document_bodies();
    } else if (c == '(' && next == '(' && at_command_start() && read_arithmetic_command()) {
      continue;
    } else if (is_metacharacter(c) && !((c == '<' || c == '>') && next == '(')) {
      read_operator();
    } else {
      read_word();
    }
  }
  check_no_delimiter_expected();
  read_here_document_bodies();
  tokens_.push_back(Token{TokenKind::End, RawWord{{}, line_at(text_.size())}, {}, -1});
  return std::move(tokens_);
}

void Lexer::push(TokenKind kind, std::size_t start, std::size_t end) {
  tokens_.push_back(Token{kind, RawWord{text_.substr(start, end - start), line_at(start)}, {}, -1});
}

void Lexer::skip_blanks() {
  while (pos_ < text_.size()) {
    if (text_[pos_] == ' ' || text_[pos_] == '\t')
      ++pos_;
    else if (text_[pos_] == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n')
      pos_ += 2;
    else
      break;
  }
}

bool Lexer::at_command_start() const {
  if (tokens_.empty()) return true;
  const Token& last = tokens_.back();
  if (last.kind == TokenKind::Newline) return true;
  if (last.kind == TokenKind::Operator) return is_one_of(last.word.text, kCommandStartOperators);
  return last.kind == TokenKind::Word && is_one_of(last.word.text, kCommandStartWords);
}

// (( expression )) at the start of a command. False when the parentheses are two nested subshells instead.
bool Lexer::read_arithmetic_command() {
  const Scanner scan = scanner();
  const std::size_t end = scan.parentheses(pos_, 0);
  if (end < pos_ + 4 || scan.parentheses(pos_ + 1, 0) != end - 1) return false;
  push(TokenKind::Arithmetic, pos_ + 2, end - 2);
  pos_ = end;
  return true;
}

void Lexer::read_operator() {
  check_no_delimiter_expected();
  const std::string_view rest = text_.substr(pos_);
  const auto* op = std::find_if(std::begin(kOperators), std::end(kOperators),
                                [&](std::string_view candidate) { return rest.starts_with(candidate); });
  push(TokenKind::Operator, pos_, pos_ + op->size());
  pos_ += op->size();
  if (*op == "<<" || *op == "<<-") {
    tokens_.back().here_document = static_cast<int>(documents_.size());
    documents_.push_back(HereDocument{{}, 0, true, *op == "<<-"});
    delimiter_expected_ = true;
  }
}

void Lexer::check_no_delimiter_expected() const {
  if (delimiter_expected_)
    source_.fail(line_at(pos_), "<< without a delimiter word", "a word after << naming the line that ends the text");
}

// Where the word starting at `start` ends: at an unquoted metacharacter, or at the ( of NAME=( ... ).
std::size_t Lexer::word_end(std::size_t start) const {
  const Scanner scan = scanner();
  std::size_t pos = start;
  while (pos < text_.size()) {
    const char c = text_[pos];
    if ((c == '<' || c == '>') && pos == start && pos + 1 < text_.size() && text_[pos + 1] == '(') {
      pos = scan.parentheses(pos + 1, 0);  // process substitution <( ... ), kept whole as one word
    } else if (is_metacharacter(c)) {
      break;
    } else if (c == '\\') {
      pos = std::min(pos + 2, text_.size());
    } else if (c == '\'') {
      pos = scan.single_quote(pos);
    } else if (c == '"') {
      pos = scan.double_quote(pos, 0);
    } else if (c == '`') {
      pos = scan.backquote(pos);
    } else if (c == '$') {
      pos = scan.dollar(pos, 0, false);
    } else {
      ++pos;
    }
  }
  return pos;
}

void Lexer::read_word() {
  const std::size_t start = pos_;
  pos_ = word_end(start);
  push(TokenKind::Word, start, pos_);
  Token& token = tokens_.back();
  const std::string_view word = token.word.text;
  if (pos_ < text_.size() && text_[pos_] == '(' && is_array_prefix(word)) {
    read_array(token);
  } else if (pos_ < text_.size() && (text_[pos_] == '<' || text_[pos_] == '>') && all_digits(word)) {
    token.kind = TokenKind::IoNumber;  // the 2 of 2>&1
  } else if (delimiter_expected_) {
    bool quoted = false;
    const std::size_t index = documents_.size() - 1;
    pending_.push_back(PendingDocument{delimiter_text(word, quoted), index});
    documents_[index].expand = !quoted;
    delimiter_expected_ = false;
  }
}

// NAME=( ... ): the elements are words; newlines, comments and line continuations between them are blanks.
void Lexer::read_array(Token& token) {
  const std::size_t open = pos_++;
  token.kind = TokenKind::ArrayAssignment;
  while (true) {
    skip_blanks();
    if (pos_ >= text_.size()) source_.fail(line_at(open), "unterminated ( array", "a closing ) for the array");
    const char c = text_[pos_];
    if (c == ')') {
      ++pos_;
      return;
    }
    if (c == '\n') {
      ++pos_;
    } else if (c == '#') {
      pos_ = std::min(text_.find('\n', pos_), text_.size());
    } else if (is_metacharacter(c)) {
      source_.fail(line_at(pos_), fmt::format("unexpected {} inside ( array", c),
                   "words, one per element, and a closing )");
    } else {
      const std::size_t end = word_end(pos_);
      token.elements.push_back(RawWord{text_.substr(pos_, end - pos_), line_at(pos_)});
      pos_ = end;
    }
  }
}

// After a newline: the bodies of the here-documents opened on the line just ended, in order.
void Lexer::read_here_document_bodies() {
  for (const PendingDocument& pending : pending_) {
    HereDocument& document = documents_[pending.index];
    const std::size_t body_start = pos_;
    document.line = line_at(body_start);
    while (true) {
      if (pos_ >= text_.size()) {
        notes_.add(document.line,
                   fmt::format("here-document ended by the end of the script, not by {}", pending.delimiter));
        document.body = text_.substr(body_start);
        break;
      }
      const std::size_t line_end = std::min(text_.find('\n', pos_), text_.size());
      std::string_view line = text_.substr(pos_, line_end - pos_);
      if (document.strip_tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
      if (line == pending.delimiter) {
        document.body = text_.substr(body_start, pos_ - body_start);
        pos_ = std::min(line_end + 1, text_.size());
        break;
      }
      pos_ = std::min(line_end + 1, text_.size());
    }
  }
  pending_.clear();
}

// ---- Parser ----

enum class NodeKind {
  Simple,
  Pipeline,
  AndOr,
  List,
  If,
  For,
  ArithmeticFor,
  Loop,
  Case,
  Group,
  Subshell,
  Function,
  Conditional,
  Arithmetic
};

// A word of a simple command; an array assignment NAME=( ... ) carries its elements.
struct Word {
  RawWord raw;
  std::vector<RawWord> elements;
  bool is_array = false;
};

struct Redirect {
  std::string_view op;
  RawWord target;
  int here_document = -1;
};

struct Node;

struct CaseItem {
  std::vector<RawWord> patterns;
  std::vector<Node> body;
  std::string_view terminator;  // ;; ;& ;;& or empty before esac
};

// One command of the parsed script. Which members are used depends on the kind:
//   Simple: words, redirects. Pipeline: children, negated. AndOr: children and the connectors between them.
//   List, Group, Subshell: children (a Group or Subshell has one List). If: children alternate condition and
//   branch, and the last is the else branch when has_else. For: name, words (unless loops_over_arguments),
//   children[0] the body. ArithmeticFor: expression, children[0]. Loop: name ("while"/"until"), children
//   condition and body. Case: words[0] the subject, items. Function: name. Conditional: condition.
//   Arithmetic: expression.
struct Node {
  NodeKind kind = NodeKind::Simple;
  int line = 0;
  std::vector<Word> words;
  std::vector<Redirect> redirects;
  std::vector<Node> children;
  std::vector<std::string_view> connectors;
  std::vector<CaseItem> items;
  std::vector<CondToken> condition;
  std::string_view name;
  RawWord expression;
  bool negated = false;
  bool has_else = false;
  bool loops_over_arguments = false;
  bool background = false;
};

Node make_node(NodeKind kind, int line) {
  Node node;
  node.kind = kind;
  node.line = line;
  return node;
}

// Reserved words and operators that end a list of commands, where a command could start.
constexpr std::string_view kListEndWords[] = {"then", "elif", "else", "fi", "do", "done", "esac", "}"};
constexpr std::string_view kListEndOperators[] = {")", ";;", ";&", ";;&"};

class Parser {
 public:
  Parser(const Source& source, const std::vector<Token>& tokens) : source_(source), tokens_(tokens) {}

  Node parse_script() {
    Node script = parse_list();
    if (peek().kind != TokenKind::End) unexpected("a command");
    return script;
  }

 private:
  const Token& peek(std::size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& advance() { return tokens_[pos_ + 1 < tokens_.size() ? pos_++ : pos_]; }
  bool at_word(std::string_view text, std::size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Word && peek(ahead).word.text == text;
  }
  bool at_operator(std::string_view text, std::size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Operator && peek(ahead).word.text == text;
  }
  bool at_list_end() const {
    const Token& token = peek();
    if (token.kind == TokenKind::End) return true;
    if (token.kind == TokenKind::Word) return is_one_of(token.word.text, kListEndWords);
    return token.kind == TokenKind::Operator && is_one_of(token.word.text, kListEndOperators);
  }
  void skip_newlines() {
    while (peek().kind == TokenKind::Newline) advance();
  }
  [[noreturn]] void unexpected(std::string_view expected) const {
    const Token& token = peek();
    const std::string found = token.kind == TokenKind::End       ? "end of script"
                              : token.kind == TokenKind::Newline ? "newline"
                                                                 : fmt::format("'{}'", token.word.text.substr(0, 40));
    source_.fail(token.word.line, "unexpected " + found, std::string(expected));
  }
  // The word closing a compound command; missing, it is an error on the line where the command starts.
  void expect_closing(std::string_view word, std::string_view opener, int line) {
    if (!at_word(word))
      source_.fail(line, fmt::format("{} without {}", opener, word),
                   fmt::format("a {} closing the {} of line {}", word, opener, line));
    advance();
  }

  Node parse_list();
  Node parse_and_or();
  Node parse_pipeline();
  Node parse_command();
  Node parse_compound(const Token& token);
  Node parse_simple();
  void parse_redirect(Node& node);
  void parse_trailing_redirects(Node& node);
  Node parse_if();
  Node parse_for();
  Node parse_loop();
  Node parse_case();
  CaseItem parse_case_item();
  Node parse_block(NodeKind kind, std::string_view opener, std::string_view closer);
  Node parse_function();
  Node parse_conditional();

  const Source& source_;
  const std::vector<Token>& tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

Node Parser::parse_list() {
  Node list = make_node(NodeKind::List, peek().word.line);
  skip_newlines();
  while (!at_list_end()) {
    list.children.push_back(parse_and_or());
    if (at_operator("&")) list.children.back().background = true;
    if (!at_operator(";") && !at_operator("&") && peek().kind != TokenKind::Newline) break;
    advance();
    skip_newlines();
  }
  return list;
}

Node Parser::parse_and_or() {
  Node first = parse_pipeline();
  if (!at_operator("&&") && !at_operator("||")) return first;
  Node node = make_node(NodeKind::AndOr, first.line);
  node.children.push_back(std::move(first));
  while (at_operator("&&") || at_operator("||")) {
    node.connectors.push_back(advance().word.text);
    skip_newlines();
    node.children.push_back(parse_pipeline());
  }
  return node;
}

Node Parser::parse_pipeline() {
  const int line = peek().word.line;
  bool negated = false;
  while (at_word("!")) {
    negated = !negated;
    advance();
  }
  Node first = parse_command();
  if (!negated && !at_operator("|") && !at_operator("|&")) return first;
  Node node = make_node(NodeKind::Pipeline, line);
  node.negated = negated;
  node.children.push_back(std::move(first));
  while (at_operator("|") || at_operator("|&")) {
    advance();
    skip_newlines();
    node.children.push_back(parse_command());
  }
  return node;
}

Node Parser::parse_command() {
  const Token& token = peek();
  if (++depth_ > kMaxNesting)
    source_.fail(token.word.line, "nesting deeper than 64", "compound commands nested at most 64 deep");
  Node node = parse_compound(token);
  if (node.kind != NodeKind::Simple) parse_trailing_redirects(node);
  --depth_;
  return node;
}

// A compound command, a function definition, [[ ]] or (( )); otherwise a simple command.
Node Parser::parse_compound(const Token& token) {
  if (token.kind == TokenKind::Operator && token.word.text == "(") return parse_block(NodeKind::Subshell, "(", ")");
  if (token.kind == TokenKind::Arithmetic) {
    advance();
    Node node = make_node(NodeKind::Arithmetic, token.word.line);
    node.expression = token.word;
    return node;
  }
  if (token.kind != TokenKind::Word) return parse_simple();
  const std::string_view word = token.word.text;
  if (word == "if") return parse_if();
  if (word == "for" || word == "select") return parse_for();
  if (word == "while" || word == "until") return parse_loop();
  if (word == "case") return parse_case();
  if (word == "{") return parse_block(NodeKind::Group, "{", "}");
  if (word == "[[") return parse_conditional();
  if (word == "function" || (at_operator("(", 1) && at_operator(")", 2))) return parse_function();
  return parse_simple();
}

Node Parser::parse_simple() {
  Node node = make_node(NodeKind::Simple, peek().word.line);
  while (true) {
    const Token& token = peek();
    if (token.kind == TokenKind::IoNumber) {
      advance();
    } else if (token.kind == TokenKind::Operator && is_one_of(token.word.text, kRedirections)) {
      parse_redirect(node);
    } else if (token.kind == TokenKind::Word || token.kind == TokenKind::ArrayAssignment) {
      advance();
      node.words.push_back(Word{token.word, token.elements, token.kind == TokenKind::ArrayAssignment});
    } else {
      break;
    }
  }
  if (node.words.empty() && node.redirects.empty()) unexpected("a command");
  return node;
}

void Parser::parse_redirect(Node& node) {
  const Token& op = advance();
  if (peek().kind != TokenKind::Word) unexpected(fmt::format("a word after {}", op.word.text));
  node.redirects.push_back(Redirect{op.word.text, advance().word, op.here_document});
}

// Redirections after a compound command (done < file, } > log) are read and left out.
void Parser::parse_trailing_redirects(Node& node) {
  while (peek().kind == TokenKind::IoNumber ||
         (peek().kind == TokenKind::Operator && is_one_of(peek().word.text, kRedirections))) {
    if (peek().kind == TokenKind::IoNumber)
      advance();
    else
      parse_redirect(node);
  }
}

Node Parser::parse_if() {
  const int line = advance().word.line;
  Node node = make_node(NodeKind::If, line);
  while (true) {
    node.children.push_back(parse_list());
    expect_closing("then", "if", line);
    node.children.push_back(parse_list());
    if (!at_word("elif")) break;
    advance();
  }
  if (at_word("else")) {
    advance();
    node.children.push_back(parse_list());
    node.has_else = true;
  }
  expect_closing("fi", "if", line);
  return node;
}

Node Parser::parse_for() {
  const int line = advance().word.line;
  Node node = make_node(NodeKind::For, line);
  if (peek().kind == TokenKind::Arithmetic) {
    node.kind = NodeKind::ArithmeticFor;
    node.expression = advance().word;
  } else {
    if (peek().kind != TokenKind::Word || !is_name(peek().word.text)) unexpected("a variable name after for");
    node.name = advance().word.text;
    skip_newlines();
    node.loops_over_arguments = !at_word("in");
    if (at_word("in")) {
      advance();
      while (peek().kind == TokenKind::Word) node.words.push_back(Word{advance().word, {}, false});
    }
  }
  if (at_operator(";")) advance();
  skip_newlines();
  expect_closing("do", "for", line);
  node.children.push_back(parse_list());
  expect_closing("done", "for", line);
  return node;
}

Node Parser::parse_loop() {
  const Token& keyword = advance();
  Node node = make_node(NodeKind::Loop, keyword.word.line);
  node.name = keyword.word.text;
  node.children.push_back(parse_list());
  expect_closing("do", node.name, node.line);
  node.children.push_back(parse_list());
  expect_closing("done", node.name, node.line);
  return node;
}

Node Parser::parse_case() {
  const int line = advance().word.line;
  Node node = make_node(NodeKind::Case, line);
  if (peek().kind != TokenKind::Word) unexpected("a word after case");
  node.words.push_back(Word{advance().word, {}, false});
  skip_newlines();
  expect_closing("in", "case", line);
  skip_newlines();
  while (!at_word("esac")) {
    if (peek().kind == TokenKind::End) expect_closing("esac", "case", line);
    node.items.push_back(parse_case_item());
    skip_newlines();
  }
  advance();
  return node;
}

CaseItem Parser::parse_case_item() {
  CaseItem item;
  if (at_operator("(")) advance();
  while (true) {
    if (peek().kind != TokenKind::Word) unexpected("a pattern in case");
    item.patterns.push_back(advance().word);
    if (!at_operator("|")) break;
    advance();
  }
  if (!at_operator(")")) unexpected(") after a case pattern");
  advance();
  item.body = parse_list().children;
  if (at_operator(";;") || at_operator(";&") || at_operator(";;&"))
    item.terminator = advance().word.text;
  else if (!at_word("esac"))
    unexpected(";; or esac");
  return item;
}

// { list } or ( list ).
Node Parser::parse_block(NodeKind kind, std::string_view opener, std::string_view closer) {
  const int line = advance().word.line;
  Node node = make_node(kind, line);
  node.children.push_back(parse_list());
  const bool closed = kind == NodeKind::Group ? at_word(closer) : at_operator(closer);
  if (!closed)
    source_.fail(line, fmt::format("{} without {}", opener, closer),
                 fmt::format("a {} closing the {} of line {}", closer, opener, line));
  advance();
  return node;
}

// NAME () body, function NAME [()] body. The body is parsed, not kept: functions are not run.
Node Parser::parse_function() {
  const int line = peek().word.line;
  if (at_word("function")) advance();
  if (peek().kind != TokenKind::Word) unexpected("a function name");
  Node node = make_node(NodeKind::Function, line);
  node.name = advance().word.text;
  if (at_operator("(")) {
    advance();
    if (!at_operator(")")) unexpected(") after (");
    advance();
  }
  skip_newlines();
  (void)parse_command();
  return node;
}

// [[ ... ]]: the tokens up to ]], newlines skipped.
Node Parser::parse_conditional() {
  const int line = advance().word.line;
  Node node = make_node(NodeKind::Conditional, line);
  while (!at_word("]]")) {
    const Token& token = advance();
    if (token.kind == TokenKind::End)
      source_.fail(line, "[[ without ]]", fmt::format("a ]] closing the [[ of line {}", line));
    if (token.kind != TokenKind::Newline)
      node.condition.push_back(CondToken{token.word, token.kind == TokenKind::Operator});
  }
  advance();
  return node;
}

// ---- #SBATCH directives ----

// sbatch's short options with the long names they stand for; `takes_value` false for flags.
struct SbatchOption {
  char letter;
  std::string_view name;
  bool takes_value;
};

constexpr SbatchOption kSbatchShortOptions[] = {
    {'A', "account", true},    {'a', "array", true},         {'B', "extra-node-info", true},
    {'C', "constraint", true}, {'c', "cpus-per-task", true}, {'D', "chdir", true},
    {'d', "dependency", true}, {'e', "error", true},         {'F', "nodefile", true},
    {'G', "gpus", true},       {'H', "hold", false},         {'I', "immediate", false},
    {'i', "input", true},      {'J', "job-name", true},      {'k', "no-kill", false},
    {'L', "licenses", true},   {'M', "clusters", true},      {'m', "distribution", true},
    {'N', "nodes", true},      {'n', "ntasks", true},        {'O', "overcommit", false},
    {'o', "output", true},     {'p', "partition", true},     {'Q', "quiet", false},
    {'q', "qos", true},        {'S', "core-spec", true},     {'s', "oversubscribe", false},
    {'t', "time", true},       {'v', "verbose", false},      {'W', "wait", false},
    {'w', "nodelist", true},   {'x', "exclude", true}};

std::string unquoted(std::string_view value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  return std::string(value);
}

// The options of one "#SBATCH ..." line (what follows #SBATCH), up to a comment.
void read_sbatch_options(std::string_view text, std::map<std::string, std::string>& out) {
  std::vector<std::string_view> words;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t start = text.find_first_not_of(" \t\r", pos);
    if (start == std::string_view::npos || text[start] == '#') break;
    const std::size_t end = std::min(text.find_first_of(" \t\r", start), text.size());
    words.push_back(text.substr(start, end - start));
    pos = end;
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    const bool value_follows = i + 1 < words.size() && !words[i + 1].starts_with('-');
    if (word.starts_with("--") && word.size() > 2) {
      const std::size_t equals = word.find('=');
      if (equals != std::string_view::npos)
        out[std::string(word.substr(2, equals - 2))] = unquoted(word.substr(equals + 1));
      else
        out[std::string(word.substr(2))] = value_follows ? unquoted(words[++i]) : "";
    } else if (word.starts_with('-') && word.size() >= 2) {
      const auto* option = std::find_if(std::begin(kSbatchShortOptions), std::end(kSbatchShortOptions),
                                        [&](const SbatchOption& candidate) { return candidate.letter == word[1]; });
      const bool known = option != std::end(kSbatchShortOptions);
      const std::string name = known ? std::string(option->name) : std::string(word.substr(1, 1));
      std::string_view attached = word.substr(2);
      if (attached.starts_with('=')) attached.remove_prefix(1);
      if (!attached.empty())
        out[name] = unquoted(attached);
      else
        out[name] = value_follows && (!known || option->takes_value) ? unquoted(words[++i]) : "";
    }
  }
}

}  // namespace

// As sbatch does: the #SBATCH lines before the first line that is neither blank nor a comment.
void read_sbatch_directives(std::string_view script, std::map<std::string, std::string>& out) {
  std::size_t pos = 0;
  while (pos < script.size()) {
    const std::size_t end = std::min(script.find('\n', pos), script.size());
    const std::string_view line = script.substr(pos, end - pos);
    pos = end + 1;
    if (line.starts_with("#SBATCH") && (line.size() == 7 || line[7] == ' ' || line[7] == '\t')) {
      read_sbatch_options(line.substr(7), out);
      continue;
    }
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line[first] != '#') break;
  }
}

namespace {

std::string without_leading_tabs(std::string_view body) {
  std::string out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t start = std::min(body.find_first_not_of('\t', pos), body.size());
    const std::size_t end = std::min(body.find('\n', start), body.size());
    out += body.substr(start, std::min(end + 1, body.size()) - start);
    pos = end + 1;
  }
  return out;
}

// ---- Executor ----

// How a command ends: normally, or by break, continue or exit reaching the enclosing loop or the script.
enum class Flow { Next, Break, Continue, Exit };

// An assignment word NAME=value, NAME+=value, NAME[subscript]=value.
struct Assignment {
  std::string_view name;
  std::optional<std::string_view> subscript;
  bool append = false;
  std::string_view value;
};

std::optional<Assignment> parse_assignment(std::string_view raw) {
  if (raw.empty() || !(std::isalpha(static_cast<unsigned char>(raw[0])) || raw[0] == '_')) return std::nullopt;
  std::size_t pos = 1;
  while (pos < raw.size() && (std::isalnum(static_cast<unsigned char>(raw[pos])) || raw[pos] == '_')) ++pos;
  Assignment assignment;
  assignment.name = raw.substr(0, pos);
  if (pos < raw.size() && raw[pos] == '[') {
    const std::size_t close = raw.find(']', pos);
    if (close == std::string_view::npos) return std::nullopt;
    assignment.subscript = raw.substr(pos + 1, close - pos - 1);
    pos = close + 1;
  }
  if (raw.substr(pos).starts_with("+=")) {
    assignment.append = true;
    pos += 2;
  } else if (raw.substr(pos).starts_with("=")) {
    pos += 1;
  } else {
    return std::nullopt;
  }
  assignment.value = raw.substr(pos);
  return assignment;
}

bool is_assignment(const Word& word) { return word.is_array || parse_assignment(word.raw.text).has_value(); }

constexpr std::string_view kDeclarations[] = {"export", "declare", "typeset", "local", "readonly"};

// Runs the parsed script: variables change, conditions are decided, and every simple command is recorded
// instead of being run. Commands are taken to succeed.
class Executor {
 public:
  Executor(const Source& source, Notes& notes, std::vector<HereDocument> documents, ShellScript& out)
      : state_(source, notes), expander_(state_), documents_(std::move(documents)), out_(out) {}

  void set_environment(const std::map<std::string, std::string>& environment) {
    for (const auto& [name, value] : environment)
      if (is_name(name)) state_.assign(name, Value{value, 0, false});
  }
  void run_script(const Node& script) { (void)run_list(script); }
  const std::map<std::string, Variable, std::less<>>& variables() const { return state_.variables; }

 private:
  void note(int line, std::string_view text) { state_.notes.add(line, text); }
  void set_status(int status, bool assumed) {
    state_.last_status = status;
    status_assumed_ = assumed;
  }
  void set_status(Truth truth, int line, std::string_view what);
  void count_command(int line);

  Flow run(const Node& node);
  Flow run_list(const Node& list);
  Flow run_commands(const std::vector<Node>& commands);
  Flow run_and_or(const Node& node);
  Flow run_pipeline(const Node& node);
  Flow run_isolated(const Node& node);
  Flow run_if(const Node& node);
  Flow run_for(const Node& node);
  Flow run_arithmetic_for(const Node& node);
  Flow run_loop(const Node& node);
  Flow run_case(const Node& node);
  bool case_pattern_matches(const RawWord& pattern, const Field& subject, int line);
  Flow run_simple(const Node& node);
  Flow run_command(const Node& node, std::vector<Field> words, std::map<std::string, std::string> assignments);
  Flow run_builtin(const std::vector<Field>& words, int line);
  void run_declaration(const Node& node, std::size_t first);
  void run_test(const std::vector<Field>& words, int line);
  void run_unset(const std::vector<Field>& words, int line);
  void assign(const Word& word);
  void assign_array(const Assignment& assignment, const std::vector<RawWord>& elements, int line);
  std::string standard_input(const Node& node);
  std::string here_document_text(const HereDocument& document);

  ShellState state_;
  Expander expander_;
  std::vector<HereDocument> documents_;
  ShellScript& out_;
  std::set<std::string, std::less<>> functions_;
  int commands_run_ = 0;
  bool status_assumed_ = false;  // the last status comes from a command taken to succeed, not a test
};

void Executor::count_command(int line) {
  if (++commands_run_ > kMaxCommandsRun)
    state_.source.fail(line, "more than 100000 commands run", "a launch script that runs fewer commands");
}

void Executor::set_status(Truth truth, int line, std::string_view what) {
  if (truth == Truth::Unknown) note(line, fmt::format("condition not evaluated, taken as true: {}", what));
  set_status(truth == Truth::False ? 1 : 0, false);
}

Flow Executor::run(const Node& node) {
  if (node.background) note(node.line, "a command run in the background (&) is recorded like any other");
  switch (node.kind) {
    case NodeKind::Simple:
      return run_simple(node);
    case NodeKind::Pipeline:
      return run_pipeline(node);
    case NodeKind::AndOr:
      return run_and_or(node);
    case NodeKind::List:
      return run_list(node);
    case NodeKind::If:
      return run_if(node);
    case NodeKind::For:
      return run_for(node);
    case NodeKind::ArithmeticFor:
      return run_arithmetic_for(node);
    case NodeKind::Loop:
      return run_loop(node);
    case NodeKind::Case:
      return run_case(node);
    case NodeKind::Group:
      return run_list(node.children.front());
    case NodeKind::Subshell:
      return run_isolated(node.children.front());
    case NodeKind::Function:
      functions_.insert(std::string(node.name));
      note(node.line, fmt::format("function {} defined; its body is not run", node.name));
      set_status(0, false);
      return Flow::Next;
    case NodeKind::Conditional:
      set_status(evaluate_conditional(state_, node.condition, node.line), node.line, "[[ ... ]]");
      return Flow::Next;
    case NodeKind::Arithmetic: {
      const std::optional<std::int64_t> value = expander_.arithmetic(node.expression.text, node.line);
      if (!value) note(node.line, "(( ... )) not evaluated: it uses text kept as written");
      set_status(value && *value == 0 ? 1 : 0, false);
      return Flow::Next;
    }
  }
  return Flow::Next;
}

Flow Executor::run_list(const Node& list) { return run_commands(list.children); }

Flow Executor::run_commands(const std::vector<Node>& commands) {
  for (const Node& command : commands) {
    const Flow flow = run(command);
    if (flow != Flow::Next) return flow;
  }
  return Flow::Next;
}

Flow Executor::run_and_or(const Node& node) {
  Flow flow = run(node.children.front());
  for (std::size_t i = 1; i < node.children.size() && flow == Flow::Next; ++i) {
    const bool wanted = node.connectors[i - 1] == "&&" ? state_.last_status == 0 : state_.last_status != 0;
    if (wanted) {
      flow = run(node.children[i]);
    } else if (node.connectors[i - 1] == "||" && status_assumed_) {
      note(node.children[i].line, "commands after || not run: the command before is taken to succeed");
    }
  }
  return flow;
}

Flow Executor::run_pipeline(const Node& node) {
  Flow flow = Flow::Next;
  if (node.children.size() == 1) {
    flow = run(node.children.front());
  } else {
    note(node.line, "pipeline: each command in it is recorded on its own");
    for (const Node& part : node.children) (void)run_isolated(part);  // each part runs in a subshell
  }
  if (node.negated) set_status(state_.last_status == 0 ? 1 : 0, false);
  return flow;
}

// A subshell: variables it changes are restored afterwards, and exit ends only the subshell.
Flow Executor::run_isolated(const Node& node) {
  std::size_t copied = 0;
  for (const auto& [name, variable] : state_.variables)
    for (const auto& element : variable.elements) copied += name.size() + element.second.text.size() + 1;
  state_.charge(copied, node.line);
  const auto saved_variables = state_.variables;
  const auto saved_positional = state_.positional;
  (void)run(node);
  state_.variables = saved_variables;
  state_.positional = saved_positional;
  return Flow::Next;
}

Flow Executor::run_if(const Node& node) {
  const std::size_t branches = (node.children.size() - (node.has_else ? 1 : 0)) / 2;
  for (std::size_t i = 0; i < branches; ++i) {
    const Flow flow = run_list(node.children[2 * i]);
    if (flow != Flow::Next) return flow;
    if (state_.last_status == 0) return run_list(node.children[2 * i + 1]);
  }
  if (node.has_else) return run_list(node.children.back());
  set_status(0, false);
  return Flow::Next;
}

// ---- Simple commands ----

Flow Executor::run_simple(const Node& node) {
  count_command(node.line);
  std::size_t first = 0;
  while (first < node.words.size() && is_assignment(node.words[first])) ++first;
  if (first == node.words.size()) {  // only assignments: they change the shell's variables
    for (const Word& word : node.words) assign(word);
    set_status(0, false);
    return Flow::Next;
  }
  // Declarations are recognised by the word as written, since their arguments are assignments.
  if (is_one_of(node.words[first].raw.text, kDeclarations)) {
    for (std::size_t i = 0; i < first; ++i) assign(node.words[i]);
    run_declaration(node, first);
    return Flow::Next;
  }
  std::vector<Field> words;
  for (std::size_t i = first; i < node.words.size(); ++i) {
    if (node.words[i].is_array)
      state_.source.fail(node.words[i].raw.line,
                         fmt::format("array assignment {}( ... ) as an argument", node.words[i].raw.text),
                         "NAME=( ... ) before the command, or after declare, local or export");
    std::vector<Field> expanded = expander_.fields(node.words[i].raw);
    words.insert(words.end(), std::make_move_iterator(expanded.begin()), std::make_move_iterator(expanded.end()));
  }
  if (words.empty()) {  // the command word expanded to nothing: the assignments stay, as in bash
    for (std::size_t i = 0; i < first; ++i) assign(node.words[i]);
    set_status(0, false);
    return Flow::Next;
  }
  std::map<std::string, std::string> assignments;
  for (std::size_t i = 0; i < first; ++i) {
    const Assignment assignment = *parse_assignment(node.words[i].raw.text);
    assignments[std::string(assignment.name)] = expander_.text(RawWord{assignment.value, node.words[i].raw.line}).text;
  }
  return run_command(node, std::move(words), std::move(assignments));
}

Flow Executor::run_command(const Node& node, std::vector<Field> words, std::map<std::string, std::string> assignments) {
  const std::string& name = words.front().text;
  if (name == "[" || name == "test") {
    run_test(words, node.line);
    return Flow::Next;
  }
  if (name == "unset") {
    run_unset(words, node.line);
    return Flow::Next;
  }
  ShellCommand command;
  command.line = node.line;
  command.assignments = std::move(assignments);
  command.input = standard_input(node);
  for (Field& word : words) command.words.push_back(ShellWord{word.text, word.line});
  out_.commands.push_back(std::move(command));
  set_status(name == "false" ? 1 : 0, true);
  return run_builtin(words, node.line);
}

// What the builtins that change the script's course or its arguments do; everything else only gets recorded.
Flow Executor::run_builtin(const std::vector<Field>& words, int line) {
  const std::string& name = words.front().text;
  if (name == "exit" || name == "return") {
    note(line, fmt::format("{}: the script ends here", name));
    return Flow::Exit;
  }
  if (name == "break") return Flow::Break;
  if (name == "continue") return Flow::Continue;
  if (name == "set" && words.size() > 1 && words[1].text == "--") {
    state_.positional.clear();
    for (std::size_t i = 2; i < words.size(); ++i)
      state_.positional.push_back(Value{words[i].text, words[i].line, words[i].uncertain});
  } else if (name == "shift") {
    const bool counted = words.size() > 1 && words[1].text.size() < 6 && all_digits(words[1].text);
    const std::size_t count = counted ? std::stoul(words[1].text) : 1;
    const auto removed = static_cast<std::ptrdiff_t>(std::min(count, state_.positional.size()));
    state_.positional.erase(state_.positional.begin(), state_.positional.begin() + removed);
  } else if (name == "let") {
    for (std::size_t i = 1; i < words.size(); ++i)
      if (!expander_.arithmetic(words[i].text, line)) note(line, "let " + words[i].text + " not evaluated");
  } else if (name == "source" || name == "." || name == "eval") {
    note(line, fmt::format("{} not followed: the commands it would run are not read", name));
  } else if (functions_.contains(name)) {
    note(line, fmt::format("calls function {}, whose body is not run", name));
  }
  return Flow::Next;
}

void Executor::run_test(const std::vector<Field>& words, int line) {
  std::vector<Field> arguments(words.begin() + 1, words.end());
  std::string described = words.front().text;
  for (const Field& argument : arguments) described += " " + argument.text;
  if (words.front().text == "[") {
    if (arguments.empty() || arguments.back().text != "]") {
      set_status(Truth::Unknown, line, described + " (no closing ])");
      return;
    }
    arguments.pop_back();
  }
  set_status(evaluate_test(state_, arguments, line), line, described.substr(0, 80));
}

void Executor::run_unset(const std::vector<Field>& words, int line) {
  bool functions = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i].text;
    if (word == "-f" || word == "-v" || word == "-n") {
      functions = word == "-f";
      continue;
    }
    const std::size_t bracket = word.find('[');
    if (functions) {
      functions_.erase(word);
    } else if (bracket == std::string::npos || !word.ends_with(']')) {
      state_.variables.erase(word);
    } else if (auto it = state_.variables.find(std::string_view(word).substr(0, bracket));
               it != state_.variables.end()) {
      const std::optional<std::int64_t> index =
          expander_.arithmetic(std::string_view(word).substr(bracket + 1, word.size() - bracket - 2), line);
      if (index) it->second.elements.erase(*index);
    }
  }
  set_status(0, false);
}

// export, declare, local, readonly, typeset: their assignments are made; options and bare names change nothing
// the reader keeps.
void Executor::run_declaration(const Node& node, std::size_t first) {
  if (node.words[first].raw.text == "local")
    note(node.line, "local outside a function: read as declare (functions are not run)");
  for (std::size_t i = first + 1; i < node.words.size(); ++i) {
    const Word& word = node.words[i];
    if (is_assignment(word)) {
      assign(word);
      continue;
    }
    for (const Field& field : expander_.fields(word.raw)) {
      if (field.text == "-A" || field.text == "-n" || field.text == "-i")
        note(word.raw.line, fmt::format("{} {}: the attribute is not applied", node.words[first].raw.text, field.text));
      const std::size_t equals = field.text.find('=');
      if (field.text.starts_with('-') || field.text.starts_with('+') || equals == std::string::npos) continue;
      // export "NAME=value": an assignment that was quoted or came out of an expansion
      if (is_name(std::string_view(field.text).substr(0, equals)))
        state_.assign(std::string_view(field.text).substr(0, equals),
                      Value{field.text.substr(equals + 1), field.line, field.uncertain});
    }
  }
  set_status(0, false);
}

// ---- Assignments and standard input ----

void Executor::assign(const Word& word) {
  const Assignment assignment = *parse_assignment(word.raw.text);
  const int line = word.raw.line;
  if (word.is_array) {
    assign_array(assignment, word.elements, line);
    return;
  }
  if (assignment.name == "IFS") note(line, "IFS is set, but words are still split on spaces, tabs and newlines");
  const Field value = expander_.text(RawWord{assignment.value, line});
  std::int64_t index = 0;
  if (assignment.subscript) {
    const std::optional<std::int64_t> subscript = expander_.arithmetic(*assignment.subscript, line);
    if (!subscript) {
      note(line,
           fmt::format("{}[{}] not assigned: the subscript is not evaluated", assignment.name, *assignment.subscript));
      return;
    }
    index = *subscript;
  }
  Variable& variable = state_.variables[std::string(assignment.name)];
  if (assignment.subscript) variable.is_array = true;
  const auto existing = variable.elements.find(index);
  if (assignment.append && existing != variable.elements.end()) {
    existing->second.text += value.text;
    existing->second.uncertain = existing->second.uncertain || value.uncertain;
    return;
  }
  variable.elements[index] = Value{value.text, value.line, value.uncertain};
}

// NAME=( ... ) and NAME+=( ... ): every element is expanded (and split) before the variable changes, so that
// ARGS=("${ARGS[@]}" --more) sees the old elements.
void Executor::assign_array(const Assignment& assignment, const std::vector<RawWord>& elements, int line) {
  std::map<std::int64_t, Value> result;
  if (assignment.append) {
    if (const Variable* old = state_.find(assignment.name)) {
      state_.charge(old->elements.size() * kArrayElementBytes, line);
      result = old->elements;
    }
  }
  std::int64_t next = result.empty() ? 0 : result.rbegin()->first;
  if (!result.empty() && __builtin_add_overflow(next, 1, &next))
    state_.source.fail(line, "array subscript overflow", "subscripts below 9223372036854775807");
  for (const RawWord& element : elements) {
    const std::size_t close = element.text.starts_with('[') ? element.text.find("]=") : std::string_view::npos;
    if (close != std::string_view::npos) {  // [3]=value
      const std::optional<std::int64_t> index = expander_.arithmetic(element.text.substr(1, close - 1), element.line);
      const Field value = expander_.text(RawWord{element.text.substr(close + 2), element.line});
      if (!index || *index == std::numeric_limits<std::int64_t>::max()) {
        note(element.line, fmt::format("array element {} not assigned", element.text.substr(0, 40)));
        continue;
      }
      result[*index] = Value{value.text, value.line, value.uncertain};
      next = *index + 1;
      continue;
    }
    const std::vector<Field> fields = expander_.fields(element);
    state_.charge(fields.size() * kArrayElementBytes, element.line);
    for (const Field& field : fields) result[next++] = Value{field.text, field.line, field.uncertain};
  }
  Variable& variable = state_.variables[std::string(assignment.name)];
  variable.elements = std::move(result);
  variable.is_array = true;
}

std::string Executor::here_document_text(const HereDocument& document) {
  // An unchanged body is expanded where it lies in the script, so that errors in it name their own line.
  if (!document.strip_tabs)
    return document.expand ? expander_.here_document(document.body, document.line).text : std::string(document.body);
  const std::string stripped = without_leading_tabs(document.body);
  return document.expand ? expander_.here_document(stripped, document.line).text : stripped;
}

// The here-documents and here-strings given to a command; the #SBATCH lines at the top of a here-document are
// read as sbatch reads the job script it is given.
std::string Executor::standard_input(const Node& node) {
  std::string input;
  for (const Redirect& redirect : node.redirects) {
    if (redirect.here_document >= 0) {
      const std::string body = here_document_text(documents_[static_cast<std::size_t>(redirect.here_document)]);
      read_sbatch_directives(body, out_.sbatch);
      input += body;
    } else if (redirect.op == "<<<") {
      input += expander_.text(redirect.target).text + "\n";
    } else {
      note(node.line,
           fmt::format("redirection {} {} left out of the command", redirect.op, redirect.target.text.substr(0, 40)));
    }
  }
  return input;
}

// ---- Loops and case ----

Flow Executor::run_for(const Node& node) {
  std::vector<Field> items;
  if (node.loops_over_arguments) {
    for (const Value& argument : state_.positional)
      items.push_back(Field{argument.text, argument.line, argument.uncertain});
  }
  for (const Word& word : node.words) {
    std::vector<Field> expanded = expander_.fields(word.raw);
    items.insert(items.end(), std::make_move_iterator(expanded.begin()), std::make_move_iterator(expanded.end()));
  }
  set_status(0, false);
  for (const Field& item : items) {
    count_command(node.line);
    state_.assign(node.name, Value{item.text, item.line, item.uncertain});
    const Flow flow = run_list(node.children.front());
    if (flow == Flow::Break) break;
    if (flow == Flow::Exit) return flow;
  }
  return Flow::Next;
}

// for (( init; condition; step )): the body runs once when the condition first holds; the number of
// iterations is not worked out.
Flow Executor::run_arithmetic_for(const Node& node) {
  const std::string_view text = node.expression.text;
  const std::size_t first = text.find(';');
  const std::size_t second = first == std::string_view::npos ? first : text.find(';', first + 1);
  if (second == std::string_view::npos)
    state_.source.fail(node.line, fmt::format("for (( {} ))", text.substr(0, 40)), "for (( init; condition; step ))");
  (void)expander_.arithmetic(text.substr(0, first), node.line);
  const std::string_view condition = text.substr(first + 1, second - first - 1);
  const bool empty = condition.find_first_not_of(" \t\n") == std::string_view::npos;
  const std::optional<std::int64_t> holds = empty ? 1 : expander_.arithmetic(condition, node.line);
  set_status(0, false);
  if (holds && *holds == 0) return Flow::Next;
  note(node.line, "for (( ... )) loop: its body is run once; the number of iterations is not evaluated");
  return run_list(node.children.front()) == Flow::Exit ? Flow::Exit : Flow::Next;
}

// while and until: the condition is tested once; when the body would run, it runs once.
Flow Executor::run_loop(const Node& node) {
  const Flow flow = run_list(node.children[0]);
  if (flow != Flow::Next) return flow;
  const bool enters = (node.name == "while") == (state_.last_status == 0);
  set_status(0, false);
  if (!enters) return Flow::Next;
  note(node.line, fmt::format("{} loop: its body is run once; the number of iterations is not evaluated", node.name));
  return run_list(node.children[1]) == Flow::Exit ? Flow::Exit : Flow::Next;
}

bool Executor::case_pattern_matches(const RawWord& pattern, const Field& subject, int line) {
  const Field expanded = expander_.pattern(pattern);
  const Truth matched = expanded.uncertain ? Truth::Unknown : match_pattern(expanded.text, subject.text);
  if (matched == Truth::Unknown)
    note(line, fmt::format("case pattern {} not evaluated, taken as not matching", pattern.text.substr(0, 40)));
  return matched == Truth::True;
}

Flow Executor::run_case(const Node& node) {
  const Field subject = expander_.text(node.words.front().raw);
  set_status(0, false);
  if (subject.uncertain) {
    note(node.line, fmt::format("case on {} not evaluated: no branch taken", subject.text.substr(0, 40)));
    return Flow::Next;
  }
  bool falling_through = false;
  for (const CaseItem& item : node.items) {
    bool matched = falling_through;
    for (std::size_t i = 0; i < item.patterns.size() && !matched; ++i)
      matched = case_pattern_matches(item.patterns[i], subject, node.line);
    if (!matched) continue;
    const Flow flow = run_commands(item.body);
    if (flow != Flow::Next) return flow;
    if (item.terminator == ";&")
      falling_through = true;  // runs the next branch too
    else if (item.terminator == ";;&")
      falling_through = false;  // tests the next patterns too
    else
      return Flow::Next;
  }
  return Flow::Next;
}

// ---- The script as a whole ----

// "\r\n" becomes "\n": bash would keep the \r in every last word of a line, which no launch script means.
std::string without_carriage_returns(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    if (!(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) out += text[i];
  return out;
}

void check_input(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxScriptBytes)
    throw InputError(fmt::format("{}:1", origin), fmt::format("a script of {} bytes", text.size()),
                     "a script of at most 1 MiB (1048576 bytes)");
  const std::size_t nul = text.find('\0');
  if (nul != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw InputError(fmt::format("{}:{}", origin, line), "binary content (a NUL byte)", "a bash script as text");
  }
}

void copy_variables(const std::map<std::string, Variable, std::less<>>& variables, ShellScript& out) {
  for (const auto& [name, variable] : variables) {
    std::vector<std::string> elements;
    for (const auto& element : variable.elements) elements.push_back(element.second.text);
    if (!variable.is_array) {
      const auto first = variable.elements.find(0);
      if (first != variable.elements.end()) out.variables[name] = first->second.text;
      continue;
    }
    std::string joined;
    for (std::size_t i = 0; i < elements.size(); ++i) joined += (i > 0 ? " " : "") + elements[i];
    out.variables[name] = std::move(joined);
    out.arrays[name] = std::move(elements);
  }
}

}  // namespace
}  // namespace shell

ShellScript read_shell_script(std::string_view text, std::string_view origin,
                              const std::map<std::string, std::string>& environment) {
  shell::check_input(text, origin);
  shell::Notes notes;
  std::string normalized;
  if (text.find("\r\n") != std::string_view::npos) {
    normalized = shell::without_carriage_returns(text);
    text = normalized;
    notes.add(1, "CRLF line endings: the \\r before each newline is ignored");
  }
  const shell::Source source(text, origin);
  shell::Lexer lexer(source, notes);
  const std::vector<shell::Token> tokens = lexer.tokenize();
  const shell::Node script = shell::Parser(source, tokens).parse_script();

  ShellScript result;
  shell::read_sbatch_directives(text, result.sbatch);
  shell::Executor executor(source, notes, lexer.take_here_documents(), result);
  executor.set_environment(environment);
  executor.run_script(script);
  shell::copy_variables(executor.variables(), result);
  result.notes = notes.take();
  return result;
}

}  // namespace gpuplan::framework
