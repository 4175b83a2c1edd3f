// The bash launch-script reader: real Megatron-LM examples, each bash construct it evaluates, and its errors.
// Every expected value is worked out by hand from the script text and bash's rules, as the comments show.
#include "framework/shell_script.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gpuplan/error.hpp"
#include "test_support.hpp"

using gpuplan::InputError;
using gpuplan::framework::read_shell_script;
using gpuplan::framework::ShellCommand;
using gpuplan::framework::ShellScript;
using gpuplan::framework::ShellWord;

namespace {

using gpuplan::test::contains;

using Strings = std::vector<std::string>;
using Environment = std::map<std::string, std::string>;

std::string megatron_script(const std::string& name) {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/frameworks/megatron/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ShellScript read(const std::string& text, const Environment& environment = {}) {
  return read_shell_script(text, "test.sh", environment);
}

ShellScript read_script_example(const std::string& name, const Environment& environment = {}) {
  return read_shell_script(megatron_script(name), name, environment);
}

Strings texts(const ShellCommand& command) {
  Strings out;
  for (const ShellWord& word : command.words) out.push_back(word.text);
  return out;
}

// The words of every command, one command per element.
std::vector<Strings> all_words(const ShellScript& script) {
  std::vector<Strings> out;
  for (const ShellCommand& command : script.commands) out.push_back(texts(command));
  return out;
}

const ShellCommand& command_named(const ShellScript& script, const std::string& program) {
  const auto found = std::find_if(script.commands.begin(), script.commands.end(), [&](const ShellCommand& command) {
    return !command.words.empty() && command.words.front().text == program;
  });
  if (found == script.commands.end()) throw std::runtime_error("no command " + program);
  return *found;
}

// Position of the first word equal to `text`, or -1.
long index_of(const ShellCommand& command, const std::string& text) {
  for (std::size_t i = 0; i < command.words.size(); ++i)
    if (command.words[i].text == text) return static_cast<long>(i);
  return -1;
}

// The `count` words after the first `flag`.
Strings after(const ShellCommand& command, const std::string& flag, std::size_t count = 1) {
  const long at = index_of(command, flag);
  Strings out;
  for (std::size_t i = 1; at >= 0 && i <= count && static_cast<std::size_t>(at) + i < command.words.size(); ++i)
    out.push_back(command.words[static_cast<std::size_t>(at) + i].text);
  return out;
}

int line_of(const ShellCommand& command, const std::string& text) {
  const long at = index_of(command, text);
  return at < 0 ? -1 : command.words[static_cast<std::size_t>(at)].line;
}

bool has_note(const ShellScript& script, const std::string& part) {
  return std::any_of(script.notes.begin(), script.notes.end(),
                     [&](const std::string& note) { return note.find(part) != std::string::npos; });
}

std::string variable(const ShellScript& script, const std::string& name) {
  const auto found = script.variables.find(name);
  return found == script.variables.end() ? "<unset>" : found->second;
}

// The InputError reading `text` throws, if any.
std::optional<InputError> script_error_of(const std::string& text) {
  try {
    (void)read(text);
  } catch (const InputError& error) {
    return error;
  }
  return std::nullopt;
}

}  // namespace

// ---- train_gpt3_175b_distributed.sh ----

TEST(ShellScriptMegatron, Gpt3TorchrunCommand) {
  const ShellScript script = read_script_example("train_gpt3_175b_distributed.sh");
  // Everything but line 77 is an assignment or export: torchrun is the only command.
  ASSERT_EQ(script.commands.size(), 1u);
  const ShellCommand& torchrun = script.commands.front();
  EXPECT_EQ(torchrun.line, 77);
  // torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${GPT_MODEL_ARGS[@]}: lines 22-25 with GPUS_PER_NODE=8,
  // NUM_NODES=1, MASTER_ADDR=localhost, MASTER_PORT=29500, then the model flags from line 29 on.
  const Strings expected_start = {"torchrun",
                                  "--nproc_per_node",
                                  "8",
                                  "--nnodes",
                                  "1",
                                  "--master_addr",
                                  "localhost",
                                  "--master_port",
                                  "29500",
                                  "pretrain_gpt.py",
                                  "--num-layers",
                                  "96"};
  const Strings words = texts(torchrun);
  ASSERT_GE(words.size(), expected_start.size());
  EXPECT_EQ(Strings(words.begin(), words.begin() + static_cast<long>(expected_start.size())), expected_start);
  EXPECT_EQ(after(torchrun, "--hidden-size"), Strings{"12288"});
  EXPECT_EQ(after(torchrun, "--attention-backend"), Strings{"auto"});  // the comment after it on line 34 is no word
  EXPECT_EQ(after(torchrun, "--tensor-model-parallel-size"), Strings{"8"});
  EXPECT_EQ(after(torchrun, "--pipeline-model-parallel-size"), Strings{"16"});
  // The last flag: EVAL_AND_LOGGING_ARGS ends with --tensorboard-dir $TENSORBOARD_LOGS_PATH, and $2 is unset.
  EXPECT_EQ(words.back(), "--tensorboard-dir");
}

TEST(ShellScriptMegatron, Gpt3QuotedElementIsSplitByTheUnquotedExpansion) {
  const ShellScript script = read_script_example("train_gpt3_175b_distributed.sh");
  const ShellCommand& torchrun = script.commands.front();
  // Line 40 stores "0:16 2.4B:320 ..." as one element of TRAINING_ARGS, but line 79 expands ${TRAINING_ARGS[@]}
  // unquoted, so bash splits that element on its spaces: six words follow the flag, then --train-iters.
  EXPECT_EQ(after(torchrun, "--step-batch-size-schedule", 7),
            (Strings{"0:16", "2.4B:320", "4.8B:624", "7.2B:928", "9.6B:1232", "12B:1536", "--train-iters"}));
  // The array itself keeps the element whole.
  const Strings& training = script.arrays.at("TRAINING_ARGS");
  const auto flag = std::find(training.begin(), training.end(), "--step-batch-size-schedule");
  ASSERT_NE(flag, training.end());
  EXPECT_EQ(*(flag + 1), "0:16 2.4B:320 4.8B:624 7.2B:928 9.6B:1232 12B:1536");
}

TEST(ShellScriptMegatron, Gpt3LinesOfFlagsAreWhereTheyAreWritten) {
  const ShellScript script = read_script_example("train_gpt3_175b_distributed.sh");
  const ShellCommand& torchrun = script.commands.front();
  EXPECT_EQ(line_of(torchrun, "--num-layers"), 29);  // first element of GPT_MODEL_ARGS
  EXPECT_EQ(line_of(torchrun, "--fp16"), 47);
  EXPECT_EQ(line_of(torchrun, "--tensor-model-parallel-size"), 56);
  EXPECT_EQ(line_of(torchrun, "pretrain_gpt.py"), 77);  // written on the command line itself
  // "8" after --nproc_per_node is $GPUS_PER_NODE: its value was written on line 7.
  EXPECT_EQ(torchrun.words[2].line, 7);
}

TEST(ShellScriptMegatron, Gpt3VariablesAndUnsetArguments) {
  const ShellScript script = read_script_example("train_gpt3_175b_distributed.sh");
  EXPECT_EQ(variable(script, "WORLD_SIZE"), "8");  // $(($GPUS_PER_NODE*$NUM_NODES)) = 8*1
  EXPECT_EQ(variable(script, "CUDA_DEVICE_MAX_CONNECTIONS"), "1");
  EXPECT_EQ(variable(script, "CHECKPOINT_PATH"), "");  // =$1, and no arguments are given
  EXPECT_TRUE(has_note(script, "line 15: $1 is unset"));
  EXPECT_TRUE(has_note(script, "line 19: $5 is unset"));
  // DATA_PATH=$5 is empty, so --data-path is followed directly by --vocab-file.
  EXPECT_EQ(after(script.commands.front(), "--data-path"), Strings{"--vocab-file"});
  ASSERT_EQ(script.arrays.at("MODEL_PARALLEL_ARGS").size(), 4u);
  EXPECT_EQ(variable(script, "MODEL_PARALLEL_ARGS"),
            "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16");
  EXPECT_TRUE(script.sbatch.empty());
}

// ---- train_llama3_8b_h100_fp8.sh ----

TEST(ShellScriptMegatron, LlamaCommandsInOrder) {
  const ShellScript script = read_script_example("train_llama3_8b_h100_fp8.sh");
  // mkdir at lines 18, 19 and 45, torchrun at 187, set +x at 196; the echo and exit 1 of lines 181-183 are in
  // the branch of [ ! -f ... ], which a file test taken as true makes false.
  const std::vector<Strings> words = all_words(script);
  ASSERT_EQ(words.size(), 5u);
  EXPECT_EQ(words[0], (Strings{"mkdir", "-p", "$(dirname \"$CHECKPOINT_PATH\")"}));
  EXPECT_EQ(words[2], (Strings{"mkdir", "-p", "/benchmark_cache_llama3_8b_fp8"}));  // PWD is unset
  EXPECT_EQ(words[3].front(), "torchrun");
  EXPECT_EQ(words.back(), (Strings{"set", "+x"}));
  EXPECT_EQ(script.commands.back().line, 196);
  EXPECT_TRUE(has_note(script, "line 18: command substitution kept as written: $(dirname \"$CHECKPOINT_PATH\")"));
  EXPECT_TRUE(has_note(script, "line 180: file test -f pretrain_gpt.py taken as true"));
  EXPECT_TRUE(has_note(script, "line 44: $PWD is unset"));
}

TEST(ShellScriptMegatron, LlamaArgumentsSplitFromArrayElements) {
  const ShellScript script = read_script_example("train_llama3_8b_h100_fp8.sh");
  const ShellCommand& torchrun = command_named(script, "torchrun");
  // DTYPE="fp8" (line 39), so lines 107-112 add "--fp8-format hybrid" as one element; ${DTYPE_ARGS[@]} unquoted
  // on line 191 splits it into two words.
  EXPECT_EQ(after(torchrun, "--fp8-format"), Strings{"hybrid"});
  EXPECT_EQ(after(torchrun, "--fp8-amax-history-len"), Strings{"1024"});
  EXPECT_EQ(line_of(torchrun, "--fp8-format"), 108);
  EXPECT_EQ(line_of(torchrun, "hybrid"), 108);
  // "--split '99,1,0'": the single quotes are inside double quotes, so they stay in the value, and the quote
  // removal of line 193 does not apply to what an expansion produced.
  EXPECT_EQ(after(torchrun, "--split"), Strings{"'99,1,0'"});
  // "$PRETRAIN_SCRIPT_PATH" on line 188 is pretrain_gpt.py, set on line 30.
  EXPECT_EQ(after(torchrun, "29500"), Strings{"pretrain_gpt.py"});
  EXPECT_EQ(line_of(torchrun, "pretrain_gpt.py"), 30);
  // CHECKPOINT_PATH=${1:-"checkpoints/llama3_8b_fp8"} with $1 unset gives the default.
  EXPECT_EQ(after(torchrun, "--save"), Strings{"checkpoints/llama3_8b_fp8"});
}

TEST(ShellScriptMegatron, LlamaBranchesAndCommentedElement) {
  const ShellScript script = read_script_example("train_llama3_8b_h100_fp8.sh");
  const ShellCommand& torchrun = command_named(script, "torchrun");
  // TOKENIZER_ARG=${3:-"MOCK"} is MOCK, so the condition on line 135 holds and the mock-data branch is taken.
  EXPECT_EQ(variable(script, "TOKENIZER_ARG"), "MOCK");
  EXPECT_GE(index_of(torchrun, "--mock-data"), 0);
  EXPECT_EQ(after(torchrun, "--tokenizer-type"), Strings{"NullTokenizer"});
  EXPECT_EQ(index_of(torchrun, "--tokenizer-model"), -1);  // only in the else branch
  // Line 119 is a comment inside the MODEL_PARALLEL_ARGS array.
  EXPECT_EQ(index_of(torchrun, "--pipeline-model-parallel-size"), -1);
  EXPECT_EQ(after(torchrun, "--context-parallel-size", 2), (Strings{"1", "--sequence-parallel"}));
  // TRAINING_ARGS+=("${DDP_ARGS[@]}") on line 130 appends three flags after --exit-duration-in-mins 235.
  EXPECT_EQ(after(torchrun, "235", 3),
            (Strings{"--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"}));
  EXPECT_EQ(variable(script, "WORLD_SIZE"), "8");
}

// ---- train_mixtral_8x7b_distributed.sh ----

TEST(ShellScriptMegatron, MixtralNodesFromTheEnvironment) {
  const ShellScript alone = read_script_example("train_mixtral_8x7b_distributed.sh");
  // NNODES=${SLURM_NNODES:-"1"}, WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES)) with GPUS_PER_NODE=8.
  EXPECT_EQ(variable(alone, "NNODES"), "1");
  EXPECT_EQ(variable(alone, "WORLD_SIZE"), "8");
  EXPECT_EQ(after(command_named(alone, "torchrun"), "--nnodes"), Strings{"1"});
  const ShellScript slurm = read_script_example("train_mixtral_8x7b_distributed.sh", {{"SLURM_NNODES", "4"}});
  EXPECT_EQ(variable(slurm, "NNODES"), "4");
  EXPECT_EQ(variable(slurm, "WORLD_SIZE"), "32");
  EXPECT_EQ(after(command_named(slurm, "torchrun"), "--nnodes"), Strings{"4"});
}

TEST(ShellScriptMegatron, MixtralWandbFlagsOnlyWithAKey) {
  const ShellScript without = read_script_example("train_mixtral_8x7b_distributed.sh");
  EXPECT_EQ(index_of(command_named(without, "torchrun"), "--wandb-project"), -1);
  EXPECT_TRUE(has_note(without, "line 102: $WANDB_API_KEY is unset"));
  const ShellScript with = read_script_example("train_mixtral_8x7b_distributed.sh", {{"WANDB_API_KEY", "k"}});
  const ShellCommand& torchrun = command_named(with, "torchrun");
  // Lines 104-105: ${WANDB_PROJECT:-"Mixtral"} and ${WANDB_NAME:-"Mixtral_8x7B"}, both unset.
  EXPECT_EQ(after(torchrun, "--wandb-project"), Strings{"Mixtral"});
  EXPECT_EQ(after(torchrun, "--wandb-exp-name"), Strings{"Mixtral_8x7B"});
  EXPECT_EQ(line_of(torchrun, "--wandb-project"), 104);
  EXPECT_EQ(torchrun.words.back().text, "Mixtral_8x7B");
}

TEST(ShellScriptMegatron, MixtralArrayWithContinuations) {
  const ShellScript script = read_script_example("train_mixtral_8x7b_distributed.sh");
  const ShellCommand& torchrun = command_named(script, "torchrun");
  // LOGGING_ARGS (lines 90-100) ends its lines with backslashes; "${CHECKPOINT_PATH}/tensorboard" with
  // CHECKPOINT_PATH=$1 empty is "/tensorboard".
  EXPECT_EQ(after(torchrun, "--log-interval"), Strings{"1"});
  EXPECT_EQ(after(torchrun, "--tensorboard-dir", 2), (Strings{"/tensorboard", "--no-load-optim"}));
  EXPECT_EQ(line_of(torchrun, "--no-load-rng"), 99);
  // --tokenizer-model ${TOKENIZER_MODEL} --data-path $DATA_PATH: both $2 and $3 are unset.
  EXPECT_EQ(after(torchrun, "--tokenizer-model", 3), (Strings{"--data-path", "--split", "99990,8,2"}));
  EXPECT_EQ(after(torchrun, "--expert-model-parallel-size"), Strings{"8"});
}

// ---- sbatch_mfsdp_deepseek_v3.sh ----

TEST(ShellScriptMegatron, DeepSeekTrainingCommandString) {
  const ShellScript script = read_script_example("sbatch_mfsdp_deepseek_v3.sh");
  const std::string command = variable(script, "TRAINING_CMD");
  // Line 191 inside double quotes: "${PROFILE_CMD} python ${MEGATRON_PATH}/pretrain_gpt.py ${PRETRAIN_ARGS[@]}",
  // PROFILE_CMD="" (PROFILE=0), MEGATRON_PATH=your_own_megatron_path, PRETRAIN_ARGS from line 29 with TP=1, EP=8.
  EXPECT_TRUE(contains(command,
                       "\n python your_own_megatron_path/pretrain_gpt.py --distributed-timeout-minutes 60 "
                       "--tensor-model-parallel-size 1 --expert-model-parallel-size 8 "
                       "--expert-tensor-parallel-size 1"))
      << command;
  // USE_MEGATRON_FSDP=${USE_MEGATRON_FSDP:-1} is 1: lines 140-153 append the FSDP flags.
  EXPECT_TRUE(contains(command,
                       " --enable-experimental --use-megatron-fsdp --data-parallel-sharding-strategy "
                       "optim_grads_params "));
  EXPECT_FALSE(contains(command, "--profile-step-start"));  // PROFILE=0
  // WANDB=1: the last flags, with COMMENT empty.
  EXPECT_TRUE(command.ends_with("--wandb-exp-name DeepSeek-V3-TP1EP8-MBS4GBS2048-"));
  EXPECT_TRUE(command.starts_with("\ncd your_own_megatron_path;\ngit rev-parse HEAD;\n"));
  EXPECT_EQ(variable(script, "CUDA_DEVICE_MAX_CONNECTIONS"), "<unset>");  // unset on line 139
  EXPECT_EQ(variable(script, "WANDB_API_KEY"), "your_own_wandb_api_key");
}

TEST(ShellScriptMegatron, DeepSeekTensorParallelFromTheEnvironment) {
  const ShellScript script = read_script_example("sbatch_mfsdp_deepseek_v3.sh", {{"TP", "2"}});
  const std::string command = variable(script, "TRAINING_CMD");
  EXPECT_TRUE(contains(command, "--tensor-model-parallel-size 2 --expert-model-parallel-size 8")) << command;
  EXPECT_TRUE(command.ends_with("DeepSeek-V3-TP2EP8-MBS4GBS2048-"));
}

TEST(ShellScriptMegatron, DeepSeekJobSubmittedThroughAHereDocument) {
  const ShellScript script = read_script_example("sbatch_mfsdp_deepseek_v3.sh");
  // mkdir (195), set +e (202), sbatch (203), set -e (224). echo $PROFILE_CMD is in the PROFILE=1 branch and the
  // group after || on line 195 is not run, the mkdir being taken to succeed.
  const std::vector<Strings> words = all_words(script);
  ASSERT_EQ(words.size(), 4u);
  EXPECT_EQ(words[0], (Strings{"mkdir", "-p", "your_own_output_path/slurm_logs"}));
  EXPECT_EQ(words[2], Strings{"sbatch"});
  EXPECT_EQ(words[3], (Strings{"set", "-e"}));
  EXPECT_TRUE(has_note(script, "line 195: commands after || not run"));
  // The #SBATCH lines at the top of the here-document (lines 206-214).
  EXPECT_EQ(script.sbatch.at("nodes"), "your_own_num_nodes");
  EXPECT_EQ(script.sbatch.at("job-name"), "your_own_job_name");
  EXPECT_EQ(script.sbatch.at("gres"), "gpu:your_own_gpu_per_node");
  EXPECT_EQ(script.sbatch.at("exclusive"), "");
  EXPECT_EQ(script.sbatch.at("dependency"), "singleton");
  // The body is expanded: the backslash-newlines of srun's lines are removed, ${CONTAINER_IMAGE} and
  // "${TRAINING_CMD}" replaced, and \${SLURM_JOB_ID} left as ${SLURM_JOB_ID}.
  const std::string& input = script.commands[2].input;
  EXPECT_TRUE(input.starts_with("#!/bin/bash\n\n#SBATCH --job-name=your_own_job_name\n"));
  EXPECT_TRUE(contains(input, "srun     --mpi=pmix -l     --container-image=your_own_container_image     "));
  EXPECT_TRUE(contains(input, "bash -x -c \"\ncd your_own_megatron_path;\n"));
  EXPECT_TRUE(contains(input, "| tee your_own_output_path/slurm_logs/${SLURM_JOB_ID}.log\n"));
}

// ---- Lexing: comments, continuations, separators, quotes ----

TEST(ShellScriptSyntax, CommentsContinuationsAndSeparators) {
  const ShellScript script = read(
      "# a comment\n"
      "echo a#b # the rest is a comment\n"
      "echo one \\\n"
      "  two; echo three\n"
      "echo four;echo five\n");
  // '#' starts a comment only at the start of a word; backslash-newline joins lines; ';' separates commands.
  EXPECT_EQ(all_words(script),
            (std::vector<Strings>{
                {"echo", "a#b"}, {"echo", "one", "two"}, {"echo", "three"}, {"echo", "four"}, {"echo", "five"}}));
  EXPECT_EQ(script.commands[1].line, 3);
  EXPECT_EQ(script.commands[2].line, 4);
  EXPECT_EQ(script.commands[1].words[2].line, 4);  // "two" is written on line 4
}

TEST(ShellScriptSyntax, Quotes) {
  const ShellScript script = read(
      "X='a b'\n"
      "echo $X \"$X\" '$X' \"a\\\"b\" a\\ b \"\\$X\" $'tab\\there' \"\" ''\n");
  // $X splits into a, b; "$X" stays one word; '$X' is literal; \" inside double quotes is a quote; "a\ b" is
  // one word; \$ escapes the dollar; $'..' decodes \t; "" and '' are empty words.
  EXPECT_EQ(texts(script.commands.front()),
            (Strings{"echo", "a", "b", "a b", "$X", "a\"b", "a b", "$X", "tab\there", "", ""}));
}

TEST(ShellScriptSyntax, DollarSingleQuoteKeepsOtherBackslashes) {
  const ShellScript script = read("echo $'a\\qb' $'it\\'s'\n");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "a\\qb", "it's"}));
}

