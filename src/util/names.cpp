#include "gpuplan/names.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace gpuplan {

namespace {

char lower_char(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

void lower_into(std::string_view s, std::string& out) {
  out.assign(s);
  for (char& c : out) c = lower_char(c);
}

// The edit distance of two lower-case strings when it is at most `limit`, else limit + 1. Only the band of
// width 2 x limit + 1 around the diagonal can hold a distance within the limit, and the row's minimum never
// decreases, so a row past the limit ends the walk: a garbage word is not compared letter by letter with every
// candidate. `row` is scratch space the caller reuses.
std::size_t bounded_distance(std::string_view a, std::string_view b, std::size_t limit, std::vector<std::size_t>& row) {
  const std::size_t beyond = limit + 1;
  const std::size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return beyond;
  row.assign(b.size() + 1, beyond);
  for (std::size_t j = 0; j <= std::min(b.size(), limit); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    const std::size_t first = i > limit ? i - limit : 1;
    const std::size_t last = std::min(b.size(), i + limit);
    std::size_t diag = row[first - 1];
    row[first - 1] = first == 1 && i <= limit ? i : beyond;
    std::size_t row_min = row[first - 1];
    for (std::size_t j = first; j <= last; ++j) {
      const std::size_t up = row[j];
      const std::size_t best = std::min(std::min(up, row[j - 1]) + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u));
      row[j] = std::min(best, beyond);
      row_min = std::min(row_min, row[j]);
      diag = up;
    }
    if (last < b.size()) row[last + 1] = beyond;
    if (row_min > limit) return beyond;
  }
  return std::min(row[b.size()], beyond);
}

// How far two strings' letter counts are apart: the letters of `candidate` that `key` lacks (extra) and those of
// `key` that `candidate` lacks (missing), counted with multiplicity. An edit changes at most one letter on each side,
// so the edit distance is at least the larger of the two; and `key` holds `candidate` (or the reverse) only when
// one of them is zero. `key_counts` holds the lower-case key's letter counts; it is left as it was found.
struct LetterGap {
  std::size_t extra = 0, missing = 0;
};
LetterGap letter_gap(std::array<int, 256>& key_counts, std::size_t key_size, std::string_view candidate) {
  LetterGap gap;
  for (char c : candidate)
    if (key_counts[static_cast<unsigned char>(lower_char(c))]-- <= 0) ++gap.extra;
  for (char c : candidate) ++key_counts[static_cast<unsigned char>(lower_char(c))];
  gap.missing = key_size - (candidate.size() - gap.extra);
  return gap;
}

}  // namespace

std::size_t edit_distance(std::string_view a_in, std::string_view b_in) {
  std::string a, b;
  lower_into(a_in, a);
  lower_into(b_in, b);
  std::vector<std::size_t> row;
  return bounded_distance(a, b, std::max(a.size(), b.size()), row);
}

std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  std::string key;
  lower_into(name, key);
  // Names farther than this are noise, not suggestions.
  const std::size_t farthest = std::max<std::size_t>(3, key.size() / 2);
  std::vector<std::pair<std::size_t, const std::string*>> scored;
  std::string candidate;
  std::vector<std::size_t> row;
  std::array<int, 256> key_counts{};
  for (char c : key) ++key_counts[static_cast<unsigned char>(c)];
  for (const auto& c : candidates) {
    // Most candidates share too few letters with the name to be near it or to hold it: skip them without the
    // letter-by-letter comparison (a script of unknown flags is compared with 1,500 Megatron-LM flags each).
    const LetterGap gap = letter_gap(key_counts, key.size(), c);
    if (gap.extra > 0 && gap.missing > 0 && std::max(gap.extra, gap.missing) > farthest) continue;
    lower_into(c, candidate);
    // A substring hit ("llama" in "llama-2-7b") ranks ahead of any edit-distance match.
    const bool contains =
        !key.empty() && (candidate.find(key) != std::string::npos || key.find(candidate) != std::string::npos);
    if (contains) {
      scored.emplace_back(0, &c);
      continue;
    }
    const std::size_t distance = bounded_distance(key, candidate, farthest, row);
    if (distance <= farthest) scored.emplace_back(1 + distance, &c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [score, c] : scored) {
    if (out.size() >= limit) break;
    out.push_back(*c);
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
