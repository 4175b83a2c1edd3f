// Properties that hold for every job, checked over jobs drawn by a seeded generator (the same jobs on every run):
// models from the catalog with their layouts, training setups and clusters. A draw the library rejects as invalid
// input is skipped; each property asserts how many valid draws it saw, so a generator gone wrong fails loudly.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

namespace api = gpuplan::api;
using gpuplan::test::run_cli;

namespace {

const std::vector<std::string> kModels = {"gpt2", "llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b",
                                          "qwen3-30b-a3b", "deepseek-v3"};

class JobGenerator {
 public:
  explicit JobGenerator(unsigned seed) : random_(seed) {}

  std::int64_t power_of_two(int max_exponent) { return std::int64_t{1} << pick(0, max_exponent); }
  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }
  const std::string& model() {
    return kModels[static_cast<std::size_t>(pick(0, static_cast<int>(kModels.size()) - 1))];
  }

  // A memory job: a model with a layout drawn degree by degree (many draws are invalid: the library says so).
  api::MemoryRequest memory() {
    api::MemoryRequest r;
    r.model.name_or_path = model();
    r.training.seq_len = power_of_two(4) * 1024;
    r.training.micro_batch = power_of_two(2);
    r.layout.tp = power_of_two(3);
    r.layout.pp = power_of_two(2);
    r.layout.cp = power_of_two(1);
    r.layout.dp = power_of_two(4);
    r.layout.ep = power_of_two(3);
    r.layout.sequence_parallel = r.layout.tp > 1 && pick(0, 1) == 1;
    r.layout.zero = pick(0, 3);
    r.layout.recompute = std::vector<std::string>{"none", "selective", "full"}[static_cast<std::size_t>(pick(0, 2))];
    r.training.global_batch = r.training.micro_batch * *r.layout.dp * power_of_two(3);
    return r;
  }

 private:
  std::mt19937 random_;
};

template <typename Request>
bool valid(const Request& r) {
  try {
    api::run(r);
    return true;
  } catch (const gpuplan::InputError&) {
    return false;
  }
}

std::int64_t model_states(const api::StageReport& s) {
  return s.weights + s.master_weights + s.gradients + s.optimizer_states;
}

}  // namespace

TEST(Properties, ModelStatesNeverGrowWithTheZeroStage) {
  JobGenerator draw(1);
  int checked = 0;
  for (int i = 0; i < 3000 && checked < 200; ++i) {
    api::MemoryRequest r = draw.memory();
    r.layout.zero = 0;
    if (!valid(r)) continue;
    std::int64_t previous = model_states(api::run(r).per_gpu);
    for (int zero = 1; zero <= 3; ++zero) {
      r.layout.zero = zero;
      const std::int64_t states = model_states(api::run(r).per_gpu);
      EXPECT_LE(states, previous) << r.model.name_or_path << " ZeRO-" << zero;
      previous = states;
    }
    ++checked;
  }
  EXPECT_GE(checked, 200);
}

TEST(Properties, ActivationsGrowLinearlyWithTheMicroBatchWithoutRecompute) {
  JobGenerator draw(2);
  int checked = 0;
  for (int i = 0; i < 3000 && checked < 200; ++i) {
    api::MemoryRequest r = draw.memory();
    r.layout.recompute = "none";
    r.training.micro_batch = 1;
    // Enough microbatches that the pipeline holds as many in flight at either micro-batch.
    r.training.global_batch = 2 * *r.layout.dp * r.layout.pp;
    r.all_stages = true;   // stage by stage: with lighter end stages the worst stage may change with the batch
    if (!valid(r)) continue;
    const auto one = *api::run(r).stages;
    r.training.micro_batch = 2;
    if (!valid(r)) continue;
    const auto two = *api::run(r).stages;
    ASSERT_EQ(one.size(), two.size());
    for (std::size_t s = 0; s < one.size(); ++s) {
      const double a = static_cast<double>(one[s].activations.value_or(0));
      ASSERT_GT(a, 0);
      EXPECT_NEAR(static_cast<double>(two[s].activations.value_or(0)), 2 * a, 4.0)
          << r.model.name_or_path << " tp " << r.layout.tp << " pp " << r.layout.pp << " stage " << s;
    }
    ++checked;
  }
  EXPECT_GE(checked, 200);
}

