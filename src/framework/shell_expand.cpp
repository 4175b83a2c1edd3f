// The bash reader's expansions: quoting, parameters, arithmetic, word splitting, pattern matching and tests.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "framework/shell_internal.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::framework::shell {

namespace {

// Expansions may produce this much text in all (a value doubled in a loop would otherwise grow without bound).
constexpr std::size_t kExpansionBudget = std::size_t{16} << 20;
// Notes past this many are dropped: a note per line of a huge generated script helps nobody.
constexpr std::size_t kMaxNotes = 500;
// Pattern removal with wildcards tries every prefix or suffix; above this much work it is left undone.
constexpr std::size_t kMaxPatternWork = std::size_t{1} << 24;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Shortens text quoted in a note or an error so one line stays readable.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kLimit = 60;
  std::string out(text.substr(0, kLimit));
  for (char& c : out)
    if (c == '\n' || c == '\t') c = ' ';
  if (text.size() > kLimit) out += "...";
  return out;
}

}  // namespace

bool is_name(std::string_view text) {
  if (text.empty() || !is_name_start(text[0])) return false;
  return std::all_of(text.begin(), text.end(), is_name_char);
}

// ---- Source, Notes, ShellState ----

Source::Source(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_starts_.push_back(i + 1);
}

int Source::line_at(std::size_t offset) const {
  const auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<int>(after - line_starts_.begin());
}

int Source::line_at(const char* where, int fallback) const {
  const std::less<const char*> before;
  if (before(where, text_.data()) || !before(where, text_.data() + text_.size())) return fallback;
  return line_at(static_cast<std::size_t>(where - text_.data()));
}

void Source::fail(int line, const std::string& given, const std::string& accepted) const {
  throw InputError(fmt::format("{}:{}", origin_, line), given, accepted);
}

void Notes::add(int line, std::string_view text) {
  if (list_.size() > kMaxNotes) return;
  std::string note = fmt::format("line {}: {}", line, text);
  if (list_.size() == kMaxNotes) note = "further notes left out";
  if (seen_.insert(note).second) list_.push_back(std::move(note));
}

const Variable* ShellState::find(std::string_view name) const {
  const auto it = variables.find(name);
  return it == variables.end() ? nullptr : &it->second;
}

void ShellState::assign(std::string_view name, Value value) {
  auto it = variables.find(name);
  if (it == variables.end()) it = variables.emplace(std::string(name), Variable{}).first;
  it->second.elements[0] = std::move(value);
}

void ShellState::charge(std::size_t amount, int line) {
  spent_ += amount;
  if (spent_ > kExpansionBudget)
    source.fail(line, "expansions and arrays of more than 16 MiB",
                "a script whose variables and commands expand to less than 16 MiB");
}

DepthGuard::DepthGuard(ShellState& state, int line) : state_(state) {
  if (++state_.depth > kMaxNesting) {
    --state_.depth;
    state_.source.fail(line, "nesting deeper than 64", "expansions and arithmetic nested at most 64 deep");
  }
}

// ---- Scanner ----

int Scanner::line_of(std::size_t pos) const {
  return source_.line_at(text_.data() + std::min(pos, text_.size()), fallback_line_);
}

void Scanner::unterminated(std::size_t open, const std::string& what, const std::string& closing) const {
  source_.fail(line_of(open), "unterminated " + what, "a closing " + closing);
}

void Scanner::check_depth(std::size_t pos, int depth) const {
  if (depth > kMaxNesting)
    source_.fail(line_of(pos), "nesting deeper than 64", "quotes and expansions nested at most 64 deep");
}

std::size_t Scanner::single_quote(std::size_t open) const {
  const std::size_t close = text_.find('\'', open + 1);
  if (close == std::string_view::npos) unterminated(open, "' quote", "'");
  return close + 1;
}

std::size_t Scanner::ansi_quote(std::size_t dollar) const {
  for (std::size_t pos = dollar + 2; pos < text_.size(); ++pos) {
    if (text_[pos] == '\\')
      ++pos;
    else if (text_[pos] == '\'')
      return pos + 1;
  }
  unterminated(dollar, "$' quote", "'");
}

std::size_t Scanner::double_quote(std::size_t open, int depth) const {
  check_depth(open, depth);
  std::size_t pos = open + 1;
  while (pos < text_.size()) {
    const char c = text_[pos];
    if (c == '"') return pos + 1;
    if (c == '\\')
      pos += 2;
    else if (c == '$')
      pos = dollar(pos, depth + 1, true);
    else if (c == '`')
      pos = backquote(pos);
    else
      ++pos;
  }
  unterminated(open, "\" quote", "\"");
}

std::size_t Scanner::backquote(std::size_t open) const {
  for (std::size_t pos = open + 1; pos < text_.size(); ++pos) {
    if (text_[pos] == '\\')
      ++pos;
    else if (text_[pos] == '`')
      return pos + 1;
  }
  unterminated(open, "` command substitution", "`");
}

std::size_t Scanner::dollar(std::size_t dollar, int depth, bool in_double_quotes) const {
  if (dollar + 1 >= text_.size()) return dollar + 1;
  const char next = text_[dollar + 1];
  if (next == '(') return parentheses(dollar + 1, depth + 1);
  if (next == '{') return braces(dollar + 1, depth + 1, in_double_quotes);
  if (next == '\'' && !in_double_quotes) return ansi_quote(dollar);
  if (next == '"' && !in_double_quotes) return double_quote(dollar + 1, depth + 1);
  if (is_name_start(next)) {
    std::size_t pos = dollar + 1;
    while (pos < text_.size() && is_name_char(text_[pos])) ++pos;
    return pos;
  }
  if (is_digit(next) || std::string_view("@*#?-$!").find(next) != std::string_view::npos) return dollar + 2;
  return dollar + 1;
}

std::size_t Scanner::parentheses(std::size_t open, int depth) const {
  check_depth(open, depth);
  int level = 1;
  std::size_t pos = open + 1;
  while (pos < text_.size()) {
    const char c = text_[pos];
    const bool word_start =
        pos == open + 1 || std::string_view(" \t\n;(").find(text_[pos - 1]) != std::string_view::npos;
    if (c == '#' && word_start) {  // a comment inside $( ): an apostrophe in it is no quote
      pos = std::min(text_.find('\n', pos), text_.size());
    } else if (c == '\\')
      pos += 2;
    else if (c == '\'')
      pos = single_quote(pos);
    else if (c == '"')
      pos = double_quote(pos, depth + 1);
    else if (c == '`')
      pos = backquote(pos);
    else if (c == '$')
      pos = dollar(pos, depth + 1, false);
    else {
      if (c == '(') ++level;
      if (c == ')' && --level == 0) return pos + 1;
      ++pos;
    }
  }
  const bool after_dollar = open > 0 && text_[open - 1] == '$';
  const bool doubled = open + 1 < text_.size() && text_[open + 1] == '(';
  unterminated(open, after_dollar ? (doubled ? "$((" : "$(") : "(", after_dollar && doubled ? "))" : ")");
}

std::size_t Scanner::braces(std::size_t open, int depth, bool in_double_quotes) const {
  check_depth(open, depth);
  int level = 1;
  std::size_t pos = open + 1;
  while (pos < text_.size()) {
    const char c = text_[pos];
    if (c == '\\')
      pos += 2;
    else if (c == '\'' && !in_double_quotes)
      pos = single_quote(pos);
    else if (c == '"')
      pos = double_quote(pos, depth + 1);
    else if (c == '`')
      pos = backquote(pos);
    else if (c == '$')
      pos = dollar(pos, depth + 1, in_double_quotes);
    else {
      if (c == '{') ++level;
      if (c == '}' && --level == 0) return pos + 1;
      ++pos;
    }
  }
  unterminated(open - 1, "${", "}");
}

bool Scanner::is_arithmetic(std::size_t dollar, std::size_t end) const {
  if (end < dollar + 5 || text_[dollar + 2] != '(' || text_[end - 2] != ')') return false;
  return parentheses(dollar + 2, 0) == end - 1;
}

// ---- Pattern matching ----

