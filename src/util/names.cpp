#include "gpuplan/names.hpp"

#include <algorithm>
#include <cctype>

namespace gpuplan {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::size_t edit_distance(std::string_view a_in, std::string_view b_in) {
  const std::string a = lower(a_in), b = lower(b_in);
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  const std::string key = lower(name);
  // Names farther than this are noise, not suggestions.
  const std::size_t farthest = std::max<std::size_t>(3, key.size() / 2);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    // A substring hit ("llama" in "llama-2-7b") ranks ahead of any edit-distance match.
    const bool contains = !key.empty() && (lc.find(key) != std::string::npos || key.find(lc) != std::string::npos);
    if (contains) {
      scored.emplace_back(0, c);
      continue;
    }
    // The distance is at least the difference in length: a name that much longer or shorter is never offered,
    // and a long garbage word is not compared letter by letter with every candidate.
    const std::size_t length_gap = key.size() > lc.size() ? key.size() - lc.size() : lc.size() - key.size();
    if (length_gap > farthest) continue;
    scored.emplace_back(1 + edit_distance(key, lc), c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [score, c] : scored) {
    if (out.size() >= limit || score > 1 + farthest) break;
    out.push_back(c);
  }
  return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const auto best = closest_names(name, candidates);
  if (best.empty()) return "";
  std::string s = "did you mean ";
  for (std::size_t i = 0; i < best.size(); ++i) {
    if (i > 0) s += (i + 1 == best.size()) ? " or " : ", ";
    s += best[i];
  }
  return s + "?";
}

}  // namespace gpuplan
