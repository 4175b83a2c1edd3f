// gpuplan size: the arithmetic from a step time to a training run derived by hand, the sweep's inputs, the
// time-versus-cost front, and the properties a sweep must keep (more nodes never fit worse, time to train falls
// with nodes unless the output says why, cost is GPU-hours times the price). Catalog figures quoted here come from
// the datasheets data/hardware/*.json cites.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"
#include "size/sizing.hpp"

namespace api = gpuplan::api;
namespace sizing = gpuplan::sizing;
using gpuplan::test::run_cli;

namespace {

api::SizeRequest small_sweep() {
  api::SizeRequest r;
  r.model.name_or_path = "llama-3.1-8b";
  r.tokens = "100B";
  r.training.seq_len = 4096;
  r.global_batch_tokens = "4M";   // 976.6 sequences, rounded to 1024
  r.systems = {"dgx-h100", "dgx-b200"};
  r.nodes = "1:32";
  r.price = "dgx-h100=2.5,dgx-b200=4";
  r.explain = true;
  return r;
}

}  // namespace

TEST(SizeArithmetic, RunLengthByHand) {
  // 1e9 tokens in steps of 3e5 tokens: 3333.3 steps, so 3334 whole steps. At 2 s a step that is 6668 s of
  // training; checkpoints add 10 % (7334.8 s) and a goodput of 0.8 stretches it to 9168.5 s of wall time.
  const sizing::RunLength run = sizing::run_length(2.0, 16, {1e9, 3e5, 0.8, 0.1});
  EXPECT_DOUBLE_EQ(run.steps, 3334);
  EXPECT_NEAR(run.seconds, 3334 * 2.0 * 1.1 / 0.8, 1e-9);
  EXPECT_NEAR(run.days, 9168.5 / 86400, 1e-9);
  EXPECT_NEAR(run.gpu_hours, 9168.5 / 3600 * 16, 1e-9);   // 40.749 GPU-hours
}

TEST(SizeArithmetic, EnergyAndHostShareByHand) {
  // 16 GPUs at 700 W for 3600 s = 40.32 MJ = 11.2 kWh; with 82.14 % host share 20.4 kWh = 0.0204 MWh.
  EXPECT_NEAR(sizing::energy_MWh(3600, 16, 700, 0), 16 * 700 * 3600 / 3.6e9, 1e-12);
  // DGX H100 datasheet: 10.2 kW for the node; H100 SXM: 700 W a board, 8 of them 5.6 kW. The rest, 4.6 kW, is
  // 82.14 % of the GPUs' power.
  gpuplan::SystemSpec dgx;
  dgx.gpus_per_node = 8;
  dgx.power_W = 10200;
  gpuplan::GpuSpec h100;
  h100.board_power_W = 700;
  EXPECT_NEAR(*sizing::host_power_overhead(dgx, h100), 4600.0 / 5600.0, 1e-12);
  h100.board_power_W = 0;
  EXPECT_FALSE(sizing::host_power_overhead(dgx, h100).has_value());
}

TEST(SizeInputs, NodeCountsDurationsAndPrices) {
  EXPECT_EQ(sizing::node_counts("1:2048", "nodes").size(), 12u);   // 2^0 .. 2^11
  EXPECT_EQ(sizing::node_counts("3:100", "nodes"), (std::vector<std::int64_t>{3, 4, 8, 16, 32, 64, 100}));
  EXPECT_EQ(sizing::node_counts("24, 16,24,32", "nodes"), (std::vector<std::int64_t>{16, 24, 32}));
  for (const char* bad : {"8:2", "0:4", "1:", "a,b", "", "1:2:3", "4,-1"})
    EXPECT_THROW(sizing::node_counts(bad, "nodes"), gpuplan::InputError) << bad;
  EXPECT_DOUBLE_EQ(sizing::duration_days("90d", "deadline"), 90);
  EXPECT_DOUBLE_EQ(sizing::duration_days("12w", "deadline"), 84);
  EXPECT_DOUBLE_EQ(sizing::duration_days("36h", "deadline"), 1.5);
  for (const char* bad : {"0d", "-3d", "soon", "d"})
    EXPECT_THROW(sizing::duration_days(bad, "deadline"), gpuplan::InputError) << bad;
  const std::vector<std::string> systems = {"dgx-h100", "dgx-b200"};
  EXPECT_EQ(sizing::prices("2.5", "price", systems).size(), 2u);
  const auto each = sizing::prices("dgx-b200=4.5", "price", systems);
  EXPECT_EQ(each.size(), 1u);
  EXPECT_DOUBLE_EQ(each.at("dgx-b200"), 4.5);
  for (const char* bad : {"dgx-a100=2", "dgx-h100=", "-1", "dgx-h100=x"})
    EXPECT_THROW(sizing::prices(bad, "price", systems), gpuplan::InputError) << bad;
}

