// Options given beside a launch file win over the file's (`estimate --from FILE --tp 4`); the file's report then
// says which of its settings were not used, and a script's missing vocabulary, once given beside it, is no longer
// listed as not taken; an error about a value the file set names the file. Every expected line follows from the
// script written here and the options given.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace launch_beside_test {

// A Megatron-LM script that builds a 2-layer model on 8 GPUs with TP 2, sequence parallelism and a 512 sequence.
const std::string beside_script =
    "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
    "  --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 512 \\\n"
    "  --max-position-embeddings 512 --micro-batch-size 1 --bf16 \\\n"
    "  --tensor-model-parallel-size 2 --sequence-parallel";

gpuplan::test::CliRun estimate_beside(const std::string& text, const std::string& extra) {
  const std::string folder =
      "/tmp/gpuplan_beside_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(folder);
  const std::string path = folder + "/train.sh";
  {
    std::ofstream out(path);
    out << text << "\n";
  }
  auto r = run_cli("estimate --from " + path + " --system dgx-h100 " + extra);
  std::filesystem::remove_all(folder);
  return r;
}

std::vector<std::string> report_list(const gpuplan::test::CliRun& r, const char* key) {
  return nlohmann::json::parse(r.out).at("memory").at("launch_config").at(key).get<std::vector<std::string>>();
}

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}



TEST(LaunchOptionsBeside, TheFilesSettingsThatWereReplacedAreNamed) {
  const auto r = estimate_beside(beside_script + " --vocab-size 1000", "--tp 4 --no-sequence-parallel --seq-len 1024 "
                                                                "--micro-batch 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto changed = report_list(r, "changed_beside");
  EXPECT_TRUE(has_line(changed, "tp 4 instead of the file's 2")) << nlohmann::json(changed).dump();
  EXPECT_TRUE(has_line(changed, "sequence_parallel false instead of the file's true")) << nlohmann::json(changed).dump();
  EXPECT_TRUE(has_line(changed, "seq_len 1024 instead of the file's 512")) << nlohmann::json(changed).dump();
  // --micro-batch 1 is the file's own value: nothing changed, nothing said.
  EXPECT_EQ(changed.size(), 3u) << nlohmann::json(changed).dump();
}

TEST(LaunchOptionsBeside, AVocabularyGivenBesideIsTakenNotReportedMissing) {
  const auto r = estimate_beside(beside_script, "--vocab 1000");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("not taken  the vocabulary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("beside it  vocab 1000, applied to the model the file builds"), std::string::npos) << r.out;
}

TEST(LaunchOptionsBeside, AModelGivenBesideReplacesTheScriptsModel) {
  // The script states no vocabulary; --model replaces its whole model, so none is needed.
  const auto r = estimate_beside(beside_script, "--model llama-3.1-8b --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto changed = report_list(r, "changed_beside");
  ASSERT_EQ(changed.size(), 1u) << nlohmann::json(changed).dump();
  EXPECT_EQ(changed.front().rfind("model llama-3.1-8b instead of the file's ", 0), 0u) << changed.front();
  EXPECT_TRUE(report_list(r, "not_understood").empty());
  // The model estimated is Llama 3.1 8B's: its 8,030,261,248 parameters (Hugging Face model card count).
  EXPECT_EQ(nlohmann::json::parse(r.out).at("memory").at("params").at("total").get<std::int64_t>(), 8030261248);
}

TEST(LaunchOptionsBeside, AnErrorAboutTheFilesValueNamesTheFile) {
  // 8 GPUs launched (torchrun --nproc_per_node 8) do not factor into tp 2 x pp 3: the value at fault is the file's.
  const std::string script = beside_script + " --pipeline-model-parallel-size 3 --vocab-size 1000";
  const auto from_file = estimate_beside(script, "");
  EXPECT_EQ(from_file.status, 2);
  EXPECT_NE(from_file.err.find("--gpus: 8 ("), std::string::npos) << from_file.err;
  EXPECT_NE(from_file.err.find("), as /tmp/gpuplan_beside_"), std::string::npos) << from_file.err;
  // Given beside the file, the value is the user's own: the message does not blame the file.
  const auto beside = estimate_beside(script, "--gpus 10");
  EXPECT_EQ(beside.status, 2);
  EXPECT_NE(beside.err.find("--gpus: 10 ("), std::string::npos) << beside.err;
  EXPECT_EQ(beside.err.find("sets it"), std::string::npos) << beside.err;
}

TEST(LaunchOptionsBeside, NodesGivenBesideReplaceTheFilesNodeCount) {
  // torchrun --nproc_per_node 8 on one node launches 8 GPUs; --nodes 2 beside the script replaces its one node, so
  // the job runs on the 16 GPUs of the two nodes (dp 8 with tp 2), not on the file's 8.
  const std::string script = beside_script + " --vocab-size 1000";
  const auto r = estimate_beside(script, "--nodes 2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json memory = nlohmann::json::parse(r.out).at("memory");
  EXPECT_EQ(memory.at("layout").at("gpus"), 16);
  EXPECT_EQ(memory.at("layout").at("dp"), 8);
  const auto changed = report_list(r, "changed_beside");
  EXPECT_TRUE(has_line(changed, "gpus from the options given beside it, not the file's 8")) << nlohmann::json(changed);
  // --gpus beside it as well: that count is used.
  const auto both = estimate_beside(script, "--nodes 2 --gpus 8 --json");
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(nlohmann::json::parse(both.out).at("memory").at("layout").at("gpus"), 8);
}

}  // namespace launch_beside_test