namespace {

// Matches one character against the bracket expression at pattern[open] ('['). Returns the position after the
// expression, or npos when it is not one (no closing ']'), in which case '[' is an ordinary character.
std::size_t match_bracket(std::string_view pattern, std::size_t open, char c, bool& matched) {
  std::size_t pos = open + 1;
  const bool negated = pos < pattern.size() && (pattern[pos] == '!' || pattern[pos] == '^');
  if (negated) ++pos;
  bool found = false;
  const std::size_t first = pos;
  while (pos < pattern.size() && (pattern[pos] != ']' || pos == first)) {
    const char low = pattern[pos];
    if (pos + 2 < pattern.size() && pattern[pos + 1] == '-' && pattern[pos + 2] != ']') {
      found = found || (c >= low && c <= pattern[pos + 2]);
      pos += 3;
    } else {
      found = found || c == low;
      ++pos;
    }
  }
  if (pos >= pattern.size()) return std::string_view::npos;
  matched = found != negated;
  return pos + 1;
}

// Matches one pattern element other than '*' at pattern[pos]; sets `next` past it.
bool match_single(std::string_view pattern, std::size_t pos, char c, std::size_t& next) {
  const char p = pattern[pos];
  if (p == '?') {
    next = pos + 1;
    return true;
  }
  if (p == '[') {
    bool matched = false;
    const std::size_t end = match_bracket(pattern, pos, c, matched);
    if (end != std::string_view::npos) {
      next = end;
      return matched;
    }
  }
  if (p == '\\' && pos + 1 < pattern.size()) {
    next = pos + 2;
    return pattern[pos + 1] == c;
  }
  next = pos + 1;
  return p == c;
}

bool has_wildcards(std::string_view pattern) { return pattern.find_first_of("*?[\\") != std::string_view::npos; }

}  // namespace

namespace {

bool glob_match(std::string_view pattern, std::string_view text) {
  // Greedy match that backtracks to the last '*' only: linear in memory, quadratic at worst in time.
  std::size_t pat = 0;
  std::size_t pos = 0;
  std::size_t star = std::string_view::npos;
  std::size_t star_text = 0;
  while (pos < text.size()) {
    std::size_t next = 0;
    if (pat < pattern.size() && pattern[pat] == '*') {
      star = ++pat;
      star_text = pos;
    } else if (pat < pattern.size() && match_single(pattern, pat, text[pos], next)) {
      pat = next;
      ++pos;
    } else if (star != std::string_view::npos) {
      pat = star;
      pos = ++star_text;
    } else {
      return false;
    }
  }
  while (pat < pattern.size() && pattern[pat] == '*') ++pat;
  return pat == pattern.size();
}

// Estimated steps of trying a wildcard pattern against every part of a text: `spans` parts, each costing up to
// the text's length times the pattern's.
bool pattern_work_fits(std::size_t text_size, std::size_t pattern_size, std::size_t spans) {
  const double work =
      static_cast<double>(spans) * static_cast<double>(text_size + 1) * static_cast<double>(pattern_size + 1);
  return work <= static_cast<double>(kMaxPatternWork);
}

}  // namespace

Truth match_pattern(std::string_view pattern, std::string_view text) {
  if (!pattern_work_fits(text.size(), pattern.size(), 1)) return Truth::Unknown;
  return glob_match(pattern, text) ? Truth::True : Truth::False;
}

// ---- Building words ----

// Collects the words an expansion produces. Text written in the script is never split; the value of an
// unquoted expansion is split on spaces, tabs and newlines. Without splitting (assignments, [[ ]]) everything
// goes into one word and array elements are joined by a space.
class WordBuilder {
 public:
  WordBuilder(ShellState& state, bool split, bool pattern = false) : state_(state), split_(split), pattern_(pattern) {}

  // `active`: unquoted text of the script, whose *, ? and [ stay special in a pattern.
  void literal(std::string_view text, int line, bool active = false) {
    state_.charge(text.size(), line);
    start(line);
    append_text(text, active);
  }
  // A quoted empty string ("" or '') still makes a word.
  void present(int line) { start(line); }
  void value(std::string_view text, int line, bool quoted, bool uncertain) {
    state_.charge(text.size() + 1, line);
    if (!split_ || quoted) {
      if (!text.empty()) append(text, line, uncertain, !quoted);
      return;
    }
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t blank = std::min(text.find_first_of(" \t\n", pos), text.size());
      if (blank > pos) append(text.substr(pos, blank - pos), line, uncertain, true);
      if (blank < text.size()) end_word();
      pos = blank + 1;
    }
  }
  void kept(std::string_view text, int line) { append(text, line, true); }
  // Between the elements of "${A[@]}": the next element starts a new word.
  void element_break(int line) {
    if (split_) {
      end_word();
    } else {
      start(line);
      current_.text += ' ';
    }
  }
  // Counts "${A[@]}" expansions, so that "${EMPTY[@]}" can give no word where "" gives an empty one.
  void count_list() { ++lists_; }
  int lists() const { return lists_; }

  std::vector<Field> finish() {
    end_word();
    return std::move(done_);
  }

 private:
  void start(int line) {
    if (started_) return;
    started_ = true;
    current_.line = line;
  }
  void append(std::string_view text, int line, bool uncertain, bool active = false) {
    start(line);
    append_text(text, active);
    current_.uncertain = current_.uncertain || uncertain;
  }
  // In a pattern, quoted text matches itself: its pattern characters get a backslash.
  void append_text(std::string_view text, bool active) {
    if (!pattern_ || active) {
      current_.text += text;
      return;
    }
    for (const char c : text) {
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') current_.text += '\\';
      current_.text += c;
    }
  }
  void end_word() {
    if (!started_) return;
    done_.push_back(std::move(current_));
    current_ = Field{};
    started_ = false;
  }

  ShellState& state_;
  bool split_;
  bool pattern_;
  Field current_;
  bool started_ = false;
  int lists_ = 0;
  std::vector<Field> done_;
};

namespace {

bool is_unquoted(Quoting quoting) { return quoting == Quoting::None || quoting == Quoting::BraceWord; }

// The characters that end a run of ordinary text in each quoting context.
std::string_view specials(Quoting quoting) {
  switch (quoting) {
    case Quoting::None:
    case Quoting::BraceWord:
      return "\\$`'\"<>";
    case Quoting::Double:
      return "\\$`\"";
    case Quoting::HereDocument:
      return "\\$`";
  }
  return "\\$`";
}

// $'...': the common backslash escapes decoded; others are kept as written.
std::string decode_ansi_quote(std::string_view text) {
  static constexpr std::string_view kFrom = "ntr\\'\"abefv";
  static constexpr std::string_view kTo = "\n\t\r\\'\"\a\b\x1b\f\v";
  std::string out;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    const std::size_t escape =
        pos + 1 < text.size() && text[pos] == '\\' ? kFrom.find(text[pos + 1]) : std::string_view::npos;
    if (escape == std::string_view::npos) {
      out += text[pos];
    } else {
      out += kTo[escape];
      ++pos;
    }
  }
  return out;
}

// A backslash at text[pos]: what it escapes is literal text. Returns the position after it.
std::size_t expand_backslash(WordBuilder& out, std::string_view text, std::size_t pos, Quoting quoting, int line) {
  if (pos + 1 >= text.size()) {
    out.literal("\\", line);
    return pos + 1;
  }
  const char next = text[pos + 1];
  if (next == '\n') return pos + 2;  // line continuation
  const std::string_view escapable = quoting == Quoting::Double ? "$`\"\\" : "$`\\";
  if (is_unquoted(quoting) || escapable.find(next) != std::string_view::npos) {
    out.literal(text.substr(pos + 1, 1), line);
    return pos + 2;
  }
  out.literal("\\", line);
  return pos + 1;
}

}  // namespace

// ---- Expansion ----

std::vector<Field> Expander::fields(const RawWord& word) {
  WordBuilder out(state_, true);
  expand(out, word.text, Quoting::None, word.line);
  return out.finish();
}

Field Expander::text(const RawWord& word) { return text_of(word.text, Quoting::None, word.line); }

Field Expander::here_document(std::string_view body, int line) { return text_of(body, Quoting::HereDocument, line); }

Field Expander::pattern(const RawWord& word) { return text_of(word.text, Quoting::None, word.line, true); }

