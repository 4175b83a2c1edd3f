#include "gpuplan/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "gpuplan/error.hpp"
#include "util/from_chars.hpp"

namespace gpuplan {

namespace {

constexpr double kTB = 1e12;
constexpr double kTiB = 1099511627776.0;

// "1,000", "12,345": digits grouped by thousands, for numbers too large for a suffix.
std::string grouped(double value) {
  const std::string digits = fmt::format("{:.0f}", std::fabs(value));
  std::string out = value < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string format_bytes(double bytes) {
  if (std::fabs(bytes) >= kTB) return fmt::format("{:.2f} TB ({:.2f} TiB)", bytes / kTB, bytes / kTiB);
  return fmt::format("{:.1f} GB ({:.1f} GiB)", bytes / kGB, bytes / kGiB);
}

std::string format_gb(double bytes) {
  if (std::fabs(bytes) >= kTB) return fmt::format("{:.2f} TB", bytes / kTB);
  return fmt::format("{:.1f} GB", bytes / kGB);
}

std::string format_quantity(std::int64_t count, std::string_view singular, std::string_view plural) {
  return fmt::format("{} {}", count, count == 1 ? singular : plural);
}

std::string format_count(double count) {
  const double a = std::fabs(count);
  // Each threshold sits where the smaller suffix would round up to 1000 ("1000.00 B" is "1.00 T").
  if (a >= 999.995e12) return grouped(count / 1e12) + " T";
  if (a >= 999.995e9) return fmt::format("{:.2f} T", count / 1e12);
  if (a >= 999.95e6) return fmt::format("{:.2f} B", count / 1e9);
  if (a >= 999.95e3) return fmt::format("{:.1f} M", count / 1e6);
  if (a >= 999.5) return fmt::format("{:.1f} K", count / 1e3);
  return fmt::format("{:.0f}", count);
}

namespace {

// Splits "80GiB" into 80 and "gib". Returns false if there is no leading number.
bool split_number(std::string_view text, double& value, std::string& unit) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  const char* first = s.data() + start;
  const char* last = s.data() + s.size();
  const auto [ptr, ec] = detail::from_chars_double(first, last, value);
  if (ec != std::errc() || ptr == first) return false;
  unit.clear();
  for (const char* p = ptr; p != last; ++p) {
    if (std::isspace(static_cast<unsigned char>(*p))) continue;
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  }
  return std::isfinite(value);
}

}  // namespace

bytes_t parse_bytes(std::string_view text, std::string_view field) {
  const std::string accepted = "a size in bytes such as 80GiB, 80GB, 512MiB or 1e9";
  double value = 0;
  std::string unit;
  if (!split_number(text, value, unit)) throw InputError(std::string(field), fmt::format("'{}'", text), accepted);
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else if (unit == "kib") scale = 1024.0;
  else if (unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "gib") scale = kGiB;
  else if (unit == "tib") scale = kGiB * 1024;
  else throw InputError(std::string(field), fmt::format("'{}' (unknown unit '{}')", text, unit), accepted);
  const double bytes = value * scale;
  if (bytes < 0 || bytes > 9.0e18) throw InputError(std::string(field), fmt::format("'{}'", text), accepted);
  return static_cast<bytes_t>(std::llround(bytes));
}

bytes_t parse_size(std::string_view text, std::string_view field) {
  double value = 0;
  std::string unit;
  if (split_number(text, value, unit) && unit.empty())
    throw InputError(std::string(field), fmt::format("'{}' (no unit)", text),
                     "a size with its unit, such as 80GiB, 80GB or 512MiB");
  return parse_bytes(text, field);
}

double parse_count(std::string_view text, std::string_view field) {
  double value = 0;
  std::string unit;
  const auto refuse = [&](std::string_view why) -> double {
    throw InputError(std::string(field), fmt::format("'{}' {}", text, why), std::string(kCountsAccepted));
  };
  if (!split_number(text, value, unit)) return refuse("is not a number");
  double scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "k") scale = 1e3;
  else if (unit == "m") scale = 1e6;
  else if (unit == "b" || unit == "g") scale = 1e9;
  else if (unit == "t") scale = 1e12;
  else if (unit == "ki") scale = 1024.0;
  else if (unit == "mi") scale = 1024.0 * 1024;
  else if (unit == "gi") scale = kGiB;
  else if (unit == "ti") scale = kGiB * 1024;
  else return refuse(fmt::format("has an unknown suffix '{}'", unit));
  const double count = value * scale;
  // Beyond 2^53 doubles skip integers: no count past it is exact.
  if (!(std::fabs(count) <= 9007199254740992.0)) return refuse("is too large");
  if (count != std::floor(count)) return refuse("is not a whole number");
  return count;
}

}  // namespace gpuplan
