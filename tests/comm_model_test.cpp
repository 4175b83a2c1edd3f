// The collective cost model against measured nccl-tests numbers and hand derivations.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan {
namespace {

Fabric fabric(const char* system, int nodes) { return fabric_from_cluster(make_cluster(system, nodes)); }

GroupPlacement packed(std::int64_t ranks, std::int64_t per_node) { return {ranks, std::min(ranks, per_node), 1}; }

// Measured out-of-place busbw (GB/s) of all_reduce_perf on one 8x A100 SXM node at 1 GiB, from
// tests/data/nccl-tests/a100-8gpu-allreduce/AR_GPU<n>_1M_1024M_LUT.csv (last row), n = 2..8.
constexpr double kMeasuredBusbw1GiB[] = {197.28, 211.88, 221.86, 224.48, 227.01, 226.89, 229.35};
// Measured out-of-place time (us) at 1 MiB, first row of the same files.
constexpr double kMeasuredTime1MiB_us[] = {44.21, 63.91, 51.40, 62.77, 73.00, 77.96, 92.79};

TEST(CommModel, AGpuWithFewerLinksThanTheSystemDrivesOnlyItsOwn) {
  // An H800 has 8 NVLink 4 links (datasheet: 400 GB/s bidirectional, and nvidia-smi nvlink -s on 8x H800 in
  // tests/data/nvlink shows 8 active links); on an H100 system's NVSwitches (18 per GPU) it still has 8, so its
  // domain bandwidth is 8/18 of the H100's and the same as on an HGX H800 board.
  Cluster h800_on_h100 = make_cluster("dgx-h100", 1);
  h800_on_h100.gpu = HardwareCatalog::builtin().gpu("h800-sxm-80gb");
  const Fabric h100 = fabric("dgx-h100", 1);
  const Fabric h800 = fabric_from_cluster(h800_on_h100);
  EXPECT_NEAR(h800.domain_per_gpu_GBps, h100.domain_per_gpu_GBps * 8.0 / 18.0, 1e-9);
  EXPECT_NEAR(h800.domain_per_gpu_GBps, fabric("hgx-h800", 1).domain_per_gpu_GBps, 1e-9);
}

TEST(CommModel, H20BoardsKeepTheFullNvlink4) {
  // The H20 product brief: HGX H20 GPUs have NVLink at 900 GB/s both ways, as the H100 (18 NVLink 4 links through
  // NVSwitch): an 8-GPU H20 node moves data inside the node as fast as an H100 one, and 18/8 times as fast as an
  // H800 one, whose 8 links give 400 GB/s.
  const Fabric h20 = fabric("hgx-h20", 1);
  EXPECT_NEAR(h20.domain_per_gpu_GBps, fabric("hgx-h100", 1).domain_per_gpu_GBps, 1e-9);
  EXPECT_NEAR(h20.domain_per_gpu_GBps / fabric("hgx-h800", 1).domain_per_gpu_GBps, 18.0 / 8.0, 1e-9);
}

TEST(CommModel, A100EightGpuAllreduce1GiBWithin15PercentOfMeasured) {
  const Fabric f = fabric("dgx-a100", 1);
  const auto c = collective_cost(f, Collective::allreduce, 1073741824.0, packed(8, 8));
  const double err = (c.busbw_GBps - 229.35) / 229.35;
  RecordProperty("busbw_GBps", std::to_string(c.busbw_GBps));
  RecordProperty("relative_error", std::to_string(err));
  EXPECT_LT(std::fabs(err), 0.15) << "model " << c.busbw_GBps << " GB/s vs measured 229.35";
  // Hand derivation: NCCL rates an NVLink 3 link at 20 GB/s, A100 has 12 into the NVSwitches: 240 GB/s; ring
  // Simple busbw at 1 GiB is 240 less the fixed cost (8.4 + 14 x 3.4 us = 56 us of 7.8 ms, under 1%).
  EXPECT_NEAR(c.busbw_GBps, 240.0, 240.0 * 0.01);
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.protocol, "Simple");
}