Field Expander::text_of(std::string_view text, Quoting quoting, int line, bool as_pattern) {
  WordBuilder out(state_, false, as_pattern);
  expand(out, text, quoting, line);
  std::vector<Field> words = out.finish();
  if (words.empty()) return Field{"", line, false};
  return std::move(words.front());
}

void Expander::expand(WordBuilder& out, std::string_view text, Quoting quoting, int line) {
  const DepthGuard guard(state_, line);
  const Scanner scan(state_.source, text, line);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    const bool process_substitution =
        is_unquoted(quoting) && (c == '<' || c == '>') && pos + 1 < text.size() && text[pos + 1] == '(';
    if (c == '\\') {
      pos = expand_backslash(out, text, pos, quoting, line);
    } else if (c == '$') {
      pos = expand_dollar(out, text, pos, quoting, line);
    } else if (c == '`' || process_substitution) {
      const std::size_t end = c == '`' ? scan.backquote(pos) : scan.parentheses(pos + 1, state_.depth);
      keep_as_written(out, text.substr(pos, end - pos), line,
                      c == '`' ? "command substitution" : "process substitution");
      pos = end;
    } else if (c == '\'' && is_unquoted(quoting)) {
      const std::size_t end = scan.single_quote(pos);
      out.present(line);
      out.literal(text.substr(pos + 1, end - pos - 2), line);
      pos = end;
    } else if (c == '"' && quoting != Quoting::HereDocument) {
      const std::size_t end = scan.double_quote(pos, state_.depth);
      expand_double_quoted(out, text.substr(pos + 1, end - pos - 2), line);
      pos = end;
    } else {
      const std::size_t end = std::min(text.find_first_of(specials(quoting), pos + 1), text.size());
      if (quoting == Quoting::BraceWord)
        out.value(text.substr(pos, end - pos), line, false, false);
      else
        out.literal(text.substr(pos, end - pos), line, quoting == Quoting::None);
      pos = end;
    }
  }
}

void Expander::expand_double_quoted(WordBuilder& out, std::string_view inner, int line) {
  const int lists_before = out.lists();
  expand(out, inner, Quoting::Double, line);
  if (out.lists() == lists_before) out.present(line);
}

std::size_t Expander::expand_dollar(WordBuilder& out, std::string_view text, std::size_t pos, Quoting quoting,
                                    int line) {
  const Scanner scan(state_.source, text, line);
  const std::size_t end = scan.dollar(pos, state_.depth, !is_unquoted(quoting));
  const std::string_view whole = text.substr(pos, end - pos);
  if (end == pos + 1) {
    out.literal("$", line);
    return end;
  }
  switch (text[pos + 1]) {
    case '(':
      if (scan.is_arithmetic(pos, end))
        expand_arithmetic(out, whole, text.substr(pos + 3, end - pos - 5), quoting, line);
      else
        keep_as_written(out, whole, line, "command substitution");
      break;
    case '{':
      expand_braces(out, text.substr(pos + 2, end - pos - 3), quoting, line);
      break;
    case '\'':
      out.present(line);
      out.literal(decode_ansi_quote(text.substr(pos + 2, end - pos - 3)), line);
      break;
    case '"':
      expand_double_quoted(out, text.substr(pos + 2, end - pos - 3), line);
      break;
    default:
      expand_plain(out, whole.substr(1), quoting, line);
  }
  return end;
}

void Expander::keep_as_written(WordBuilder& out, std::string_view text, int line, std::string_view what) {
  state_.notes.add(line, fmt::format("{} kept as written: {}", what, excerpt(text)));
  out.kept(text, line);
}

void Expander::expand_arithmetic(WordBuilder& out, std::string_view whole, std::string_view inner, Quoting quoting,
                                 int line) {
  const std::optional<std::int64_t> result = arithmetic(inner, line);
  if (!result) {
    keep_as_written(out, whole, line, "arithmetic on an unevaluated value");
    return;
  }
  out.value(std::to_string(*result), line, !is_unquoted(quoting), false);
}

// ---- Parameters ----

namespace {

// Length of the parameter at the start of the text inside ${...}: a name with an optional [subscript], digits,
// or one special character. 0 when there is none.
std::size_t parameter_length(std::string_view text) {
  if (text.empty()) return 0;
  if (is_name_start(text[0])) {
    std::size_t pos = 1;
    while (pos < text.size() && is_name_char(text[pos])) ++pos;
    if (pos >= text.size() || text[pos] != '[') return pos;
    int level = 0;
    for (std::size_t close = pos; close < text.size(); ++close) {
      if (text[close] == '[') ++level;
      if (text[close] == ']' && --level == 0) return close + 1;
    }
    return 0;
  }
  if (is_digit(text[0])) {
    std::size_t pos = 1;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    return pos;
  }
  return std::string_view("@*#?-$!").find(text[0]) != std::string_view::npos ? 1 : 0;
}

std::string joined_text(const std::vector<Value>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out += (i > 0 ? " " : "") + values[i].text;
  return out;
}

Value combined_value(const std::vector<Value>& values, int line) {
  Value out{joined_text(values), values.empty() ? line : values.front().line, false};
  for (const Value& value : values) out.uncertain = out.uncertain || value.uncertain;
  return out;
}

}  // namespace

ParameterValue Expander::lookup(std::string_view parameter, int line) {
  const std::size_t bracket = parameter.find('[');
  if (bracket != std::string_view::npos)
    return lookup_element(parameter.substr(0, bracket), parameter.substr(bracket + 1, parameter.size() - bracket - 2),
                          line);
  if (!is_name(parameter)) return lookup_special(parameter, line);
  ParameterValue found;
  const Variable* variable = state_.find(parameter);
  if (variable == nullptr) return found;
  const auto first = variable->elements.find(0);
  if (first == variable->elements.end()) return found;
  found.values.push_back(first->second);
  found.set = true;
  return found;
}

ParameterValue Expander::lookup_special(std::string_view parameter, int line) {
  ParameterValue found;
  const char c = parameter[0];
  if (is_digit(c)) {
    if (parameter.size() > 6) return found;  // far past any argument count
    const std::size_t index = std::stoul(std::string(parameter));
    if (index == 0)
      found.values.push_back(Value{std::string(state_.source.origin()), 0, false});
    else if (index <= state_.positional.size())
      found.values.push_back(state_.positional[index - 1]);
    found.set = !found.values.empty();
    return found;
  }
  found.set = true;
  if (c == '@' || c == '*') {
    found.values = state_.positional;
    found.set = !found.values.empty();
    found.list = true;
    found.joined = c == '*';
  } else if (c == '#') {
    found.values.push_back(Value{std::to_string(state_.positional.size()), line, false});
  } else if (c == '?') {
    found.values.push_back(Value{std::to_string(state_.last_status), line, false});
  } else {  // $$, $!, $-: the process ids and options of a shell that is not running
    state_.notes.add(line, fmt::format("${} kept as written", c));
    found.values.push_back(Value{fmt::format("${}", c), line, true});
  }
  return found;
}

ParameterValue Expander::lookup_element(std::string_view name, std::string_view subscript, int line) {
  ParameterValue found;
  const Variable* variable = state_.find(name);
  if (subscript == "@" || subscript == "*") {
    found.list = true;
    found.joined = subscript == "*";
    if (variable != nullptr)
      for (const auto& element : variable->elements) found.values.push_back(element.second);
    found.set = !found.values.empty();
    return found;
  }
  const std::optional<std::int64_t> index = arithmetic(subscript, line);
  if (!index) {
    state_.notes.add(line, fmt::format("subscript of {} not evaluated: [{}]", name, excerpt(subscript)));
    found.values.push_back(Value{"", line, true});
    found.set = true;
    return found;
  }
  if (variable == nullptr || variable->elements.empty()) return found;
  // A negative subscript counts back from the end, as in bash.
  const std::int64_t position = *index >= 0 ? *index : (*index + variable->elements.rbegin()->first) + 1;
  const auto element = variable->elements.find(position);
  if (element != variable->elements.end()) {
    found.values.push_back(element->second);
    found.set = true;
  }
  return found;
}

void Expander::note_unset(std::string_view parameter, int line) {
  if (parameter == "@" || parameter == "*") {
    state_.notes.add(line, fmt::format("${} is empty: positional parameters are unset", parameter));
    return;
  }
  // An array declared empty (ARGS=()) is the script's own choice, not something missing.
  if (state_.find(parameter.substr(0, parameter.find('['))) != nullptr) return;
  state_.notes.add(line, fmt::format("${} is unset", parameter));
}