TEST(ShellScriptSyntax, CarriageReturnsBeforeNewlinesAreIgnored) {
  const ShellScript script = read("A=1\r\nif [ \"$A\" = 1 ]; then\r\n  echo yes\r\nfi\r\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "yes"}}));
  EXPECT_TRUE(has_note(script, "CRLF"));
}

// ---- Assignments ----

TEST(ShellScriptAssignments, ScalarsExportsAndDeclarations) {
  const ShellScript script = read(
      "A=1\n"
      "export B=2\n"
      "export C\n"
      "declare D=4\n"
      "local E=5\n"
      "readonly F=6\n"
      "typeset -x G=7\n"
      "A+=0\n"
      "unset F\n"
      "export \"H=8\"\n");
  // None of these is a command. A+=0 appends to the text: "10". unset removes F. export C declares a name
  // without a value, which leaves it unset. local outside a function is read as declare (bash refuses it).
  EXPECT_TRUE(script.commands.empty());
  EXPECT_EQ(variable(script, "A"), "10");
  EXPECT_EQ(variable(script, "B"), "2");
  EXPECT_EQ(variable(script, "C"), "<unset>");
  EXPECT_EQ(variable(script, "D"), "4");
  EXPECT_EQ(variable(script, "E"), "5");
  EXPECT_EQ(variable(script, "F"), "<unset>");
  EXPECT_EQ(variable(script, "G"), "7");
  EXPECT_EQ(variable(script, "H"), "8");
}

TEST(ShellScriptAssignments, ValuesAreNotSplit) {
  const ShellScript script = read("X=\"a  b\"\nY=$X\nZ=${X}c\necho $Y\n");
  // An assignment's value is not split: Y keeps both spaces; the unquoted $Y in echo is split.
  EXPECT_EQ(variable(script, "Y"), "a  b");
  EXPECT_EQ(variable(script, "Z"), "a  bc");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "a", "b"}));
}