TEST(SizeInputs, ParetoFrontByHand) {
  // (days, cost): A (10, 5) and B (5, 10) trade off; C (10, 10) is beaten by both; D (4, 20) is fastest;
  // E (1, 1) does not fit and beats nothing.
  const std::vector<bool> front = sizing::pareto_front({10, 5, 10, 4, 1}, {5, 10, 10, 20, 1},
                                                       {true, true, true, true, false});
  EXPECT_EQ(front, (std::vector<bool>{true, true, false, true, false}));
}

TEST(SizeInputs, NetworkTiersFromTheCatalog) {
  gpuplan::SystemSpec dgx;
  dgx.leaf_nodes = 32;   // DGX SuperPOD: 32-node scalable units, leaf-spine up to 256 nodes
  dgx.spine_nodes = 256;
  EXPECT_EQ(sizing::network_tier(dgx, 1, std::nullopt).name, "one node");
  EXPECT_EQ(sizing::network_tier(dgx, 32, std::nullopt).name, "leaf");
  EXPECT_EQ(sizing::network_tier(dgx, 33, std::nullopt).name, "spine");
  EXPECT_EQ(sizing::network_tier(dgx, 512, std::nullopt).name, "core");
  EXPECT_DOUBLE_EQ(sizing::network_tier(dgx, 64, 2.0).oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(sizing::network_tier(dgx, 16, 2.0).oversubscription, 1.0);   // within one leaf
}

TEST(SizeSweep, EachPointIsTheEstimateOfItsLayoutAndPricedByHand) {
  const api::SizeResult r = api::run(small_sweep());
  ASSERT_EQ(r.points.size(), 12u);   // 2 systems x {1, 2, 4, 8, 16, 32}
  EXPECT_EQ(r.job.global_batch, 1024);
  const double steps = std::ceil(100e9 / (1024.0 * 4096));   // 23,842 steps
  for (const api::SizePoint& p : r.points) {
    ASSERT_TRUE(p.fits) << p.system << " " << p.nodes << ": " << p.note;
    // The step time is what `gpuplan estimate` gives the layout (the command the point carries).
    const auto run = run_cli(p.command.substr(std::string("gpuplan ").size()) + " --json");
    ASSERT_EQ(run.status, 0) << p.command << run.err;
    EXPECT_NEAR(nlohmann::json::parse(run.out)["time"]["step_s"].get<double>(), p.step_s, 1e-9 * p.step_s);
    const double seconds = steps * p.step_s;
    EXPECT_NEAR(p.days, seconds / 86400, 1e-9 * p.days);
    EXPECT_NEAR(p.gpu_hours, seconds / 3600 * static_cast<double>(p.gpus), 1e-9 * p.gpu_hours);
    const double price = p.system == "dgx-h100" ? 2.5 : 4.0;
    ASSERT_TRUE(p.cost_dollars.has_value());
    EXPECT_NEAR(*p.cost_dollars, p.gpu_hours * price, 1e-9 * *p.cost_dollars);   // cost = GPU-hours x price
    // Energy: H100 700 W with DGX H100's 10.2 kW node; B200 1000 W with DGX B200's 14.3 kW node.
    const double node_W = p.system == "dgx-h100" ? 10200 : 14300;
    EXPECT_NEAR(p.energy_MWh, seconds * static_cast<double>(p.nodes) * node_W / 3.6e9, 1e-9 * p.energy_MWh);
    EXPECT_EQ(p.gpus, 8 * p.nodes);
  }
}

// A torchtitan user sizes torchtitan's layouts (FSDP2, its rules and memory), not Megatron-LM's: each point is
// torchtitan's estimate of its layout.
TEST(SizeSweep, TheFrameworkGivenIsTheOneSized) {
  const auto r = run_cli("size llama-3.1-8b --tokens 100B --systems dgx-h100 --nodes 1:2 --framework torchtitan --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json points = nlohmann::json::parse(r.out).at("points");
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    const std::string command = p.at("command");
    EXPECT_NE(command.find(" --framework torchtitan "), std::string::npos) << command;
    const auto run = run_cli(command.substr(std::string("gpuplan ").size()) + " --json");
    ASSERT_EQ(run.status, 0) << command << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out).at("time").at("step_s"), p.at("step_s"));
    EXPECT_EQ(nlohmann::json::parse(run.out).at("memory").at("framework").at("name"), "torchtitan");
  }
}

