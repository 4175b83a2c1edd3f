// AMD rocm-smi --showtopo and amd-smi topology; values read by hand from tests/data/topo/20 and 21.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

using gpuplan::test::read_test_data;

TEST(RocmTopo, RocmSmiShowtopo) {
  const Topology t = parse_rocm_smi_topo(read_test_data("topo/20_amd-8gpu-xgmi_rocm-smi-showtopo.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.links[0][0], "X");
  EXPECT_EQ(t.links[0][5], "XGMI");
  EXPECT_EQ(t.gpus[0].numa_node, 0);
  EXPECT_EQ(t.gpus[4].numa_node, 1);  // GPU[4] : (Topology) Numa Node: 1
  const auto r = analyze_topology(t, {});
  EXPECT_EQ(r.nvlink_domains, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(r.max_tp_in_domain, 8);
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[1][2], 64.0);  // one xGMI link, MI300X 64 GB/s per direction
}

TEST(RocmTopo, AmdSmiTopologyKeyedByBdf) {
  const Topology t = parse_amd_smi_topology(read_test_data("topo/21_amd-mi300x_amd-smi-topology_bdf-tables.txt"));
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:0c:00.0");
  EXPECT_EQ(t.gpus[7].pci_bus_id, "0000:df:00.0");
  EXPECT_EQ(t.links[3][3], "X");  // SELF
  EXPECT_EQ(t.links[2][6], "XGMI");
  ASSERT_EQ(t.reported_bandwidth_GBps.size(), 8u);
  EXPECT_DOUBLE_EQ(t.reported_bandwidth_GBps[0][1], 50.0);  // 50000-50000 MB/s
  const auto r = analyze_topology(t, {});
  EXPECT_EQ(r.nvlink_domains.size(), 1u);
}

TEST(RocmTopo, GarbageAndBadCodes) {
  EXPECT_THROW(parse_rocm_smi_topo("nothing"), InputError);
  EXPECT_THROW(parse_amd_smi_topology("nothing"), InputError);
  try {
    parse_rocm_smi_topo("=== Link Type between two GPUs ===\n  GPU0 GPU1\nGPU0 0 QPI\nGPU1 XGMI 0\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("row GPU0, column GPU1: unknown link type 'QPI'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_rocm_smi_topo("=== Link Type between two GPUs ===\n  GPU0 GPU1\nGPU0 0 XGMI\nGPU1 XGMI\n"),
               InputError);  // not square
}

}  // namespace
}  // namespace gpuplan
