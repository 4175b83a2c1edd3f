// Launch files that cannot be read as written: `gpuplan estimate --from` stops with exit status 2 and one line
// naming the file, the line and the option (truncated JSON or TOML, binary content, an unknown flag, options that
// conflict, a value outside its choices), and a script that leaves the vocabulary to the command line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

// Writes `text` to a file named `name` in a folder of this test's own (ctest runs the tests at once) and runs
// estimate --from it.
gpuplan::test::CliRun estimate_from(const std::string& name, const std::string& text, const std::string& extra = "") {
  const std::string folder = "/tmp/gpuplan_bad_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(folder);
  const std::string path = folder + "/" + name;
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  auto r = run_cli("estimate --from " + path + " --system dgx-h100 " + extra);
  std::filesystem::remove_all(folder);
  return r;
}

bool one_error_line(const gpuplan::test::CliRun& r) {
  return r.status == 2 && r.err.rfind("gpuplan: error: --from: ", 0) == 0 && r.err.find('\n') == r.err.size() - 1;
}

const std::string kTorchrun = "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n";

}  // namespace

TEST(LaunchBadFiles, TruncatedJsonNamesTheLine) {
  const auto r = estimate_from("ds_config.json", "{\n  \"train_batch_size\": 8,\n  \"zero_optimization\": {\n", "--model llama-3.1-8b");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("ds_config.json:4"), std::string::npos) << r.err;   // the text ends after line 3
}

TEST(LaunchBadFiles, ANumberNoDoubleHoldsIsRefused) {
  // Found by launch_config_fuzz: JSON allows 5e7999, a double does not; it was an uncaught out_of_range.
  const auto r = estimate_from("ds_config.json",
                               "{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": "
                               "{\"stage\": 3, \"allgather_bucket_size\": 5e7999}}",
                               "--model llama-3.1-8b");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err.rfind("gpuplan: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("ds_config.json: not JSON"), std::string::npos) << r.err;
}

TEST(LaunchBadFiles, TruncatedTomlNamesTheLine) {
  const auto r = estimate_from("job.toml", "[parallelism]\ntensor_parallel_degree = 8\n[training\n");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("job.toml:3"), std::string::npos) << r.err;
}

// Found by request_fuzz: toml++ 3.3.0 (Debian 12) reaches an unreachable branch (undefined behaviour; the sanitized
// build stops there) where it looks for whitespace and meets some non-ASCII characters, here U+0156 and, after a
// line-ending backslash in a multi-line string (marzer/tomlplusplus#190), U+00A7.
TEST(LaunchBadFiles, NonAsciiTomlIsReadOrRefusedNeverUndefined) {
  auto refused = [](const gpuplan::test::CliRun& r) {
    return r.status == 2 && r.err.rfind("gpuplan: error: ", 0) == 0 && r.err.find('\n') == r.err.size() - 1;
  };
  const auto bad = estimate_from("job.toml", "\t[GPU0V-2e\xc5\x96;\xc5\x96;;;;l_type");
  EXPECT_TRUE(refused(bad)) << bad.status << " " << bad.err;
  const auto in_string = estimate_from("job.toml", "s = \"\"\"\\\n\xc2\xa7\"\"\"\n", "--model llama-3.1-8b");
  EXPECT_TRUE(in_string.status == 0 || refused(in_string)) << in_string.status << " " << in_string.err;
  // Non-ASCII where TOML allows it, in a string and a comment, reads as before.
  std::ifstream job(std::string(GPUPLAN_TEST_DATA_DIR) + "/frameworks/torchtitan/llama3_8b.toml");
  const std::string text((std::istreambuf_iterator<char>(job)), std::istreambuf_iterator<char>());
  const std::string ascii = "\"Llama 3 8B training\"";
  std::string accented_text = text;
  ASSERT_NE(accented_text.find(ascii), std::string::npos);
  accented_text.replace(accented_text.find(ascii), ascii.size(), "\"Llama 3 8B \xe2\x80\x94 entra\xc3\xaenement\"");
  const auto plain = estimate_from("job.toml", text);
  const auto accented = estimate_from("job.toml", accented_text + "# \xc2\xa7 fin\n");
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(accented.status, 0) << accented.err;
  EXPECT_EQ(accented.out, plain.out);
}

// Found by launch_config_fuzz: asked for an integer, toml++ 3.3.0 casts a float such as 1e48 to int64 (undefined
// behaviour; the sanitized build stops there). A float key no reader needs as a count reads as before; a count given
// as a float is refused.
TEST(LaunchBadFiles, TomlFloatsPastAnIntegerAreNeverCast) {
  std::ifstream job(std::string(GPUPLAN_TEST_DATA_DIR) + "/frameworks/torchtitan/llama3_8b.toml");
  const std::string text((std::istreambuf_iterator<char>(job)), std::istreambuf_iterator<char>());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    const auto at = out.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? out : out.replace(at, from.size(), to);
  };
  const auto plain = estimate_from("job.toml", text);
  const auto huge_eps = estimate_from("job.toml", replaced("eps = 1e-8", "eps = 1e48"));
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(huge_eps.status, 0) << huge_eps.err;
  EXPECT_EQ(huge_eps.out, plain.out);
  const auto float_batch = estimate_from("job.toml", replaced("local_batch_size = 1", "local_batch_size = 1e30"));
  EXPECT_EQ(float_batch.status, 2) << float_batch.err;
  EXPECT_TRUE(one_error_line(float_batch)) << float_batch.err;
}

