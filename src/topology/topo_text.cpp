#include "topology/topo_text.hpp"

#include <cctype>
#include <charconv>
#include <limits>

namespace gpuplan::topo_text {

std::vector<std::string> clean_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      lines.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    if (c == '\x1b') {  // ESC [ params letter
      std::size_t j = i + 1;
      if (j < text.size() && text[j] == '[') {
        ++j;
        while (j < text.size() && !std::isalpha(static_cast<unsigned char>(text[j])) && text[j] != '\n') ++j;
        if (j < text.size() && text[j] != '\n') i = j;
        else i = j - 1;
      }
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t') continue;
    if (u == 0x7f) continue;
    cur.push_back(c);
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::string trim(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool equals_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && equals_ci(s.substr(0, prefix.size()), prefix);
}

bool parse_int(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::string excerpt(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (out.size() >= 60) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u >= 0x7f ? ' ' : c);
  }
  return out;
}

}  // namespace gpuplan::topo_text
