#include <gtest/gtest.h>

#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/units.hpp"

using namespace gpuplan;

TEST(Units, FormatsDecimalAndBinarySideBySide) {
  // The chapter's worked example: 7e9 parameters x 18 bytes.
  EXPECT_EQ(format_bytes(126e9), "126.0 GB (117.3 GiB)");
  EXPECT_EQ(format_bytes(1073741824.0), "1.1 GB (1.0 GiB)");
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
