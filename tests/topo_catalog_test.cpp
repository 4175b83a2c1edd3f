// The topology analysis reads its rates from the hardware catalog: names, nvlink -s rates, NV# patterns and
// --catalog overrides. Expected figures are those of data/hardware/*.json (read by hand).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/topology.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

using gpuplan::test::read_test_data;
using gpuplan::test::any_contains;

std::string data_path(const std::string& rel) { return std::string(GPUPLAN_TEST_DATA_DIR) + "/" + rel; }

TEST(TopoCatalog, RatesOfACatalogGpu) {
  const auto r = link_rates_for_gpu("h100-sxm-80gb");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->gpu, "h100-sxm-80gb");
  EXPECT_EQ(r->generation, "Hopper (NVLink 4)");
  EXPECT_EQ(r->nvlink_link, "nvlink4");
  EXPECT_DOUBLE_EQ(r->nvlink_per_link_GBps, 25.0);   // links.nvlink4: 900 GB/s both ways / 18 / 2
  EXPECT_EQ(r->nvlinks_per_gpu, 18);
  EXPECT_EQ(r->pcie_link, "pcie5-x16");
  EXPECT_DOUBLE_EQ(r->pcie_GBps, 64.0);              // PCI-SIG headline, one direction
  EXPECT_EQ(r->nic_link, "ib-ndr");
  EXPECT_DOUBLE_EQ(r->nic_GBps, 50.0);               // NDR 400 Gb/s
  EXPECT_NE(r->source.find("gpus.h100-sxm-80gb"), std::string::npos) << r->source;
  // Device names as the driver prints them, any case.
  EXPECT_EQ(link_rates_for_gpu("Tesla V100-SXM2-32GB")->gpu, "v100-sxm-32gb");
  EXPECT_EQ(link_rates_for_gpu("nvidia h800")->nvlinks_per_gpu, 8);
  EXPECT_EQ(link_rates_for_gpu("RTX-3090")->generation, "Ampere (NVLink 3 bridge)");
  EXPECT_DOUBLE_EQ(link_rates_for_gpu("rtx-3090")->nvlink_per_link_GBps, 14.0625);
  EXPECT_EQ(link_rates_for_gpu("mi300x")->generation, "AMD CDNA3 (xGMI)");
  EXPECT_EQ(link_rates_for_gpu("l40s")->nvlinks_per_gpu, 0);
  EXPECT_FALSE(link_rates_for_gpu("potato").has_value());
  EXPECT_FALSE(link_rates_for_gpu("").has_value());
}

TEST(TopoCatalog, SmiRateNamesTheLinkAndItsFlagshipGpu) {
  EXPECT_EQ(link_rates_for_smi_rate(25.781)->nvlink_link, "nvlink2");
  EXPECT_EQ(link_rates_for_smi_rate(25.0)->gpu, "a100-sxm-40gb");    // 12 links, SXM, first by name
  EXPECT_EQ(link_rates_for_smi_rate(26.562)->gpu, "h100-sxm-80gb");  // 18 links: not the H800's 8
  EXPECT_EQ(link_rates_for_smi_rate(53.125)->gpu, "b200");
  EXPECT_EQ(link_rates_for_smi_rate(14.062)->gpu, "rtx-3090");
  EXPECT_FALSE(link_rates_for_smi_rate(7.0).has_value());
}

TEST(TopoCatalog, UnknownGpuSuggestsCatalogNames) {
  TopologyOptions opt;
  opt.gpu_name = "h100";
  try {
    analyze_topology(parse_topology(read_test_data("topo/05_hgx-h100_nv18_no-nic_ht-affinity.txt")), opt);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm-80gb"), std::string::npos) << e.what();
  }
}

TEST(TopoCatalog, PatternsResolveToCatalogEntries) {
  const auto h = analyze_topology(parse_topology(read_test_data("topo/05_hgx-h100_nv18_no-nic_ht-affinity.txt")));
  ASSERT_TRUE(h.rates.has_value());
  EXPECT_EQ(h.rates->gpu, "h100-sxm-80gb");
  EXPECT_NE(h.rates_reason.find("NV18"), std::string::npos);
  const auto v = analyze_topology(parse_topology(read_test_data("topo/02_dgx1-v100_hybrid-cube-mesh_nv1-nv2.txt")));
  EXPECT_EQ(v.rates->gpu, "v100-sxm-32gb");
  EXPECT_DOUBLE_EQ(v.nic_GBps, 12.5);  // EDR 100 Gb/s for Volta systems (DGX-1)
  // An 8-GPU NV1-only mesh: DGX-1 with P100 (4 NVLink 1 links of 20 GB/s, PCIe 3.0).
  std::string text = "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\n";
  const int mesh[8][8] = {{0, 1, 1, 1, 1, 0, 0, 0}, {1, 0, 1, 1, 0, 1, 0, 0}, {1, 1, 0, 1, 0, 0, 1, 0},
                          {1, 1, 1, 0, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 1, 1, 1}, {0, 1, 0, 0, 1, 0, 1, 1},
                          {0, 0, 1, 0, 1, 1, 0, 1}, {0, 0, 0, 1, 1, 1, 1, 0}};
  for (int i = 0; i < 8; ++i) {
    text += "GPU" + std::to_string(i);
    for (int j = 0; j < 8; ++j) text += i == j ? "\t X " : mesh[i][j] ? "\tNV1" : "\tSYS";
    text += "\n";
  }
  const auto p = analyze_topology(parse_nvidia_smi_topo(text));
  ASSERT_TRUE(p.rates.has_value());
  EXPECT_EQ(p.rates->gpu, "p100-sxm-16gb");
  EXPECT_DOUBLE_EQ(p.bandwidth_GBps[0][1], 20.0);  // links.nvlink1
  EXPECT_DOUBLE_EQ(p.bandwidth_GBps[0][5], 16.0);  // links.pcie3-x16
}

// HAND-MADE: a matrix of `gpus` GPUs with the same code between every pair, in nvidia-smi topo -m layout.
std::string uniform_matrix(int gpus, const std::string& code) {
  std::string text;
  for (int j = 0; j < gpus; ++j) text += "\tGPU" + std::to_string(j);
  text += "\n";
  for (int i = 0; i < gpus; ++i) {
    text += "GPU" + std::to_string(i);
    for (int j = 0; j < gpus; ++j) text += i == j ? "\t X " : "\t" + code;
    text += "\n";
  }
  return text;
}

TEST(TopoCatalog, QuadNv6MeshIsNvlink4) {
  // 4 GPUs, NV6 between every pair, no NVSwitch: 6 x 3 peers = 18 NVLinks per GPU, Hopper's count (gpus.h100-sxm-80gb
  // scaleup_links 18, links.nvlink4), not a generation with 6 links per GPU.
  const Topology quad = parse_topology(read_test_data("topo/24_gh200-quad_nv6_numa-lists_gpu-numa-id.txt"));
  const auto r = analyze_topology(quad);
  ASSERT_TRUE(r.rates.has_value());
  EXPECT_EQ(r.rates->gpu, "h100-sxm-80gb");
  EXPECT_EQ(r.rates->generation, "Hopper (NVLink 4)");
  EXPECT_EQ(r.rates->nvlink_link, "nvlink4");
  EXPECT_NE(r.rates_reason.find("NV6 between every pair of 4 GPUs"), std::string::npos) << r.rates_reason;
  EXPECT_NE(r.rates_reason.find("6 x 3 = 18 NVLinks per GPU"), std::string::npos) << r.rates_reason;
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[1][2], 6 * 25.0);  // links.nvlink4: 25 GB/s per link per direction
  EXPECT_DOUBLE_EQ(r.nic_GBps, 50.0);                  // ib-ndr for Hopper systems
  EXPECT_FALSE(any_contains(r.warnings, "GPU generation unknown"));
  // A GPU named by --gpu still wins over the pattern.
  TopologyOptions opt;
  opt.gpu_name = "h100-nvl-94gb";
  const auto named = analyze_topology(quad, opt);
  EXPECT_EQ(named.rates->gpu, "h100-nvl-94gb");
}

TEST(TopoCatalog, DirectMeshCountsLinksPerGpu) {
  // HAND-MADE matrices. 4 GPUs with NV4 to each peer: 4 x 3 = 12 NVLinks per GPU, the A100's (4-GPU HGX A100).
  const auto a100 = analyze_topology(parse_nvidia_smi_topo(uniform_matrix(4, "NV4")));
  ASSERT_TRUE(a100.rates.has_value());
  EXPECT_EQ(a100.rates->gpu, "a100-sxm-80gb");
  EXPECT_DOUBLE_EQ(a100.bandwidth_GBps[0][1], 4 * 25.0);
  // 16 GPUs with NV6 to each of 15 peers cannot be a mesh of 18-link GPUs (6 x 15 = 90): an NVSwitch board such as
  // a DGX-2, whose V100s have 6 links each. Not taken as Hopper.
  const auto sixteen = analyze_topology(parse_nvidia_smi_topo(uniform_matrix(16, "NV6")));
  EXPECT_TRUE(!sixteen.rates.has_value() || sixteen.rates->nvlink_link != "nvlink4");
  // A pair's NV# counts its links itself (bridges): NV6 x 1 peer is no 18-link mesh.
  const auto pair = analyze_topology(parse_nvidia_smi_topo(uniform_matrix(2, "NV6")));
  EXPECT_FALSE(pair.rates.has_value());
}

