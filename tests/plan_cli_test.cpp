// `gpuplan plan` end to end: the JSON contract, the printed command reproducing each plan with `gpuplan estimate`,
// input errors, and the near misses when nothing fits.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.hpp"

namespace gpuplan {
namespace {

using test::run_cli;

// The best plan of `job` (a plan or size command line with --json) and `gpuplan estimate --json` of the command
// it prints; nulls, and a failure, when either does not run.
struct Rerun {
  nlohmann::json best, estimate;
  std::string command;
};
Rerun best_and_rerun(const std::string& job) {
  Rerun out;
  const auto r = run_cli(job);
  if (r.status != 0) {
    ADD_FAILURE() << job << "\n" << r.err;
    return out;
  }
  const nlohmann::json result = nlohmann::json::parse(r.out);
  out.best = result.contains("plans") ? result.at("plans").at(0) : result.at("points").at(0);
  out.command = out.best.at("command");
  const auto again = run_cli(out.command.substr(std::string("gpuplan ").size()) + " --json");
  if (again.status != 0) {
    ADD_FAILURE() << out.command << "\n" << again.err;
    return out;
  }
  out.estimate = nlohmann::json::parse(again.out);
  return out;
}

TEST(PlanCli, JsonKeysAndEveryPlanReproducedByEstimate) {
  const auto r = run_cli("plan --model llama-3.1-8b --system dgx-h100 --nodes 1 --seq-len 4096 --global-batch 64 "
                         "--top 2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"plans", "space", "evaluated", "feasible", "search_seconds"}) EXPECT_TRUE(j.contains(key)) << key;
  ASSERT_EQ(j["plans"].size(), 2u);
  EXPECT_LE(j["plans"][0]["time"]["step_s"].get<double>(), j["plans"][1]["time"]["step_s"].get<double>());
  EXPECT_LE(j["feasible"].get<std::uint64_t>(), j["evaluated"].get<std::uint64_t>());
  EXPECT_LE(j["evaluated"].get<std::uint64_t>(), j["space"].get<std::uint64_t>());
  for (const auto& p : j["plans"]) {
    for (const char* key : {"layout", "memory", "time", "throughput", "command"}) EXPECT_TRUE(p.contains(key)) << key;
    const std::string cmd = p["command"].get<std::string>();
    const std::string prefix = "gpuplan ";
    ASSERT_EQ(cmd.rfind(prefix, 0), 0u) << cmd;
    const auto e = run_cli(cmd.substr(prefix.size()) + " --json");
    ASSERT_EQ(e.status, 0) << cmd << "\n" << e.err;
    const auto ej = nlohmann::json::parse(e.out);
    // The same step time, the same time, throughput and memory objects.
    EXPECT_EQ(ej["time"]["step_s"].get<double>(), p["time"]["step_s"].get<double>()) << cmd;
    EXPECT_EQ(ej["time"], p["time"]) << cmd;
    EXPECT_EQ(ej["throughput"], p["throughput"]) << cmd;
    EXPECT_EQ(ej["memory"], p["memory"]) << cmd;
    // A plan fits under the margin, so under the capacity.
    EXPECT_TRUE(p["memory"]["fits"].get<bool>());
    EXPECT_LE(p["memory"]["per_gpu"]["total"].get<std::int64_t>(), p["usable_bytes"].get<std::int64_t>());
  }
}

TEST(PlanCli, BadInputExitsWithTwo) {
  // 3 divides neither the 32 heads nor the 8 GPUs.
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --system dgx-h100 --global-batch 64 --tp 3").status, 2);
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --system dgx-h100").status, 2);                       // no batch
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --system no-such-system --global-batch 64").status, 2);
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --global-batch 64").status, 2);                       // no cluster
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --system dgx-h100 --global-batch 64 --objective cost").status, 2);
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --system dgx-h100 --global-batch 64 --memory-margin 1.5").status, 2);
  EXPECT_EQ(run_cli("plan --model llama-3.1-8b --system dgx-h100 --nodes 1 --gpus 16 --global-batch 64").status, 2);
}

TEST(PlanCli, NothingFitsListsTheNearMisses) {
  // 70B parameters with Adam need about 1.1 TB of model states; one 80 GB GPU without offload cannot hold them.
  const std::string args = "plan --model llama-3.1-70b --system dgx-h100 --gpus 1 --seq-len 4096 --global-batch 8 "
                           "--no-offload --top 3";
  const auto r = run_cli(args + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["plans"].empty());
  EXPECT_EQ(j["feasible"].get<std::uint64_t>(), 0u);
  ASSERT_FALSE(j["near_misses"].empty());
  for (const auto& n : j["near_misses"]) {
    EXPECT_GT(n["lacks_bytes"].get<std::int64_t>(), 0);
    EXPECT_EQ(n["lacks_bytes"].get<std::int64_t>(),
              n["memory"]["per_gpu"]["total"].get<std::int64_t>() - n["usable_bytes"].get<std::int64_t>());
    EXPECT_FALSE(n["memory"]["fits"].get<bool>());
  }
  const auto t = run_cli(args);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("Nothing fits"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("lacks"), std::string::npos) << t.out;
}

TEST(PlanCli, ASensitivityTheFrameworkNeverRunsSaysSoInsteadOfNothingFits) {
  // DeepSpeed's activation checkpointing recomputes whole layers (deepspeed/runtime/activation_checkpointing), and
  // torchtitan's FSDP2 shards the states fully or not at all: the winner's "recompute selective" and "ZeRO-1"
  // neighbours are layouts those frameworks do not run, not layouts too large to fit.
  const std::string job = "plan --model llama-3.1-8b --system dgx-h100 --nodes 2 --seq-len 4096 --global-batch 256 ";
  const std::vector<std::pair<std::string, std::string>> cases = {{"deepspeed", "recompute selective"},
                                                                   {"torchtitan", "ZeRO-1"}};
  for (const auto& [framework, change] : cases) {
    const auto r = run_cli(job + "--framework " + framework + " --json");
    ASSERT_EQ(r.status, 0) << r.err;
    bool found = false;
    const nlohmann::json result = nlohmann::json::parse(r.out);
    for (const auto& s : result.at("sensitivity")) {
      if (s.at("change") != change) continue;
      found = true;
      EXPECT_FALSE(s.at("fits").get<bool>());
      EXPECT_EQ(s.at("note"), framework + " runs no such layout (docs/frameworks.md)") << framework;
    }
    EXPECT_TRUE(found) << framework << " " << change;
  }
}

// An input error raised while the search's workers evaluate layouts (here: Transformer Engine's fused loss asked of
// the Hugging Face modules DeepSpeed trains) is the usual one-line error with exit status 2 on any number of
// threads; escaping a worker thread it aborted the program.
TEST(PlanCli, AnErrorInsideTheSearchWorkersIsAnInputError) {
  for (const char* threads : {"1", "2", "4"}) {
    const auto r = run_cli(std::string("plan --model llama-3.1-8b --system dgx-a100 --nodes 2 --framework deepspeed "
                                       "--global-batch 16 --seq-len 1024 --loss fused-te --threads ") + threads);
    EXPECT_EQ(r.status, 2) << threads << " threads: " << r.err;
    EXPECT_EQ(r.err.rfind("gpuplan: error: --loss: 'fused-te'", 0), 0u) << r.err;
  }
}

// The constants `gpuplan calibrate` and `gpuplan comm --calibrate` fitted to the user's cluster are what plan
// searches with: its best plan is estimate's step under the same files, and its command passes them on.
TEST(PlanCli, CalibrationFilesPriceTheSearch) {
  const std::string repo = std::string(GPUPLAN_TEST_DATA_DIR) + "/../../";
  const std::string perf = " --perf " + repo + "validation/data/a100-megatron-calibration.json";
  const std::string files = perf + " --comm-calibration " + repo + "validation/data/a100-vtrain-comm-calibration.json";
  const std::string job = "plan --model llama-3.1-8b --system dgx-a100 --nodes 1 --global-batch 64 --top 1 --json";
  const Rerun calibrated = best_and_rerun(job + files);
  EXPECT_NE(calibrated.command.find(files), std::string::npos) << calibrated.command;
  EXPECT_EQ(calibrated.estimate.at("time").at("step_s"), calibrated.best.at("time").at("step_s"));
  // Without the files the same job is priced with data/perf.json's published constants: another step.
  EXPECT_NE(best_and_rerun(job).best.at("time").at("step_s"), calibrated.best.at("time").at("step_s"));
  // size prices each point with the compute constants too (the collective tiers belong to the one cluster measured).
  const Rerun point = best_and_rerun("size llama-3.1-8b --tokens 100B --systems dgx-a100 --nodes 1 --json" + perf);
  EXPECT_NE(point.command.find(perf), std::string::npos) << point.command;
  EXPECT_EQ(point.estimate.at("time").at("step_s"), point.best.at("step_s"));
}

// GPT-3's recipes train with dropout 0.1 (the dropout masks are activations); a job without fp32 master weights
// keeps fewer states. plan searches such jobs as estimate prices them, and its commands say so.
TEST(PlanCli, DropoutAndMasterWeightsReachTheSearch) {
  const Rerun r = best_and_rerun("plan --model gpt3-175b --system dgx-a100 --nodes 32 --seq-len 2048 "
                                 "--global-batch 1024 --top 1 --json --dropout 0.1 --no-master-weights");
  EXPECT_NE(r.command.find(" --no-master-weights --dropout 0.1 "), std::string::npos) << r.command;
  EXPECT_EQ(r.estimate.at("memory"), r.best.at("memory"));
  EXPECT_EQ(r.best.at("memory").at("per_gpu").at("master_weights"), 0);
}

// The runtime's own memory as measured on the user's GPUs (gpuplan-measure prints the CUDA context): plan counts
// it in every layout, as estimate does, and its commands pass it on.
TEST(PlanCli, MeasuredRuntimeOverheadsReachTheSearch) {
  const std::string measured = " --cuda-context 2GB --nccl-per-comm 1GB --allocator-factor 1.1";
  const Rerun r =
      best_and_rerun("plan --model llama-3.1-8b --system dgx-h100 --nodes 1 --global-batch 64 --top 1 --json" + measured);
  EXPECT_NE(r.command.find(measured), std::string::npos) << r.command;
  EXPECT_EQ(r.estimate.at("memory"), r.best.at("memory"));
}

TEST(PlanCli, TopologyClusterFileGivesTheSameFabricAsSystem) {
  const std::string path = std::string(::testing::TempDir()) + "/plan_cli_cluster.json";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"system": "dgx-h100", "nodes": 1})", f);
    std::fclose(f);
  }
  const std::string job = " --model llama-3.1-8b --seq-len 4096 --global-batch 64 --top 1 --json";
  const auto a = run_cli("plan --system dgx-h100 --nodes 1" + job);
  const auto b = run_cli("plan --topology " + path + job);
  std::remove(path.c_str());
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["plans"][0]["layout"], jb["plans"][0]["layout"]);
  EXPECT_EQ(ja["plans"][0]["time"], jb["plans"][0]["time"]);
  EXPECT_NE(jb["plans"][0]["command"].get<std::string>().find("--topology"), std::string::npos);
}

}  // namespace
}  // namespace gpuplan