TEST(ShellScriptAssignments, ArraysOverManyLines) {
  const ShellScript script = read(
      "ARGS=(\n"
      "    --one 1   # a comment (with parentheses)\n"
      "    # a whole line of comment\n"
      "    --two \"2 2\" \\\n"
      "    --three\n"
      ")\n"
      "ARGS+=( --four )\n"
      "ARGS[10]=ten\n"
      "declare -a EMPTY=()\n");
  EXPECT_EQ(script.arrays.at("ARGS"), (Strings{"--one", "1", "--two", "2 2", "--three", "--four", "ten"}));
  EXPECT_EQ(variable(script, "ARGS"), "--one 1 --two 2 2 --three --four ten");
  EXPECT_TRUE(script.arrays.at("EMPTY").empty());
  EXPECT_TRUE(script.commands.empty());
}

TEST(ShellScriptAssignments, ArrayElementsWithSubscripts) {
  const ShellScript script = read("A=([2]=two [0]=zero one)\nA[5]=five\nunset 'A[0]'\necho \"${A[@]}\" ${#A[@]}\n");
  // [2]=two, [0]=zero, then "one" at the next index, 1; A[5]=five; unset removes index 0: 1 2 5 remain.
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "one", "two", "five", "3"}));
}

TEST(ShellScriptAssignments, ArraySeesItsOldElements) {
  const ShellScript script = read("A=(x y)\nA=(\"${A[@]}\" z)\nB=(\"${A[@]:1}\")\n");
  EXPECT_EQ(script.arrays.at("A"), (Strings{"x", "y", "z"}));
  EXPECT_EQ(script.arrays.at("B"), (Strings{"y", "z"}));  // ${A[@]:1}: the elements from index 1
}

