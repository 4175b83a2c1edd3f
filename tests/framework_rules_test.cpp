// The frameworks' rules (src/framework/rules.cpp) as a user meets them: a layout a framework rejects is an error
// naming the field and the framework's source; a value it changes on its own is reported; the search proposes
// only what the framework runs. Each case follows a rule of tests/data/frameworks/*.json (the framework's source).
#include <gtest/gtest.h>

#include <string>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

using gpuplan::InputError;
using gpuplan::api::Question;
using nlohmann::json;

namespace {

json memory_answer(json request) {
  if (!request.contains("model")) request["model"] = "llama-3.1-8b";
  return gpuplan::api::run_json(Question::memory, request);
}

// The field and the source an error names, or "" when the request is accepted.
std::string rejection(const json& request) {
  try {
    memory_answer(request);
  } catch (const InputError& e) {
    return e.field() + " | " + e.accepted();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(FrameworkRules, MegatronNeedsTheSequenceToSplitIntoTwoChunksPerContextRank) {
  // megatron.json: "seq_length must be divisible by 2*cp when cp>1" (arguments.py:1335-1338).
  EXPECT_TRUE(has(rejection({{"cp", 2}, {"gpus", 2}, {"seq_len", 4098}}), "arguments.py:1335-1338"));
  EXPECT_EQ(rejection({{"cp", 2}, {"gpus", 2}, {"seq_len", 4100}}), "");   // 4100 = 4 x 1025
}

TEST(FrameworkRules, MegatronOffloadsTheOptimizerOnly) {
  EXPECT_TRUE(has(rejection({{"gpus", 8}, {"zero", 3}, {"offload", "optimizer+params"}}), "layout.offload"));
  EXPECT_EQ(rejection({{"gpus", 8}, {"zero", 1}, {"offload", "optimizer"}}), "");
  // The same job is DeepSpeed's ZeRO-Infinity.
  EXPECT_EQ(rejection({{"gpus", 8}, {"zero", 3}, {"offload", "optimizer+params"}, {"framework", "deepspeed"}}), "");
}

TEST(FrameworkRules, SequenceParallelAtTpOneIsSwitchedOffAndSaidSo) {
  // megatron.json rewrite: "--sequence-parallel is silently switched off when tp==1" (arguments.py:1433-1439).
  const json r = memory_answer({{"gpus", 8}, {"sequence_parallel", true}});
  ASSERT_EQ(r["framework"]["rewrites"].size(), 1u);
  EXPECT_TRUE(has(r["framework"]["rewrites"][0], "arguments.py:1433-1439"));
}

TEST(FrameworkRules, DeepSpeedPipelinesRunZeroStageOneAtMost) {
  // deepspeed.json: "Pipeline parallelism ... supports ZeRO stage 0 or 1 only" (pipe/engine.py:76-77).
  const json job = {{"gpus", 8}, {"pp", 2}, {"framework", "deepspeed"}};
  json stage2 = job;
  stage2["zero"] = 2;
  EXPECT_TRUE(has(rejection(stage2), "deepspeed/runtime/pipe/engine.py:76-77"));
  json stage1 = job;
  stage1["zero"] = 1;
  EXPECT_EQ(rejection(stage1), "");
}

TEST(FrameworkRules, DeepSpeedRejectsItsMoeUnderZeroThree) {
  EXPECT_TRUE(has(rejection({{"model", "mixtral-8x7b"}, {"gpus", 8}, {"ep", 8}, {"etp", 1}, {"zero", 3},
                             {"framework", "deepspeed"}}),
                  "engine.py:1889-1893"));
}

TEST(FrameworkRules, TorchtitanSplitsTheSequenceByTwoEvenWithoutContextParallelism) {
  // torchtitan.json: "seq_len must be divisible by tp * 2 * cp (note: the factor 2 applies even when cp = 1)".
  EXPECT_TRUE(has(rejection({{"gpus", 8}, {"seq_len", 4097}, {"framework", "torchtitan"}}), "training.seq_len"));
  EXPECT_EQ(rejection({{"gpus", 8}, {"seq_len", 4098}, {"framework", "torchtitan"}}), "");
}

TEST(FrameworkRules, TorchtitanHasNoZeroOneAndItsExpertsTakeEtpOneOrTp) {
  EXPECT_TRUE(has(rejection({{"gpus", 8}, {"zero", 1}, {"framework", "torchtitan"}}), "layout.zero"));
  // "When ep > 1, expert_tensor_parallel_degree must be 1 or equal to tp" (parallel_dims.py:58-59).
  EXPECT_TRUE(has(rejection({{"model", "mixtral-8x7b"}, {"gpus", 8}, {"tp", 4}, {"ep", 2}, {"etp", 2},
                             {"framework", "torchtitan"}}),
                  "parallel_dims.py:58-59"));
}

TEST(FrameworkRules, TorchtitanShardsWithFsdpByDefault) {
  EXPECT_EQ(memory_answer({{"gpus", 8}, {"framework", "torchtitan"}})["layout"]["zero"], 3);
  EXPECT_EQ(memory_answer({{"gpus", 1}, {"framework", "torchtitan"}})["layout"]["zero"], 0);   // one rank: no FSDP
}

TEST(FrameworkSearchRules, EveryPlanIsOneItsFrameworkRuns) {
  const json base = {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"}, {"nodes", 1}, {"seq_len", 4096},
                     {"global_batch", 64}, {"top", 20}, {"gpu_memory", "40GB"}};
  for (const char* framework : {"megatron", "deepspeed", "torchtitan", "nemo"}) {
    json request = base;
    request["framework"] = framework;
    const json result = gpuplan::api::run_json(Question::plan, request);
    ASSERT_FALSE(result["plans"].empty()) << framework;
    for (const json& plan : result["plans"]) {
      const json& l = plan["layout"];
      const std::string f = framework;
      if (f == "megatron" || f == "nemo") {
        EXPECT_NE(l["offload"], "optimizer+params") << plan["command"];
      }
      if (f == "deepspeed") {
        EXPECT_FALSE(l["sequence_parallel"].get<bool>()) << plan["command"];
        EXPECT_NE(l["recompute"], "selective") << plan["command"];
        EXPECT_EQ(l["cp"], 1) << plan["command"];
        if (l["pp"] > 1) {
          EXPECT_LE(l["zero"], 1) << plan["command"];
        }
      }
      if (f == "torchtitan") {
        EXPECT_NE(l["zero"], 1) << plan["command"];
        EXPECT_EQ(l["recompute_layers"], -1) << plan["command"];
        if (l["tp"] > 1) {
          EXPECT_TRUE(l["sequence_parallel"].get<bool>()) << plan["command"];
        }
      }
      // What the plan proposes, estimate accepts under the same framework.
      EXPECT_TRUE(has(plan["command"].get<std::string>(), std::string("--framework ") + framework) || f == "megatron");
    }
  }
}
