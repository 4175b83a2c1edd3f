// Plan -> emit -> read -> estimate, for each framework and five standard jobs (dense, MoE, long context, offload,
// pipeline with virtual stages): the files gpuplan writes must read back to the same layout, memory and step time,
// exactly (launch_emit_options_test.cpp checks the options the files hold).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

using gpuplan::InputError;
using nlohmann::json;

namespace {

struct RoundTripCase {
  const char* name;
  json plan;         // the plan request (without framework and emit)
  json estimate;     // what estimate needs beside the file: the cluster, and the model where the file has none
};

json base(const char* model, const char* system, int nodes, int seq, int batch) {
  return {{"model", model}, {"system", system}, {"nodes", nodes}, {"seq_len", seq}, {"global_batch", batch},
          {"micro_batch", {1}}, {"top", 1}};
}

// The five jobs, with the choices each framework offers (DeepSpeed has no ring CP and no interleaving;
// torchtitan shards with FSDP2 and runs only the ring; Megatron-LM and NeMo write the all-to-all exchange).
std::vector<RoundTripCase> cases(const std::string& framework) {
  const bool titan = framework == "torchtitan", deepspeed = framework == "deepspeed";
  const json zero = titan ? json{3} : json{1};
  std::vector<RoundTripCase> out;
  json dense = base("llama-3.1-8b", "dgx-h100", 1, 4096, 64);
  dense.update({{"tp", {2}}, {"pp", {1}}, {"cp", {1}}, {"zero", zero}, {"recompute", {deepspeed ? "none" : "selective"}}});
  // Buckets other than DeepSpeed's 5e8 elements change the memory and the reduction: the ds_config must carry them.
  if (deepspeed) dense.update({{"reduce_bucket_size", 2e8}, {"allgather_bucket_size", 2e8}});
  out.push_back({"dense", dense, {{"system", "dgx-h100"}, {"nodes", 1}}});
  const json titan_moe = {{"name_or_path", "deepseek_v3/16B"},
                          {"config", {{"model_type", "deepseek_v2"}, {"hidden_size", 2048}, {"num_hidden_layers", 27},
                                      {"num_attention_heads", 16}, {"intermediate_size", 10944},
                                      {"moe_intermediate_size", 1408}, {"n_routed_experts", 64},
                                      {"n_shared_experts", 2}, {"num_experts_per_tok", 6},
                                      {"first_k_dense_replace", 1}, {"q_lora_rank", nullptr},
                                      {"kv_lora_rank", 512}, {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64},
                                      {"v_head_dim", 128}, {"vocab_size", 102400},
                                      {"max_position_embeddings", 4096}, {"tie_word_embeddings", false}}}};
  json moe = base("mixtral-8x7b", "dgx-h100", 2, 4096, 64);
  if (titan) moe["model"] = titan_moe;
  moe.update({{"tp", {1}}, {"pp", {titan ? 1 : 2}}, {"ep", {8}}, {"etp", {1}}, {"cp", {1}}, {"zero", zero},
              {"recompute", {"full"}}, {"no_partial_recompute", true}});
  out.push_back({"moe", moe, {{"system", "dgx-h100"}, {"nodes", 2}}});
  json long_context = base("llama-3.1-8b", "dgx-h100", 1, 32768, 16);
  long_context.update({{"tp", {2}}, {"pp", {1}}, {"cp", {deepspeed ? 1 : 2}}, {"zero", titan || deepspeed ? json{3} : zero},
                       {"recompute", {"full"}}, {"no_partial_recompute", true},
                       {"cp_comm_type", {titan || deepspeed ? "p2p" : "a2a"}}});   // Megatron and NeMo write it
  out.push_back({"long-context", long_context, {{"system", "dgx-h100"}, {"nodes", 1}}});
  json offload = base("llama-3.1-8b", "dgx-h100", 1, 4096, 32);
  offload.update({{"tp", {1}}, {"pp", {1}}, {"cp", {1}}, {"zero", titan || deepspeed ? json{3} : zero},
                  {"recompute", {"full"}}, {"no_partial_recompute", true}, {"gpu_memory", "30GB"}});
  if (titan) offload["compile"] = true;   // torch.compile without asynchronous TP: the file must say so
  out.push_back({"offload", offload, {{"system", "dgx-h100"}, {"nodes", 1}, {"gpu_memory", "30GB"}}});
  json pipeline = base("llama-3.1-70b", "dgx-h100", 4, 4096, 32);
  pipeline.update({{"tp", {4}}, {"pp", {4}}, {"vpp", {deepspeed ? 1 : 2}}, {"cp", {1}}, {"zero", zero},
                   {"recompute", {"full"}}, {"no_partial_recompute", true}});
  out.push_back({"pipeline", pipeline, {{"system", "dgx-h100"}, {"nodes", 4}}});
  return out;
}

// The file the readers take back: the TOML, the ds_config, or the one launch script.
const json& file_to_read(const json& files) {
  for (const json& f : files) {
    const std::string name = f.at("name");
    if (name == "torchtitan.toml" || name == "ds_config.json") return f;
  }
  return files.at(0);
}

void expect_same_layout(const json& planned, const json& estimated, const std::string& what) {
  for (const char* key : {"gpus", "dp", "tp", "pp", "cp", "cp_comm_type", "ep", "zero", "microbatches"})
    EXPECT_EQ(planned.at(key), estimated.at(key)) << what << ": " << key;
}

}  // namespace