TEST(ShellScriptAssignments, AssignmentsForOneCommand) {
  const ShellScript script = read("CUDA_VISIBLE_DEVICES=0,1 N=$((1+1)) python train.py\necho ${N:-none}\n");
  ASSERT_EQ(script.commands.size(), 2u);
  const ShellCommand& python = script.commands.front();
  EXPECT_EQ(texts(python), (Strings{"python", "train.py"}));
  EXPECT_EQ(python.assignments, (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "0,1"}, {"N", "2"}}));
  // They do not stay: N is unset for the next command.
  EXPECT_EQ(texts(script.commands[1]), (Strings{"echo", "none"}));
  EXPECT_EQ(variable(script, "CUDA_VISIBLE_DEVICES"), "<unset>");
}

// ---- Parameter expansion ----

TEST(ShellScriptExpansion, DefaultsAlternativesAndLengths) {
  const ShellScript script = read(
      "E=\n"
      "echo ${E:-d1} ${E-d2} ${U-d3} ${U:+alt} ${E:+alt} ${S:=set} $S ${#S} ${#U}\n"
      "echo ${U:?needs a value} end\n");
  // E is set but empty: :- uses the default, - does not; U is unset. := assigns S. ${#U} of unset is 0.
  EXPECT_EQ(texts(script.commands[0]), (Strings{"echo", "d1", "d3", "set", "set", "3", "0"}));
  EXPECT_EQ(variable(script, "S"), "set");
  // ${U:?...} with U unset: a note, and the word expands to nothing.
  EXPECT_EQ(texts(script.commands[1]), (Strings{"echo", "end"}));
  EXPECT_TRUE(has_note(script, "line 3: ${U:?needs a value}: U is unset"));
}