TEST(CommModel, A100LargeSizesAcrossRankCounts) {
  const Fabric f = fabric("dgx-a100", 1);
  for (int n = 4; n <= 8; ++n) {
    const auto c = collective_cost(f, Collective::allreduce, 1073741824.0, packed(n, 8));
    const double measured = kMeasuredBusbw1GiB[n - 2];
    EXPECT_LT(std::fabs(c.busbw_GBps - measured) / measured, 0.10) << n << " ranks: " << c.busbw_GBps;
  }
  // Two ranks measure lower (197 GB/s) than the link model (240): within 25%.
  const auto two = collective_cost(f, Collective::allreduce, 1073741824.0, packed(2, 8));
  EXPECT_LT(std::fabs(two.busbw_GBps - 197.28) / 197.28, 0.25);
}

TEST(CommModel, A100SmallSizesAreLatencyBound) {
  const Fabric f = fabric("dgx-a100", 1);
  for (int n = 2; n <= 8; ++n) {
    const auto small = collective_cost(f, Collective::allreduce, 1048576.0, packed(n, 8));
    const auto large = collective_cost(f, Collective::allreduce, 1073741824.0, packed(n, 8));
    // Measured: 1 MiB reaches 10-15% of the 1 GiB busbw (19.78 vs 229.35 on 8). The model's fixed costs alone
    // (NCCL's constants) leave it under half; it does not know the harness overhead these tables include, so it
    // is faster than measured, by no more than a factor 3.
    EXPECT_LT(small.busbw_GBps, 0.5 * large.busbw_GBps);
    const double measured_us = kMeasuredTime1MiB_us[n - 2];
    EXPECT_LT(small.time_s * 1e6, measured_us) << n;
    EXPECT_GT(small.time_s * 1e6, measured_us / 3.0) << n;
  }
  // 8 bytes: NCCL's Ring/LL latency, 6.6 + 14 steps x 0.6 us = 15.0 us (tuning.cc constants).
  const auto tiny = collective_cost(f, Collective::allreduce, 8.0, packed(8, 8));
  EXPECT_NEAR(tiny.time_s * 1e6, 15.0, 0.5);
  EXPECT_EQ(tiny.protocol, "LL");
}

TEST(CommModel, TwoDgxH100AllreduceBoundByNics) {
  const Fabric f = fabric("dgx-h100", 2);
  EXPECT_DOUBLE_EQ(f.nic_per_gpu_GBps, 50.0);   // 8 x 400 Gb/s ConnectX-7 for 8 GPUs
  const double S = 1073741824.0;
  const auto all = collective_candidates(f, Collective::allreduce, S, packed(16, 8));
  for (const auto& c : all) {
    if (c.algorithm == "ring (across nodes)" && c.protocol == "Simple") {
      // Flat ring: each node's NICs carry 2(n-1)/n x S, so busbw <= 8 x 50 = 400 GB/s; NVLink as NCCL rates it
      // (18 x 20.6 = 370.8) is lower still.
      EXPECT_LE(c.busbw_GBps, 400.0);
      EXPECT_NEAR(c.busbw_GBps, 370.8, 370.8 * 0.05);
    }
    if (c.algorithm == "hierarchical") {
      // Inter-node phase: 2(k-1)/k x (S/8) over each GPU's 50 GB/s NIC = S/400 per rank, algbw <= 400 GB/s,
      // busbw <= 400 x 2(16-1)/16 = 750 GB/s.
      EXPECT_LE(c.busbw_GBps, 750.0);
      EXPECT_LE(c.algbw_GBps, 400.0);
    }
  }
  const auto best = collective_cost(f, Collective::allreduce, S, packed(16, 8));
  EXPECT_LE(best.algbw_GBps, 400.0);
}

TEST(CommModel, NoAlgorithmBeatsTheNodesNics) {
  // Across nodes a packed group's data leaves each node through its NICs: whatever NCCL picks, busbw stays at or
  // below the node's NIC total (8 GPUs x their NIC share), the rate a flat ring reaches by construction.
  for (const char* system : {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "mi300x-8x"}) {
    for (const int nodes : {2, 4, 32}) {
      const Fabric f = fabric(system, nodes);
      const double node_nics_GBps = 8 * f.nic_per_gpu_GBps;
      for (const Collective collective : {Collective::allreduce, Collective::allgather, Collective::reducescatter})
        for (const double bytes : {1048576.0, 67108864.0, 1073741824.0, 17179869184.0})
          for (const auto& c : collective_candidates(f, collective, bytes, packed(8 * nodes, 8)))
            EXPECT_LE(c.busbw_GBps, node_nics_GBps * (1 + 1e-12))
                << system << " x" << nodes << " " << to_string(collective) << " " << bytes << " B: " << c.algorithm;
    }
  }
}

