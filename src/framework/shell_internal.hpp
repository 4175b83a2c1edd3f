// Pieces shared by the bash reader's parser and executor (shell_script.cpp) and its expansions (shell_expand.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuplan::framework::shell {

// Whether `text` is one of `options` (a reserved word, an operator).
template <std::size_t N>
bool is_one_of(std::string_view text, const std::string_view (&options)[N]) {
  return std::find(std::begin(options), std::end(options), text) != std::end(options);
}

// A non-empty run of decimal digits (a positional parameter, a file descriptor).
inline bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Deepest nesting of compound commands, expansions, quotes and arithmetic the reader follows.
constexpr int kMaxNesting = 64;

// The script text with its name, for line numbers and errors.
class Source {
 public:
  Source(std::string_view text, std::string_view origin);
  std::string_view text() const { return text_; }
  std::string_view origin() const { return origin_; }
  // 1-based line of a character inside text(); `fallback` for text that lives elsewhere (a variable's value).
  int line_at(const char* where, int fallback) const;
  int line_at(std::size_t offset) const;
  [[noreturn]] void fail(int line, const std::string& given, const std::string& accepted) const;

 private:
  std::string_view text_;
  std::string origin_;
  std::vector<std::size_t> line_starts_;
};

// What the reader assumed or left out, each text once, in order.
class Notes {
 public:
  void add(int line, std::string_view text);
  std::vector<std::string> take() { return std::move(list_); }

 private:
  std::vector<std::string> list_;
  std::set<std::string> seen_;
};

// Finds where a quoted string or an expansion ends, as bash's lexer does, inside `text` (a view into the script
// or a here-document body). Every function takes the position of the opening character and returns the position
// just past the construct; an unterminated one is an error on the line where it opens.
class Scanner {
 public:
  Scanner(const Source& source, std::string_view text, int fallback_line)
      : source_(source), text_(text), fallback_line_(fallback_line) {}
  std::size_t single_quote(std::size_t open) const;
  std::size_t ansi_quote(std::size_t dollar) const;  // $'...'
  std::size_t double_quote(std::size_t open, int depth) const;
  std::size_t backquote(std::size_t open) const;
  // `$` and what follows: a name, a special parameter, ${...}, $(...), $((...)), $'...', $"..."; a lone `$` is
  // one character.
  std::size_t dollar(std::size_t dollar, int depth, bool in_double_quotes) const;
  std::size_t parentheses(std::size_t open, int depth) const;  // ( ... ) with quotes and expansions inside
  std::size_t braces(std::size_t open, int depth, bool in_double_quotes) const;  // { of ${ ... }
  // True when the $( at `dollar` is $(( arithmetic )) rather than a command substitution starting with a subshell.
  bool is_arithmetic(std::size_t dollar, std::size_t end) const;
  int line_of(std::size_t pos) const;

 private:
  [[noreturn]] void unterminated(std::size_t open, const std::string& what, const std::string& closing) const;
  void check_depth(std::size_t pos, int depth) const;

  const Source& source_;
  std::string_view text_;
  int fallback_line_;
};

// A word as written in the script, quotes and all; expanded when the command runs.
struct RawWord {
  std::string_view text;
  int line = 0;
};

// One token of [[ ... ]]: a word, or an operator the lexer split off (&&, ||, (, ), <, >).
struct CondToken {
  RawWord word;
  bool is_operator = false;
};

// A value with the line it was written on (0: from the environment). `uncertain`: it holds text the reader
// kept without evaluating (a command substitution), so a test on it cannot be decided.
struct Value {
  std::string text;
  int line = 0;
  bool uncertain = false;
};

// Every bash variable is an array; a scalar is element 0.
struct Variable {
  std::map<std::int64_t, Value> elements;
  bool is_array = false;
};

// One word after expansion.
struct Field {
  std::string text;
  int line = 0;
  bool uncertain = false;
};

// The state expansions read and change.
struct ShellState {
  ShellState(const Source& script, Notes& script_notes) : source(script), notes(script_notes) {}

  const Variable* find(std::string_view name) const;
  void assign(std::string_view name, Value value);  // element 0, as NAME=value does
  // Counts output of expansions and commands run, so a script that doubles a value in a loop ends with an error.
  void charge(std::size_t amount, int line);

  const Source& source;
  Notes& notes;
  std::map<std::string, Variable, std::less<>> variables;
  std::vector<Value> positional;  // $1 ... (set -- changes them; empty at the start)
  int last_status = 0;
  int depth = 0;  // nesting of expansions and arithmetic now being evaluated