// Outside the anonymous namespace: the test classes gtest derives from it have external linkage.
class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, PlanEmitReadEstimateReproducesLayoutMemoryAndTime) {
  const std::string framework = GetParam();
  for (const RoundTripCase& c : cases(framework)) {
    json request = c.plan;
    request["framework"] = framework;
    request["emit"] = framework;
    const json plan = gpuplan::api::run_json(gpuplan::api::Question::plan, request);
    ASSERT_FALSE(plan.at("plans").empty()) << framework << " " << c.name << ": no plan";
    const json& best = plan.at("plans").at(0);
    if (std::string(c.name) == "offload") {
      EXPECT_NE(best.at("layout").at("offload"), "none") << framework;
    }
    if (std::string(c.name) == "pipeline" && framework != "deepspeed") {
      EXPECT_EQ(best.at("layout").at("vpp"), 2) << framework;
    }
    const json& file = file_to_read(plan.at("launch_files"));
    json estimate = c.estimate;
    estimate["from"] = {{"path", file.at("name")}, {"text", file.at("text")}};
    if (framework == "deepspeed") {   // a ds_config names neither the model nor the sequence length
      estimate["model"] = c.plan.at("model");
      estimate["seq_len"] = c.plan.at("seq_len");
    }
    const json back = gpuplan::api::run_json(gpuplan::api::Question::estimate, estimate);
    const std::string what = framework + " " + c.name;
    expect_same_layout(best.at("memory").at("layout"), back.at("memory").at("layout"), what);
    EXPECT_EQ(best.at("memory").at("per_gpu").at("total"), back.at("memory").at("per_gpu").at("total")) << what;
    EXPECT_EQ(best.at("time").at("step_s"), back.at("time").at("step_s")) << what;
    EXPECT_EQ(back.at("memory").at("framework").at("name"), framework) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, RoundTrip, ::testing::Values("megatron", "deepspeed", "torchtitan", "nemo"));

TEST(FrameworkSearch, DeepSpeedOffersNoInterleavingAndSaysWhy) {
  json request = base("llama-3.1-70b", "dgx-h100", 2, 4096, 32);
  request.update({{"tp", {4}}, {"pp", {4}}, {"vpp", {2}}, {"framework", "deepspeed"}});
  try {
    gpuplan::api::run_json(gpuplan::api::Question::plan, request);
    FAIL() << "deepspeed offered vpp 2";
  } catch (const InputError& e) {
    EXPECT_NE(e.given().find("framework deepspeed"), std::string::npos) << e.what();
  }
  // The same layout given to estimate names the rule and its source.
  try {
    gpuplan::api::run_json(gpuplan::api::Question::estimate,
                           {{"model", "llama-3.1-70b"}, {"system", "dgx-h100"}, {"nodes", 2}, {"tp", 4}, {"pp", 4},
                            {"vpp", 2}, {"global_batch", 32}, {"framework", "deepspeed"}});
    FAIL() << "deepspeed accepted vpp 2";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "layout.vpp");
    EXPECT_NE(e.accepted().find("deepspeed/runtime/pipe/schedule.py"), std::string::npos) << e.what();
  }
}

// Megatron's selective recompute (the attention core) priced, torchtitan's files written: torchtitan's selective
// mode checkpoints per op instead, so the file's predicted step and memory are Megatron's, and its header says so.
// Priced and written for the same framework, it says nothing of the kind.
TEST(FrameworkSearch, FilesWrittenForAnotherFrameworkSayWhichOneWasPriced) {
  const json job = {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"}, {"recompute", "selective"}, {"emit", "torchtitan"}};
  json other = job;
  other["framework"] = "megatron";
  const json written = gpuplan::api::run_json(gpuplan::api::Question::estimate, other).at("launch_files").at(0);
  EXPECT_NE(written.at("text").get<std::string>().find(
                "NOTE: predicted for megatron; rerun with --framework torchtitan to price torchtitan's own"),
            std::string::npos)
      << written.at("text");
  json same = job;
  same["framework"] = "torchtitan";
  const json own = gpuplan::api::run_json(gpuplan::api::Question::estimate, same).at("launch_files").at(0);
  EXPECT_EQ(own.at("text").get<std::string>().find("predicted for"), std::string::npos) << own.at("text");
}
