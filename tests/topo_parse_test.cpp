// nvidia-smi topo -m parsing. Every expected value below was read by hand from the file named in the test.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

using gpuplan::test::any_contains;

// A captured topology under tests/data/topo/.
std::string topo_text(const std::string& name) { return gpuplan::test::read_test_data("topo/" + name); }

std::string topo_error_of(const std::string& text) {
  try {
    parse_nvidia_smi_topo(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TopoParse, DgxA100TabsTenNics) {
  const Topology t = parse_nvidia_smi_topo(topo_text("01_dgx-a100_nv12_10nic_tabs.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);  // GPU0..GPU7 in the header
  ASSERT_EQ(t.nics.size(), 10u); // NIC0..NIC9
  EXPECT_EQ(t.links[0][1], "NV12");
  EXPECT_EQ(t.links[7][6], "NV12");
  EXPECT_EQ(t.links[3][3], "X");
  EXPECT_EQ(t.nics[0].name, "mlx5_0");  // NIC Legend: NIC0: mlx5_0
  EXPECT_EQ(t.nics[9].name, "mlx5_9");
  EXPECT_EQ(t.nics[0].gpu_codes[0], "PXB");  // row GPU0, column NIC0
  EXPECT_EQ(t.nics[2].gpu_codes[0], "SYS");  // row GPU0, column NIC2
  EXPECT_EQ(t.nics[8].gpu_codes[7], "SYS");  // NIC8 is SYS to every GPU
  EXPECT_EQ(t.gpus[0].cpu_affinity, "48-63,176-191");
  EXPECT_EQ(t.gpus[0].numa_node, 3);
  EXPECT_EQ(t.gpus[2].numa_node, 1);
  EXPECT_EQ(t.gpus[4].cpu_affinity, "112-127,240-255");
  EXPECT_EQ(t.gpus[4].numa_node, 7);
  EXPECT_FALSE(t.gpus[0].gpu_numa_id.has_value());  // no GPU NUMA ID column
  EXPECT_TRUE(t.warnings.empty());
}

TEST(TopoParse, Dgx1HybridCubeMeshNicNamedDirectly) {
  const Topology t = parse_nvidia_smi_topo(topo_text("02_dgx1-v100_hybrid-cube-mesh_nv1-nv2.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "mlx5_0");
  EXPECT_EQ(t.links[0][1], "NV1");
  EXPECT_EQ(t.links[0][3], "NV2");
  EXPECT_EQ(t.links[0][5], "SYS");
  EXPECT_EQ(t.links[4][7], "NV2");
  EXPECT_EQ(t.nics[0].gpu_codes[2], "PIX");
  EXPECT_EQ(t.nics[0].gpu_codes[0], "NODE");
  EXPECT_EQ(t.nics[0].gpu_codes[5], "SYS");
  EXPECT_EQ(t.gpus[4].cpu_affinity, "12-23,36-47");
  EXPECT_FALSE(t.gpus[0].numa_node.has_value());  // no NUMA Affinity column
}

TEST(TopoParse, NvlinkBridgePairNumaNotAvailable) {
  const Topology t = parse_nvidia_smi_topo(topo_text("03_2gpu_nvlink-bridge_nv2_numa-na.txt"));
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.links[0][1], "NV2");
  EXPECT_EQ(t.gpus[1].cpu_affinity, "0-23");
  EXPECT_FALSE(t.gpus[1].numa_node.has_value());  // N/A
}

TEST(TopoParse, PcieOnlyPair) {
  const Topology t = parse_nvidia_smi_topo(topo_text("04_2gpu_pcie-only_phb_consumer.txt"));
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.links[1][0], "PHB");
  EXPECT_EQ(t.gpus[0].cpu_affinity, "0-11");
}

TEST(TopoParse, HgxH100NoNic) {
  const Topology t = parse_nvidia_smi_topo(topo_text("05_hgx-h100_nv18_no-nic_ht-affinity.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.links[2][6], "NV18");
  EXPECT_EQ(t.gpus[4].cpu_affinity, "52-103,156-207");
  EXPECT_EQ(t.gpus[4].numa_node, 1);
  EXPECT_EQ(t.gpus[3].numa_node, 0);
}

TEST(TopoParse, ClippedCopyPasteKeepsWhatIsThereAndWarns) {
  const Topology t = parse_nvidia_smi_topo(topo_text("06_h800_nv8_4nic_clipped-copy-paste.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 4u);  // NIC0..NIC3 rows, no NIC columns in the header
  EXPECT_EQ(t.links[0][7], "NV8");
  EXPECT_EQ(t.nics[0].name, "mlx5_0");
  EXPECT_EQ(t.nics[3].name, "mlx5_3");            // legend line with trailing spaces
  EXPECT_EQ(t.nics[0].gpu_codes[1], "PIX");       // row NIC0: NODE PIX NODE NODE SYS ...
  EXPECT_EQ(t.nics[1].gpu_codes[3], "PIX");
  EXPECT_EQ(t.nics[2].gpu_codes[0], "SYS");
  EXPECT_EQ(t.nics[3].gpu_codes[7], "PIX");
  EXPECT_EQ(t.gpus[0].cpu_affinity, "");           // "-31,64-95" is clipped
  EXPECT_EQ(t.gpus[4].cpu_affinity, "32-63,96-127");
  EXPECT_EQ(t.gpus[7].numa_node, 1);
  EXPECT_TRUE(any_contains(t.warnings, "no column in the header"));
  EXPECT_TRUE(any_contains(t.warnings, "'-31,64-95'"));
  EXPECT_TRUE(any_contains(t.warnings, "GPU7: CPU affinity '2-63,96-127' differs"));
}

TEST(TopoParse, AnsiEscapesGpuNumaIdAndTrailingTabs) {
  const Topology t = parse_nvidia_smi_topo(topo_text("07_hgx-h200_nv18_10nic_tabs_gpu-numa-id.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 10u);
  EXPECT_EQ(t.links[5][0], "NV18");
  EXPECT_EQ(t.nics[3].gpu_codes[0], "PIX");  // row GPU0, column NIC3
  EXPECT_EQ(t.nics[0].gpu_codes[3], "PIX");  // GPU3 is PIX to NIC0, NIC1 and NIC2
  EXPECT_EQ(t.nics[2].gpu_codes[3], "PIX");
  EXPECT_EQ(t.nics[6].gpu_codes[7], "PIX");
  EXPECT_EQ(t.gpus[0].cpu_affinity, "0-63,128-191");
  EXPECT_EQ(t.gpus[7].cpu_affinity, "64-127,192-255");
  EXPECT_EQ(t.gpus[7].numa_node, 1);
  EXPECT_FALSE(t.gpus[7].gpu_numa_id.has_value());  // N/A
  EXPECT_TRUE(t.warnings.empty());
}

TEST(TopoParse, RailNicsWithFullLegend) {
  const Topology t = parse_nvidia_smi_topo(topo_text("11_hgx-h100_nv18_8nic_full-legend_nic-legend.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(t.nics[i].gpu_codes[i], "PIX") << i;  // GPUi PIX to NICi
  EXPECT_EQ(t.nics[4].gpu_codes[0], "SYS");
  EXPECT_EQ(t.nics[1].gpu_codes[0], "NODE");
  EXPECT_EQ(t.gpus[5].cpu_affinity, "48-95,144-191");
  EXPECT_EQ(t.gpus[5].numa_node, 1);
}

TEST(TopoParse, Legacy2017SocCodes) {
  const Topology t = parse_nvidia_smi_topo(topo_text("17_legacy-2017_4gpu_mlx4_SOC-legend_tabs.txt"));
  ASSERT_EQ(t.gpus.size(), 4u);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "mlx4_0");
  EXPECT_EQ(t.links[0][1], "PHB");
  EXPECT_EQ(t.links[0][2], "SOC");
  EXPECT_EQ(classify_code(t.links[0][2]).type, PathType::sys);
  EXPECT_EQ(t.nics[0].gpu_codes[2], "PHB");
  EXPECT_EQ(t.nics[0].gpu_codes[0], "SOC");
  EXPECT_EQ(t.gpus[2].cpu_affinity, "6-11");
  EXPECT_FALSE(t.gpus[2].numa_node.has_value());
}

TEST(TopoParse, HandEditedIrregularWhitespace) {
  const Topology t = parse_nvidia_smi_topo(topo_text("22_dgx1-v100_nv1-nv2_2nic_HAND-EDITED-irregular-tabs.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 2u);
  EXPECT_EQ(t.nics[1].name, "mlx5_1");
  EXPECT_EQ(t.links[0][2], "NV2");  // row GPU0: X NV1 NV2 NV1 SYS SYS SYS NV2
  EXPECT_EQ(t.links[0][7], "NV2");
  EXPECT_EQ(t.links[0][4], "SYS");
  EXPECT_EQ(t.links[1][1], "X");    // written ' \tX '
  EXPECT_EQ(t.nics[1].gpu_codes[6], "PIX");
  EXPECT_EQ(t.nics[0].gpu_codes[0], "NODE");
  EXPECT_EQ(t.gpus[0].cpu_affinity, "0-23,48-71");
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[4].cpu_affinity, "24-47,72-95");
  EXPECT_EQ(t.gpus[4].numa_node, 1);
  EXPECT_TRUE(t.warnings.empty());
}

std::vector<int> ids(int first, int last) {
  std::vector<int> out;
  for (int i = first; i <= last; ++i) out.push_back(i);
  return out;
}

std::vector<int> join(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(TopoParse, Gb200NumaAffinityListsAreRead) {
  const Topology t = parse_nvidia_smi_topo(topo_text("23_gb200-4gpu_nv18_8nic-all-sys_numa-lists_tabs.txt"));
  ASSERT_EQ(t.gpus.size(), 4u);
  ASSERT_EQ(t.nics.size(), 8u);     // NIC0..NIC7 in the header; rows only up to NIC4
  EXPECT_EQ(t.links[0][3], "NV18");
  EXPECT_EQ(t.nics[7].gpu_codes[3], "SYS");  // row GPU3, column NIC7
  // "0,3-9,11-17" and "1,19-25,27-33": the CPU's node, then the GPU memory nodes.
  EXPECT_EQ(t.gpus[0].numa_affinity, join(join({0}, ids(3, 9)), ids(11, 17)));
  EXPECT_EQ(t.gpus[1].numa_affinity, t.gpus[0].numa_affinity);
  EXPECT_EQ(t.gpus[2].numa_affinity, join(join({1}, ids(19, 25)), ids(27, 33)));
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[3].numa_node, 1);
  EXPECT_EQ(t.gpus[2].cpu_affinity, "72-143");
  EXPECT_EQ(t.gpus[1].gpu_numa_id, 10);
  EXPECT_EQ(t.gpus[3].gpu_numa_id, 26);
  EXPECT_FALSE(any_contains(t.warnings, "NUMA affinity")) << t.warnings.size();
}

TEST(TopoParse, QuadGraceHopperNumaAffinityLists) {
  const Topology t = parse_nvidia_smi_topo(topo_text("24_gh200-quad_nv6_numa-lists_gpu-numa-id.txt"));
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.links[2][1], "NV6");
  EXPECT_EQ(t.gpus[1].numa_affinity, join({1}, ids(13, 19)));  // "1,13-19"
  EXPECT_EQ(t.gpus[3].numa_affinity, join({3}, ids(29, 35)));  // "3,29-35"
  EXPECT_EQ(t.gpus[2].numa_node, 2);
  EXPECT_EQ(t.gpus[3].cpu_affinity, "216-287");
  EXPECT_EQ(t.gpus[0].gpu_numa_id, 4);
  EXPECT_TRUE(t.warnings.empty());
}

TEST(TopoParse, SingleNodeNumaAffinityIsAListOfOne) {
  const Topology t = parse_nvidia_smi_topo(topo_text("05_hgx-h100_nv18_no-nic_ht-affinity.txt"));
  EXPECT_EQ(t.gpus[4].numa_affinity, (std::vector<int>{1}));
  const Topology na = parse_nvidia_smi_topo(topo_text("03_2gpu_nvlink-bridge_nv2_numa-na.txt"));
  EXPECT_TRUE(na.gpus[1].numa_affinity.empty());  // N/A
}

TEST(TopoParse, MalformedNumaAffinityIsIgnoredWithAWarning) {
  const std::string head = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n";
  Topology t = parse_nvidia_smi_topo(head + "GPU0\t X \tNV4\t0-7\t0,3-\nGPU1\tNV4\t X \t0-7\t9-3\n");
  EXPECT_FALSE(t.gpus[0].numa_node.has_value());
  EXPECT_TRUE(t.gpus[0].numa_affinity.empty());
  EXPECT_TRUE(any_contains(t.warnings, "GPU0: NUMA affinity '0,3-' is not a list of NUMA nodes"));
  EXPECT_TRUE(any_contains(t.warnings, "GPU1: NUMA affinity '9-3' is not a list of NUMA nodes"));
  // A range past Linux's 1024 nodes is not expanded.
  t = parse_nvidia_smi_topo(head + "GPU0\t X \tNV4\t0-7\t0-999999\nGPU1\tNV4\t X \t0-7\t1\n");
  EXPECT_TRUE(t.gpus[0].numa_affinity.empty());
  EXPECT_EQ(t.gpus[1].numa_node, 1);
}

TEST(TopoParse, P2pCapabilityOutputIsNamed) {
  // `nvidia-smi topo -p2p rw` (GNS: GPU not supported) and `-p2p p` (all OK): same layout, other codes.
  for (const char* file : {"25_2gpu_p2p-rw_gns_legend_NOT-topo-m.txt", "26_5gpu_p2p-p_all-ok_NOT-topo-m.txt"}) {
    const std::string msg = topo_error_of(topo_text(file));
    EXPECT_NE(msg.find("this is `nvidia-smi topo -p2p` output (peer-to-peer capability"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not `nvidia-smi topo -m`"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("unknown connection code"), std::string::npos) << msg;
    try {
      parse_topology(topo_text(file));  // format detection gives the same answer
      ADD_FAILURE() << file;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("`nvidia-smi topo -p2p`"), std::string::npos) << e.what();
    }
  }
  EXPECT_NE(topo_error_of(topo_text("25_2gpu_p2p-rw_gns_legend_NOT-topo-m.txt")).find("row GPU0 says 'GNS'"),
            std::string::npos);
  EXPECT_NE(topo_error_of(topo_text("26_5gpu_p2p-p_all-ok_NOT-topo-m.txt")).find("row GPU0 says 'OK'"),
            std::string::npos);
}

TEST(TopoParse, GarbageNamesWhatIsMissing) {
  EXPECT_NE(topo_error_of("hello world\nthis is not it\n").find("not an nvidia-smi topo -m output: no header line naming GPU0"),
            std::string::npos);
  EXPECT_NE(topo_error_of("").find("no header line naming GPU0"), std::string::npos);
  EXPECT_NE(topo_error_of("\tGPU0\tGPU1\n").find("no GPU rows"), std::string::npos);
}

TEST(TopoParse, UnknownCodeNamesRowAndColumn) {
  const std::string msg = topo_error_of("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNVX\t0-3\nGPU1\tNV2\t X \t0-3\n");
  EXPECT_NE(msg.find("row GPU0, column GPU1: unknown connection code 'NVX'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("accepted: X, NV<n>, PIX, PXB, PHB, NODE, SYS, SOC"), std::string::npos) << msg;
}

TEST(TopoParse, NonSquareMatrixIsRejected) {
  // Row GPU2 but only two GPU columns.
  std::string msg = topo_error_of("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X \nGPU2\tNV2\tNV2\n");
  EXPECT_NE(msg.find("not square"), std::string::npos) << msg;
  // A row with too few entries before its affinity values.
  msg = topo_error_of("\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tNV2\t0-3\n");
  EXPECT_NE(msg.find("not square"), std::string::npos) << msg;
  // A shifted diagonal.
  msg = topo_error_of("\tGPU0\tGPU1\nGPU0\tNV2\t X \nGPU1\tNV2\t X \n");
  EXPECT_NE(msg.find("diagonal"), std::string::npos) << msg;
}

TEST(TopoParse, RowsCutOffAreFilledFromColumnsWithAWarning) {
  const Topology t = parse_nvidia_smi_topo("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tSYS\nGPU1\tNV4\t X \tSYS\n");
  ASSERT_EQ(t.gpus.size(), 3u);
  EXPECT_EQ(t.links[2][0], "SYS");  // from row GPU0, column GPU2
  EXPECT_TRUE(any_contains(t.warnings, "no row for GPU(s) 2"));
}

TEST(TopoParse, DetectsFormat) {
  EXPECT_EQ(parse_topology(topo_text("20_amd-8gpu-xgmi_rocm-smi-showtopo.txt")).format, "rocm-smi --showtopo");
  EXPECT_EQ(parse_topology(topo_text("21_amd-mi300x_amd-smi-topology_bdf-tables.txt")).format, "amd-smi topology");
  EXPECT_EQ(parse_topology(topo_text("05_hgx-h100_nv18_no-nic_ht-affinity.txt")).format, "nvidia-smi topo -m");
}

}  // namespace
}  // namespace gpuplan