TEST(Properties, EstimatesAreFiniteAndPositive) {
  JobGenerator draw(3);
  const std::vector<std::string> systems = {"dgx-a100", "dgx-h100", "dgx-b200", "mi300x-8x", "pcie-8x-a100-80gb"};
  int checked = 0;
  for (int i = 0; i < 3000 && checked < 200; ++i) {
    const api::MemoryRequest m = draw.memory();
    api::EstimateRequest r;
    r.model = m.model;
    r.training = m.training;
    r.layout = m.layout;
    r.cluster.system = systems[static_cast<std::size_t>(draw.pick(0, static_cast<int>(systems.size()) - 1))];
    r.timing.tp_overlap = draw.pick(0, 1) == 1;
    api::EstimateResult e;
    try {
      e = api::run(r);
    } catch (const gpuplan::InputError&) {
      continue;
    }
    EXPECT_TRUE(std::isfinite(e.time.step_s) && e.time.step_s > 0) << r.model.name_or_path;
    for (const auto& [name, seconds] : e.time.breakdown) EXPECT_TRUE(std::isfinite(seconds) && seconds >= 0) << name;
    EXPECT_TRUE(e.throughput.mfu > 0 && e.throughput.mfu <= 1) << e.throughput.mfu;
    // No step beats its FLOPs over the peak: the FLOPs it really runs, recomputation included (HFU).
    EXPECT_LE(e.throughput.hfu, 1.0) << r.model.name_or_path;
    EXPECT_TRUE(e.throughput.mfu_causal > 0 && e.throughput.mfu_causal <= e.throughput.mfu) << e.throughput.mfu_causal;
    EXPECT_TRUE(e.throughput.mfu_causal <= e.throughput.hfu_causal && e.throughput.hfu_causal <= e.throughput.hfu)
        << e.throughput.hfu_causal;
    EXPECT_GT(e.memory.per_gpu.total, 0);
    ++checked;
  }
  EXPECT_GE(checked, 200);
}