void Expander::emit(WordBuilder& out, const ParameterValue& found, Quoting quoting, int line) {
  const bool quoted = !is_unquoted(quoting);
  if (!found.list) {
    if (found.set) {
      const Value& value = found.values.front();
      out.value(value.text, value.line != 0 ? value.line : line, quoted, value.uncertain);
    }
    return;
  }
  if (quoted && found.joined) {
    const Value joined = combined_value(found.values, line);
    out.value(joined.text, joined.line != 0 ? joined.line : line, true, joined.uncertain);
    return;
  }
  if (quoted) out.count_list();
  for (std::size_t i = 0; i < found.values.size(); ++i) {
    const Value& value = found.values[i];
    const int value_line = value.line != 0 ? value.line : line;
    if (i > 0) out.element_break(value_line);
    if (quoted) out.present(value_line);
    out.value(value.text, value_line, quoted, value.uncertain);
  }
}

void Expander::expand_plain(WordBuilder& out, std::string_view parameter, Quoting quoting, int line) {
  const ParameterValue found = lookup(parameter, line);
  if (!found.set) note_unset(parameter, line);
  emit(out, found, quoting, line);
}

void Expander::expand_length(WordBuilder& out, std::string_view parameter, Quoting quoting, int line) {
  const ParameterValue found = lookup(parameter, line);
  std::size_t length = found.values.size();
  if (!found.list) length = found.set ? found.values.front().text.size() : 0;
  out.value(std::to_string(length), line, !is_unquoted(quoting), false);
}

void Expander::expand_indirect(WordBuilder& out, std::string_view inner, Quoting quoting, int line) {
  const std::string_view rest = inner.substr(1);
  const std::string_view base = rest.substr(0, rest.size() - 1);
  ParameterValue found;
  found.list = true;
  if ((rest.ends_with("[@]") || rest.ends_with("[*]")) && is_name(rest.substr(0, rest.size() - 3))) {
    // ${!A[@]}: the subscripts of A
    found.joined = rest.back() == ']' && rest[rest.size() - 2] == '*';
    if (const Variable* variable = state_.find(rest.substr(0, rest.size() - 3)))
      for (const auto& element : variable->elements) found.values.push_back(Value{std::to_string(element.first), line});
  } else if ((rest.ends_with('*') || rest.ends_with('@')) && is_name(base)) {
    // ${!PREFIX*}: the names of the variables that start with PREFIX
    found.joined = rest.back() == '*';
    for (auto it = state_.variables.lower_bound(base); it != state_.variables.end() && it->first.starts_with(base);
         ++it)
      found.values.push_back(Value{it->first, line});
  } else if (is_name(rest) || all_digits(rest)) {
    // ${!NAME}: the parameter whose name is NAME's value
    const ParameterValue target = lookup(rest, line);
    found = ParameterValue{};
    const std::string name = target.set ? target.values.front().text : "";
    if (!name.empty() && parameter_length(name) == name.size()) found = lookup(name, line);
  } else {
    keep_as_written(out, fmt::format("${{{}}}", inner), line, "indirect expansion");
    return;
  }
  found.set = !found.values.empty();
  emit(out, found, quoting, line);
}

void Expander::expand_braces(WordBuilder& out, std::string_view inner, Quoting quoting, int line) {
  if (inner.size() > 1 && inner[0] == '#' && parameter_length(inner.substr(1)) == inner.size() - 1) {
    expand_length(out, inner.substr(1), quoting, line);
    return;
  }
  if (inner.size() > 1 && inner[0] == '!') {
    expand_indirect(out, inner, quoting, line);
    return;
  }
  const std::size_t length = parameter_length(inner);
  if (length == 0)
    state_.source.fail(line, fmt::format("bad substitution ${{{}}}", excerpt(inner)),
                       "a parameter expansion such as ${NAME}, ${NAME:-default}, ${#NAME} or ${ARRAY[@]}");
  const std::string_view parameter = inner.substr(0, length);
  const std::string_view rest = inner.substr(length);
  if (rest.empty()) {
    expand_plain(out, parameter, quoting, line);
    return;
  }
  ParameterValue found = lookup(parameter, line);
  if (apply_default(out, parameter, found, rest, quoting, line)) return;
  if (!apply_transform(found, rest, line))
    state_.source.fail(line, fmt::format("bad substitution ${{{}}}", excerpt(inner)),
                       "an operator bash accepts after the name: :- - := = :+ + :? ? # ## % %% / // : ^ ,");
  emit(out, found, quoting, line);
}

bool Expander::apply_default(WordBuilder& out, std::string_view parameter, const ParameterValue& found,
                             std::string_view rest, Quoting quoting, int line) {
  static constexpr std::string_view kOperators = "-=+?";
  const bool colon = rest.size() > 1 && rest[0] == ':' && kOperators.find(rest[1]) != std::string_view::npos;
  const char op = rest[colon ? 1 : 0];
  if (kOperators.find(op) == std::string_view::npos) return false;
  const std::string_view word = rest.substr(colon ? 2 : 1);
  const bool null = !found.set || (colon && joined_text(found.values).empty());
  // Inside double quotes the word is expanded as if quoted too; quotes written in it are removed.
  const Quoting inner = is_unquoted(quoting) ? Quoting::BraceWord : Quoting::Double;
  if (op == '+') {
    if (!null) expand(out, word, inner, line);
  } else if (!null) {
    emit(out, found, quoting, line);
  } else if (op == '-') {
    expand(out, word, inner, line);
  } else if (op == '?') {
    state_.notes.add(line, fmt::format("${{{}{}}}: {} is unset, expanded empty", parameter, rest, parameter));
  } else {  // := assigns the default, then expands to it
    const Field value = text_of(word, inner, line);
    if (is_name(parameter))
      state_.assign(parameter, Value{value.text, value.line, value.uncertain});
    else
      state_.notes.add(line, fmt::format("${{{}{}}}: cannot assign to {}", parameter, rest, parameter));
    out.value(value.text, value.line, !is_unquoted(quoting), value.uncertain);
  }
  return true;
}

// ---- ${NAME#pattern}, ${NAME/pattern/text}, ${NAME:offset:length}, ${NAME^^} ----

