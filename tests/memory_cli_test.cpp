// `gpuplan memory` as a user runs it: the JSON contract, the worked example, and exit status 2 for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace memory_cli_test {

// The worst stage's communication buffers of a `gpuplan memory --json` command line, in bytes.
std::int64_t comm_buffer_bytes(const std::string& command) {
  const auto r = run_cli(command);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out).at("per_gpu").at("comm_buffers").get<std::int64_t>();
}

// The bytes of the worst stage's term whose name starts with `prefix`, or -1.
std::int64_t term_bytes(const std::string& command, const std::string& prefix) {
  const auto r = run_cli(command);
  EXPECT_EQ(r.status, 0) << r.err;
  const nlohmann::json parsed = nlohmann::json::parse(r.out);
  for (const auto& term : parsed.at("per_gpu").at("terms"))
    if (term.at("name").get<std::string>().rfind(prefix, 0) == 0) return term.at("bytes").get<std::int64_t>();
  return -1;
}

// `command` with a suggested change ("--tp 4", "--micro-batch 1 --global-batch 16") in place of the options it
// changes, where the command gives them.
std::string with_change(std::string command, const std::string& change) {
  std::istringstream words(change);
  std::string flag, value;
  while (words >> flag >> value) {
    const std::size_t at = command.find(flag + " ");
    if (at == std::string::npos) {
      command += " " + flag + " " + value;
      continue;
    }
    const std::size_t value_at = at + flag.size() + 1;
    const std::size_t value_end = std::min(command.find(' ', value_at), command.size());
    command.replace(value_at, value_end - value_at, value);
  }
  return command;
}

}  // namespace memory_cli_test

TEST(MemoryCli, WorkedExampleSevenBillionAdamFp16) {
  const auto r = run_cli("memory --params 7e9 --precision fp16 --optimizer adam --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& g = j.at("per_gpu");
  // 2 + 4 + 4 + 4 + 4 bytes per parameter (weights, master, gradients, Adam m and v).
  EXPECT_EQ(g.at("weights").get<std::int64_t>() + g.at("master_weights").get<std::int64_t>() +
                g.at("gradients").get<std::int64_t>() + g.at("optimizer_states").get<std::int64_t>(),
            126000000000);
  EXPECT_TRUE(g.at("activations").is_null());  // unknown without an architecture, not zero
  EXPECT_FALSE(j.at("fits").get<bool>());      // one 80 GB H100 holds less than 126 GB
  for (const char* key : {"logits", "comm_buffers", "runtime", "total"}) EXPECT_TRUE(g.contains(key)) << key;
  EXPECT_TRUE(j.at("host").contains("total"));
  EXPECT_TRUE(j.at("nvme").contains("total"));
  EXPECT_GT(j.at("capacity").get<std::int64_t>(), 0);
  EXPECT_FALSE(j.at("suggestions").empty());
}

TEST(MemoryCli, TextPrintsDecimalAndBinaryUnits) {
  const auto r = run_cli("memory --params 7e9 --precision fp16 --optimizer adam");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("126.0 GB (117.3 GiB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does NOT fit"), std::string::npos);
}