TEST(Properties, ThePlanWinsOverEveryLayoutItsSensitivityLists) {
  JobGenerator draw(4);
  const std::vector<std::string> systems = {"dgx-h100", "dgx-a100", "dgx-b200", "mi300x-8x"};
  int checked = 0;
  for (int i = 0; i < 40 && checked < 8; ++i) {
    api::PlanRequest r;
    r.model.name_or_path = draw.model();
    r.cluster.system = systems[static_cast<std::size_t>(draw.pick(0, 3))];
    r.cluster.nodes = draw.power_of_two(2);
    r.training.seq_len = draw.power_of_two(3) * 1024;
    r.training.global_batch = 64 * draw.power_of_two(2);
    r.ranking.top = 2;
    r.ranking.threads = 1;
    api::PlanResult result;
    try {
      result = api::run(r);
    } catch (const gpuplan::InputError&) {
      continue;
    }
    if (result.plans.empty()) continue;   // nothing fits this draw
    const double best = result.plans.front().time.step_s;
    for (const auto& s : result.sensitivity) {
      if (s.fits) {
        EXPECT_GE(s.step_s, best * (1 - 1e-12)) << r.model.name_or_path << " on " << *r.cluster.nodes << " x "
                                                << *r.cluster.system << ": " << s.change;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(Properties, EveryReproduceCommandGivesTheSameNumbers) {
  // Jobs drawn at random, with options that are not the defaults drawn too: they must travel with the command.
  JobGenerator draw(5);
  const std::vector<std::string> systems = {"dgx-h100", "dgx-a100", "dgx-b200"};
  const std::vector<std::string> extras = {"", " --moe-imbalance 1.3", " --loss fused-te", " --grad-dtype bf16",
                                           " --megatron-version 0.12 --te-version 2.2", " --cp-comm-type p2p",
                                           " --framework deepspeed", " --precision fp8"};
  int checked = 0;
  for (int i = 0; i < 60 && checked < 8; ++i) {
    const std::string job = "--model " + draw.model() + " --system " + systems[static_cast<std::size_t>(draw.pick(0, 2))] +
                            " --nodes " + std::to_string(draw.power_of_two(2)) + " --seq-len " +
                            std::to_string(draw.power_of_two(3) * 1024) + " --global-batch " +
                            std::to_string(64 * draw.power_of_two(2)) + extras[static_cast<std::size_t>(draw.pick(0, 7))];
    const auto plan = run_cli("plan " + job + " --top 3 --threads 1 --json");
    if (plan.status == 2) continue;   // a draw the library rejects
    ASSERT_EQ(plan.status, 0) << job << "\n" << plan.err;
    const auto plans = nlohmann::json::parse(plan.out);
    if (plans.at("plans").empty()) continue;
    for (const auto& p : plans.at("plans")) {
      const std::string command = p.at("command");
      ASSERT_EQ(command.rfind("gpuplan estimate ", 0), 0U) << command;
      const auto again = run_cli(command.substr(std::string("gpuplan ").size()) + " --json");
      ASSERT_EQ(again.status, 0) << command << "\n" << again.err;
      const auto e = nlohmann::json::parse(again.out);
      EXPECT_EQ(e.at("time").at("step_s"), p.at("time").at("step_s")) << command;
      EXPECT_EQ(e.at("memory").at("per_gpu").at("total"), p.at("memory").at("per_gpu").at("total")) << command;
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(Properties, ExactAtAHundredTrillionParametersOnAMillionGpus) {
  // 1e14 parameters in bf16 with fp32 master weights, fp32 gradients and Adam's two fp32 moments (2 + 4 + 4 + 8
  // bytes each), every state sharded over 1e6 data-parallel ranks under ZeRO-3: 2e8, 4e8, 4e8 and 8e8 bytes.
  api::MemoryRequest r;
  r.params = "1e14";
  r.layout.gpus = 1'000'000;
  r.layout.zero = 3;
  const api::MemoryResult m = api::run(r);
  EXPECT_EQ(m.params.total, 100'000'000'000'000);
  EXPECT_EQ(m.layout.dp, 1'000'000);
  EXPECT_EQ(m.per_gpu.weights, 200'000'000);
  EXPECT_EQ(m.per_gpu.master_weights, 400'000'000);
  EXPECT_EQ(m.per_gpu.gradients, 400'000'000);
  EXPECT_EQ(m.per_gpu.optimizer_states, 800'000'000);
  // Unsharded, the same states are 1.8e15 bytes on one GPU: still exact in 64 bits.
  r.layout.gpus = 1;
  r.layout.zero = 0;
  EXPECT_EQ(model_states(api::run(r).per_gpu), 1'800'000'000'000'000);
}

TEST(Properties, ExactForAModelOfAHundredTrillionParametersOnAMillionGpus) {
  // GPT-2's architecture widened to h = 131072 (1024 heads, MLP 4h) over 512 layers: per layer 12h^2 + 13h
  // (QKV, projection and MLP weights with biases, two LayerNorms), plus the (50257 + 1024) x h tied embeddings and
  // the final LayerNorm: 105,560,710,447,104 parameters. On 2^20 H100s (131,072 DGX H100 nodes), TP 8 x PP 256.
  api::EstimateRequest r;
  r.model.name_or_path = "gpt2";
  r.overrides.hidden = 131072;
  r.overrides.heads = 1024;
  r.overrides.layers = 512;
  r.overrides.ffn_hidden = 4 * 131072;
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 131072;
  r.layout.tp = 8;
  r.layout.pp = 256;
  r.layout.zero = 1;
  r.layout.recompute = "full";
  r.layout.sequence_parallel = true;
  r.training.seq_len = 1024;
  r.training.global_batch = 1 << 20;
  const api::EstimateResult e = api::run(r);
  EXPECT_EQ(e.memory.params.total, 105'560'710'447'104);
  EXPECT_EQ(e.memory.layout.gpus, 1 << 20);
  EXPECT_EQ(e.memory.layout.dp, (1 << 20) / (8 * 256));
  EXPECT_TRUE(std::isfinite(e.time.step_s) && e.time.step_s > 0);
  EXPECT_TRUE(e.throughput.mfu > 0 && e.throughput.mfu <= 1) << e.throughput.mfu;
  // The worst GPU's figures hold together at this scale: total = reserved + outside PyTorch, allocated <= reserved.
  const api::StageReport& g = e.memory.per_gpu;
  EXPECT_GT(model_states(g), 0);
  EXPECT_EQ(g.total, g.reserved_peak + g.outside_torch);
  EXPECT_LE(g.allocated_peak, g.reserved_peak);
}

TEST(Properties, NoStepBeatsItsPhysicalBounds) {
  // Over nodes of 8 GPUs, one to four of them, with every context-parallel exchange and MoE dispatcher: the step is
  // never shorter than its FLOPs over the peak, its HBM bytes over the HBM bandwidth or a node's imported bytes over
  // its NICs, each worked out from the layout alone (gpuplan::physical_bounds).
  JobGenerator draw(7);
  const std::vector<std::string> systems = {"dgx-a100", "dgx-h100", "dgx-b200", "hgx-h800", "mi300x-8x"};
  const std::vector<std::string> exchanges = {"p2p", "a2a", "all_gather"};
  int checked = 0, across_nodes = 0;
  for (int i = 0; i < 6000 && checked < 300; ++i) {
    const api::MemoryRequest m = draw.memory();
    api::EstimateRequest r;
    r.model = m.model;
    r.training = m.training;
    r.layout = m.layout;
    r.layout.dp.reset();   // the nodes' GPUs filled with data parallelism
    r.layout.cp_comm_type = exchanges[static_cast<std::size_t>(draw.pick(0, 2))];
    r.cluster.system = systems[static_cast<std::size_t>(draw.pick(0, static_cast<int>(systems.size()) - 1))];
    r.cluster.nodes = draw.power_of_two(2);
    r.training.global_batch = 1024;
    r.timing.tp_overlap = draw.pick(0, 1) == 1;
    // MoE routing: dropless, or a capacity factor under, at or over 1, padded or not (ignored by dense models).
    const int capacity = draw.pick(0, 3);
    if (capacity > 0) {
      r.training.moe_capacity_factor = std::vector<double>{0.5, 1.0, 1.25}[static_cast<std::size_t>(capacity - 1)];
      r.training.moe_pad_to_capacity = draw.pick(0, 1) == 1;
    }
    // The all-to-all dispatcher, or DeepEP's (flex), which does not pad.
    if (draw.pick(0, 1) == 1 && !r.training.moe_pad_to_capacity) r.training.moe_dispatcher = "flex";
    r.explain = true;
    api::EstimateResult e;
    try {
      e = api::run(r);
    } catch (const gpuplan::InputError&) {
      continue;
    }
    ASSERT_TRUE(e.bounds.has_value());
    const double step = e.time.step_s * (1 + 1e-9);
    EXPECT_GE(step, e.bounds->compute_s) << r.model.name_or_path << " on " << *r.cluster.system;
    EXPECT_GE(step, e.bounds->memory_s) << r.model.name_or_path << " on " << *r.cluster.system;
    EXPECT_GE(step, e.bounds->network_s) << r.model.name_or_path << " tp " << r.layout.tp << " cp " << r.layout.cp
                                         << " ep " << r.layout.ep << " zero " << r.layout.zero.value_or(0) << " on "
                                         << *r.cluster.nodes << " x " << *r.cluster.system;
    if (e.bounds->network_s > 0) ++across_nodes;
    ++checked;
  }
  EXPECT_GE(checked, 300);
  EXPECT_GE(across_nodes, 50);
}