 private:
  std::size_t spent_ = 0;
};

// Holds one level of ShellState::depth; deeper than kMaxNesting is an error.
class DepthGuard {
 public:
  DepthGuard(ShellState& state, int line);
  ~DepthGuard() { --state_.depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  ShellState& state_;
};

// Where text being expanded stands: unquoted, inside "...", in a here-document, or in the word of an unquoted
// ${NAME:-word}, whose literal text is split into words like the value of an expansion.
enum class Quoting { None, Double, HereDocument, BraceWord };

class WordBuilder;  // collects the words of one expansion (shell_expand.cpp)

// What a parameter ($X, ${A[@]}, $1, $@) stands for before its operator (${X:-...}) is applied.
struct ParameterValue {
  std::vector<Value> values;  // one for a scalar, the elements for an array or $@
  bool set = false;
  bool list = false;    // $@, ${A[@]}: one word per element, even inside double quotes
  bool joined = false;  // $*, ${A[*]}: the elements joined by a space inside double quotes
};

// Parameter expansion, arithmetic, quote removal and word splitting.
class Expander {
 public:
  explicit Expander(ShellState& state) : state_(state) {}
  std::vector<Field> fields(const RawWord& word);  // a command's word: split, one Field per resulting word
  Field text(const RawWord& word);                 // an assignment's value, a [[ ]] operand: not split
  // A pattern (case, [[ == ]]): not split, and what was quoted has its *, ? and [ escaped with a backslash.
  Field pattern(const RawWord& word);
  Field here_document(std::string_view body, int line);
  // $(( expression )): the expression expanded, then evaluated; a variable whose value is not a number is
  // evaluated in turn. Empty when it depends on text the reader kept without evaluating.
  std::optional<std::int64_t> arithmetic(std::string_view expression, int line);

 private:
  Field text_of(std::string_view text, Quoting quoting, int line, bool as_pattern = false);
  void expand(WordBuilder& out, std::string_view text, Quoting quoting, int line);
  void expand_double_quoted(WordBuilder& out, std::string_view inner, int line);
  std::size_t expand_dollar(WordBuilder& out, std::string_view text, std::size_t pos, Quoting quoting, int line);
  void expand_arithmetic(WordBuilder& out, std::string_view whole, std::string_view inner, Quoting quoting, int line);
  void expand_braces(WordBuilder& out, std::string_view inner, Quoting quoting, int line);
  void expand_plain(WordBuilder& out, std::string_view parameter, Quoting quoting, int line);
  void expand_length(WordBuilder& out, std::string_view parameter, Quoting quoting, int line);
  void expand_indirect(WordBuilder& out, std::string_view inner, Quoting quoting, int line);
  bool apply_default(WordBuilder& out, std::string_view parameter, const ParameterValue& found, std::string_view rest,
                     Quoting quoting, int line);
  bool apply_transform(ParameterValue& found, std::string_view rest, int line);
  void apply_substring(ParameterValue& found, std::string_view range, int line);
  void apply_replace(ParameterValue& found, std::string_view rest, int line);
  ParameterValue lookup(std::string_view parameter, int line);
  ParameterValue lookup_special(std::string_view parameter, int line);
  ParameterValue lookup_element(std::string_view name, std::string_view subscript, int line);
  void emit(WordBuilder& out, const ParameterValue& found, Quoting quoting, int line);
  void note_unset(std::string_view parameter, int line);
  void keep_as_written(WordBuilder& out, std::string_view text, int line, std::string_view what);

  ShellState& state_;
};

// True, false, or not decidable from the script alone (a file test's truth is assumed; a command's output is not).
enum class Truth { False, True, Unknown };

// [ ... ] and test, on the expanded arguments (the closing ] removed).
Truth evaluate_test(ShellState& state, const std::vector<Field>& arguments, int line);
// [[ ... ]], on the tokens between [[ and ]].
Truth evaluate_conditional(ShellState& state, const std::vector<CondToken>& tokens, int line);

// Bash pattern matching (*, ?, [...], backslash) of the whole of `text`; Unknown when the text is so long that
// trying the pattern would take too long.
Truth match_pattern(std::string_view pattern, std::string_view text);

bool is_name(std::string_view text);  // [A-Za-z_][A-Za-z0-9_]*

// Adds the #SBATCH directives at the top of a job script to `out`, long option names as keys ("nodes").
void read_sbatch_directives(std::string_view script, std::map<std::string, std::string>& out);

}  // namespace gpuplan::framework::shell