TEST(SizeSweep, MoreNodesNeverFitWorseAndSlowdownsAreExplained) {
  api::SizeRequest request = small_sweep();
  request.model.name_or_path = "llama-3.1-70b";
  request.nodes = "1:64";
  request.systems = {"dgx-a100", "dgx-h100"};
  request.price.reset();
  const api::SizeResult r = api::run(request);
  for (std::size_t i = 1; i < r.points.size(); ++i) {
    const api::SizePoint &before = r.points[i - 1], &after = r.points[i];
    if (before.system != after.system) continue;
    if (before.fits) {
      EXPECT_TRUE(after.fits) << after.system << " " << after.nodes << ": " << after.note;
    }
    if (before.fits && after.fits && after.days > before.days) {
      const std::string step = after.system + " " + std::to_string(before.nodes) + " -> " +
                               std::to_string(after.nodes) + " nodes: slower";
      bool explained = false;
      for (const std::string& line : r.explanation) explained = explained || line.rfind(step, 0) == 0;
      EXPECT_TRUE(explained) << step;
    }
  }
  // 70B with Adam needs 16 B a parameter, 1.13 TB, more than one DGX A100's 8 x 80 GB without offload: the
  // first point that fits is said.
  bool said = false;
  for (const std::string& line : r.explanation) said = said || line.rfind("dgx-a100: fits from", 0) == 0;
  EXPECT_TRUE(said);
}

TEST(SizeSweep, HeadlinesAnswerFromThePoints) {
  api::SizeRequest request = small_sweep();
  request.deadline = "5d";
  const api::SizeResult r = api::run(request);
  // The smallest H100 cluster that meets 5 days: the first node count whose days are at most 5.
  std::optional<std::int64_t> smallest;
  for (const api::SizePoint& p : r.points)
    if (p.system == "dgx-h100" && p.fits && p.days <= 5 && !smallest) smallest = p.nodes;
  ASSERT_TRUE(smallest.has_value());
  ASSERT_TRUE(r.headlines.front().point.has_value());
  EXPECT_EQ(r.points[static_cast<std::size_t>(*r.headlines.front().point)].nodes, *smallest);
  // Every point on the front is beaten by no other in both days and cost.
  for (const api::SizePoint& p : r.points)
    for (const api::SizePoint& q : r.points)
      if (p.pareto && q.fits) {
        EXPECT_FALSE(q.days < p.days && *q.cost_dollars < *p.cost_dollars);
      }
}

TEST(SizeCli, BadInputNamesTheOption) {
  struct Case {
    const char* args;
    const char* mentions;
  };
  for (const Case& c : {Case{"--tokens 1T --nodes 8:2", "--nodes"}, Case{"--tokens 1T --systems dgx-h1000", "--systems"},
                        Case{"--nodes 1:2", "--tokens"}, Case{"--tokens lots", "--tokens"},
                        Case{"--tokens 1T --deadline soon", "--deadline"}, Case{"--tokens 1T --objective speed", "--objective"},
                        Case{"--tokens 1T --price dgx-a100=2", "--price"}, Case{"--tokens 1T --goodput 0", "--goodput"},
                        Case{"--tokens 1T --global-batch 8 --global-batch-tokens 4M", "--global-batch-tokens"}}) {
    const auto run = run_cli(std::string("size --model llama-3.1-8b ") + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.mentions), std::string::npos) << c.args << ": " << run.err;
  }
}

