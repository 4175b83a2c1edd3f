// Bandwidths, domains, pairing and advice. Expected values come from the files (read by hand) and the vendor
// link rates as the hardware catalog records them: NVLink 2/3/4 carry 25 GB/s per link per direction, PCIe 3.0 x16
// 16 GB/s (PCI-SIG's headline figure, 15.75 after 128b/130b encoding; docs/hardware.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

using gpuplan::test::read_test_data;
using gpuplan::test::any_contains;

TopologyReport report(const std::string& file, TopologyOptions opt = {}) {
  return analyze_topology(parse_topology(read_test_data("topo/" + file)), opt);
}

using Groups = std::vector<std::vector<int>>;

TEST(TopoAnalysis, NvswitchBoxIsOneDomainOfEight) {
  const auto r = report("05_hgx-h100_nv18_no-nic_ht-affinity.txt");
  EXPECT_EQ(r.nvlink_domains, (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(r.all_to_all_groups, (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(r.max_tp_in_domain, 8);
  ASSERT_TRUE(r.rates.has_value());
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][7], 18 * 25.0);  // NV18 x 25 GB/s
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[3][3], 0.0);
  EXPECT_DOUBLE_EQ(r.nic_GBps, 50.0);                   // NDR 400 Gb/s for Hopper systems
  EXPECT_TRUE(any_contains(r.advice, "Tensor and expert parallelism up to 8 stay on NVLink"));
}

TEST(TopoAnalysis, DgxA100PairsEachGpuWithItsOwnNic) {
  const auto r = report("01_dgx-a100_nv12_10nic_tabs.txt");
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[1][2], 12 * 25.0);  // NV12
  // GPU0 and GPU1 are both PXB to NIC0 and NIC1: one each. NIC8/NIC9 are SYS to every GPU: nobody's.
  EXPECT_EQ(r.nearest_nic[0], 0);
  EXPECT_EQ(r.nearest_nic[1], 1);
  EXPECT_EQ(r.nearest_nic[6], 6);
  EXPECT_EQ(r.nic_nearest_gpus[0], (std::vector<int>{0, 1}));
  EXPECT_TRUE(r.nic_nearest_gpus[8].empty());
  EXPECT_EQ(r.compute_nics, 8);
  EXPECT_DOUBLE_EQ(r.nic_GBps, 25.0);  // HDR 200 Gb/s
}

TEST(TopoAnalysis, HybridCubeMeshAllowsTpFourPerQuad) {
  const auto r = report("02_dgx1-v100_hybrid-cube-mesh_nv1-nv2.txt");
  EXPECT_EQ(r.nvlink_domains, (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));  // connected through NVLink
  EXPECT_EQ(r.all_to_all_groups, (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(r.max_tp_in_domain, 4);
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][1], 25.0);   // NV1
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][3], 50.0);   // NV2
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][5], 16.0);   // SYS over PCIe 3.0 x16 (catalog links.pcie3-x16)
  EXPECT_TRUE(any_contains(r.advice, "not all-to-all"));
  EXPECT_TRUE(any_contains(r.warnings, "GPUs 0-3 and 4-7: only 4 of 16 pairs have a direct NVLink"));
  EXPECT_EQ(r.nic_nearest_gpus[0], (std::vector<int>{2, 3}));  // mlx5_0 is PIX to GPU2 and GPU3
  EXPECT_TRUE(any_contains(r.warnings, "GPUs 4-7 reach the nearest NIC only through the CPU socket link (SYS)"));
}

TEST(TopoAnalysis, HandEditedMeshHasTheSameQuads) {
  const auto r = report("22_dgx1-v100_nv1-nv2_2nic_HAND-EDITED-irregular-tabs.txt");
  EXPECT_EQ(r.all_to_all_groups, (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(r.nearest_nic[6], 1);  // GPU6 is PIX to mlx5_1
  EXPECT_EQ(r.nearest_nic[2], 0);
}

TEST(TopoAnalysis, NvlinkBridgedPair) {
  TopologyOptions opt;
  opt.gpu_name = "rtx-3090";
  const auto r = report("03_2gpu_nvlink-bridge_nv2_numa-na.txt", opt);
  EXPECT_EQ(r.nvlink_domains, (Groups{{0, 1}}));
  EXPECT_EQ(r.max_tp_in_domain, 2);
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][1], 2 * 14.0625);  // NV2 x 14.0625 GB/s
  // Without --gpu the generation is unknown and said so.
  const auto u = report("03_2gpu_nvlink-bridge_nv2_numa-na.txt");
  EXPECT_FALSE(u.rates.has_value());
  EXPECT_TRUE(any_contains(u.warnings, "GPU generation unknown"));
}