TEST(ShellScriptExpansion, DefaultWordIsSplitUnlessQuoted) {
  const ShellScript script = read("echo ${U:-a b} \"${U:-a b}\" ${U:-\"c d\"}\n");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "a", "b", "a b", "c d"}));
}

TEST(ShellScriptExpansion, ArraysQuotedAndUnquoted) {
  const ShellScript script = read(
      "A=(one \"two words\" \"\")\n"
      "echo ${A[@]}\n"
      "echo \"${A[@]}\"\n"
      "echo \"${A[*]}\"\n"
      "echo ${A[1]} ${A[-2]} ${#A[@]} ${A}\n"
      "E=()\n"
      "echo \"${E[@]}\" x\"${E[@]}\"y\n");
  // Unquoted: split, the empty element vanishes. Quoted @: one word per element, the empty one included.
  // Quoted *: one word joined by spaces. ${A} is ${A[0]}. An empty "${E[@]}" gives no word at all.
  EXPECT_EQ(texts(script.commands[0]), (Strings{"echo", "one", "two", "words"}));
  EXPECT_EQ(texts(script.commands[1]), (Strings{"echo", "one", "two words", ""}));
  EXPECT_EQ(texts(script.commands[2]), (Strings{"echo", "one two words "}));
  EXPECT_EQ(texts(script.commands[3]), (Strings{"echo", "two", "words", "two", "words", "3", "one"}));
  EXPECT_EQ(texts(script.commands[4]), (Strings{"echo", "xy"}));
}

TEST(ShellScriptExpansion, ResultsOfExpansionsKeepTheirQuotes) {
  const ShellScript script = read("V=\"--split '99,1,0' \\\"x\\\"\"\necho $V\n");
  // Quote removal applies to the script's own quotes, not to what $V expands to.
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "--split", "'99,1,0'", "\"x\""}));
}

TEST(ShellScriptExpansion, PatternsSubstringsAndCase) {
  const ShellScript script = read(
      "P=/data/run/model.tar.gz\n"
      "echo ${P#*/} ${P##*/} ${P%.*} ${P%%.*} ${P/a/A} ${P//a/A} ${P:1:4} ${P: -2} ${P^^}\n"
      "S=\"a*b\"\n"
      "echo \"${S/\\*/-}\" \"${S/\"*\"/+}\" ${S,,} ${S^}\n");
  EXPECT_EQ(texts(script.commands[0]),
            (Strings{"echo", "data/run/model.tar.gz", "model.tar.gz", "/data/run/model.tar", "/data/run/model",
                     "/dAta/run/model.tar.gz", "/dAtA/run/model.tAr.gz", "data", "gz", "/DATA/RUN/MODEL.TAR.GZ"}));
  // A quoted or escaped * in a pattern matches only a star.
  EXPECT_EQ(texts(script.commands[1]), (Strings{"echo", "a-b", "a+b", "a*b", "A*b"}));
}

TEST(ShellScriptExpansion, ReplacementOnEveryElement) {
  // /# and /% with an empty pattern match at the start and the end of each element.
  const ShellScript script = read("A=(tp pp)\necho ${A[@]/#/--} \"${A[@]/%/=1}\" ${A[@]//p/P}\n");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "--tp", "--pp", "tp=1", "pp=1", "tP", "PP"}));
}

TEST(ShellScriptExpansion, IndirectExpansion) {
  const ShellScript script = read("TARGET=value\nNAME=TARGET\nA=(x y)\necho ${!NAME} \"${!A[@]}\"\n");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "value", "0", "1"}));
}

TEST(ShellScriptExpansion, PositionalParametersAreUnset) {
  const ShellScript script = read("echo \"$1\" ${2} ${1:-x} $# \"$@\" $* end\nset -- a \"b c\"\necho $# \"$@\"\n");
  // No arguments: "$1" is one empty word, ${2} nothing, ${1:-x} the default, $# 0, "$@" and $* nothing.
  // set -- gives the script arguments from then on.
  EXPECT_EQ(texts(script.commands[0]), (Strings{"echo", "", "x", "0", "end"}));
  EXPECT_EQ(texts(script.commands[2]), (Strings{"echo", "2", "a", "b c"}));
  EXPECT_TRUE(has_note(script, "line 1: $1 is unset"));
  EXPECT_TRUE(has_note(script, "line 1: $@ is empty"));
}

TEST(ShellScriptExpansion, CommandSubstitutionKeptAsWritten) {
  const ShellScript script = read("N=$(nproc)\nM=`hostname`\necho \"$N\" $M $(( 2 * 3 ))\n");
  EXPECT_EQ(variable(script, "N"), "$(nproc)");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "$(nproc)", "`hostname`", "6"}));
  EXPECT_TRUE(has_note(script, "line 1: command substitution kept as written: $(nproc)"));
  EXPECT_TRUE(has_note(script, "line 2: command substitution kept as written: `hostname`"));
}

TEST(ShellScriptExpansion, ArithmeticOnCommandOutputIsKeptAsWritten) {
  const ShellScript script = read("G=$(nvidia-smi -L | wc -l)\nW=$((G * 2))\n");
  EXPECT_EQ(variable(script, "W"), "$((G * 2))");
  EXPECT_TRUE(has_note(script, "line 2: arithmetic on an unevaluated value kept as written: $((G * 2))"));
}

TEST(ShellScriptExpansion, NoGlobbing) {
  const ShellScript script = read("echo * ?.sh [ab]\n");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "*", "?.sh", "[ab]"}));
}

TEST(ShellScriptExpansion, LinesOfWordsFromVariables) {
  const ShellScript script = read(
      "GPUS=8\n"
      "ARGS=(\n"
      "  --tp 2\n"
      "  --gpus $GPUS\n"
      ")\n"
      "run ${ARGS[@]} --last\n");
  const ShellCommand& run = script.commands.front();
  EXPECT_EQ(line_of(run, "--tp"), 3);
  EXPECT_EQ(line_of(run, "2"), 3);
  EXPECT_EQ(line_of(run, "--gpus"), 4);
  EXPECT_EQ(line_of(run, "8"), 1);  // the value of GPUS was written on line 1
  EXPECT_EQ(line_of(run, "--last"), 6);
}

// ---- Arithmetic ----

TEST(ShellScriptArithmetic, Operators) {
  const ShellScript script = read(
      "A=7\n"
      "echo $((1+2*3)) $(( (1+2)*3 )) $((A/2)) $(($A%4)) $((-7/2)) $((2**10)) $((A>5)) $((A==7)) $((A!=7))\n"
      "echo $((A<=6 || A>=7)) $((A<3 && 1)) $((A>3 ? 10 : 20)) $((0x10)) $((010)) $((2#101)) $((B=A+1)) $B\n"
      "X=A+1\n"
      "echo $((X*2)) $((UNSET+1)) $(( 0 && 1/0 ))\n");
  EXPECT_EQ(texts(script.commands[0]), (Strings{"echo", "7", "9", "3", "3", "-3", "1024", "1", "1", "0"}));
  EXPECT_EQ(texts(script.commands[1]), (Strings{"echo", "1", "0", "10", "16", "8", "5", "8", "8"}));
  // X's value "A+1" is an expression in turn: (7+1)*2. An unset name is 0. 1/0 is not evaluated after 0 &&.
  EXPECT_EQ(texts(script.commands[2]), (Strings{"echo", "16", "1", "0"}));
  EXPECT_TRUE(has_note(script, "UNSET is unset, taken as 0 in arithmetic"));
}