TEST(CommModel, AllreduceWithinTenPercentOfPublished) {
  // The AllReduce rows of tests/data/nccl-tests/published-busbw.csv (a copy of shared/data) that a catalog system
  // describes as published, or that the row's own words describe: "large" sizes are taken as 8 GiB.
  struct Row {
    const char* name;
    const char* size;
    const char* system;
    int nodes;
    const char* algorithm;   // an algorithm the user forced (empty: the one the model picks)
  };
  const Row rows[] = {{"8x A100 SXM (NVSwitch)", "16GiB", "dgx-a100", 1, ""},
                      {"3x (8x A100)", "<=128MB", "a100-4-hdr", 3, ""},   // 4x HDR per node, at 128 MiB
                      {"8x H100 SXM (NVSwitch)", "large", "dgx-h100", 1, ""},
                      {"8x H800 (NVLink 400 GB/s)", "large", "hgx-h800", 1, ""},
                      {"4x (8x H200)", "4GiB", "dgx-h200", 4, ""},
                      {"4x (8x B200)", "16GiB", "dgx-b200", 4, ""},
                      {"GB200 NVL72", "large", "gb200-nvl72", 1, ""},
                      {"8x MI300X (Infinity Fabric)", "4GiB", "mi300x-8x", 1, ""}};
  // The 3-node A100 row's servers: 8x A100 SXM on NVSwitch with 4 HDR NICs (200 Gb/s each).
  const char* four_hdr = R"({"systems": {"a100-4-hdr": {"description": "8x A100 SXM, 4x HDR", "gpu": "a100-sxm-80gb",
      "gpus_per_node": 8, "scaleup": {"topology": "nvswitch", "link": "nvlink3", "domain_gpus": 8, "links_per_gpu": 12,
      "switch": "nvswitch2", "switches": 6}, "nics_per_node": 4, "nic_link": "ib-hdr", "host_memory_bytes": 1000000000000,
      "cpu": "x86", "host_link": "pcie4-x16", "source": "published-busbw.csv row: 4x HDR per node"}}})";
  HardwareCatalog catalog = HardwareCatalog::builtin();
  catalog.merge_json(four_hdr, "test catalog");
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/nccl-tests/published-busbw.csv");
  ASSERT_TRUE(in) << "tests/data/nccl-tests/published-busbw.csv";
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    for (const Row& r : rows) {
      if (cells.size() < 7 || cells[0] != r.name || cells[5] != r.size || line.find("NCCL_ALGO") != std::string::npos)
        continue;
      const double bytes = cells[5] == "4GiB" ? 4294967296.0 : cells[5] == "16GiB" ? 17179869184.0
                           : cells[5] == "<=128MB" ? 134217728.0 : 8589934592.0;
      const double measured = std::stod(cells[6]);
      const Fabric f = fabric_from_cluster(make_cluster(catalog, r.system, r.nodes), &catalog);
      const auto c = collective_cost(f, Collective::allreduce, bytes, packed(f.gpus_per_node * r.nodes, f.gpus_per_node));
      EXPECT_NEAR(c.busbw_GBps, measured, 0.10 * measured) << r.name << " " << r.size << " (" << c.algorithm << ")";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9);
}