TEST(LaunchBadFiles, DeepSpeedCountsMustBeWholeNumbers) {
  // A micro-batch of 1.5 was ignored, and the batch arithmetic ran on the other two values.
  const auto r = estimate_from("ds_config.json",
                               "{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 1.5, "
                               "\"gradient_accumulation_steps\": 1}",
                               "--model llama-3.1-8b");
  EXPECT_TRUE(one_error_line(r)) << r.status << " " << r.err;
  EXPECT_NE(r.err.find("train_micro_batch_size_per_gpu is 1.5"), std::string::npos) << r.err;
  // "auto" leaves a count to DeepSpeed, and a whole number written as text or as 8.0 is one.
  const auto fine = estimate_from("ds_config.json",
                                  "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"8\", "
                                  "\"gradient_accumulation_steps\": 1.0}",
                                  "--model llama-3.1-8b");
  EXPECT_EQ(fine.status, 0) << fine.err;
}

TEST(LaunchBadFiles, BinaryContentIsRefused) {
  const auto r = estimate_from("train.sh", std::string("torchrun\0\x01\x02", 11));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("binary"), std::string::npos) << r.err;
}

TEST(LaunchBadFiles, AnUnknownFlagNamesItsLine) {
  const auto r = estimate_from("train.sh", kTorchrun + "  --num-layers 2 --hidden-size 256 --num-attention-heads 4 \\\n"
                                                     "  --vocab-size 1000 --tensor-model-paralel-size 2\n");
  EXPECT_TRUE(one_error_line(r)) << r.err;
  EXPECT_NE(r.err.find("line 3: --tensor-model-paralel-size is not an argument"), std::string::npos) << r.err;
}

TEST(LaunchBadFiles, ConflictingFlagsAreNamedTogether) {
  const auto r = estimate_from("train.sh", kTorchrun + "  --num-layers 2 --hidden-size 256 --num-attention-heads 4 \\\n"
                                                     "  --vocab-size 1000 --fp16 \\\n  --bf16\n");
  EXPECT_TRUE(one_error_line(r)) << r.err;
  EXPECT_NE(r.err.find("line 3: --fp16 and line 4: --bf16"), std::string::npos) << r.err;
}

TEST(LaunchBadFiles, AValueOutsideItsChoicesIsRefused) {
  const auto r = estimate_from("train.sh", kTorchrun + "  --num-layers 2 --hidden-size 256 --num-attention-heads 4 \\\n"
                                                     "  --vocab-size 1000 --recompute-granularity most\n");
  EXPECT_TRUE(one_error_line(r)) << r.err;
  EXPECT_NE(r.err.find("--recompute-granularity 'most' is not one of its choices (full, selective)"), std::string::npos)
      << r.err;
}

TEST(LaunchBadFiles, AnUnknownDeepSpeedSectionKeyIsRefused) {
  const auto r = estimate_from("ds_config.json", R"({"train_micro_batch_size_per_gpu": 1,
                                                    "zero_optimization": {"stage": 2, "overlap_com": true}})",
                               "--model llama-3.1-8b");
  EXPECT_TRUE(one_error_line(r)) << r.err;
  EXPECT_NE(r.err.find("zero_optimization.overlap_com"), std::string::npos) << r.err;
}

TEST(LaunchBadFiles, AScriptWithoutTheTrainingCommandSaysWhatItLooksFor) {
  const auto r = estimate_from("train.sh", "#!/bin/bash\necho hello\n");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("pretrain_"), std::string::npos) << r.err;
}

TEST(LaunchBadFiles, AScriptWithoutAVocabularyTakesTheOneGivenBesideIt) {
  const std::string model = kTorchrun + "  --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 512 \\\n"
                                        "  --max-position-embeddings 512 --micro-batch-size 1 --bf16";
  const auto missing = estimate_from("train.sh", model + "\n");
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_NE(missing.err.find("--vocab N"), std::string::npos) << missing.err;
  // The command line gives --vocab as text; it was copied into the model as a string and refused ("an integer").
  const auto beside = estimate_from("train.sh", model + "\n", "--vocab 1000 --json");
  const auto inside = estimate_from("train.sh", model + " --vocab-size 1000\n", "--json");
  ASSERT_EQ(beside.status, 0) << beside.err;
  ASSERT_EQ(inside.status, 0) << inside.err;
  const auto step_s = [](const std::string& json) { return nlohmann::json::parse(json).at("time").at("step_s"); };
  EXPECT_EQ(step_s(beside.out), step_s(inside.out));
}

TEST(LaunchBadFiles, AJsonFileWithoutADeepSpeedKeyIsRefused) {
  // Llama-2-7B's config.json (Hugging Face) given to --from instead of --model: DeepSpeed knows none of its keys.
  const auto model = estimate_from("config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                                     "hidden_size": 4096, "num_hidden_layers": 32})",
                                   "--model llama-3.1-8b");
  EXPECT_EQ(model.status, 2) << model.err;
  EXPECT_NE(model.err.find("a Hugging Face model config"), std::string::npos) << model.err;
  EXPECT_NE(model.err.find("as --model"), std::string::npos) << model.err;
  const auto empty = estimate_from("ds_config.json", "{}", "--model llama-3.1-8b");
  EXPECT_EQ(empty.status, 2) << empty.err;
  EXPECT_NE(empty.err.find("without any DeepSpeed key"), std::string::npos) << empty.err;
}

TEST(LaunchBadFiles, AYamlConfigSaysItIsNotRead) {
  const auto r = estimate_from("llama3_8b.yaml", "trainer:\n  num_nodes: 8\nmodel:\n  micro_batch_size: 1\n",
                               "--model llama-3.1-8b");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("a YAML config"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NeMo 2 recipe"), std::string::npos) << r.err;
}
