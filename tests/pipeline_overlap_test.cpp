// The pipeline's sends and receives under Megatron-Core's interleaved schedule with overlap_p2p_comm
// (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving), Megatron-LM's default
// with virtual stages (--no-overlap-p2p-communication turns it off) and NeMo's (MegatronCommOverlapCallback). In the
// steady state each chunk's send and receive are posted after its compute and waited for only before the next chunk
// of the same direction, so a transfer runs beside one chunk of the other direction; the pipeline's fill and drain
// still wait for theirs. Blocking, each of the 2 (m v + p - 1) transfers on the critical path waits.
#include <gtest/gtest.h>

#include <string>

#include "api/measured_runs.hpp"
#include "framework/launch.hpp"
#include "gpuplan/api.hpp"
#include "test_support.hpp"

using namespace gpuplan;

namespace pipeline_overlap_test {

// Llama 3.1 70B on 8 DGX H100 nodes as TP 4 x PP 4 x VP 5 x DP 4: 32 microbatches of one 8192-token sequence per
// pipeline, each transfer 8192 x 8192 x 2 B / 4 = 32 MiB between nodes, shorter than the compute of any chunk
// (4 layers).
api::EstimateRequest interleaved(bool pp_overlap, const std::string& framework = "megatron") {
  api::EstimateRequest r;
  r.model.name_or_path = "llama-3.1-70b";
  r.cluster.system = "dgx-h100";
  r.cluster.nodes = 8;
  r.training.seq_len = 8192;
  r.training.global_batch = 128;
  r.training.framework = framework;
  r.layout.tp = 4;
  r.layout.pp = 4;
  r.layout.vpp = 5;
  r.layout.sequence_parallel = true;
  r.layout.zero = 1;
  r.timing.pp_overlap = pp_overlap;
  return r;
}

TEST(PipelineOverlap, SteadyStateTransfersRunBesideTheChunks) {
  const double microbatches = 32, virtual_stages = 5, stages = 4;
  const api::EstimateResult blocking = api::run(interleaved(false));
  // Blocking: every transfer on the critical path waits, which gives the time of one.
  const double transfer_s =
      test::time_term(blocking, "pp_comm") / (2 * (microbatches * virtual_stages + stages - 1));
  ASSERT_GT(transfer_s, 0);
  // Overlapped: the fill's and the drain's wait; each steady-state one hides behind a chunk and slows it by
  // overlap_slowdown (0.15, data/perf.json) of its time. The fill, traced by hand through the warm-up's order of
  // forwards (groups of p microbatches per chunk, schedules.py): the first microbatch reaches the last stage after
  // p - 1 = 3 transfers; at each of the v - 1 = 4 changes of chunk the first stage has run its group of 4 forwards
  // while that microbatch went round the ring (4 forwards and 4 transfers), so it waits 4 transfers. 3 + 4 x 4 = 19
  // each way, not the 3 that pipelines without virtual stages wait.
  const api::EstimateResult overlapped = api::run(interleaved(true));
  const double fill_transfers = 3 + 4 * 4;
  const double expected = 2 * fill_transfers * transfer_s + 2 * microbatches * virtual_stages * 0.15 * transfer_s;
  EXPECT_NEAR(test::time_term(overlapped, "pp_comm"), expected, 1e-6 * expected);
  // Nothing else moves.
  EXPECT_NEAR(overlapped.time.step_s - test::time_term(overlapped, "pp_comm"),
              blocking.time.step_s - test::time_term(blocking, "pp_comm"), 1e-9);
}

// Without virtual stages both frameworks force it off; DeepSpeed's pipeline engine has no such overlap.
TEST(PipelineOverlap, OnlyMegatronsInterleavedSchedule) {
  api::EstimateRequest one_f_one_b = interleaved(true);
  one_f_one_b.layout.vpp = 1;
  api::EstimateRequest waited = one_f_one_b;
  waited.timing.pp_overlap = false;
  EXPECT_DOUBLE_EQ(api::run(one_f_one_b).time.step_s, api::run(waited).time.step_s);
  EXPECT_DOUBLE_EQ(api::run(interleaved(true, "nemo")).time.step_s, api::run(interleaved(true)).time.step_s);
}

std::string timing_read_from(const std::string& flags) {
  const framework::LaunchConfig c = framework::read_launch_config(
      "train.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 256 "
                  "--num-attention-heads 4 --vocab-size 1000 --pipeline-model-parallel-size 2 "
                  "--num-virtual-stages-per-pipeline-rank 2 " + flags + "\n");
  EXPECT_TRUE(c.errors.empty()) << ::testing::PrintToString(c.errors);
  for (const std::string& line : c.not_understood) EXPECT_EQ(line.find("p2p"), std::string::npos) << line;
  return c.timing.dump();
}

TEST(PipelineOverlap, ReadFromLaunchFiles) {
  EXPECT_NE(timing_read_from("--no-overlap-p2p-communication").find("\"no_pp_overlap\":true"), std::string::npos);
  EXPECT_EQ(timing_read_from("").find("pp_overlap"), std::string::npos);
  const framework::LaunchConfig nemo = framework::read_launch_config(
      "launch.txt", "nemo llm pretrain --factory llama3_70b "
                    "trainer.callbacks[MegatronCommOverlapCallback].overlap_p2p_comm=False\n");
  EXPECT_EQ(nemo.timing.value("no_pp_overlap", false), true) << nemo.timing.dump();
}

// A launch file gpuplan writes turns the overlap off only where the estimate priced it off.
TEST(PipelineOverlap, WrittenToMegatronAndNemoLaunchFiles) {
  for (const std::string framework : {"megatron", "nemo"}) {
    nlohmann::json job = {{"model", "llama-3.1-70b"}, {"system", "dgx-h100"}, {"nodes", 8},
                          {"global_batch", 128},        {"seq_len", 8192},      {"tp", 4},
                          {"pp", 4},                    {"vpp", 5},             {"framework", framework},
                          {"emit", framework}};
    const std::string option = framework == "megatron" ? "--no-overlap-p2p-communication"
                                                       : "MegatronCommOverlapCallback].overlap_p2p_comm=False";
    EXPECT_EQ(api::run_json(api::Question::estimate, job).at("launch_files").dump().find(option), std::string::npos);
    job["no_pp_overlap"] = true;
    EXPECT_NE(api::run_json(api::Question::estimate, job).at("launch_files").dump().find(option), std::string::npos)
        << framework;
  }
}

// gpuplan calibrate --runs: a CSV column, and Megatron-LM's arguments block, where a Megatron-LM that prints no
// overlap_p2p_comm predates the option and waited.
TEST(PipelineOverlap, ReadFromMeasuredRuns) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  const auto rows = api::detail::read_runs(
      {"runs.csv", "model,gpus,pp_overlap,step_s\nllama-3.1-8b,8,false,5\nllama-3.1-8b,8,,5\n"}, defaults);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].request.timing.pp_overlap);
  EXPECT_TRUE(rows[1].request.timing.pp_overlap);
  const std::string log = test::megatron_log();
  ASSERT_EQ(log.find("overlap_p2p_comm"), std::string::npos);
  const auto old = api::detail::read_runs({"train.log", log}, defaults);
  ASSERT_FALSE(old.empty());
  EXPECT_FALSE(old[0].request.timing.pp_overlap);
  const std::string with = test::megatron_log("  overlap_p2p_comm ................................ True");
  const auto runs = api::detail::read_runs({"train.log", with}, defaults);
  ASSERT_FALSE(runs.empty());
  EXPECT_TRUE(runs[0].request.timing.pp_overlap);
}

}  // namespace pipeline_overlap_test