namespace {

// ${X#p} ${X##p} ${X%p} ${X%%p}. Empty when the text is too long to try every prefix against a wildcard pattern.
std::optional<std::string> remove_affix(const std::string& text, std::string_view pattern, bool from_start,
                                        bool longest) {
  const std::size_t size = text.size();
  if (!has_wildcards(pattern)) {
    if (from_start) return text.starts_with(pattern) ? text.substr(pattern.size()) : text;
    return text.ends_with(pattern) ? text.substr(0, size - pattern.size()) : text;
  }
  if (!pattern_work_fits(size, pattern.size(), size + 1)) return std::nullopt;
  for (std::size_t step = 0; step <= size; ++step) {
    // The prefix or suffix tried has `length` characters: shortest first, or longest first.
    const std::size_t length = longest ? size - step : step;
    if (from_start && glob_match(pattern, std::string_view(text).substr(0, length))) return text.substr(length);
    if (!from_start && glob_match(pattern, std::string_view(text).substr(size - length)))
      return text.substr(0, size - length);
  }
  return text;
}

enum class ReplaceMode { First, All, Prefix, Suffix };

std::string replace_literal(const std::string& text, std::string_view pattern, std::string_view replacement,
                            ReplaceMode mode) {
  if (mode == ReplaceMode::Prefix)
    return text.starts_with(pattern) ? std::string(replacement) + text.substr(pattern.size()) : text;
  if (mode == ReplaceMode::Suffix)
    return text.ends_with(pattern) ? text.substr(0, text.size() - pattern.size()) + std::string(replacement) : text;
  std::string out;
  std::size_t pos = 0;
  for (std::size_t found = text.find(pattern); found != std::string::npos; found = text.find(pattern, pos)) {
    out += text.substr(pos, found - pos);
    out += replacement;
    pos = found + pattern.size();
    if (mode == ReplaceMode::First) break;
  }
  return out + text.substr(pos);
}

// The longest match of a wildcard pattern starting at `start` (at least one character), or 0.
std::size_t longest_match_at(std::string_view text, std::size_t start, std::string_view pattern) {
  for (std::size_t length = text.size() - start; length > 0; --length)
    if (glob_match(pattern, text.substr(start, length))) return length;
  return 0;
}

// ${X/p/r} ${X//p/r} ${X/#p/r} ${X/%p/r}. Empty when too long to try with a wildcard pattern.
std::optional<std::string> replace_pattern(const std::string& text, std::string_view pattern,
                                           std::string_view replacement, ReplaceMode mode) {
  // An empty pattern matches nothing, except at an anchor: ${A[@]/#/--} puts -- before every element.
  if (pattern.empty() && mode == ReplaceMode::Prefix) return std::string(replacement) + text;
  if (pattern.empty() && mode == ReplaceMode::Suffix) return text + std::string(replacement);
  if (pattern.empty()) return text;
  if (!has_wildcards(pattern)) return replace_literal(text, pattern, replacement, mode);
  const std::size_t size = text.size();
  if (!pattern_work_fits(size, pattern.size(), (size + 1) * (size + 1))) return std::nullopt;
  if (mode == ReplaceMode::Prefix) {
    const std::size_t length = longest_match_at(text, 0, pattern);
    return length == 0 ? text : std::string(replacement) + text.substr(length);
  }
  if (mode == ReplaceMode::Suffix) {
    for (std::size_t start = 0; start < size; ++start)
      if (glob_match(pattern, std::string_view(text).substr(start)))
        return text.substr(0, start) + std::string(replacement);
    return text;
  }
  std::string out;
  std::size_t pos = 0;
  while (pos < size) {
    const std::size_t length = longest_match_at(text, pos, pattern);
    if (length == 0) {
      out += text[pos++];
      continue;
    }
    out += replacement;
    pos += length;
    if (mode == ReplaceMode::First) return out + text.substr(pos);
  }
  return out;
}

// ${X^^} ${X^} ${X,,} ${X,}: upper or lower case, of every character or the first.
void change_case(std::string& text, bool upper, bool all) {
  const std::size_t count = all ? text.size() : std::min<std::size_t>(1, text.size());
  for (std::size_t i = 0; i < count; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    text[i] = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
  }
}

// Where `offset` and `length` of ${X:offset:length} fall in a sequence of `size` items: [first, last).
std::pair<std::size_t, std::size_t> substring_range(std::size_t size, std::int64_t offset,
                                                    std::optional<std::int64_t> length) {
  const auto whole = static_cast<std::int64_t>(size);
  std::int64_t first = offset < 0 ? whole + std::max(offset, -whole - 1) : std::min(offset, whole);
  if (first < 0) return {0, 0};  // bash: an offset before the start gives nothing
  std::int64_t last = whole;
  if (length) last = *length >= 0 ? first + std::min(*length, whole - first) : whole + std::max(*length, -whole);
  if (last < first) last = first;
  return {static_cast<std::size_t>(first), static_cast<std::size_t>(last)};
}

}  // namespace

bool Expander::apply_transform(ParameterValue& found, std::string_view rest, int line) {
  const char op = rest[0];
  if (op == '#' || op == '%') {
    const bool longest = rest.size() > 1 && rest[1] == op;
    const std::string pattern = text_of(rest.substr(longest ? 2 : 1), Quoting::None, line, true).text;
    for (Value& value : found.values) {
      std::optional<std::string> removed = remove_affix(value.text, pattern, op == '#', longest);
      if (removed)
        value.text = std::move(*removed);
      else
        state_.notes.add(line, "pattern removal on a long value not done: " + excerpt(rest));
    }
    return true;
  }
  if (op == '/') {
    apply_replace(found, rest.substr(1), line);
  } else if (op == ':') {
    apply_substring(found, rest.substr(1), line);
  } else if (op == '^' || op == ',') {
    const bool all = rest.size() > 1 && rest[1] == op;
    for (Value& value : found.values) change_case(value.text, op == '^', all);
  } else if (op == '@') {
    state_.notes.add(line, fmt::format("transformation {} not applied", excerpt(rest)));
  } else {
    return false;
  }
  return true;
}

void Expander::apply_replace(ParameterValue& found, std::string_view rest, int line) {
  ReplaceMode mode = ReplaceMode::First;
  if (!rest.empty() && (rest[0] == '/' || rest[0] == '#' || rest[0] == '%')) {
    mode = rest[0] == '/' ? ReplaceMode::All : rest[0] == '#' ? ReplaceMode::Prefix : ReplaceMode::Suffix;
    rest.remove_prefix(1);
  }
  std::size_t separator = 0;
  while (separator < rest.size() && rest[separator] != '/') separator += rest[separator] == '\\' ? 2 : 1;
  separator = std::min(separator, rest.size());
  const std::string pattern = text_of(rest.substr(0, separator), Quoting::None, line, true).text;
  const std::string replacement =
      separator < rest.size() ? text_of(rest.substr(separator + 1), Quoting::None, line).text : "";
  for (Value& value : found.values) {
    std::optional<std::string> replaced = replace_pattern(value.text, pattern, replacement, mode);
    if (replaced)
      value.text = std::move(*replaced);
    else
      state_.notes.add(line, "pattern replacement on a long value not done: " + excerpt(rest));
  }
}

void Expander::apply_substring(ParameterValue& found, std::string_view range, int line) {
  const std::size_t colon = range.find(':');
  const std::optional<std::int64_t> offset = arithmetic(range.substr(0, colon), line);
  std::optional<std::int64_t> length;
  if (colon != std::string_view::npos) length = arithmetic(range.substr(colon + 1), line);
  if (!offset || (colon != std::string_view::npos && !length)) {
    state_.notes.add(line, "substring range not evaluated: " + excerpt(range));
    for (Value& value : found.values) value.uncertain = true;
    return;
  }
  if (found.list) {
    // ${A[@]:1:2} takes elements, not characters
    const auto [first, last] = substring_range(found.values.size(), *offset, length);
    found.values = std::vector<Value>(found.values.begin() + static_cast<std::ptrdiff_t>(first),
                                      found.values.begin() + static_cast<std::ptrdiff_t>(last));
    found.set = !found.values.empty();
    return;
  }
  for (Value& value : found.values) {
    const auto [first, last] = substring_range(value.text.size(), *offset, length);
    value.text = value.text.substr(first, last - first);
  }
}

// ---- Arithmetic ----

namespace {

// Thrown inside the evaluator when a value it needs is text the reader kept without evaluating.
struct UnknownValue {};

struct ArithmeticToken {
  enum class Kind { Number, Name, Operator, End };
  Kind kind = Kind::End;
  std::string_view text;
  std::int64_t number = 0;
};

// Longest first, so that "<<=" is not read as "<<" and "=".
constexpr std::string_view kArithmeticOperators[] = {
    "**=", "<<=", ">>=", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
    "+=",  "-=",  "*=",  "/=", "%=", "&=", "^=", "|=", "+",  "-",  "*",  "/",  "%",  "(",
    ")",   "<",   ">",   "!",  "~",  "&",  "^",  "|",  "?",  ":",  "=",  ","};

constexpr std::string_view kAssignments[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=", "<<=", ">>=", "**="};

// Binary operators from the loosest to the tightest binding; ** (the last) groups to the right.
constexpr std::string_view kBinaryLevels[][4] = {
    {"||"},       {"&&"},     {"|"},           {"^"}, {"&"}, {"==", "!="}, {"<", "<=", ">", ">="},
    {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}, {"**"}};
constexpr int kLevelCount = static_cast<int>(std::size(kBinaryLevels));

int digit_value(char c, int base) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + (base <= 36 ? 10 : 36);
  if (c == '@') return 62;
  if (c == '_') return 63;
  return 64;
}

// An integer as bash writes it: 42, 0x2a, 052, 16#2a. Empty when it is not one; `overflow` set when too large.
std::optional<std::int64_t> parse_arithmetic_number(std::string_view text, bool& overflow) {
  int base = 10;
  std::string_view digits = text;
  if (const std::size_t hash = text.find('#'); hash != std::string_view::npos) {
    if (hash == 0 || hash > 2 || !all_digits(text.substr(0, hash))) return std::nullopt;
    base = std::stoi(std::string(text.substr(0, hash)));
    digits = text.substr(hash + 1);
    if (base < 2 || base > 64) return std::nullopt;
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    digits = text.substr(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    digits = text.substr(1);
  }
  if (digits.empty()) return std::nullopt;
  std::int64_t value = 0;
  for (const char c : digits) {
    const int digit = digit_value(c, base);
    if (digit >= base) return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, digit, &value)) overflow = true;
  }
  return value;
}