TEST(SizeCli, WritesTheChart) {
  const std::string path = "/tmp/gpuplan_size_chart_test.svg";
  std::remove(path.c_str());
  const auto run = run_cli("size --model llama-3.1-8b --tokens 100B --systems dgx-h100 --nodes 1:4 --threads 1 "
                           "--chart " + path);
  ASSERT_EQ(run.status, 0) << run.err;
  FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string svg(4096, '\0');
  svg.resize(std::fread(svg.data(), 1, svg.size(), f));
  std::fclose(f);
  std::remove(path.c_str());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("polyline"), std::string::npos);
}

// The MoE host synchronization that no point's step time prices is said once for the sweep, and only for a job
// that has it: not for a dense model, and not once every expert is padded to its capacity.
TEST(SizeSweep, TheMoeHostSynchronizationIsWarnedOnce) {
  auto moe_warnings = [](const api::SizeResult& r) {
    int n = 0;
    for (const std::string& w : r.warnings)
      n += w.find("under Megatron-Core: the host synchronizes") != std::string::npos ? 1 : 0;
    return n;
  };
  api::SizeRequest moe = small_sweep();
  moe.model.name_or_path = "qwen3-30b-a3b";
  moe.systems = {"dgx-h100"};
  moe.price = "dgx-h100=2.5";
  moe.nodes = "2:4";
  EXPECT_EQ(moe_warnings(api::run(moe)), 1);
  moe.training.moe_capacity_factor = 1.0;
  moe.training.moe_pad_to_capacity = true;
  EXPECT_EQ(moe_warnings(api::run(moe)), 0);
  EXPECT_EQ(moe_warnings(api::run(small_sweep())), 0);
}

// A point whose MFU, counting causal attention's FLOPs, is above the best published for its GPU is warned of, as
// estimate and plan warn of one: one warning per system, counting its points. The H100's best published figure is
// 53.4 % (NVIDIA DGX Cloud Benchmarking, Llama 3.1 8B on 8 H100, 12.78 s per 128 x 8192-token step).
TEST(SizeSweep, AnMfuAboveTheBestPublishedIsWarnedPerSystem) {
  api::SizeRequest r;
  r.model.name_or_path = "llama-3.1-70b";
  r.tokens = "2T";
  r.training.seq_len = 8192;
  r.global_batch_tokens = "16M";
  r.systems = {"dgx-h100"};
  r.nodes = "1:4";
  const api::SizeResult result = api::run(r);
  int above = 0, fitting = 0;
  for (const api::SizePoint& p : result.points) {
    if (!p.fits) continue;
    ++fitting;
    // The point's causal MFU is the one `gpuplan estimate` reports for its layout.
    const auto run = run_cli(p.command.substr(std::string("gpuplan ").size()) + " --json");
    ASSERT_EQ(run.status, 0) << p.command << run.err;
    EXPECT_NEAR(nlohmann::json::parse(run.out)["throughput"]["mfu_causal"].get<double>(), p.mfu_causal, 1e-9);
    EXPECT_LT(p.mfu_causal, p.mfu);   // half of the attention's score and context FLOPs left out
    above += p.mfu_causal > 0.534 ? 1 : 0;
  }
  ASSERT_GT(above, 0);
  int warned = 0;
  for (const std::string& w : result.warnings)
    if (w.find("MFU above the best published") != std::string::npos) {
      ++warned;
      EXPECT_EQ(w.rfind("dgx-h100: " + std::to_string(above) + " of its " + std::to_string(fitting) + " points", 0),
                0u) << w;
    }
  EXPECT_EQ(warned, 1);
  // The B200, whose catalog entry has no published MFU: nothing to hold its points against.
  r.systems = {"dgx-b200"};
  for (const std::string& w : api::run(r).warnings)
    EXPECT_EQ(w.find("MFU above the best published"), std::string::npos) << w;
}