TEST(CommModel, ForcedRingAndAcceptanceFloorAsPublished) {
  // 8x H100 with NCCL_ALGO=Ring: 370 GB/s (nccl-tests #212); the model's ring candidate, not its pick (NVLS).
  bool ring = false;
  for (const auto& c : collective_candidates(fabric("dgx-h100", 1), Collective::allreduce, 8589934592.0, packed(8, 8)))
    if (c.algorithm == "ring" && !ring) {
      EXPECT_NEAR(c.busbw_GBps, 370.0, 37.0) << c.protocol;
      ring = true;
    }
  EXPECT_TRUE(ring);
  // ROCm's acceptance test passes an 8x MI300X node at 304 GB/s or more (8 GB, in place): a floor, not a figure.
  const auto mi300x = collective_cost(fabric("mi300x-8x", 1), Collective::allreduce, 8e9, packed(8, 8));
  EXPECT_GE(mi300x.busbw_GBps, 304.0);
}

TEST(CommModel, StridedGroupCrossesTheNetwork) {
  // A data-parallel group of 4 ranks, one per node (tensor parallel 8 inside): 8 such groups share the NICs.
  const Fabric f = fabric("dgx-h100", 4);
  const double S = 8.0 * 1073741824.0;
  const auto ag = collective_cost(f, Collective::allgather, S, {4, 1, 8});
  // Each rank sends (n-1)/n x S through its share of the node's NICs: 8 x 50 / 8 = 50 GB/s of line rate, of which
  // a NIC moves 0.94 (data/comm.json net_efficiency: NDR ~46-48 GB/s per NIC, nccl-tests #290) -> busbw = 47.
  EXPECT_NEAR(ag.busbw_GBps, 47.0, 47.0 * 0.02);
  // A user who measured their NICs at the line rate says so, and gets the 50.
  Fabric line_rate = f;
  apply_comm_overrides(line_rate, R"({"comm": {"constants": {"net_efficiency": 1.0}}})", "nics.json");
  EXPECT_NEAR(collective_cost(line_rate, Collective::allgather, S, {4, 1, 8}).busbw_GBps, 50.0, 50.0 * 0.02);
  // A NIC cannot move more than its line rate.
  EXPECT_THROW(apply_comm_overrides(line_rate, R"({"comm": {"constants": {"net_efficiency": 1.5}}})", "nics.json"),
               InputError);
  // Packed in one node the same group is NVLink-bound, far faster.
  const auto local = collective_cost(fabric("dgx-h100", 1), Collective::allgather, S, packed(4, 8));
  EXPECT_GT(local.busbw_GBps, 4 * ag.busbw_GBps);
}

TEST(CommModel, NicSharingByConcurrentGroupsHalvesBandwidth) {
  // 8x H100 PCIe servers with 4 x 400 Gb/s NICs: 200 GB/s per node. Two-rank groups, one rank per node.
  const Fabric f = fabric("pcie-8x-h100", 2);
  const double S = 8.0 * 1073741824.0;
  // A NIC moves 0.94 of its line rate (data/comm.json net_efficiency), so the node's 200 GB/s carry 188.
  // 4 groups: 188/4 = 47 GB/s of NIC each (one NIC per rank); the traffic also crosses the GPU's PCIe 5 x16,
  // which NCCL rates 48 GB/s (src/graph/topo.h: 16 x 240/80): busbw = min(48, 47) = 47.
  const auto four = collective_cost(f, Collective::allgather, S, {2, 1, 4});
  // 8 groups: two ranks per NIC, 188/8 = 23.5 GB/s each: busbw 23.5, half the NIC share of 4 groups.
  const auto eight = collective_cost(f, Collective::allgather, S, {2, 1, 8});
  EXPECT_NEAR(four.busbw_GBps, 47.0, 0.5);
  EXPECT_NEAR(eight.busbw_GBps, 23.5, 0.5);
  // DGX H100, 8 NICs (one per GPU, reached over NVLink/PXN, so PCIe does not cap): 8 groups with one rank per node
  // get 0.94 x 400/8 = 47 each; the share halves when twice as many streams (16) cross each node.
  const Fabric h = fabric("dgx-h100", 2);
  const auto h8 = collective_cost(h, Collective::allgather, S, {2, 1, 8});
  const auto h16 = collective_cost(h, Collective::allgather, S, {2, 1, 16});
  EXPECT_NEAR(h16.busbw_GBps, 23.5, 0.5);
  EXPECT_NEAR(h8.busbw_GBps, 47.0, 0.5);
}