TEST(TopoAnalysis, PcieOnlyBoxAdvisesAgainstTensorParallelism) {
  const auto r = report("04_2gpu_pcie-only_phb_consumer.txt");
  EXPECT_EQ(r.nvlink_domains, (Groups{{0}, {1}}));
  EXPECT_EQ(r.max_tp_in_domain, 1);
  EXPECT_TRUE(any_contains(r.advice, "No NVLink between any GPUs"));
  EXPECT_TRUE(any_contains(r.warnings, "GPUs 0 and 1 share only PCIe through the CPU's host bridge (PHB)"));
}

TEST(TopoAnalysis, LegacySocBoxWarnsAcrossSockets) {
  const auto r = report("17_legacy-2017_4gpu_mlx4_SOC-legend_tabs.txt");
  EXPECT_EQ(r.nvlink_domains.size(), 4u);
  EXPECT_TRUE(any_contains(r.warnings, "GPUs 0,1 and 2,3 share only PCIe through the CPU (SOC)"));
  EXPECT_EQ(r.nic_nearest_gpus[0], (std::vector<int>{2, 3}));  // mlx4_0 is PHB to GPU2 and GPU3
}

TEST(TopoAnalysis, TwoNvlinkIslandsWarnAboutTheCpuPath) {
  const Topology t = parse_nvidia_smi_topo(
      "\tGPU0\tGPU1\tGPU2\tGPU3\n"
      "GPU0\t X \tNV4\tSYS\tSYS\n"
      "GPU1\tNV4\t X \tSYS\tSYS\n"
      "GPU2\tSYS\tSYS\t X \tNV4\n"
      "GPU3\tSYS\tSYS\tNV4\t X \n");
  const auto r = analyze_topology(t, {});
  EXPECT_EQ(r.nvlink_domains, (Groups{{0, 1}, {2, 3}}));
  EXPECT_TRUE(any_contains(r.warnings,
                           "GPUs 0,1 and 2,3 share only PCIe through the CPU (SYS): tensor parallelism across them runs at "
                           "PCIe speed"));
}

TEST(TopoAnalysis, ClippedH800) {
  const auto r = report("06_h800_nv8_4nic_clipped-copy-paste.txt");
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[2][5], 8 * 25.0);  // NV8: the H800's 8 links
  EXPECT_EQ(r.nearest_nic[1], 0);                        // NIC0 row: PIX to GPU1
  EXPECT_EQ(r.nearest_nic[3], 1);                        // NIC1 row: PIX to GPU3
  EXPECT_TRUE(any_contains(r.warnings, "no column in the header"));
}

TEST(TopoAnalysis, InactiveLinksLowerNvlinkBandwidth) {
  TopologyOptions opt;
  opt.nvlink_status = parse_nvlink_status(read_test_data("nvlink/nvlink-s_v100_inactive-links.txt"));
  const auto r = report("02_dgx1-v100_hybrid-cube-mesh_nv1-nv2.txt", opt);
  // GPU3 row: NV2 NV1 NV2 X SYS SYS SYS NV1 = 6 links; 4 active: scaled by 4/6.
  EXPECT_NEAR(r.bandwidth_GBps[3][0], 50.0 * 4 / 6, 1e-9);
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][1], 25.0);  // GPU0-GPU1 untouched
  EXPECT_TRUE(any_contains(r.warnings, "GPU3: only 4 active NVLinks"));
}

// The NIC table (nic_nearest_gpus) and the advice's NIC count (compute_nics) say "near" by one rule: a NIC some
// GPU takes over a near path is near to that GPU in the table, and the count is the number of such NICs.
void expect_nic_table_agrees_with_count(const TopologyReport& r) {
  std::vector<bool> serving(r.topology.nics.size(), false);
  for (std::size_t gpu = 0; gpu < r.nearest_nic.size(); ++gpu) {
    const int nic = r.nearest_nic[gpu];
    if (nic < 0 || !is_near_nic_path(r.topology.nics[nic].gpu_codes[gpu])) continue;
    serving[nic] = true;
    EXPECT_FALSE(r.nic_nearest_gpus[nic].empty()) << "NIC " << nic << " serves GPU" << gpu;
  }
  EXPECT_EQ(r.compute_nics, std::count(serving.begin(), serving.end(), true));
}