TEST(ShellScriptArithmetic, DoubledSignsBeforeANumber) {
  // bash reads --1 as - (-1) and ++1 as + (+1); before a name they step the variable.
  const ShellScript script = read("n=5\necho $((--1)) $((- -2)) $((++3)) $((----4)) $((--n)) $n\n");
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "1", "2", "3", "4", "4", "4"}));
}

TEST(ShellScriptArithmetic, ArithmeticCommand) {
  const ShellScript script = read("i=1\n(( i += 2 ))\nif (( i > 2 )); then echo big; fi\n((i++))\n");
  EXPECT_EQ(variable(script, "i"), "4");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "big"}}));
}

// ---- Conditionals ----

TEST(ShellScriptConditionals, IfElifElse) {
  const ShellScript script = read(
      "MODE=b\n"
      "if [ \"$MODE\" = a ]; then\n"
      "  X=1\n"
      "  echo a\n"
      "elif [[ $MODE == b ]]\n"
      "then\n"
      "  X=2\n"
      "else\n"
      "  X=3\n"
      "fi\n");
  // The elif branch is taken; the assignments and commands of the others do not happen.
  EXPECT_EQ(variable(script, "X"), "2");
  EXPECT_TRUE(script.commands.empty());
}

TEST(ShellScriptConditionals, DoubleBracketTests) {
  const ShellScript script = read(
      "A=fp8 E=\n"
      "[[ $A == fp8 ]] && echo 1\n"
      "[[ $A != fp8 ]] && echo 2\n"
      "[[ -z $E ]] && echo 3\n"
      "[[ -n $A && $A == fp* ]] && echo 4\n"
      "[[ $A == \"fp*\" ]] && echo 5\n"
      "[[ ! -z $A || -n $E ]] && echo 6\n"
      "[[ ( $A == x ) || 3 -gt 2 ]] && echo 7\n"
      "[[ 2+1 -eq 3 ]] && echo 8\n");
  // 2 fails; 5 compares with the quoted, literal pattern "fp*"; -eq operands of [[ ]] are arithmetic.
  EXPECT_EQ(
      all_words(script),
      (std::vector<Strings>{{"echo", "1"}, {"echo", "3"}, {"echo", "4"}, {"echo", "6"}, {"echo", "7"}, {"echo", "8"}}));
}

TEST(ShellScriptConditionals, SingleBracketAndTest) {
  const ShellScript script = read(
      "N=4 S=x\n"
      "[ $N -eq 4 ] && echo eq\n"
      "[ $N -ne 4 ] && echo ne\n"
      "[ $N -lt 5 -a $N -le 4 ] && echo lt-le\n"
      "[ $N -gt 5 -o $N -ge 4 ] && echo gt-ge\n"
      "[ \"$S\" == x ] && echo same\n"
      "[ \"$S\" != x ] && echo differ\n"
      "test ! -n \"\" && echo not\n"
      "test -z \"$S\" || echo nonempty\n"
      "[ \"$UNSET\" ] || echo empty\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "eq"},
                                                     {"echo", "lt-le"},
                                                     {"echo", "gt-ge"},
                                                     {"echo", "same"},
                                                     {"echo", "not"},
                                                     {"echo", "nonempty"},
                                                     {"echo", "empty"}}));
}

TEST(ShellScriptConditionals, FileTestsAreTrue) {
  const ShellScript script =
      read("if [ -f config.yaml ] && [[ -d /data ]]; then echo found; fi\n[ -x run ] || exit 1\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "found"}}));
  EXPECT_TRUE(has_note(script, "line 1: file test -f config.yaml taken as true"));
  EXPECT_TRUE(has_note(script, "line 1: file test -d /data taken as true"));
}

TEST(ShellScriptConditionals, UndecidableConditionTakesTheThenBranch) {
  const ShellScript script = read(
      "if [ \"$(hostname)\" = node1 ]; then X=then; else X=else; fi\n"
      "if [[ $V =~ ^[0-9]+$ ]]; then Y=then; else Y=else; fi\n");
  EXPECT_EQ(variable(script, "X"), "then");
  EXPECT_EQ(variable(script, "Y"), "then");
  EXPECT_TRUE(has_note(script, "line 1: condition not evaluated, taken as true"));
  EXPECT_TRUE(has_note(script, "line 2: [[ $V =~ ^[0-9]+$ ]] not evaluated"));
}

TEST(ShellScriptConditionals, CommandsAsConditionsSucceed) {
  const ShellScript script = read("if grep -q x f; then A=yes; fi\nif ! which nvcc; then B=no; fi\n");
  // Commands are taken to succeed: grep's branch is taken, the negated which's is not.
  EXPECT_EQ(variable(script, "A"), "yes");
  EXPECT_EQ(variable(script, "B"), "<unset>");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"grep", "-q", "x", "f"}, {"which", "nvcc"}}));
}

TEST(ShellScriptConditionals, Case) {
  const ShellScript script = read(
      "M=llama3\n"
      "case $M in\n"
      "  gpt*) L=96 ;;\n"
      "  llama2|llama3) L=32 ;;\n"
      "  *) L=0 ;;\n"
      "esac\n"
      "case x in a) A=1 ;& x) A=2 ;& y) B=3 ;; z) B=4 ;; esac\n"
      "case \"$(uname)\" in Linux) C=1 ;; esac\n");
  EXPECT_EQ(variable(script, "L"), "32");
  // ;& falls through into the next branch without testing it.
  EXPECT_EQ(variable(script, "A"), "2");
  EXPECT_EQ(variable(script, "B"), "3");
  // A command's output is not known: no branch.
  EXPECT_EQ(variable(script, "C"), "<unset>");
  EXPECT_TRUE(has_note(script, "line 8: case on $(uname) not evaluated"));
}

TEST(ShellScriptConditionals, ExitEndsTheScript) {
  const ShellScript script = read("echo one\nif [ -z \"$1\" ]; then\n  echo usage\n  exit 1\nfi\necho two\n");
  // $1 is unset, so the usage branch runs and exit 1 ends the script there.
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "one"}, {"echo", "usage"}, {"exit", "1"}}));
  EXPECT_TRUE(has_note(script, "line 4: exit: the script ends here"));
}

