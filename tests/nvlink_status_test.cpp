// nvidia-smi nvlink -s parsing; values read by hand from tests/data/nvlink/.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan {
namespace {

std::string read_nvlink(const std::string& name) {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/nvlink/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(NvlinkStatus, V100WithInactiveLinks) {
  const NvlinkStatus s = parse_nvlink_status(read_nvlink("nvlink-s_v100_inactive-links.txt"));
  ASSERT_EQ(s.gpus.size(), 1u);  // only GPU 3 is printed
  const auto& g = s.gpus[0];
  EXPECT_EQ(g.gpu, 3);
  EXPECT_EQ(g.name, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(g.links_listed, 6);
  EXPECT_EQ(g.links_active, 4);
  EXPECT_EQ(g.inactive_links, (std::vector<int>{3, 5}));
  EXPECT_DOUBLE_EQ(g.per_link_GBps, 25.781);
  ASSERT_TRUE(link_rates_for_smi_rate(g.per_link_GBps).has_value());
  EXPECT_DOUBLE_EQ(link_rates_for_smi_rate(g.per_link_GBps)->nvlink_per_link_GBps, 25.0);  // NVLink 2 nominal
}

TEST(NvlinkStatus, H800EightLinksElided) {
  const NvlinkStatus s = parse_nvlink_status(read_nvlink("nvlink-status_h800_8links.txt"));
  ASSERT_EQ(s.gpus.size(), 3u);  // GPU 0, GPU 1, GPU 7; the rest elided with "..."
  EXPECT_EQ(s.gpus[2].gpu, 7);
  for (const auto& g : s.gpus) {
    EXPECT_EQ(g.name, "NVIDIA H800");
    EXPECT_EQ(g.links_active, 8);
    EXPECT_TRUE(g.inactive_links.empty());
    EXPECT_DOUBLE_EQ(g.per_link_GBps, 26.562);
  }
  ASSERT_NE(s.find(1), nullptr);
  EXPECT_EQ(s.find(4), nullptr);
  bool gap = false;
  for (const auto& w : s.warnings) gap = gap || w.find("GPUs 2-6 not listed") != std::string::npos;
  EXPECT_TRUE(gap);
  ASSERT_TRUE(link_rates_for_gpu("NVIDIA H800").has_value());
  EXPECT_EQ(link_rates_for_gpu("NVIDIA H800")->nvlinks_per_gpu, 8);
}

TEST(NvlinkStatus, GarbageIsAnInputError) {
  try {
    parse_nvlink_status("GPU0 X NV18\nnothing here\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not an nvidia-smi nvlink -s output"), std::string::npos);
  }
  EXPECT_THROW(parse_nvlink_status("GPU 0: NVIDIA H100 (UUID: x)\n  Link 0: fast\n"), InputError);
}

TEST(NvlinkStatus, GivenAsATopologyIsExplained) {
  try {
    parse_topology(read_nvlink("nvlink-status_h800_8links.txt"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--nvlink"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpuplan
