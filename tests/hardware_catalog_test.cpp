// The hardware catalog against published figures and hand derivations. Every expected value below is computed
// in the test from a vendor or standards figure stated next to it, never copied from the program's output.
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

using gpuplan::test::error_of;

const HardwareCatalog& cat() {
  static const HardwareCatalog c = HardwareCatalog::builtin();
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// The chapter's five facts.

TEST(HardwareChapterFacts, Pcie5x16Is64PerDirection128Both) {
  // PCI-SIG: 32 GT/s per lane, 16 lanes, 8 bits per byte (before 128b/130b encoding).
  const double per_direction = 32.0 * 16 / 8;
  const LinkSpec& l = cat().link("pcie5-x16");
  EXPECT_DOUBLE_EQ(l.per_direction_GBps, per_direction);
  EXPECT_DOUBLE_EQ(l.per_direction_GBps, 64.0);
  EXPECT_DOUBLE_EQ(l.bidirectional_GBps, 2 * per_direction);
  EXPECT_DOUBLE_EQ(l.bidirectional_GBps, 128.0);
}

TEST(HardwareChapterFacts, Nvlink4Is900PerGpu) {
  // H100 whitepaper: 18 links x 25 GB/s per direction x 2 directions.
  const double expected = 18 * 25.0 * 2;
  EXPECT_DOUBLE_EQ(expected, 900.0);
  const GpuSpec& h100 = cat().gpu("h100-sxm-80gb");
  EXPECT_EQ(h100.scaleup_link, "nvlink4");
  EXPECT_EQ(h100.scaleup_links, 18);
  EXPECT_DOUBLE_EQ(h100.scaleup_bidirectional_GBps, expected);
  EXPECT_DOUBLE_EQ(h100.scaleup_per_direction_GBps, expected / 2);
  EXPECT_DOUBLE_EQ(cat().link("nvlink4").typical_per_gpu_bidirectional_GBps(), expected);
  // H200 and H20 have the full 18 links, H800 only 8 (nvidia-smi nvlink --status on H800: 8 links).
  EXPECT_DOUBLE_EQ(cat().gpu("h200-141gb").scaleup_bidirectional_GBps, expected);
  EXPECT_DOUBLE_EQ(cat().gpu("h20-96gb").scaleup_bidirectional_GBps, expected);
  EXPECT_DOUBLE_EQ(cat().gpu("h800-sxm-80gb").scaleup_bidirectional_GBps, 8 * 25.0 * 2);
}

TEST(HardwareChapterFacts, Nvlink5Is1800PerGpu) {
  // Blackwell: 18 links x 50 GB/s per direction x 2.
  const double expected = 18 * 50.0 * 2;
  EXPECT_DOUBLE_EQ(expected, 1800.0);
  for (const char* name : {"b200", "gb200", "b300"}) {
    EXPECT_EQ(cat().gpu(name).scaleup_link, "nvlink5") << name;
    EXPECT_DOUBLE_EQ(cat().gpu(name).scaleup_bidirectional_GBps, expected) << name;
  }
}

TEST(HardwareChapterFacts, InfinibandNdrIs50GBpsPerPort) {
  // 400 Gb/s / 8 bits per byte = 50 GB/s per direction.
  EXPECT_DOUBLE_EQ(cat().link("ib-ndr").per_direction_GBps, 400.0 / 8);
  EXPECT_DOUBLE_EQ(cat().link("ib-ndr").bidirectional_GBps, 2 * 400.0 / 8);
  EXPECT_DOUBLE_EQ(cat().link("ib-hdr").per_direction_GBps, 200.0 / 8);
  EXPECT_DOUBLE_EQ(cat().link("ib-xdr").per_direction_GBps, 800.0 / 8);
}

TEST(HardwareChapterFacts, DgxH100NvlinkVersusNicIs18x) {
  const SystemSpec& dgx = cat().system("dgx-h100");
  // DGX H100 datasheet: 900 GB/s NVLink per GPU (both ways), one 400 Gb/s ConnectX-7 per GPU (50 GB/s one way).
  EXPECT_DOUBLE_EQ(dgx.scaleup.per_gpu_bidirectional_GBps, 900.0);
  EXPECT_EQ(dgx.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(dgx.nic_per_gpu_per_direction_GBps(), 50.0);
  // The chapter's 18x compares the both-ways NVLink figure with the one-way NIC figure ...
  EXPECT_DOUBLE_EQ(dgx.scaleup.per_gpu_bidirectional_GBps / dgx.nic_per_gpu_per_direction_GBps(), 18.0);
  // ... like for like (one way against one way) the gap is 450 / 50 = 9x.
  EXPECT_DOUBLE_EQ(dgx.scaleup.per_gpu_per_direction_GBps / dgx.nic_per_gpu_per_direction_GBps(), 9.0);
}

// ---------------------------------------------------------------------------------------------------------------
// Published readings and datasheet figures.

TEST(HardwareCatalog, UsableMemoryMatchesNvidiaSmiReadings) {
  const bytes_t MiB = 1 << 20;
  // nvidia-smi totals: H100 SXM 81559 MiB (NVIDIA/nccl#1264), A100 80GB 81920 MiB and L40S 46068 MiB
  // (modal-labs/modal-client#2797), B200 183359 MiB (NVIDIA/TensorRT-LLM#10278), RTX 4090 24564 MiB (RLinf#255).
  EXPECT_EQ(cat().gpu("h100-sxm-80gb").usable_memory_bytes, 81559 * MiB);
  EXPECT_EQ(cat().gpu("h100-sxm-80gb").usable_memory_bytes, 85'520'809'984);
  EXPECT_EQ(cat().gpu("a100-sxm-80gb").usable_memory_bytes, 81920 * MiB);
  EXPECT_EQ(cat().gpu("l40s").usable_memory_bytes, 46068 * MiB);
  EXPECT_EQ(cat().gpu("b200").usable_memory_bytes, 183359 * MiB);
  EXPECT_EQ(cat().gpu("rtx-4090").usable_memory_bytes, 24564 * MiB);
}

TEST(HardwareCatalog, UsableMemoryIsNearTheLabel) {
  // A unit slip (MiB for bytes, GiB for GB) would land far outside this band: what drivers report is the label
  // in GiB less a reservation, i.e. between 0.95x and 1.08x the label in decimal GB.
  for (const auto& [name, g] : cat().gpus()) {
    const double ratio = static_cast<double>(g.usable_memory_bytes) / (g.marketed_memory_GB * 1e9);
    EXPECT_GT(ratio, 0.95) << name;
    EXPECT_LT(ratio, 1.08) << name;
  }
}

TEST(HardwareCatalog, DenseTflopsFromDatasheets) {
  // A100 datasheet: BF16 312 dense (624 with sparsity).
  EXPECT_DOUBLE_EQ(cat().gpu("a100-sxm-80gb").tflops("bf16"), 624.0 / 2);
  // H200 datasheet: FP8 3958 with sparsity -> 1979 dense.
  EXPECT_DOUBLE_EQ(cat().gpu("h200-141gb").tflops("fp8"), 3958.0 / 2);
  // HGX B200 datasheet: BF16 36 PFLOP/s with sparsity for 8 GPUs -> 36000 / 8 / 2.
  EXPECT_DOUBLE_EQ(cat().gpu("b200").tflops("bf16"), 36000.0 / 8 / 2);
  // MI300X datasheet: FP16 1307.4 dense.
  EXPECT_DOUBLE_EQ(cat().gpu("mi300x").tflops("bf16"), 1307.4);
  // V100 has no bf16; asking names what it has.
  const std::string msg = error_of([] { (void)cat().gpu("v100-sxm-32gb").tflops("bf16"); });
  EXPECT_NE(msg.find("fp16"), std::string::npos) << msg;
}

TEST(HardwareCatalog, EveryGpuHasFp32AndA16BitRate) {
  for (const auto& [name, g] : cat().gpus()) {
    EXPECT_TRUE(g.has_dtype("fp32")) << name;
    EXPECT_TRUE(g.has_dtype("bf16") || g.has_dtype("fp16")) << name;
    EXPECT_GT(g.memory_GBps, 0) << name;
    EXPECT_FALSE(g.compute_arch.empty()) << name;
  }
}

TEST(HardwareCatalog, SmVersions) {
  // CUDA compute capabilities: Volta 7.0, Ampere A100 8.0, GA102 8.6, Ada 8.9, Hopper 9.0, Blackwell 10.0.
  EXPECT_EQ(cat().gpu("v100-sxm-16gb").sm_version, 70);
  EXPECT_EQ(cat().gpu("a100-sxm-40gb").sm_version, 80);
  EXPECT_EQ(cat().gpu("rtx-3090").sm_version, 86);
  EXPECT_EQ(cat().gpu("l40s").sm_version, 89);
  EXPECT_EQ(cat().gpu("h100-sxm-80gb").sm_version, 90);
  EXPECT_EQ(cat().gpu("b200").sm_version, 100);
}

TEST(HardwareCatalog, PcieGenerationsDoubleEachTime) {
  // PCI-SIG: 8, 16, 32, 64 GT/s per lane for gen 3..6.
  const char* names[] = {"pcie3-x16", "pcie4-x16", "pcie5-x16", "pcie6-x16"};
  double gts = 8;
  for (const char* n : names) {
    EXPECT_DOUBLE_EQ(cat().link(n).per_direction_GBps, gts * 16 / 8) << n;
    gts *= 2;
  }
}

TEST(HardwareCatalog, EveryLinkStatesBothDirections) {
  for (const auto& [name, l] : cat().links()) {
    EXPECT_GT(l.per_direction_GBps, 0) << name;
    EXPECT_DOUBLE_EQ(l.bidirectional_GBps, 2 * l.per_direction_GBps) << name;
    EXPECT_GT(l.latency_us, 0) << name;
  }
}

TEST(HardwareCatalog, NvswitchChipsMultiplyPortsByPortRate) {
  // Gen 3: 64 NVLink 4 ports x 50 GB/s both ways = 3.2 TB/s.
  EXPECT_DOUBLE_EQ(cat().link("nvswitch3").bidirectional_GBps, 64 * 50.0);
  for (const auto& [name, l] : cat().links()) {
    if (l.kind == LinkKind::nvswitch) {
      EXPECT_DOUBLE_EQ(l.per_direction_GBps, l.ports * cat().link(l.port_link).per_direction_GBps) << name;
    }
  }
}

TEST(HardwareCatalog, Dgx1IsAHybridCubeMeshNotAllToAll) {
  const SystemSpec& dgx1 = cat().system("dgx-1-v100");
  EXPECT_EQ(dgx1.scaleup.topology, ScaleUpTopology::hybrid_cube_mesh);
  // From nvidia-smi topo -m of a DGX-1 (shared/data/topo/02): GPU0-GPU3 NV2, GPU0-GPU1 NV1, GPU0-GPU5 SYS.
  EXPECT_DOUBLE_EQ(dgx1.pair_per_direction_GBps(0, 3), 2 * 25.0);
  EXPECT_DOUBLE_EQ(dgx1.pair_per_direction_GBps(0, 1), 1 * 25.0);
  EXPECT_DOUBLE_EQ(dgx1.pair_per_direction_GBps(0, 5), 0.0);
  EXPECT_DOUBLE_EQ(dgx1.pair_per_direction_GBps(5, 1), 2 * 25.0);
  // Each V100 uses all 6 links: 6 x 25 = 150 GB/s one way.
  EXPECT_EQ(dgx1.scaleup.links_per_gpu, 6);
  EXPECT_DOUBLE_EQ(dgx1.scaleup.per_gpu_per_direction_GBps, 150.0);
  EXPECT_THROW((void)dgx1.pair_per_direction_GBps(0, 0), InputError);
  EXPECT_THROW((void)dgx1.pair_per_direction_GBps(0, 8), InputError);
}

TEST(HardwareCatalog, OtherScaleUpShapes) {
  // NVSwitch: any pair at the full per-GPU rate.
  EXPECT_DOUBLE_EQ(cat().system("dgx-a100").pair_per_direction_GBps(0, 7), 12 * 25.0);
  // Bridged pairs: 0-1 joined, 1-2 not.
  const SystemSpec& nvl = cat().system("pcie-8x-h100-nvl-bridged");
  EXPECT_DOUBLE_EQ(nvl.pair_per_direction_GBps(0, 1), 12 * 25.0);   // 600 GB/s both ways per bridge set
  EXPECT_DOUBLE_EQ(nvl.pair_per_direction_GBps(1, 2), 0.0);
  // MI300X: one 64 GB/s link between every pair, 7 x 64 = 448 GB/s one way per GPU.
  const SystemSpec& mi = cat().system("mi300x-8x");
  EXPECT_DOUBLE_EQ(mi.pair_per_direction_GBps(2, 6), 64.0);
  EXPECT_DOUBLE_EQ(mi.scaleup.per_gpu_per_direction_GBps, 7 * 64.0);
  // PCIe-only.
  EXPECT_DOUBLE_EQ(cat().system("pcie-8x-l40s").pair_per_direction_GBps(0, 1), 0.0);
  // GB200 NVL72: one NVLink domain of 72 GPUs.
  EXPECT_EQ(cat().system("gb200-nvl72").scaleup.domain_gpus, 72);
  EXPECT_EQ(cat().system("gb200-nvl72").gpus_per_node, 72);
}

TEST(HardwareCatalog, DetectionHelpers) {
  ASSERT_NE(cat().gpu_by_device_name("NVIDIA H800"), nullptr);
  EXPECT_EQ(cat().gpu_by_device_name("NVIDIA H800")->name, "h800-sxm-80gb");
  EXPECT_EQ(cat().gpu_by_device_name(" tesla v100-sxm2-32gb ")->name, "v100-sxm-32gb");
  EXPECT_EQ(cat().gpu_by_device_name("Some Other GPU"), nullptr);
  // Rates printed by nvidia-smi nvlink -s (reference notes, section 8).
  EXPECT_EQ(cat().nvlink_by_reported_rate(25.781)->name, "nvlink2");
  EXPECT_EQ(cat().nvlink_by_reported_rate(25.0)->name, "nvlink3");
  EXPECT_EQ(cat().nvlink_by_reported_rate(26.562)->name, "nvlink4");
  EXPECT_EQ(cat().nvlink_by_reported_rate(53.125)->name, "nvlink5");
  EXPECT_EQ(cat().nvlink_by_reported_rate(14.062)->name, "nvlink3-bridge");
  EXPECT_EQ(cat().nvlink_by_reported_rate(40.0), nullptr);
}

// ---------------------------------------------------------------------------------------------------------------
// Sources.

TEST(CatalogSources, EveryEntryHasANonEmptySource) {
  const HardwareCatalog& c = cat();
  EXPECT_GE(c.gpus().size(), 22u);
  EXPECT_GE(c.systems().size(), 10u);
  for (const auto& [name, g] : c.gpus()) {
    EXPECT_FALSE(g.source.empty()) << name;
    // Usable memory is either a reading or says it was derived.
    ASSERT_TRUE(g.field_sources.count("usable_memory_bytes")) << name;
    EXPECT_FALSE(g.field_sources.at("usable_memory_bytes").empty()) << name;
  }
  for (const auto& [name, l] : c.links()) EXPECT_FALSE(l.source.empty()) << name;
  for (const auto& [name, s] : c.systems()) EXPECT_FALSE(s.source.empty()) << name;
}

TEST(CatalogSources, RequiredNamesExist) {
  for (const char* n : {"a100-sxm-80gb", "a100-sxm-40gb", "a100-pcie-80gb", "h100-sxm-80gb", "h100-pcie-80gb",
                        "h100-nvl-94gb", "h800-sxm-80gb", "h20-96gb", "h200-141gb", "b200", "gb200", "b300", "l40s",
                        "rtx-3090", "rtx-4090", "rtx-5090", "mi250x", "mi300x", "mi325x", "mi355x", "v100-sxm-16gb",
                        "v100-sxm-32gb"})
    EXPECT_NE(cat().find_gpu(n), nullptr) << n;
  for (const char* n : {"dgx-1-v100", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "hgx-h100",
                        "hgx-h200", "mi300x-8x"})
    EXPECT_NE(cat().find_system(n), nullptr) << n;
}

// ---------------------------------------------------------------------------------------------------------------
// Lookup errors.

TEST(CatalogLookup, UnknownNamesSuggestTheClosest) {
  std::string msg = error_of([] { (void)cat().gpu("h100"); });
  EXPECT_NE(msg.find("did you mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("h100-sxm-80gb"), std::string::npos) << msg;
  msg = error_of([] { (void)cat().system("dgx-h10"); });
  EXPECT_NE(msg.find("dgx-h100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cluster.system"), std::string::npos) << msg;
  msg = error_of([] { (void)cat().link("nvlnk4"); });
  EXPECT_NE(msg.find("nvlink4"), std::string::npos) << msg;
  // Case does not matter.
  EXPECT_EQ(cat().gpu("H100-SXM-80GB").name, "h100-sxm-80gb");
}

// ---------------------------------------------------------------------------------------------------------------
// User overrides.

TEST(CatalogMerge, OverrideOneFieldKeepsTheRest) {
  HardwareCatalog c = HardwareCatalog::builtin();
  c.merge_json(R"({"gpus": {"h100-sxm-80gb": {"usable_memory_bytes": "80 GiB", "source": "my lab"}}})", "mine.json");
  const GpuSpec& g = c.gpu("h100-sxm-80gb");
  EXPECT_EQ(g.usable_memory_bytes, 80LL * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(g.memory_GBps, 3350);   // untouched field (datasheet 3.35 TB/s)
  EXPECT_EQ(g.origin, "mine.json");
  EXPECT_EQ(g.source, "my lab");
  EXPECT_EQ(g.field_sources.at("usable_memory_bytes"), "set in mine.json");   // the old reading's note is gone
  // The built-in catalog is untouched.
  EXPECT_EQ(HardwareCatalog::builtin().gpu("h100-sxm-80gb").usable_memory_bytes, 85'520'809'984);
}

TEST(CatalogMerge, OverridingALinkReDerivesGpusAndSystems) {
  HardwareCatalog c = HardwareCatalog::builtin();
  c.merge_json(R"({"links": {"nvlink4": {"per_direction_GBps": 20, "bidirectional_GBps": 40}}})", "derated.json");
  EXPECT_DOUBLE_EQ(c.gpu("h100-sxm-80gb").scaleup_bidirectional_GBps, 18 * 40.0);
  EXPECT_DOUBLE_EQ(c.system("dgx-h100").scaleup.per_gpu_per_direction_GBps, 18 * 20.0);
}

TEST(CatalogMerge, AddsNewEntries) {
  HardwareCatalog c = HardwareCatalog::builtin();
  c.merge_json(R"({
    "gpus": {"my-gpu": {"vendor": "nvidia", "description": "test", "architecture": "hopper", "compute_arch": "sm90",
             "form_factor": "sxm", "memory_type": "HBM3", "marketed_memory_GB": 64, "usable_memory_bytes": 64000000000,
             "memory_GBps": 2000, "dense_tflops": {"fp32": 50, "bf16": 500}, "scaleup_link": "nvlink4",
             "scaleup_links": 4, "host_link": "pcie5-x16", "source": "made up"}},
    "systems": {"my-box": {"description": "4 of them", "gpu": "my-gpu", "gpus_per_node": 4,
                "scaleup": {"topology": "nvswitch", "link": "nvlink4", "links_per_gpu": 4, "switch": "nvswitch3"},
                "nics_per_node": 2, "nic_link": "eth-400g", "host_memory_bytes": "512 GB", "host_link": "pcie5-x16",
                "source": "made up"}}})",
               "new.json");
  EXPECT_EQ(c.system("my-box").host_memory_bytes, 512'000'000'000);
  EXPECT_DOUBLE_EQ(c.system("my-box").scaleup.per_gpu_bidirectional_GBps, 4 * 50.0);
  EXPECT_DOUBLE_EQ(c.system("my-box").nic_per_gpu_per_direction_GBps(), 2 * 50.0 / 4);
}

// A new entry written by hand learns every key it lacks in one error, not one per run.
TEST(CatalogMerge, IncompleteNewEntryNamesEveryMissingField) {
  HardwareCatalog c = HardwareCatalog::builtin();
  const std::string msg =
      error_of([&] { c.merge_json(R"({"gpus": {"half-gpu": {"vendor": "nvidia", "source": "x"}}})", "half.json"); });
  EXPECT_NE(msg.find("half.json: gpus.half-gpu: missing description, architecture, compute_arch, form_factor, "
                     "memory_type, marketed_memory_GB, usable_memory_bytes, memory_GBps, dense_tflops, host_link;"),
            std::string::npos)
      << msg;
  const std::string link = error_of([&] { c.merge_json(R"({"links": {"my-link": {"kind": "nvlink"}}})", "l.json"); });
  EXPECT_NE(link.find("links.my-link: missing description, per_direction_GBps, bidirectional_GBps, latency_us, "
                      "source;"),
            std::string::npos)
      << link;
  EXPECT_EQ(c.find_gpu("half-gpu"), nullptr);   // unchanged on error
}

// ---------------------------------------------------------------------------------------------------------------
// Malformed catalog files.

TEST(CatalogErrors, MalformedJsonNamesTheFile) {
  HardwareCatalog c = HardwareCatalog::builtin();
  const std::string msg = error_of([&] { c.merge_json(R"({"gpus": {)", "broken.json"); });
  EXPECT_NE(msg.find("broken.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
}

TEST(CatalogErrors, WrongTypeNamesFileFieldValueAndAccepted) {
  HardwareCatalog c = HardwareCatalog::builtin();
  const std::string msg =
      error_of([&] { c.merge_json(R"({"gpus": {"b200": {"memory_GBps": "fast"}}})", "typo.json"); });
  EXPECT_NE(msg.find("typo.json: gpus.b200.memory_GBps"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"fast\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("accepted: a number"), std::string::npos) << msg;
  EXPECT_DOUBLE_EQ(c.gpu("b200").memory_GBps, 8000);   // unchanged (HGX B200: 64 TB/s / 8)
}

TEST(CatalogErrors, UnknownKeysSuggestTheIntendedOne) {
  HardwareCatalog c = HardwareCatalog::builtin();
  std::string msg = error_of([&] { c.merge_json(R"({"gpus": {"b200": {"usable_memory_byte": 1}}})", "k.json"); });
  EXPECT_NE(msg.find("usable_memory_bytes"), std::string::npos) << msg;
  msg = error_of([&] { c.merge_json(R"({"gpu": {}})", "k.json"); });
  EXPECT_NE(msg.find("did you mean gpus"), std::string::npos) << msg;
}

TEST(CatalogErrors, BrokenReferencesAreReported) {
  HardwareCatalog c = HardwareCatalog::builtin();
  std::string msg = error_of([&] { c.merge_json(R"({"systems": {"dgx-h100": {"gpu": "h100-sxm"}}})", "r.json"); });
  EXPECT_NE(msg.find("r.json: systems.dgx-h100.gpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("h100-sxm-80gb"), std::string::npos) << msg;
  msg = error_of([&] { c.merge_json(R"({"links": {"pcie5-x16": {"bidirectional_GBps": 64}}})", "r.json"); });
  EXPECT_NE(msg.find("bidirectional_GBps"), std::string::npos) << msg;   // must be 2 x 64
  msg = error_of([&] { c.merge_json(R"({"gpus": {"H100": {}}})", "r.json"); });
  EXPECT_NE(msg.find("lowercase"), std::string::npos) << msg;
  msg = error_of([&] { c.merge_json(R"({"gpus": {"b200": {"source": "  "}}})", "r.json"); });
  EXPECT_NE(msg.find("gpus.b200.source"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------------------------
// Clusters.

TEST(HardwareCluster, FromSystemAndNodes) {
  const Cluster c = make_cluster("dgx-h100", 4);
  EXPECT_EQ(c.total_gpus(), 4 * 8);
  EXPECT_EQ(c.network, NetworkShape::rail_optimized);
  EXPECT_DOUBLE_EQ(c.scaleout_per_gpu_per_direction_GBps(), 400.0 / 8);   // one NDR NIC per GPU
  EXPECT_EQ(make_cluster("dgx-h100", 1).network, NetworkShape::single_node);
  EXPECT_DOUBLE_EQ(make_cluster("dgx-h100", 1).scaleout_per_gpu_per_direction_GBps(), 0.0);
  EXPECT_EQ(make_cluster("gb200-nvl72", 2).total_gpus(), 144);
}

TEST(HardwareCluster, BadArguments) {
  std::string msg = error_of([] { (void)make_cluster("dgx-h1000", 2); });
  EXPECT_NE(msg.find("cluster.system"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dgx-h100"), std::string::npos) << msg;
  msg = error_of([] { (void)make_cluster("dgx-h100", 0); });
  EXPECT_NE(msg.find("cluster.nodes"), std::string::npos) << msg;
}

TEST(HardwareCluster, FromJson) {
  const Cluster c = cluster_from_json(
      R"({"name": "lab", "system": "dgx-a100", "nodes": 16,
          "network": {"shape": "fat-tree", "oversubscription": 2}})",
      "lab.json");
  EXPECT_EQ(c.name, "lab");
  EXPECT_EQ(c.total_gpus(), 128);
  EXPECT_EQ(c.network, NetworkShape::fat_tree);
  // HDR 200 Gb/s = 25 GB/s per GPU, halved by 2:1 oversubscription.
  EXPECT_DOUBLE_EQ(c.scaleout_per_gpu_per_direction_GBps(), 200.0 / 8 / 2);
}

TEST(HardwareCluster, JsonMayCarryItsOwnSystem) {
  const Cluster c = cluster_from_json(
      R"({"system": "dgx-h100-4nic", "nodes": 2,
          "systems": {"dgx-h100-4nic": {"description": "4 NICs", "gpu": "h100-sxm-80gb", "gpus_per_node": 8,
              "scaleup": {"topology": "nvswitch", "link": "nvlink4", "links_per_gpu": 18, "switch": "nvswitch3"},
              "nics_per_node": 4, "nic_link": "ib-ndr", "host_memory_bytes": "2 TB", "host_link": "pcie5-x16",
              "source": "test"}}})",
      "c.json");
  EXPECT_DOUBLE_EQ(c.scaleout_per_gpu_per_direction_GBps(), 4 * 50.0 / 8);
}

TEST(HardwareCluster, JsonErrorsNameFileAndField) {
  std::string msg = error_of([] { (void)cluster_from_json(R"({"system": "dgx-h100"})", "c.json"); });
  EXPECT_NE(msg.find("c.json: cluster.nodes"), std::string::npos) << msg;
  msg = error_of([] {
    (void)cluster_from_json(R"({"system": "dgx-h100", "nodes": 2, "network": {"shape": "fat_tree"}})", "c.json");
  });
  EXPECT_NE(msg.find("c.json: cluster.network.shape"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fat-tree"), std::string::npos) << msg;
  msg = error_of([] { (void)cluster_from_json(R"({"system": "dgx-h100", "nodes": 2,)", "c.json"); });
  EXPECT_NE(msg.find("c.json"), std::string::npos) << msg;
  msg = error_of([] { (void)cluster_from_json(R"({"system": "dgx", "nodes": 2})", "c.json"); });
  EXPECT_NE(msg.find("c.json: cluster.system"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gpuplan