TEST(TopoCatalog, NvlinkStatusRateAloneIdentifiesTheLink) {
  NvlinkStatus s = parse_nvlink_status(read_test_data("nvlink/nvlink-status_h800_8links.txt"));
  for (auto& g : s.gpus) g.name = "Some Future GPU";  // the name unknown: only the 26.562 rate is left
  TopologyOptions opt;
  opt.nvlink_status = s;
  const auto r = analyze_topology(parse_topology(read_test_data("topo/06_h800_nv8_4nic_clipped-copy-paste.txt")), opt);
  ASSERT_TRUE(r.rates.has_value());
  EXPECT_EQ(r.rates->nvlink_link, "nvlink4");
  EXPECT_NE(r.rates_reason.find("26.562"), std::string::npos) << r.rates_reason;
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[2][5], 8 * 25.0);
}

TEST(TopoCatalog, CatalogOverridesChangeTheRates) {
  HardwareCatalog c = HardwareCatalog::builtin();
  c.merge_json(R"({"links": {"nvlink4": {"per_direction_GBps": 20, "bidirectional_GBps": 40},
                             "ib-ndr": {"per_direction_GBps": 40, "bidirectional_GBps": 80}}})",
               "override.json");
  TopologyOptions opt;
  opt.catalog = &c;
  const auto r = analyze_topology(parse_topology(read_test_data("topo/05_hgx-h100_nv18_no-nic_ht-affinity.txt")), opt);
  EXPECT_DOUBLE_EQ(r.bandwidth_GBps[0][7], 18 * 20.0);
  EXPECT_DOUBLE_EQ(r.nic_GBps, 40.0);
  // A GPU added by the user is accepted by --gpu.
  c.merge_json(R"({"gpus": {"my-gpu": {"vendor": "nvidia", "description": "ours", "architecture": "hopper",
      "compute_arch": "sm90", "sm_version": 90, "form_factor": "sxm", "memory_type": "HBM3",
      "marketed_memory_GB": 80, "usable_memory_bytes": "80 GiB", "memory_GBps": 3000,
      "dense_tflops": {"bf16": 900}, "scaleup_link": "nvlink4", "scaleup_links": 18, "host_link": "pcie4-x16",
      "source": "test"}}})",
               "mine.json");
  opt.gpu_name = "my-gpu";
  const auto m = analyze_topology(parse_topology(read_test_data("topo/05_hgx-h100_nv18_no-nic_ht-affinity.txt")), opt);
  EXPECT_EQ(m.rates->gpu, "my-gpu");
  EXPECT_DOUBLE_EQ(m.rates->pcie_GBps, 32.0);
}

TEST(TopoCatalog, UnknownGenerationFallsBackToCatalogLinks) {
  const auto u = analyze_topology(parse_topology(read_test_data("topo/03_2gpu_nvlink-bridge_nv2_numa-na.txt")));
  EXPECT_FALSE(u.rates.has_value());
  EXPECT_DOUBLE_EQ(u.bandwidth_GBps[0][1], 2 * 20.0);  // NCCL's model rate of links.nvlink3
  EXPECT_DOUBLE_EQ(u.nic_GBps, 12.5);                  // links.ib-edr, 100 Gb/s
}

TEST(TopoCli, CatalogFileIsApplied) {
  const auto path = std::filesystem::temp_directory_path() / "gpuplan_topo_cli_catalog.json";
  std::ofstream(path) << R"({"links": {"ib-ndr": {"per_direction_GBps": 40, "bidirectional_GBps": 80}}})";
  const std::string topo = data_path("topo/05_hgx-h100_nv18_no-nic_ht-affinity.txt");
  auto r = test::run_cli("topo " + topo + " --json --catalog " + path.string());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu"], "h100-sxm-80gb");
  EXPECT_DOUBLE_EQ(j["nic_GBps"].get<double>(), 40.0);
  r = test::run_cli("topo " + topo + " --gpu h100");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("h100-sxm-80gb"), std::string::npos) << r.err;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gpuplan