TEST(CommModel, NvlsOnlyOnHopperNvswitch) {
  const auto h100 = collective_candidates(fabric("dgx-h100", 1), Collective::allreduce, 1073741824.0, packed(8, 8));
  const auto a100 = collective_candidates(fabric("dgx-a100", 1), Collective::allreduce, 1073741824.0, packed(8, 8));
  auto has = [](const std::vector<CollectiveCost>& v, const std::string& a) {
    for (const auto& c : v)
      if (c.algorithm == a) return true;
    return false;
  };
  EXPECT_TRUE(has(h100, "nvls"));
  EXPECT_FALSE(has(a100, "nvls"));
}

TEST(CommModel, FastPathMatchesFullCost) {
  const Fabric f = fabric("dgx-h100", 4);
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reducescatter, Collective::alltoall,
                       Collective::broadcast, Collective::sendrecv})
    for (double s : {8.0, 65536.0, 1e8, 4e9}) {
      const GroupPlacement g{32, 8, 1};
      EXPECT_DOUBLE_EQ(collective_time_s(f, c, s, g), collective_cost(f, c, s, g).time_s);
    }
}

TEST(CommModel, OneRankCostsNothing) {
  const auto c = collective_cost(fabric("dgx-a100", 1), Collective::allreduce, 1e9, packed(1, 8));
  EXPECT_EQ(c.time_s, 0.0);
}

TEST(CommModel, BadInputs) {
  const Fabric f = fabric("dgx-a100", 2);
  // 17 ranks at 8 per node need 3 nodes; the cluster has 2.
  try {
    collective_cost(f, Collective::allreduce, 1e9, packed(17, 8));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "ranks");  // the request field; the command line shows it as --ranks
    EXPECT_NE(std::string(e.what()).find("at most 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(collective_cost(f, Collective::allreduce, -1, packed(8, 8)), InputError);
  EXPECT_THROW(collective_cost(f, Collective::allreduce, 1e9, {8, 0, 1}), InputError);
  EXPECT_THROW(collective_cost(f, Collective::allreduce, 1e9, {8, 8, 0}), InputError);
  EXPECT_THROW(parse_bytes("lots", "--size"), InputError);
}

TEST(CommFabric, FromCatalogSystems) {
  const Fabric a = fabric("dgx-a100", 1);
  EXPECT_EQ(a.domain_size, 8);
  EXPECT_TRUE(a.nvswitch);
  EXPECT_DOUBLE_EQ(a.domain_per_gpu_GBps, 12 * 20.0);   // NCCL SM80_NVLINK_BW x 12 links
  EXPECT_EQ(a.sm_version, 80);
  const Fabric p = fabric("pcie-8x-l40s", 1);
  EXPECT_EQ(p.domain_size, 1);
  EXPECT_GT(p.pcie_per_gpu_GBps, 0);
  const Fabric h = fabric("dgx-h100", 2);
  EXPECT_DOUBLE_EQ(h.nic_per_gpu_GBps, 50.0);
  EXPECT_EQ(h.nics_per_node, 8);
}

std::string topo_file(const std::string& name) {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/topo/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CommFabric, FromParsedTopologyMatchesTheCatalog) {
  // DGX A100 `nvidia-smi topo -m`: NV12 between every pair -> NVSwitch, 12 x 20 GB/s as NCCL rates NVLink 3.
  const Fabric a = fabric_from_topology(parse_topology(topo_file("01_dgx-a100_nv12_10nic_tabs.txt")), nullptr, 0);
  EXPECT_EQ(a.gpus_per_node, 8);
  EXPECT_EQ(a.domain_size, 8);
  EXPECT_TRUE(a.nvswitch);
  EXPECT_NEAR(a.domain_per_gpu_GBps, 240.0, 1e-9);
  // HGX H100, NV18: 18 x 20.6.
  const Fabric h = fabric_from_topology(parse_topology(topo_file("05_hgx-h100_nv18_no-nic_ht-affinity.txt")), nullptr, 0);
  EXPECT_TRUE(h.nvswitch);
  EXPECT_NEAR(h.domain_per_gpu_GBps, 18 * 20.6, 1e-9);
}

}  // namespace
}  // namespace gpuplan