TEST(MemoryCli, SuggestionsFitAndAreCheapestFirst) {
  // Llama-2-7B on 45 GB GPUs at 4k tokens does not fit; every suggestion listed as fitting must fit when rerun, under
  // the same 8% margin (41.4 GB usable).
  const auto r = run_cli("memory --model llama-2-7b --gpus 8 --seq-len 4096 --gpu-memory 45GB --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.at("fits").get<bool>());
  const auto& s = j.at("suggestions");
  ASSERT_FALSE(s.empty());
  ASSERT_TRUE(s.front().at("fits").get<bool>());
  const std::string change = s.front().at("change");
  for (const auto& suggestion : s) {
    if (suggestion.at("fits").get<bool>()) {
      EXPECT_LE(suggestion.at("new_total").get<std::int64_t>(), 41'400'000'000);
    }
  }
  const auto again = run_cli("memory --model llama-2-7b --gpus 8 --seq-len 4096 --gpu-memory 45GB " + change + " --json");
  ASSERT_EQ(again.status, 0) << again.err;
  const auto j2 = nlohmann::json::parse(again.out);
  EXPECT_TRUE(j2.at("fits").get<bool>());
  EXPECT_EQ(j2.at("per_gpu").at("total"), s.front().at("new_total"));
}

TEST(MemoryCli, EverySuggestionIsALayoutItsFrameworkRuns) {
  // Jobs that do not fit, one per framework. Each suggested change, added to the command, must be accepted (exit 0)
  // and give the total it promised: DeepSpeed has no ring context parallelism (--cp), torchtitan's FSDP2 offloads
  // the optimizer only together with the parameters (CPUOffloadPolicy), Transformer Engine's fused cross-entropy
  // is Megatron-Core's (--loss fused-te); a change the framework refuses is not a way to make the job fit.
  const std::string llama70b = "memory --model llama-3.1-70b --gpu h100-sxm-80gb --gpus 8 --seq-len 8192 ";
  const std::vector<std::string> jobs = {llama70b + "--framework torchtitan", llama70b + "--framework megatron --tp 2",
                                          llama70b + "--framework megatron --micro-batch 2",
                                          llama70b + "--framework nemo --tp 2",
                                          "memory --model llama-3.1-8b --gpu h100-sxm-80gb --gpus 16 --framework deepspeed "
                                          "--zero 3 --seq-len 4096 --micro-batch 2 --global-batch 256 --offload optimizer"};
  for (const std::string& job : jobs) {
    const auto r = run_cli(job + " --json");
    ASSERT_EQ(r.status, 0) << job << "\n" << r.err;
    const auto suggestions = nlohmann::json::parse(r.out).at("suggestions");
    ASSERT_FALSE(suggestions.empty()) << job;
    for (const auto& suggestion : suggestions) {
      const std::string change = suggestion.at("change");
      const auto again = run_cli(memory_cli_test::with_change(job, change) + " --json");
      ASSERT_EQ(again.status, 0) << memory_cli_test::with_change(job, change) << "\n" << again.err;
      EXPECT_EQ(nlohmann::json::parse(again.out).at("per_gpu").at("total"), suggestion.at("new_total"))
          << job << " " << change;
    }
  }
  const auto titan = nlohmann::json::parse(run_cli(llama70b + "--framework torchtitan --json").out).at("suggestions");
  bool offloads_params = false;
  for (const auto& suggestion : titan) offloads_params |= suggestion.at("change") == "--offload optimizer+params";
  EXPECT_TRUE(offloads_params) << titan.dump();
}

TEST(MemoryCli, AllStagesReportsEveryPipelineStage) {
  const auto r = run_cli("memory --model llama-2-7b --gpus 8 --pp 4 --global-batch 32 --all-stages --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("stages").size(), 4u);
  // The first stage holds the most in-flight microbatches: 4, 3, 2, 1 under 1F1B.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(j.at("stages")[i].at("in_flight_microbatches").get<int>(), 4 - i);
}

TEST(MemoryCli, BadInputIsOneLineAndExitTwo) {
  struct Case { const char* args; const char* must_mention; };
  const Case cases[] = {
      {"memory --params 7e9 --gpus 0", "--gpus"},
      {"memory --model llama-2-7b --tp 3", "--tp"},                  // 32 heads
      {"memory --model llama-2-7b --pp 64", "--pp"},                 // 32 layers, no split of them over 64 stages
      {"memory --model llama-2-7b --gpus 12 --tp 8", "--gpus"},      // does not factor
      {"memory --params -5", "--params"},
      {"memory --params 7e9 --seq-len -1", "--seq-len"},
      {"memory --params 7e9 --micro-batch 0", "--micro-batch"},
      {"memory --params 7e9 --precision fp64", "--precision"},
      {"memory --params 7e9 --gpu h100-sxm-81gb", "h100-sxm-80gb"},  // suggests the closest name
      {"memory --model llama-3.1-7b", "llama"},                      // suggests the closest names
      {"memory --params 7e9 --gpu-memory lots", "--gpu-memory"},
      {"memory --params 7e9 --dropout 1.5", "--dropout"},
      {"memory --params 7e9 --offload optimizer", "--offload"},
      {"memory --model /nonexistent/config.json", "nonexistent"},
      {"memory --params 7e9 --zero 5", "--zero"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.must_mention), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

TEST(MemoryCli, HugeInputsComputeWithoutOverflow) {
  const auto r = run_cli("memory --params 1e14 --gpus 1000000 --zero 3 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("per_gpu").at("weights").get<std::int64_t>(), 200000000);  // 2 bytes x 1e14 / 1e6
}

TEST(MemoryCli, AnAllocatorFactorGivenIsUsedInsteadOfTheReplay) {
  // Llama-2-7B, tp 2 with SP: dense Megatron layers, so the reserve is replayed by default. --allocator-factor 1.1
  // must then give reserved = 1.1 x allocated, exactly as asked.
  auto reserve_of = [](const std::string& extra) {
    const auto r = run_cli("memory --model llama-2-7b --gpus 8 --tp 2 --sequence-parallel --zero 1 --all-stages --json" + extra);
    EXPECT_EQ(r.status, 0) << r.err;
    const auto stage = nlohmann::json::parse(r.out).at("stages").at(0);
    return std::make_pair(stage.at("reserved_peak").get<double>(), stage.at("allocated_peak").get<double>());
  };
  const auto [replayed, allocated] = reserve_of("");
  const auto [factored, allocated_again] = reserve_of(" --allocator-factor 1.1");
  EXPECT_EQ(allocated, allocated_again);
  EXPECT_NEAR(factored, 1.1 * allocated, 1.0);
  EXPECT_LT(replayed, factored);
}

// DeepSpeed's ZeRO-1/2 keep a reduce bucket and an all-gather bucket of 16-bit elements: reduce_bucket_size and
// allgather_bucket_size, 5e8 each by default (deepspeed/runtime/zero/config.py). The Megatron-GPT2 example's
// ds_config sets 7e6 (tests/data/frameworks/deepspeed/megatron_gpt2_ds_config_func_bs8_zero2_offload.json): the two
// buckets shrink by 2 x (5e8 - 7e6) elements x 2 bytes, whether the sizes come as options or from the file.
TEST(MemoryCli, DeepSpeedBucketSizesSetTheBucketBytes) {
  const std::string job = "memory --model llama-2-7b --framework deepspeed --gpus 8 --zero 2 --global-batch 8 --json";
  const std::int64_t defaults = memory_cli_test::comm_buffer_bytes(job);
  const std::int64_t options = memory_cli_test::comm_buffer_bytes(job + " --reduce-bucket-size 7e6 --allgather-bucket-size 7000000");
  EXPECT_EQ(defaults - options, 2LL * (500'000'000 - 7'000'000) * 2);
  const std::string config = std::string(GPUPLAN_TEST_DATA_DIR) +
                             "/frameworks/deepspeed/megatron_gpt2_ds_config_func_bs8_zero2_offload.json";
  EXPECT_EQ(memory_cli_test::comm_buffer_bytes(job + " --from " + config), options);
}

// The buckets hold the parameters' dtype (stage_1_and_2.py: torch.empty(reduce_bucket_size, dtype=self.dtype), the
// dtype of the model's parameters): in fp32 training 4 bytes an element, so the same 4.93e8 fewer elements per
// bucket save twice the bytes of bf16 training.
TEST(MemoryCli, DeepSpeedBucketsHoldTheParametersDtype) {
  const std::string job = "memory --model llama-2-7b --framework deepspeed --gpus 8 --zero 2 --global-batch 8 --json";
  const std::string small = " --reduce-bucket-size 7e6 --allgather-bucket-size 7e6";
  const std::string fp32 = " --precision fp32";
  EXPECT_EQ(memory_cli_test::comm_buffer_bytes(job + fp32) - memory_cli_test::comm_buffer_bytes(job + fp32 + small),
            2LL * (500'000'000 - 7'000'000) * 4);
}

TEST(MemoryCli, DeepSpeedBucketSizesAreRejectedUnderOtherFrameworks) {
  const auto r = run_cli("memory --model llama-2-7b --gpus 8 --zero 1 --reduce-bucket-size 7e6");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--reduce-bucket-size: 7000000 under framework"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("deepspeed"), std::string::npos) << r.err;
  const auto zero = run_cli("memory --model llama-2-7b --framework deepspeed --gpus 8 --zero 2 --reduce-bucket-size 0");
  EXPECT_EQ(zero.status, 2);
  EXPECT_NE(zero.err.find("--reduce-bucket-size: 0"), std::string::npos) << zero.err;
}

// Without ZeRO DeepSpeed runs no PyTorch DDP: its engine flattens the gradients into a buffer of at most
// MEMORY_OPT_ALLREDUCE_SIZE = 5e8 elements at a time and all-reduces that (deepspeed/runtime/engine.py,
// buffered_allreduce_fallback). Llama 2 7B's 6.74e9 fp32 gradients (gpuplan's default accumulation dtype) need the
// full 5e8 x 4 bytes, not a bucket copy of every gradient.
TEST(MemoryCli, DeepSpeedWithoutZeroHoldsOneAllReduceBuffer) {
  const auto r = run_cli("memory --model llama-2-7b --framework deepspeed --gpus 8 --zero 0 --global-batch 8 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("per_gpu").at("comm_buffers").get<std::int64_t>(), 2'000'000'000);
}

// ZeRO-3 in DeepSpeed allocates its gradient bucket once, reduce_bucket_size elements of the 16-bit communication
// dtype (deepspeed/runtime/zero/stage3.py, _setup_for_real_optimizer: torch.empty(self.reduce_bucket_size)), and
// gathers the running module plus stage3_prefetch_bucket_size elements ahead. Lowering them from 5e8 to 1e8 and from
// 5e7 to 1e7 saves (4e8 + 4e7) x 2 bytes on Llama 2 7B's ranks.
TEST(MemoryCli, DeepSpeedZeroThreeBucketAndPrefetchFollowTheConfig) {
  const std::string job = "memory --model llama-2-7b --framework deepspeed --gpus 8 --zero 3 --global-batch 8 --json";
  const std::int64_t defaults = memory_cli_test::comm_buffer_bytes(job);
  EXPECT_EQ(defaults - memory_cli_test::comm_buffer_bytes(job + " --reduce-bucket-size 1e8"), 400'000'000LL * 2);
  EXPECT_EQ(defaults - memory_cli_test::comm_buffer_bytes(job + " --stage3-prefetch-bucket-size 1e7"), 40'000'000LL * 2);
}

// The embedding and the output layer are modules of their own: DeepSpeed ZeRO-3 fetches one of them at a time, and
// torchtitan wraps tok_embeddings and [norm, output] as separate FSDP2 units. Llama 2 7B (vocabulary 32000, hidden
// 4096): the largest module is one 32000 x 4096 table, fetched beside the default stage3_prefetch_bucket_size of
// 5e7 elements (zero/config.py), in bf16. Llama 3.1 8B under torchtitan: one 128256 x 4096 table, current and
// prefetched, in bf16.
TEST(MemoryCli, ZeroThreeGathersOneVocabularyTableAtATime) {
  EXPECT_EQ(memory_cli_test::term_bytes("memory --model llama-2-7b --framework deepspeed --gpus 8 --zero 3 --json",
                                        "ZeRO-3 gathered parameters"),
            (32000LL * 4096 + 50'000'000) * 2);
  EXPECT_EQ(memory_cli_test::term_bytes("memory --model llama-3.1-8b --framework torchtitan --gpus 8 --json",
                                        "ZeRO-3 gathered parameters"),
            2 * 128256LL * 4096 * 2);
}
