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