// Evaluates one arithmetic expression as bash does, with 64-bit integers. `live` false: the part of a && || or
// ?: that is skipped, which is parsed but neither assigns nor fails.
class Arithmetic {
 public:
  Arithmetic(ShellState& state, std::string_view text, int line) : state_(state), text_(text), line_(line) {
    tokenize();
  }

  std::int64_t evaluate() {
    if (tokens_.front().kind == ArithmeticToken::Kind::End) return 0;
    const std::int64_t value = comma(true);
    if (current().kind != ArithmeticToken::Kind::End) syntax_error();
    return value;
  }

 private:
  const ArithmeticToken& current() const { return tokens_[pos_]; }
  const ArithmeticToken& following() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  bool at(std::string_view op) const {
    return current().kind == ArithmeticToken::Kind::Operator && current().text == op;
  }
  void expect(std::string_view op) {
    if (!at(op)) syntax_error();
    ++pos_;
  }

  [[noreturn]] void syntax_error() const {
    state_.source.fail(line_, fmt::format("invalid arithmetic expression `{}`", excerpt(text_)),
                       "integers, variable names and the operators + - * / % ** ( ) < <= > >= == != && || ! ?: =");
  }
  [[noreturn]] void overflow() const {
    state_.source.fail(line_, fmt::format("integer overflow in `{}`", excerpt(text_)),
                       "results between -9223372036854775808 and 9223372036854775807");
  }
  [[noreturn]] void division_by_zero() const {
    state_.source.fail(line_, fmt::format("division by zero in `{}`", excerpt(text_)), "a divisor other than 0");
  }

  void tokenize();
  std::size_t read_name(std::size_t pos);
  std::size_t read_number(std::size_t pos);
  std::int64_t comma(bool live);
  std::int64_t assignment(bool live);
  std::int64_t conditional(bool live);
  std::int64_t binary(int level, bool live);
  std::int64_t unary(bool live);
  std::int64_t postfix(bool live);
  std::int64_t primary(bool live);
  std::int64_t read_variable(std::string_view reference, bool live);
  void write_variable(std::string_view reference, std::int64_t value);
  std::int64_t element_index(std::string_view reference, std::string_view& name);
  std::int64_t combine(std::string_view op, std::int64_t left, std::int64_t right, bool live) const;
  std::int64_t power(std::int64_t base, std::int64_t exponent, bool live) const;

  ShellState& state_;
  std::string_view text_;
  int line_;
  std::vector<ArithmeticToken> tokens_;
  std::size_t pos_ = 0;
};

void Arithmetic::tokenize() {
  std::size_t pos = 0;
  while (pos < text_.size()) {
    const char c = text_[pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos;
    } else if (is_name_start(c)) {
      pos = read_name(pos);
    } else if (is_digit(c)) {
      pos = read_number(pos);
    } else {
      const std::string_view rest = text_.substr(pos);
      const auto* op = std::find_if(std::begin(kArithmeticOperators), std::end(kArithmeticOperators),
                                    [&](std::string_view candidate) { return rest.starts_with(candidate); });
      if (op == std::end(kArithmeticOperators)) syntax_error();
      tokens_.push_back({ArithmeticToken::Kind::Operator, rest.substr(0, op->size()), 0});
      pos += op->size();
    }
  }
  tokens_.push_back({ArithmeticToken::Kind::End, {}, 0});
}

std::size_t Arithmetic::read_name(std::size_t pos) {
  std::size_t end = pos;
  while (end < text_.size() && is_name_char(text_[end])) ++end;
  if (end < text_.size() && text_[end] == '[') {  // an array element: the subscript is evaluated when read
    int level = 0;
    std::size_t close = end;
    for (; close < text_.size(); ++close) {
      if (text_[close] == '[') ++level;
      if (text_[close] == ']' && --level == 0) break;
    }
    if (close >= text_.size()) syntax_error();
    end = close + 1;
  }
  tokens_.push_back({ArithmeticToken::Kind::Name, text_.substr(pos, end - pos), 0});
  return end;
}

std::size_t Arithmetic::read_number(std::size_t pos) {
  std::size_t end = pos;
  while (end < text_.size() && (is_name_char(text_[end]) || text_[end] == '#' || text_[end] == '@')) ++end;
  bool too_large = false;
  const std::optional<std::int64_t> number = parse_arithmetic_number(text_.substr(pos, end - pos), too_large);
  if (!number) syntax_error();
  if (too_large) overflow();
  tokens_.push_back({ArithmeticToken::Kind::Number, text_.substr(pos, end - pos), *number});
  return end;
}

std::int64_t Arithmetic::comma(bool live) {
  std::int64_t value = assignment(live);
  while (at(",")) {
    ++pos_;
    value = assignment(live);
  }
  return value;
}

std::int64_t Arithmetic::assignment(bool live) {
  const bool assigns = current().kind == ArithmeticToken::Kind::Name &&
                       following().kind == ArithmeticToken::Kind::Operator && is_one_of(following().text, kAssignments);
  if (!assigns) return conditional(live);
  const std::string_view reference = current().text;
  const std::string_view op = following().text;
  pos_ += 2;
  const DepthGuard guard(state_, line_);
  const std::int64_t right = assignment(live);
  const std::int64_t value =
      op == "=" ? right : combine(op.substr(0, op.size() - 1), read_variable(reference, live), right, live);
  if (live) write_variable(reference, value);
  return value;
}

std::int64_t Arithmetic::conditional(bool live) {
  const std::int64_t condition = binary(0, live);
  if (!at("?")) return condition;
  ++pos_;
  const DepthGuard guard(state_, line_);
  const std::int64_t when_true = comma(live && condition != 0);
  expect(":");
  const std::int64_t when_false = conditional(live && condition == 0);
  return condition != 0 ? when_true : when_false;
}

std::int64_t Arithmetic::binary(int level, bool live) {
  if (level == kLevelCount) return unary(live);
  std::int64_t left = binary(level + 1, live);
  while (current().kind == ArithmeticToken::Kind::Operator && is_one_of(current().text, kBinaryLevels[level])) {
    const std::string_view op = current().text;
    ++pos_;
    if (op == "&&" || op == "||") {
      // The right side is evaluated only when it decides the result.
      const bool needed = (op == "&&") == (left != 0);
      const std::int64_t right = binary(level + 1, live && needed);
      left = op == "&&" ? (left != 0 && right != 0) : (left != 0 || right != 0);
    } else if (op == "**") {
      const DepthGuard guard(state_, line_);
      left = combine(op, left, binary(level, live), live);
    } else {
      left = combine(op, left, binary(level + 1, live), live);
    }
  }
  return left;
}

std::int64_t Arithmetic::unary(bool live) {
  if (at("+") || at("-") || at("!") || at("~")) {
    const char op = current().text[0];
    ++pos_;
    const DepthGuard guard(state_, line_);
    const std::int64_t value = unary(live);
    if (op == '-' && value == std::numeric_limits<std::int64_t>::min()) {
      if (live) overflow();
      return 0;
    }
    if (op == '-') return -value;
    if (op == '!') return value == 0 ? 1 : 0;
    return op == '~' ? ~value : value;
  }
  if ((at("++") || at("--")) && following().kind != ArithmeticToken::Kind::Name) {
    // Not before a name, bash reads "--1" as two signs: - (-1).
    ++pos_;
    const DepthGuard guard(state_, line_);
    return unary(live);
  }
  if (at("++") || at("--")) {  // ++NAME, --NAME
    const std::string_view op = current().text;
    ++pos_;
    const std::string_view reference = current().text;
    ++pos_;
    const std::int64_t value = combine(op.substr(1), read_variable(reference, live), 1, live);
    if (live) write_variable(reference, value);
    return value;
  }
  return postfix(live);
}