TEST(TopoAnalysis, NearNicPathIsBetterThanSys) {
  for (const char* code : {"PIX", "PXB", "PHB", "NODE"}) EXPECT_TRUE(is_near_nic_path(code)) << code;
  for (const char* code : {"SYS", "SOC", "?", "junk"}) EXPECT_FALSE(is_near_nic_path(code)) << code;
}

TEST(TopoAnalysis, Gb200NicTableAndAdviceAgreeThatNoNicIsNear) {
  const auto r = report("23_gb200-4gpu_nv18_8nic-all-sys_numa-lists_tabs.txt");
  ASSERT_EQ(r.topology.nics.size(), 8u);
  // Every GPU-NIC code of the file is SYS: no NIC is near any GPU, in the table or in the advice.
  for (const auto& gpus : r.nic_nearest_gpus) EXPECT_TRUE(gpus.empty());
  EXPECT_EQ(r.compute_nics, 0);
  EXPECT_TRUE(any_contains(r.advice, "none of the 8 NICs in the input is near a GPU"));
  EXPECT_FALSE(any_contains(r.advice, "near the GPUs serve"));
  EXPECT_TRUE(any_contains(r.warnings, "GPUs 0-3 reach the nearest NIC only through the CPU socket link (SYS)"));
  expect_nic_table_agrees_with_count(r);
  // GPUs 0,1 list NUMA node 0 first, GPUs 2,3 node 1 (CPU affinity 0-71 and 72-143).
  EXPECT_TRUE(any_contains(r.advice, "GPUs 0,1 on NUMA node 0, GPUs 2,3 on NUMA node 1"));
}

TEST(TopoAnalysis, NicTableAndAdviceAgreeOnEveryFile) {
  for (const char* file : {"01_dgx-a100_nv12_10nic_tabs.txt", "02_dgx1-v100_hybrid-cube-mesh_nv1-nv2.txt",
                           "06_h800_nv8_4nic_clipped-copy-paste.txt", "07_hgx-h200_nv18_10nic_tabs_gpu-numa-id.txt",
                           "11_hgx-h100_nv18_8nic_full-legend_nic-legend.txt",
                           "17_legacy-2017_4gpu_mlx4_SOC-legend_tabs.txt",
                           "22_dgx1-v100_nv1-nv2_2nic_HAND-EDITED-irregular-tabs.txt",
                           "23_gb200-4gpu_nv18_8nic-all-sys_numa-lists_tabs.txt"}) {
    SCOPED_TRACE(file);
    expect_nic_table_agrees_with_count(report(file));
  }
  // GPU0-GPU7 each take their own PIX NIC of the H200 board (rows GPU0..GPU7: NIC3, NIC5, NIC4, NIC0, NIC7, NIC9,
  // NIC8, NIC6); NIC1 and NIC2 are PIX to GPU3 too but serve nobody.
  const auto h200 = report("07_hgx-h200_nv18_10nic_tabs_gpu-numa-id.txt");
  EXPECT_EQ(h200.compute_nics, 8);
  EXPECT_EQ(h200.nic_nearest_gpus[1], (std::vector<int>{3}));
  EXPECT_TRUE(any_contains(h200.advice, "8 NICs near the GPUs serve 8 GPUs"));
}

TEST(TopoAnalysis, QuadNv6MeshIsOneDomainOfFour) {
  const auto r = report("24_gh200-quad_nv6_numa-lists_gpu-numa-id.txt");
  EXPECT_EQ(r.nvlink_domains, (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(r.all_to_all_groups, (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(r.max_tp_in_domain, 4);
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][3], 6 * 25.0);  // NV6 x 25 GB/s (NVLink 4)
  EXPECT_TRUE(any_contains(r.advice, "GPUs 0 on NUMA node 0, GPUs 1 on NUMA node 1, GPUs 2 on NUMA node 2"));
}

TEST(TopoAnalysis, BadOptionsAreInputErrors) {
  TopologyOptions opt;
  opt.gpu_name = "potato";
  EXPECT_THROW(report("05_hgx-h100_nv18_no-nic_ht-affinity.txt", opt), InputError);
  TopologyOptions nic;
  nic.nic_GBps = -1;
  EXPECT_THROW(report("05_hgx-h100_nv18_no-nic_ht-affinity.txt", nic), InputError);
}

TEST(TopoAnalysis, FormatGpuSet) {
  EXPECT_EQ(format_gpu_set({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(format_gpu_set({0, 2, 5, 6, 7}), "0,2,5-7");
  EXPECT_EQ(format_gpu_set({4, 5}), "4,5");
}

}  // namespace
}  // namespace gpuplan
