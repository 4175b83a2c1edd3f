// The sweep as the user writes it: node counts, a deadline, prices.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "gpuplan/error.hpp"
#include "size/sizing.hpp"
#include "util/from_chars.hpp"

namespace gpuplan::sizing {

namespace {

constexpr std::int64_t kMostNodes = 1000000;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// A whole count of nodes, or nullopt.
std::optional<std::int64_t> node_count(std::string_view text) {
  text = trimmed(text);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > kMostNodes)
    return std::nullopt;
  return value;
}

std::optional<double> number(std::string_view text) {
  text = trimmed(text);
  double value = 0;
  const auto [end, error] = detail::from_chars_double(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace

std::vector<std::int64_t> node_counts(std::string_view text, std::string_view field) {
  const std::string accepted =
      fmt::format("MIN:MAX (1 <= MIN <= MAX <= {}) or a comma-separated list of node counts", kMostNodes);
  std::vector<std::int64_t> counts;
  if (text.find(':') != std::string_view::npos) {
    const auto ends = split(text, ':');
    const auto low = ends.size() == 2 ? node_count(ends[0]) : std::nullopt;
    const auto high = ends.size() == 2 ? node_count(ends[1]) : std::nullopt;
    if (!low || !high || *low > *high) throw InputError(std::string(field), fmt::format("'{}'", text), accepted);
    counts = {*low, *high};
    for (std::int64_t power = 1; power <= *high; power *= 2)
      if (power > *low && power < *high) counts.push_back(power);
  } else {
    for (std::string_view part : split(text, ',')) {
      const auto count = node_count(part);
      if (!count) throw InputError(std::string(field), fmt::format("'{}' in '{}'", trimmed(part), text), accepted);
      counts.push_back(*count);
    }
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

double duration_days(std::string_view text, std::string_view field) {
  const std::string accepted = "a positive duration: 90d, 12w, 36h or a number of days";
  text = trimmed(text);
  double scale = 1;   // days
  if (!text.empty()) {
    switch (text.back()) {
      case 'd': text.remove_suffix(1); break;
      case 'w': scale = 7; text.remove_suffix(1); break;
      case 'h': scale = 1.0 / 24; text.remove_suffix(1); break;
      default: break;
    }
  }
  const auto value = number(text);
  if (!value || *value <= 0) throw InputError(std::string(field), fmt::format("'{}'", text), accepted);
  return *value * scale;
}

std::map<std::string, double, std::less<>> prices(std::string_view text, std::string_view field,
                                                  const std::vector<std::string>& systems) {
  const std::string accepted = "dollars per GPU-hour: one number >= 0, or SYSTEM=PRICE,... for the systems compared";
  std::map<std::string, double, std::less<>> out;
  if (const auto all = number(text)) {
    if (*all < 0) throw InputError(std::string(field), fmt::format("'{}'", text), accepted);
    for (const std::string& system : systems) out[system] = *all;
    return out;
  }
  for (std::string_view part : split(text, ',')) {
    const auto pair = split(part, '=');
    const double price = pair.size() == 2 ? number(pair[1]).value_or(-1) : -1;
    const std::string_view system = trimmed(pair[0]);
    if (price < 0) throw InputError(std::string(field), fmt::format("'{}'", trimmed(part)), accepted);
    if (std::find(systems.begin(), systems.end(), system) == systems.end())
      throw InputError(std::string(field), fmt::format("'{}' (not among the systems compared)", system),
                       fmt::format("one of {}", fmt::join(systems, ", ")));
    out[std::string(system)] = price;
  }
  return out;
}

}  // namespace gpuplan::sizing

namespace gpuplan::sizing {

Objective objective(std::string_view name, std::string_view field) {
  if (name == "time") return Objective::time;
  if (name == "cost") return Objective::cost;
  if (name == "energy") return Objective::energy;
  throw InputError(std::string(field), fmt::format("'{}'", name), "time, cost or energy");
}

}  // namespace gpuplan::sizing