std::int64_t Arithmetic::postfix(bool live) {
  const bool steps = current().kind == ArithmeticToken::Kind::Name &&
                     following().kind == ArithmeticToken::Kind::Operator &&
                     (following().text == "++" || following().text == "--");
  if (!steps) return primary(live);
  const std::string_view reference = current().text;
  const std::string_view op = following().text;
  pos_ += 2;
  const std::int64_t value = read_variable(reference, live);
  if (live) write_variable(reference, combine(op.substr(1), value, 1, live));
  return value;
}

std::int64_t Arithmetic::primary(bool live) {
  const ArithmeticToken token = current();
  if (token.kind == ArithmeticToken::Kind::Number) {
    ++pos_;
    return token.number;
  }
  if (token.kind == ArithmeticToken::Kind::Name) {
    ++pos_;
    return read_variable(token.text, live);
  }
  if (!at("(")) syntax_error();
  ++pos_;
  const DepthGuard guard(state_, line_);
  const std::int64_t value = comma(live);
  expect(")");
  return value;
}

// NAME or NAME[subscript]: `name` is set to NAME; the subscript (0 without one) is evaluated in turn.
std::int64_t Arithmetic::element_index(std::string_view reference, std::string_view& name) {
  const std::size_t bracket = reference.find('[');
  name = reference.substr(0, bracket);
  if (bracket == std::string_view::npos) return 0;
  const std::string subscript(reference.substr(bracket + 1, reference.size() - bracket - 2));
  const DepthGuard guard(state_, line_);
  return Arithmetic(state_, subscript, line_).evaluate();
}

std::int64_t Arithmetic::read_variable(std::string_view reference, bool live) {
  if (!live) return 0;
  std::string_view name;
  const std::int64_t index = element_index(reference, name);
  const Variable* variable = state_.find(name);
  const Value* value = nullptr;
  if (variable != nullptr) {
    const auto element = variable->elements.find(index);
    if (element != variable->elements.end()) value = &element->second;
  }
  if (value == nullptr) {
    state_.notes.add(line_, fmt::format("{} is unset, taken as 0 in arithmetic", reference));
    return 0;
  }
  if (value->uncertain) throw UnknownValue{};
  // A value that is not a number is itself an expression (bash evaluates X=Y+1 in $((X))); copied because that
  // evaluation may assign to this very variable.
  const std::string expression = value->text;
  const DepthGuard guard(state_, line_);
  return Arithmetic(state_, expression, line_).evaluate();
}

void Arithmetic::write_variable(std::string_view reference, std::int64_t value) {
  std::string_view name;
  const std::int64_t index = element_index(reference, name);
  Variable& variable = state_.variables[std::string(name)];
  variable.elements[index] = Value{std::to_string(value), line_, false};
  if (index != 0) variable.is_array = true;
}

std::int64_t Arithmetic::power(std::int64_t base, std::int64_t exponent, bool live) const {
  if (exponent < 0) {
    if (live)
      state_.source.fail(line_, fmt::format("negative exponent in `{}`", excerpt(text_)), "an exponent of 0 or more");
    return 0;
  }
  std::int64_t result = 1;
  while (exponent > 0) {
    bool overflowed = false;
    if ((exponent & 1) != 0) overflowed = __builtin_mul_overflow(result, base, &result);
    exponent >>= 1;
    // Squaring can overflow only when a higher power is still needed, so it is a real overflow.
    if (exponent > 0) overflowed = __builtin_mul_overflow(base, base, &base) || overflowed;
    if (overflowed) {
      if (live) overflow();
      return 0;
    }
  }
  return result;
}

std::int64_t Arithmetic::combine(std::string_view op, std::int64_t left, std::int64_t right, bool live) const {
  std::int64_t result = 0;
  bool overflowed = false;
  if (op == "+")
    overflowed = __builtin_add_overflow(left, right, &result);
  else if (op == "-")
    overflowed = __builtin_sub_overflow(left, right, &result);
  else if (op == "*")
    overflowed = __builtin_mul_overflow(left, right, &result);
  else if (op == "**")
    return power(left, right, live);
  else if (op == "/" || op == "%") {
    if (right == 0) {
      if (live) division_by_zero();
      return 0;
    }
    overflowed = left == std::numeric_limits<std::int64_t>::min() && right == -1;
    if (!overflowed) result = op == "/" ? left / right : left % right;
  } else if (op == "<<" || op == ">>") {
    overflowed = right < 0 || right > 63;  // bash shifts by the count modulo 64; a script relying on that is wrong
    if (!overflowed)
      result = op == "<<" ? static_cast<std::int64_t>(static_cast<std::uint64_t>(left) << right) : left >> right;
  } else if (op == "&")
    result = left & right;
  else if (op == "|")
    result = left | right;
  else if (op == "^")
    result = left ^ right;
  else if (op == "==")
    result = left == right;
  else if (op == "!=")
    result = left != right;
  else if (op == "<")
    result = left < right;
  else if (op == "<=")
    result = left <= right;
  else if (op == ">")
    result = left > right;
  else if (op == ">=")
    result = left >= right;
  if (overflowed) {
    if (live) overflow();
    return 0;
  }
  return result;
}

}  // namespace

std::optional<std::int64_t> Expander::arithmetic(std::string_view expression, int line) {
  const Field expanded = text_of(expression, Quoting::Double, line);
  if (expanded.uncertain) return std::nullopt;
  try {
    return Arithmetic(state_, expanded.text, line).evaluate();
  } catch (const UnknownValue&) {
    return std::nullopt;
  }
}

// ---- Tests: [ ... ], test, [[ ... ]] ----

