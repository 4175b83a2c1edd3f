#pragma once
// Text helpers shared by the topology parsers (private to src/topology).
#include <string>
#include <string_view>
#include <vector>

namespace gpuplan::topo_text {

// Splits into lines (\n, \r\n or \r), removes ANSI escape sequences (ESC [ ... letter) and other control
// characters except tabs.
std::vector<std::string> clean_lines(std::string_view text);

// Whitespace-separated tokens (tabs and spaces alike; empty cells vanish).
std::vector<std::string> tokens(std::string_view line);

std::string trim(std::string_view s);
bool starts_with_ci(std::string_view s, std::string_view prefix);
bool equals_ci(std::string_view a, std::string_view b);

// Non-negative decimal integer that fits in an int; false otherwise.
bool parse_int(std::string_view s, int& out);

// The input's first 60 characters of a line, printable, for messages.
std::string excerpt(std::string_view s);

}  // namespace gpuplan::topo_text