TEST(ShellScriptConditionals, OrGroupAfterACommandIsNotRun) {
  const ShellScript script = read("mkdir -p d || {\n  echo failed\n  exit 1\n}\necho after\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"mkdir", "-p", "d"}, {"echo", "after"}}));
}

// ---- Loops, functions, pipes and the like ----

TEST(ShellScriptConstructs, ForLoopOverWords) {
  const ShellScript script = read("L=\"a b\"\nfor x in $L c; do\n  echo $x\ndone\nfor y; do echo never; done\n");
  // $L splits into a and b; `for y` loops over the (empty) arguments.
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "a"}, {"echo", "b"}, {"echo", "c"}}));
  EXPECT_EQ(variable(script, "x"), "c");
}

TEST(ShellScriptConstructs, BreakEndsTheLoop) {
  const ShellScript script = read("for x in 1 2 3; do\n  if [ $x = 2 ]; then break; fi\n  echo $x\ndone\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"echo", "1"}, {"break"}}));
}

TEST(ShellScriptConstructs, WhileLoopsRunTheirBodyOnce) {
  const ShellScript script = read(
      "while [ $# -gt 0 ]; do shift; done\n"
      "while true; do echo loop; sleep 1; done\n"
      "until true; do echo never; done\n"
      "for ((i = 0; i < 3; i++)); do echo $i; done\n");
  // $# is 0, so the first body never runs; `true` holds, so the second runs once (with a note); `until true`
  // does not enter; the arithmetic for runs its body once, i being 0.
  EXPECT_EQ(all_words(script),
            (std::vector<Strings>{{"true"}, {"echo", "loop"}, {"sleep", "1"}, {"true"}, {"echo", "0"}}));
  EXPECT_TRUE(has_note(script, "line 2: while loop: its body is run once"));
  EXPECT_TRUE(has_note(script, "line 4: for (( ... )) loop: its body is run once"));
}

TEST(ShellScriptConstructs, FunctionsAreDefinedNotRun) {
  const ShellScript script = read(
      "setup() {\n  X=1\n  echo inside\n}\n"
      "function teardown { echo bye; }\n"
      "setup arg\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"setup", "arg"}}));
  EXPECT_EQ(variable(script, "X"), "<unset>");
  EXPECT_TRUE(has_note(script, "line 1: function setup defined; its body is not run"));
  EXPECT_TRUE(has_note(script, "line 6: calls function setup, whose body is not run"));
}

TEST(ShellScriptConstructs, PipesRedirectionsAndLists) {
  const ShellScript script = read(
      "python train.py --lr 1 2>&1 | tee log.txt > /dev/null\n"
      "cd /work && echo ok || echo never\n"
      "{ echo grouped; } > out.log\n"
      "( cd sub; X=1 )\n"
      "sleep 10 &\n");
  // Redirections are left out of the words; the subshell's X does not survive it.
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"python", "train.py", "--lr", "1"},
                                                     {"tee", "log.txt"},
                                                     {"cd", "/work"},
                                                     {"echo", "ok"},
                                                     {"echo", "grouped"},
                                                     {"cd", "sub"},
                                                     {"sleep", "10"}}));
  EXPECT_EQ(variable(script, "X"), "<unset>");
  EXPECT_TRUE(has_note(script, "line 1: pipeline"));
  EXPECT_TRUE(has_note(script, "line 1: redirection > /dev/null left out"));
}

TEST(ShellScriptConstructs, DeclarationsTestsAndUnsetAreNotCommands) {
  const ShellScript script = read(
      "export A=1\ndeclare -r B=2\n[ -n x ]\ntest 1 = 1\n[[ a ]]\nunset A\n"
      "set -euo pipefail\nsource env.sh\n. other.sh\nmkdir -p out\ncd out\necho done\n");
  EXPECT_EQ(all_words(script), (std::vector<Strings>{{"set", "-euo", "pipefail"},
                                                     {"source", "env.sh"},
                                                     {".", "other.sh"},
                                                     {"mkdir", "-p", "out"},
                                                     {"cd", "out"},
                                                     {"echo", "done"}}));
  EXPECT_TRUE(has_note(script, "line 8: source not followed"));
}

// ---- Here-documents and #SBATCH ----

TEST(ShellScriptHereDocuments, ExpandedUnlessTheDelimiterIsQuoted) {
  const ShellScript script = read(
      "N=4\n"
      "cat > job.sh <<EOF\n"
      "nodes=$N \\$HOME \"q\" 'q'\n"
      "if then fi\n"
      "EOF\n"
      "cat <<'END'\n"
      "nodes=$N\n"
      "END\n"
      "cat <<-TABS\n"
      "\t\tindented $N\n"
      "\tTABS\n"
      "echo after\n");
  // The body is text for the command, not commands ("if then fi" is no syntax error); quotes in it are literal.
  ASSERT_EQ(script.commands.size(), 4u);
  EXPECT_EQ(script.commands[0].input, "nodes=4 $HOME \"q\" 'q'\nif then fi\n");
  EXPECT_EQ(texts(script.commands[0]), Strings{"cat"});
  EXPECT_EQ(script.commands[1].input, "nodes=$N\n");
  EXPECT_EQ(script.commands[2].input, "indented 4\n");
  EXPECT_EQ(texts(script.commands[3]), (Strings{"echo", "after"}));
  EXPECT_EQ(script.commands[3].line, 12);
}

TEST(ShellScriptHereDocuments, HereString) {
  const ShellScript script = read("V=abc\nread -r X <<< \"$V\"\n");
  EXPECT_EQ(script.commands.front().input, "abc\n");
}

TEST(ShellScriptSbatch, DirectivesAtTheTop) {
  const ShellScript script = read(
      "#!/bin/bash\n"
      "#SBATCH --nodes=4\n"
      "#SBATCH --ntasks-per-node 8\n"
      "#SBATCH -G 32 -t 04:00:00\n"
      "#SBATCH -J train -p batch -A proj  # a comment\n"
      "#SBATCH -n16\n"
      "\n"
      "# an ordinary comment\n"
      "#SBATCH --exclusive\n"
      "srun python train.py\n"
      "#SBATCH --nodes=99\n");
  // Directives after the first command (line 10) are comments to sbatch.
  EXPECT_EQ(script.sbatch, (std::map<std::string, std::string>{{"nodes", "4"},
                                                               {"ntasks-per-node", "8"},
                                                               {"gpus", "32"},
                                                               {"time", "04:00:00"},
                                                               {"job-name", "train"},
                                                               {"partition", "batch"},
                                                               {"account", "proj"},
                                                               {"ntasks", "16"},
                                                               {"exclusive", ""}}));
}

TEST(ShellScriptSbatch, DirectivesInAHereDocument) {
  const ShellScript script = read("NODES=2\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -N $NODES\nsrun train\nEOF\n");
  EXPECT_EQ(script.sbatch.at("nodes"), "2");
}

// ---- Environment ----

TEST(ShellScriptEnvironment, VariablesSetBeforeTheScript) {
  const ShellScript script = read("echo ${NODES:-1} $HOME\n", {{"NODES", "8"}, {"HOME", "/root"}});
  EXPECT_EQ(texts(script.commands.front()), (Strings{"echo", "8", "/root"}));
  EXPECT_EQ(variable(script, "NODES"), "8");
}