namespace {

constexpr std::string_view kFileTests[] = {"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p",
                                           "-r", "-s", "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S"};
constexpr std::string_view kUnaryTests[] = {"-z", "-n", "-v", "-t", "-o"};
constexpr std::string_view kStringComparisons[] = {"=", "==", "!=", "<", ">", "=~"};
constexpr std::string_view kIntegerComparisons[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"};
constexpr std::string_view kFileComparisons[] = {"-nt", "-ot", "-ef"};

bool is_unary_test(std::string_view op) { return is_one_of(op, kFileTests) || is_one_of(op, kUnaryTests); }
bool is_binary_test(std::string_view op) {
  return is_one_of(op, kStringComparisons) || is_one_of(op, kIntegerComparisons) || is_one_of(op, kFileComparisons);
}

Truth truth_of(bool value) { return value ? Truth::True : Truth::False; }
Truth negate(Truth value) {
  if (value == Truth::Unknown) return value;
  return value == Truth::True ? Truth::False : Truth::True;
}
Truth both(Truth left, Truth right) {
  if (left == Truth::False || right == Truth::False) return Truth::False;
  return left == Truth::True && right == Truth::True ? Truth::True : Truth::Unknown;
}
Truth either(Truth left, Truth right) {
  if (left == Truth::True || right == Truth::True) return Truth::True;
  return left == Truth::False && right == Truth::False ? Truth::False : Truth::Unknown;
}

// -z, -n, -v and the file tests, which are taken to be true: the files of the machine that runs the script are
// not there to look at.
Truth unary_test(ShellState& state, std::string_view op, const Field& operand, int line) {
  if (is_one_of(op, kFileTests)) {
    state.notes.add(line, fmt::format("file test {} {} taken as true", op, excerpt(operand.text)));
    return Truth::True;
  }
  if (op == "-v") {
    const std::string_view name = std::string_view(operand.text).substr(0, operand.text.find('['));
    return truth_of(state.find(name) != nullptr);
  }
  if (op == "-t" || op == "-o") {
    state.notes.add(line, fmt::format("test {} {} not evaluated", op, excerpt(operand.text)));
    return Truth::Unknown;
  }
  if (operand.uncertain) return Truth::Unknown;
  return truth_of((op == "-n") == !operand.text.empty());
}

Truth compare_strings(std::string_view op, const Field& left, const Field& right, bool right_is_pattern) {
  if (left.uncertain || right.uncertain) return Truth::Unknown;
  if (op == "<") return truth_of(left.text < right.text);
  if (op == ">") return truth_of(left.text > right.text);
  const Truth equal = right_is_pattern ? match_pattern(right.text, left.text) : truth_of(left.text == right.text);
  return op == "!=" ? negate(equal) : equal;
}

Truth compare_integers(std::string_view op, std::optional<std::int64_t> left, std::optional<std::int64_t> right) {
  if (!left || !right) return Truth::Unknown;
  if (op == "-eq") return truth_of(*left == *right);
  if (op == "-ne") return truth_of(*left != *right);
  if (op == "-lt") return truth_of(*left < *right);
  if (op == "-le") return truth_of(*left <= *right);
  if (op == "-gt") return truth_of(*left > *right);
  return truth_of(*left >= *right);
}

// An integer operand of [ ]: optional blanks and sign, then decimal digits.
std::optional<std::int64_t> test_integer(const Field& operand) {
  if (operand.uncertain) return std::nullopt;
  std::string_view text = operand.text;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  const bool negative = !text.empty() && text.front() == '-';
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
  if (!all_digits(text)) return std::nullopt;
  bool overflowed = false;
  const std::optional<std::int64_t> value = parse_arithmetic_number(fmt::format("10#{}", text), overflowed);
  if (!value || overflowed) return std::nullopt;
  return negative ? -*value : *value;
}

// [ ... ] and test: ! ( ) -a -o between primaries, on words already expanded.
class TestEvaluator {
 public:
  TestEvaluator(ShellState& state, const std::vector<Field>& arguments, int line)
      : state_(state), arguments_(arguments), line_(line) {}

  Truth run() {
    if (arguments_.empty()) return Truth::False;
    const Truth result = disjunction();
    if (malformed_ || pos_ != arguments_.size()) return Truth::Unknown;
    return result;
  }

 private:
  bool at(std::string_view word) const { return pos_ < arguments_.size() && arguments_[pos_].text == word; }

  Truth disjunction() {
    Truth result = conjunction();
    while (at("-o") && pos_ + 1 < arguments_.size()) {
      ++pos_;
      result = either(result, conjunction());
    }
    return result;
  }
  Truth conjunction() {
    Truth result = negation();
    while (at("-a") && pos_ + 1 < arguments_.size()) {
      ++pos_;
      result = both(result, negation());
    }
    return result;
  }
  Truth negation() {
    bool negated = false;
    while (at("!") && pos_ + 1 < arguments_.size()) {
      negated = !negated;
      ++pos_;
    }
    const Truth result = primary();
    return negated ? negate(result) : result;
  }
  Truth primary();

  ShellState& state_;
  const std::vector<Field>& arguments_;
  int line_;
  std::size_t pos_ = 0;
  bool malformed_ = false;
};

Truth TestEvaluator::primary() {
  if (pos_ >= arguments_.size()) {
    malformed_ = true;
    return Truth::Unknown;
  }
  const Field& first = arguments_[pos_];
  if (pos_ + 2 < arguments_.size() && is_binary_test(arguments_[pos_ + 1].text)) {
    const std::string_view op = arguments_[pos_ + 1].text;
    const Field& second = arguments_[pos_ + 2];
    pos_ += 3;
    if (is_one_of(op, kIntegerComparisons)) {
      const Truth result = compare_integers(op, test_integer(first), test_integer(second));
      if (result == Truth::Unknown && !first.uncertain && !second.uncertain)
        state_.notes.add(line_,
                         fmt::format("{} {} {}: integers expected", excerpt(first.text), op, excerpt(second.text)));
      return result;
    }
    if (is_one_of(op, kFileComparisons) || op == "=~") return Truth::Unknown;
    return compare_strings(op, first, second, false);
  }
  if (first.text == "(" && pos_ + 1 < arguments_.size()) {
    ++pos_;
    const DepthGuard guard(state_, line_);
    const Truth result = disjunction();
    if (at(")"))
      ++pos_;
    else
      malformed_ = true;
    return result;
  }
  if (is_unary_test(first.text) && first.text != "-a" && first.text != "-o" && pos_ + 1 < arguments_.size()) {
    pos_ += 2;
    return unary_test(state_, first.text, arguments_[pos_ - 1], line_);
  }
  ++pos_;
  return first.uncertain ? Truth::Unknown : truth_of(!first.text.empty());
}

}  // namespace

Truth evaluate_test(ShellState& state, const std::vector<Field>& arguments, int line) {
  return TestEvaluator(state, arguments, line).run();
}

namespace {

// [[ ... ]]: ! ( ) && || between primaries. Operands are expanded without word splitting, and the operands of
// -eq and the like are arithmetic expressions.
class ConditionalEvaluator {
 public:
  ConditionalEvaluator(ShellState& state, const std::vector<CondToken>& tokens, int line)
      : state_(state), expander_(state), tokens_(tokens), line_(line) {}

  Truth run() {
    if (tokens_.empty()) return Truth::False;
    const Truth result = disjunction();
    if (malformed_ || pos_ != tokens_.size()) return Truth::Unknown;
    return result;
  }

 private:
  bool at_operator(std::string_view op) const {
    return pos_ < tokens_.size() && tokens_[pos_].is_operator && tokens_[pos_].word.text == op;
  }
  bool at_word(std::string_view word) const {
    return pos_ < tokens_.size() && !tokens_[pos_].is_operator && tokens_[pos_].word.text == word;
  }
  bool is_binary_at(std::size_t pos) const {
    if (pos >= tokens_.size()) return false;
    const CondToken& token = tokens_[pos];
    if (token.is_operator) return token.word.text == "<" || token.word.text == ">";
    return is_binary_test(token.word.text);
  }
  Field operand(std::size_t pos) { return expander_.text(tokens_[pos].word); }

  Truth disjunction() {
    Truth result = conjunction();
    while (at_operator("||")) {
      ++pos_;
      result = either(result, conjunction());
    }
    return result;
  }
  Truth conjunction() {
    Truth result = negation();
    while (at_operator("&&")) {
      ++pos_;
      result = both(result, negation());
    }
    return result;
  }
  Truth negation() {
    bool negated = false;
    while (at_word("!")) {
      negated = !negated;
      ++pos_;
    }
    const Truth result = primary();
    return negated ? negate(result) : result;
  }
  Truth primary();
  Truth binary();

  ShellState& state_;
  Expander expander_;
  const std::vector<CondToken>& tokens_;
  int line_;
  std::size_t pos_ = 0;
  bool malformed_ = false;
};

Truth ConditionalEvaluator::primary() {
  if (pos_ >= tokens_.size() || (tokens_[pos_].is_operator && !at_operator("("))) {
    malformed_ = true;
    return Truth::Unknown;
  }
  if (at_operator("(")) {
    ++pos_;
    const DepthGuard guard(state_, line_);
    const Truth result = disjunction();
    if (at_operator(")"))
      ++pos_;
    else
      malformed_ = true;
    return result;
  }
  if (pos_ + 2 < tokens_.size() && is_binary_at(pos_ + 1)) return binary();
  const std::string_view word = tokens_[pos_].word.text;
  if (is_unary_test(word) && pos_ + 1 < tokens_.size() && !tokens_[pos_ + 1].is_operator) {
    pos_ += 2;
    return unary_test(state_, word, operand(pos_ - 1), line_);
  }
  const Field value = operand(pos_++);
  return value.uncertain ? Truth::Unknown : truth_of(!value.text.empty());
}

Truth ConditionalEvaluator::binary() {
  const RawWord& left = tokens_[pos_].word;
  const std::string_view op = tokens_[pos_ + 1].word.text;
  const RawWord& right = tokens_[pos_ + 2].word;
  pos_ += 3;
  if (is_one_of(op, kIntegerComparisons))
    return compare_integers(op, expander_.arithmetic(left.text, left.line),
                            expander_.arithmetic(right.text, right.line));
  if (op == "=~" || is_one_of(op, kFileComparisons)) {
    state_.notes.add(line_, fmt::format("[[ {} {} {} ]] not evaluated", excerpt(left.text), op, excerpt(right.text)));
    return Truth::Unknown;
  }
  const bool pattern = op == "==" || op == "=" || op == "!=";
  return compare_strings(op, expander_.text(left), pattern ? expander_.pattern(right) : expander_.text(right), pattern);
}

}  // namespace

Truth evaluate_conditional(ShellState& state, const std::vector<CondToken>& tokens, int line) {
  return ConditionalEvaluator(state, tokens, line).run();
}

}  // namespace gpuplan::framework::shell
