// toml++ behind a small interface: the rest of gpuplan sees flat keys and plain values.
#include "framework/toml_document.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>

#include "gpuplan/error.hpp"

namespace gpuplan::framework {

namespace {

TomlValue value_of(const toml::node& node) {
  TomlValue v;
  v.line = static_cast<int>(node.source().begin.line);
  // Each value is read as its own type only: toml++ 3.3.0 converts a float such as 1e48 to an integer by a cast
  // that overflows (undefined behaviour) when value<std::int64_t>() is asked of it.
  if (const auto* integer = node.as_integer()) v.integer = integer->get();
  if (node.is_number()) v.number = node.value<double>();
  if (const auto* flag = node.as_boolean()) v.boolean = flag->get();
  if (const auto* text = node.as_string()) v.text = text->get();
  if (const toml::array* array = node.as_array())
    for (const toml::node& item : *array)
      if (const auto text = item.value<std::string>(); text && item.is_string()) v.list.push_back(*text);
  return v;
}

void flatten(const toml::table& table, const std::string& prefix, TomlDocument& out) {
  for (const auto& [key, node] : table) {
    const std::string name = prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    if (const toml::table* inner = node.as_table()) flatten(*inner, name, out);
    else out.values[name] = value_of(node);
  }
}

// Comments: what follows a '#' outside quotes on each line.
std::vector<std::string> comments_of(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    char quote = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (quote != 0 && line[i] == quote) quote = 0;
      else if (quote == 0 && (line[i] == '"' || line[i] == '\'')) quote = line[i];
      else if (quote == 0 && line[i] == '#') {
        out.emplace_back(line.substr(i + 1));
        break;
      }
    }
    start = end + 1;
  }
  return out;
}

// The text with every byte outside ASCII read as '?'. toml++ 3.3.0 (Debian 12's) reaches __builtin_unreachable in
// its whitespace table for some non-ASCII code points (U+00A1 to U+0499 among them: marzer/tomlplusplus#190,
// #295, fixed upstream by #305), which is undefined behaviour on a user's file. A torchtitan job's values that
// gpuplan reads are ASCII; non-ASCII is valid TOML only in strings and comments, where '?' is valid too, and an
// error elsewhere, where '?' is one too. The comments are kept from the original text.
std::string ascii_only(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  return out;
}

}  // namespace

TomlDocument read_toml(std::string_view path, std::string_view text) {
  TomlDocument out;
  try {
    const toml::table table = toml::parse(ascii_only(text), path);
    flatten(table, "", out);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}", path, e.source().begin.line), std::string(e.description()),
                     "a TOML job file (toml.io v1.0)");
  }
  out.comments = comments_of(text);
  return out;
}

}  // namespace gpuplan::framework