// ---- Errors ----

TEST(ShellScriptErrors, BinaryContentAndSize) {
  const auto binary = script_error_of(std::string("echo a\necho \0b\n", 15));
  ASSERT_TRUE(binary);
  EXPECT_EQ(binary->field(), "test.sh:2");
  EXPECT_EQ(binary->given(), "binary content (a NUL byte)");
  const auto large = script_error_of(std::string((std::size_t{1} << 20) + 1, '#'));
  ASSERT_TRUE(large);
  EXPECT_EQ(large->field(), "test.sh:1");
  EXPECT_TRUE(contains(large->accepted(), "1 MiB"));
}

TEST(ShellScriptErrors, UnterminatedConstructsNameTheirLine) {
  // Each: the script, the line where the construct opens, and what the message says was found.
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"echo ok\necho 'open\n\n", "test.sh:2", "unterminated ' quote"},
      {"X=1\nY=\"open\n", "test.sh:2", "unterminated \" quote"},
      {"A=1\nARGS=(\n  --one\n", "test.sh:2", "unterminated ( array"},
      {"\n\nN=$(( 1 + 2 \n", "test.sh:3", "unterminated $(("},
      {"echo ${HOME\n", "test.sh:1", "unterminated ${"},
      {"echo `date\n", "test.sh:1", "unterminated ` command substitution"},
      {"echo a\nif true; then\n  echo b\n", "test.sh:2", "if without fi"},
      {"if true\necho b\nfi\n", "test.sh:1", "if without then"},
      {"for x in a; do\n echo\n", "test.sh:1", "for without done"},
      {"case x in\n a) ;;\n", "test.sh:1", "case without esac"},
      {"{ echo\n", "test.sh:1", "{ without }"},
      {"[[ -n x\n", "test.sh:1", "[[ without ]]"},
      {"echo a\nfi\n", "test.sh:2", "unexpected 'fi'"},
      {"cat <<\n", "test.sh:1", "<< without a delimiter word"},
  };
  for (const auto& [text, field, given] : cases) {
    const auto error = script_error_of(text);
    ASSERT_TRUE(error) << text;
    EXPECT_EQ(error->field(), field) << text;
    EXPECT_EQ(error->given(), given) << text;
  }
}

TEST(ShellScriptErrors, Arithmetic) {
  const auto division = script_error_of("A=0\nB=$((10 / A))\n");
  ASSERT_TRUE(division);
  EXPECT_EQ(division->field(), "test.sh:2");
  EXPECT_EQ(division->given(), "division by zero in `10 / A`");
  const auto modulo = script_error_of("echo $((5 % 0))\n");
  ASSERT_TRUE(modulo);
  EXPECT_TRUE(contains(modulo->given(), "division by zero"));
  // 2**63 and 9223372036854775807 + 1 are past the largest 64-bit integer; so is the literal 2**64 would be.
  for (const std::string text : {"echo $((2**63))", "echo $((9223372036854775807 + 1))",
                                 "echo $((99999999999999999999))", "echo $(( -(-9223372036854775807 - 1) ))"}) {
    const auto overflow = script_error_of(text + "\n");
    ASSERT_TRUE(overflow) << text;
    EXPECT_EQ(overflow->field(), "test.sh:1");
    EXPECT_TRUE(contains(overflow->given(), "integer overflow")) << text;
  }
  const auto syntax = script_error_of("echo $((1 +))\n");
  ASSERT_TRUE(syntax);
  EXPECT_TRUE(contains(syntax->given(), "invalid arithmetic expression"));
}

TEST(ShellScriptErrors, NestingDeeperThan64) {
  std::string defaults = "echo ";
  for (int i = 0; i < 70; ++i) defaults += "${A" + std::to_string(i) + ":-";
  // Built with append: GCC 12 at -O3 warns wrongly (-Wrestrict) about "literal" + std::string.
  defaults.append("x").append(70, '}').append("\n");
  std::string parentheses = "echo $(( ";
  parentheses.append(70, '(').append("1").append(70, ')').append(" ))\n");
  std::string ifs;
  for (int i = 0; i < 70; ++i) ifs += "if true; then\n";
  ifs += "echo deep\n";
  for (int i = 0; i < 70; ++i) ifs += "fi\n";
  for (const std::string& text :
       {defaults, parentheses, ifs, std::string("A=A\necho $((A))\n"), std::string("A='B+1' B='A+1'\necho $((A))\n")}) {
    const auto error = script_error_of(text);
    ASSERT_TRUE(error) << text.substr(0, 40);
    EXPECT_EQ(error->given(), "nesting deeper than 64") << text.substr(0, 40);
  }
  // 60 levels are fine.
  std::string shallow = "echo $(( " + std::string(60, '(') + "7" + std::string(60, ')') + " ))\n";
  EXPECT_EQ(texts(read(shallow).commands.front()), (Strings{"echo", "7"}));
}

TEST(ShellScriptErrors, BadSubstitutionAndArrayAsArgument) {
  const auto bad = script_error_of("echo ${A B}\n");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field(), "test.sh:1");
  EXPECT_TRUE(contains(bad->given(), "bad substitution"));
  const auto array = script_error_of("echo X=(1 2)\n");
  ASSERT_TRUE(array);
  EXPECT_TRUE(contains(array->given(), "array assignment"));
}

TEST(ShellScriptErrors, RunawayScriptsStop) {
  // A value doubled 30 times would be 2^30 bytes; the reader stops at 16 MiB of expansions.
  std::string doubling = "A=x\n";
  for (int i = 0; i < 30; ++i) doubling += "A=$A$A\n";
  const auto error = script_error_of(doubling);
  ASSERT_TRUE(error);
  EXPECT_TRUE(contains(error->given(), "16 MiB"));
}

TEST(ShellScriptErrors, AnArrayDoubledPastAnyLaunchScriptStops) {
  // ARGS+=("${ARGS[@]}") 17 times makes 131,072 one-letter elements: 256 KiB of text, but each element is a map
  // node and a string (about 100 bytes), so the reader would hold over 12 MiB, plus the copy each append makes.
  // Elements are charged at that size, and the reader stops before a million of them exhaust memory and time.
  std::string doubling = "ARGS=(a)\n";
  for (int i = 0; i < 17; ++i) doubling += "ARGS+=(\"${ARGS[@]}\")\n";
  const auto error = script_error_of(doubling);
  ASSERT_TRUE(error);
  EXPECT_TRUE(contains(error->given(), "16 MiB"));
  // Ten doublings (1,024 elements, longer than any launch script's arguments) read.
  std::string ten = "ARGS=(a)\n";
  for (int i = 0; i < 10; ++i) ten += "ARGS+=(\"${ARGS[@]}\")\n";
  EXPECT_FALSE(script_error_of(ten));
}
