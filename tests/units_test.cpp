#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/units.hpp"

using namespace gpuplan;

TEST(Units, FormatsDecimalAndBinarySideBySide) {
  // The chapter's worked example: 7e9 parameters x 18 bytes.
  EXPECT_EQ(format_bytes(126e9), "126.0 GB (117.3 GiB)");
  EXPECT_EQ(format_bytes(1073741824.0), "1.1 GB (1.0 GiB)");
}

TEST(Units, SizesAboveATerabyteAreInTerabytes) {
  // 2.5e12 / 2^40 = 2.2737 TiB.
  EXPECT_EQ(format_bytes(2.5e12), "2.50 TB (2.27 TiB)");
  EXPECT_EQ(format_gb(2.5e12), "2.50 TB");
  EXPECT_EQ(format_gb(999.9e9), "999.9 GB");
}

TEST(Units, CountsReadNaturally) {
  EXPECT_EQ(format_count(1e15), "1,000 T");
  EXPECT_EQ(format_count(12345e12), "12,345 T");
  EXPECT_EQ(format_count(124439808), "124.4 M");   // GPT-2's parameters
  EXPECT_EQ(format_count(8.03e9), "8.03 B");
  EXPECT_EQ(format_count(999.999e9), "1.00 T");     // not "1000.00 B"
}

TEST(Units, QuantitiesAgreeInNumber) {
  EXPECT_EQ(format_quantity(1, "GPU", "GPUs"), "1 GPU");
  EXPECT_EQ(format_quantity(8, "GPU", "GPUs"), "8 GPUs");
  EXPECT_EQ(format_quantity(1, "microbatch", "microbatches"), "1 microbatch");
  EXPECT_EQ(format_quantity(0, "layer", "layers"), "0 layers");
}

TEST(Units, ParsesSizesWithDecimalAndBinaryUnits) {
  EXPECT_EQ(parse_bytes("80GiB", "--gpu-memory"), 80LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("80GB", "--gpu-memory"), 80000000000LL);
  EXPECT_EQ(parse_bytes("80 gb", "--gpu-memory"), 80000000000LL);
  EXPECT_EQ(parse_bytes("1e9", "--size"), 1000000000LL);
  EXPECT_EQ(parse_bytes("512MiB", "--size"), 512LL * 1024 * 1024);
  EXPECT_THROW(parse_bytes("eighty", "--gpu-memory"), InputError);
  EXPECT_THROW(parse_bytes("80XB", "--gpu-memory"), InputError);
  EXPECT_THROW(parse_bytes("-5GB", "--gpu-memory"), InputError);
}

TEST(Units, ParsesCountsWithSuffixes) {
  EXPECT_DOUBLE_EQ(parse_count("7e9", "--params"), 7e9);
  EXPECT_DOUBLE_EQ(parse_count("7B", "--params"), 7e9);
  EXPECT_DOUBLE_EQ(parse_count("124M", "--params"), 124e6);
  EXPECT_DOUBLE_EQ(parse_count("1.5T", "--params"), 1.5e12);
  EXPECT_THROW(parse_count("7Q", "--params"), InputError);
}

TEST(Names, SuggestsClosestNames) {
  const std::vector<std::string> names = {"llama-2-7b", "llama-3.1-70b", "gpt3-175b", "mixtral-8x7b"};
  EXPECT_EQ(closest_names("lama-3.1-70b", names).front(), "llama-3.1-70b");
  EXPECT_EQ(closest_names("gpt3-175", names).front(), "gpt3-175b");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(did_you_mean("zzzzzzzzzzzzzzzzzzzz", names), "");
}

namespace {

// The textbook dynamic programme over the whole table, lower-casing both words.
std::size_t full_table_distance(std::string a, std::string b) {
  for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j)
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0u : 1u)});
  return d[a.size()][b.size()];
}

}  // namespace

TEST(Names, SuggestionsAreTheCandidatesWithinTheCutoffByFullDistance) {
  // closest_names stops comparing a candidate once it is past the cutoff; what it offers must be what the whole
  // table gives: substring hits first, then every candidate within max(3, length / 2) edits, nearest first. The
  // wider alphabet gives words that share few letters, which closest_names skips by their letter counts alone.
  std::mt19937 random(7);
  std::string letters;
  auto word = [&](std::size_t max_length) {
    std::string w(std::uniform_int_distribution<std::size_t>(1, max_length)(random), 'a');
    for (char& c : w) c = letters[std::uniform_int_distribution<std::size_t>(0, letters.size() - 1)(random)];
    return w;
  };
  for (int trial = 0; trial < 600; ++trial) {
    letters = trial < 300 ? "abAB-_c" : "abcdefghijKLMN-_";
    std::vector<std::string> candidates;
    for (int i = 0; i < 12; ++i) candidates.push_back(word(14));
    const std::string key = word(14);
    std::string lower_key = key;
    for (char& c : lower_key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t cutoff = std::max<std::size_t>(3, key.size() / 2);
    std::vector<std::pair<std::size_t, std::string>> expected;
    for (const auto& c : candidates) {
      std::string lower_c = c;
      for (char& ch : lower_c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower_c.find(lower_key) != std::string::npos || lower_key.find(lower_c) != std::string::npos)
        expected.emplace_back(0, c);
      else if (full_table_distance(key, c) <= cutoff)
        expected.emplace_back(1 + full_table_distance(key, c), c);
    }
    std::stable_sort(expected.begin(), expected.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::string> want;
    for (std::size_t i = 0; i < expected.size() && i < 3; ++i) want.push_back(expected[i].second);
    EXPECT_EQ(closest_names(key, candidates), want) << key;
    EXPECT_EQ(edit_distance(key, candidates[0]), full_table_distance(key, candidates[0]));
  }
}
