// gpuplan calibrate --runs: reading measured runs (CSV tables, Megatron-LM logs), fitting the step-time
// constants to them, and the file --perf reads back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "api/measured_runs.hpp"
#include "api/resolve.hpp"
#include "cli_runner.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/perf_fit.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kValidation = std::string(GPUPLAN_TEST_DATA_DIR) + "/../../validation/data/";

api::FileInput file(const std::string& path) { return api::FileInput{path, read_file_text(path)}; }

// The log with Megatron's argument line for `name` set to `value`, added where the block has none.
void set_argument(api::FileInput& log, const std::string& name, const std::string& value) {
  const std::string key = "  " + name + " ";
  const auto at = log.text->find(key);
  const std::string line = key + std::string(48 - key.size(), '.') + " " + value + "\n";
  if (at == std::string::npos) log.text->insert(log.text->find("  accumulate_allreduce_grads_in_fp32"), line);
  else log.text->replace(at, log.text->find('\n', at) + 1 - at, line);
}

std::vector<MeasuredRun> measured(const std::vector<api::detail::RunRecord>& records) {
  std::vector<MeasuredRun> runs;
  for (const auto& rec : records) runs.push_back({rec.label, api::detail::estimate_job_inputs(rec.request), rec.step_s});
  return runs;
}

// Calibrated on runs[i] alone, the model must predict every other run of the set better than uncalibrated. For
// runs of one recipe at different scales (`one_recipe`: DGX Cloud's tables, whose times differ by up to 3 %) where
// the uncalibrated model is already within 1 % of them, or closer to them on average than the calibration run's own
// measured time is, one run's measurement noise cannot improve on it: the calibrated model must then stay within
// 1 %, or within the largest of those differences. Runs of different layouts and models (vTrain) have no such
// allowance: their times differ by the layout, not by noise.
void expect_one_run_calibrates(const std::vector<MeasuredRun>& runs, std::size_t i, const char* set,
                               bool one_recipe) {
  constexpr double kAlreadyWithin = 0.01;
  const PerfConstants start = *runs[i].inputs.perf;
  const PerfConstants fitted = fit_perf_constants({runs[i]}, start, run_calibration_parameters(), 0.02);
  std::vector<MeasuredRun> rest = runs;
  rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
  double spread_mean = 0, spread_max = 0;   // of the calibration run's measured time from the others'
  for (const MeasuredRun& r : rest) {
    const double d = std::abs(r.step_s - runs[i].step_s) / r.step_s;
    spread_mean += d / static_cast<double>(rest.size());
    spread_max = std::max(spread_max, d);
  }
  const double before = mean_abs_percentage_error(rest, start), after = mean_abs_percentage_error(rest, fitted);
  if (!one_recipe || before > std::max(kAlreadyWithin, spread_mean))
    EXPECT_LT(after, before) << set << ": calibrated on " << runs[i].label;
  else
    EXPECT_LE(after, std::max(kAlreadyWithin, spread_max)) << set << ": calibrated on " << runs[i].label;
  std::printf("%s, calibrated on %s: MAPE of the other %zu runs %.1f%% -> %.1f%%\n", set, runs[i].label.c_str(),
              rest.size(), 100 * before, 100 * after);
}

// vTrain's 1,440 single-node A100 iterations (validation/data, read as shipped: fp16, full recomputation, eager
// attention as its source says, given as the request's defaults). The model as published predicts them 26 % too
// fast on average (validation/time_report.md); one run must carry that over to the rest.
TEST(CalibrateRuns, OneVTrainRunPredictsTheRestBetter) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  defaults.precision = "fp16";
  defaults.recompute = "full";
  defaults.attention = "eager";
  const auto runs = measured(api::detail::read_runs(file(kValidation + "a100-megatron-single-node-steps.csv"), defaults));
  ASSERT_EQ(runs.size(), 1440u);  // the source's row count (a100-megatron-single-node-steps.source.md)
  EXPECT_NEAR(runs[0].step_s, 0.372160408, 1e-12);  // its first row, in ms in the file
  for (std::size_t i : {std::size_t{0}, std::size_t{719}, std::size_t{1439}}) expect_one_run_calibrates(runs, i, "vTrain", false);
}

// NVIDIA's DGX Cloud H100 recipes (validation/data/dgxc-h100-bf16.csv, its own columns): per model, one run of
// the newer release (GSW 25.02, NeMo 24.12) predicts the model's other runs of that release, as a user calibrates
// on the software they run. The set holds two releases whose times differ by up to 7 % for the same layout
// (GPT-3 175B: 8.91 s on 24.11, 8.31 s on 25.02): calibrating on one release carries its speed over to the other,
// which no constant of the model can tell apart.
TEST(CalibrateRuns, OneDgxCloudRunPredictsTheRestOfItsModelAndReleaseBetter) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  defaults.sequence_parallel = true;  // every recipe (the file's header): sequence parallelism, distributed optimizer
  defaults.zero = 1;
  defaults.tp_overlap = true;  // GPT-3's rows say on; the Llama rows leave it empty, NeMo's launcher default is on
  const auto records = api::detail::read_runs(file(kValidation + "dgxc-h100-bf16.csv"), defaults);
  ASSERT_EQ(records.size(), 38u);
  std::map<std::string, std::vector<MeasuredRun>> newer_release_by_model;
  const std::string text = read_file_text(kValidation + "dgxc-h100-bf16.csv");
  for (const auto& rec : records) {
    // The release is the second column of the row (ignored by the reader): find it through the row's line.
    const int line = std::stoi(rec.label.substr(rec.label.rfind(':') + 1));
    std::istringstream in(text);
    std::string row;
    for (int i = 0; i < line; ++i) std::getline(in, row);
    if (row.find(",25.02,") == std::string::npos) continue;
    newer_release_by_model[rec.request.model.name_or_path].push_back(
        {rec.label, api::detail::estimate_job_inputs(rec.request), rec.step_s});
  }
  ASSERT_EQ(newer_release_by_model.size(), 4u);  // GPT-3 175B, Llama 3.1 8B, 70B, 405B
  for (const auto& [model, runs] : newer_release_by_model) {
    ASSERT_GE(runs.size(), 3u) << model;
    expect_one_run_calibrates(runs, 0, model.c_str(), true);
  }
}

// TP overlap: a row's own column wins; a row that leaves it empty, or a table without the column, takes the
// request's default (--tp-overlap), as sequence parallelism does.
TEST(CalibrateRuns, TpOverlapFromRowOrDefault) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  const std::string csv = "model,tp,gpus,global_batch,tp_overlap,step_s\n"
                          "llama-3.1-8b,2,8,32,off,5\n"
                          "llama-3.1-8b,2,8,32,,5\n";
  for (const bool given : {false, true}) {
    defaults.tp_overlap = given;
    const auto runs = api::detail::read_runs({"runs.csv", csv}, defaults);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_FALSE(runs[0].request.timing.tp_overlap) << "the row says off";
    EXPECT_EQ(runs[1].request.timing.tp_overlap, given) << "the row leaves it empty";
    const auto no_column = api::detail::read_runs({"runs.csv", "model,tp,gpus,step_s\nllama-3.1-8b,2,8,5\n"}, defaults);
    EXPECT_EQ(no_column.at(0).request.timing.tp_overlap, given);
  }
}

// The SMs a recipe's TP overlap takes travel with its row: GPT-3's yaml runs the reduce-scatters on 24 SMs (out
// projection) and 20 (fc2), FLOPs-weighted (h x h against 4h x h) to (24 + 4 x 20) / 5; the Llama rows state none.
TEST(CalibrateRuns, CsvTpOverlapSmsColumn) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  for (const auto& rec : api::detail::read_runs(file(kValidation + "dgxc-h100-bf16.csv"), defaults)) {
    if (rec.request.model.name_or_path == "gpt3-175b") {
      ASSERT_TRUE(rec.request.timing.tp_overlap_sms.has_value()) << rec.label;
      EXPECT_DOUBLE_EQ(*rec.request.timing.tp_overlap_sms, (24.0 + 4.0 * 20.0) / 5.0) << rec.label;
    } else {
      EXPECT_FALSE(rec.request.timing.tp_overlap_sms.has_value()) << rec.label;
    }
  }
  const std::string header = "model,tp,gpus,seq,global_batch,tp_overlap,TP overlap SMs,step_s\n";
  try {
    api::detail::read_runs({"runs.csv", header + "llama-3.1-8b,2,8,4096,32,on,-4,5\n"}, defaults);
    FAIL() << "-4 SMs accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "runs.csv:2: column 'TP overlap SMs'");
    EXPECT_EQ(e.given(), "'-4'");
  }
}

// Megatron-LM's NaN check of the gradients: on unless a CSV row says off; a log states it in its arguments block,
// and one that does not print the argument comes from a Megatron-LM that has no such check.
TEST(CalibrateRuns, GradNanCheckFromCsvAndLog) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  const auto runs = api::detail::read_runs(
      {"runs.csv", "model,gpus,grad_nan_check,step_s\nllama-3.1-8b,8,off,5\nllama-3.1-8b,8,,5\n"}, defaults);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].request.training.grad_nan_check);
  EXPECT_TRUE(runs[1].request.training.grad_nan_check);
  const auto logged = api::detail::read_runs(
      file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log"), defaults);
  EXPECT_FALSE(logged.at(0).request.training.grad_nan_check);
}

// tests/data/runs/megatron-gpt-1.3b-tp2.log: Megatron-LM's arguments block (arguments.py, _print_args) and
// iteration lines (training.py, training_log) of a GPT run on 8 GPUs.
TEST(CalibrateRuns, ReadsAMegatronLog) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  const auto records = api::detail::read_runs(file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log"), defaults);
  ASSERT_EQ(records.size(), 1u);
  const api::EstimateRequest& r = records[0].request;
  // Iterations 20-60 (iteration 10, the first logged, is warm-up): 1203.4, 1198.7, 1201.2, 1199.9, 1204.8 ms
  // ("1204.8/1201.6": the newer format's value/mean); their median is 1201.2 ms.
  EXPECT_DOUBLE_EQ(records[0].step_s, 1.2012);
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_EQ(r.layout.pp, 1);
  EXPECT_EQ(r.layout.dp, 4);
  EXPECT_EQ(r.layout.zero, 1);          // use_distributed_optimizer True
  EXPECT_EQ(r.layout.attention, "flash");
  EXPECT_EQ(r.layout.recompute, "none");  // recompute_granularity None
  EXPECT_EQ(r.training.seq_len, 2048);
  EXPECT_EQ(r.training.micro_batch, 4);
  EXPECT_EQ(r.training.global_batch, 64);
  EXPECT_EQ(r.training.precision, "bf16");
  EXPECT_DOUBLE_EQ(r.training.dropout, 0.1);   // hidden_dropout and attention_dropout 0.1, Megatron's default
  EXPECT_EQ(r.training.grad_dtype, "fp32");    // bf16 without grad_reduce_in_bf16 reduces in fp32
  EXPECT_EQ(r.training.loss, "unfused");       // no cross_entropy_loss_fusion
  const EstimateInputs in = api::detail::estimate_job_inputs(r);
  EXPECT_EQ(in.memory.model->layers, 24);
  EXPECT_EQ(in.memory.model->hidden, 2048);
  EXPECT_EQ(in.memory.model->heads, 16);
  EXPECT_EQ(in.memory.model->ffn_hidden, 8192);
  EXPECT_EQ(in.memory.model->vocab, 50304);  // padded_vocab_size
}

// The same log with the arguments Megatron-LM prints for --grad-reduce-in-bf16, --cross-entropy-loss-fusion
// --cross-entropy-fusion-impl te and no dropout (Llama-style): the run is priced with them.
TEST(CalibrateRuns, ReadsTheLogsGradientDtypeLossAndDropout) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  api::FileInput log = file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log");
  auto set = [&log](const std::string& name, const std::string& value) { set_argument(log, name, value); };
  set("attention_dropout", "0.0");
  set("hidden_dropout", "0.0");
  set("grad_reduce_in_bf16", "True");
  set("cross_entropy_loss_fusion", "True");
  set("cross_entropy_fusion_impl", "te");
  const api::EstimateRequest r = api::detail::read_runs(log, defaults).at(0).request;
  EXPECT_DOUBLE_EQ(r.training.dropout, 0.0);
  EXPECT_EQ(r.training.grad_dtype, "bf16");
  EXPECT_EQ(r.training.loss, "fused-te");
  set("hidden_dropout", "1.5");
  const std::string message = test::error_of([&] { api::detail::read_runs(log, defaults); });
  EXPECT_NE(message.find("argument hidden_dropout"), std::string::npos) << message;
  EXPECT_NE(message.find("'1.5'"), std::string::npos) << message;
  EXPECT_NE(message.find("a probability from 0 to 1"), std::string::npos) << message;
}

// Under fp16 Megatron-LM keeps its gradients in fp16 unless --accumulate-allreduce-grads-in-fp32 (arguments.py:
// only bf16 forces it on). An MoE log's expert options reach the request as megatron_convert.cpp reads them from a
// script; a dense log's expert tensor-parallel size (validate_args copies the TP size into it) does not.
TEST(CalibrateRuns, ReadsTheLogsFp16GradientsAndExpertOptions) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  api::FileInput log = file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log");
  auto set = [&log](const std::string& name, const std::string& value) { set_argument(log, name, value); };
  auto request = [&] { return api::detail::read_runs(log, defaults).at(0).request; };
  set("expert_tensor_parallel_size", "2");
  set("moe_token_dispatcher_type", "allgather");
  EXPECT_FALSE(request().layout.etp.has_value());
  EXPECT_EQ(request().training.grad_dtype, "fp32");   // bf16
  set("bf16", "False");
  set("fp16", "True");
  EXPECT_EQ(request().training.precision, "fp16");
  EXPECT_EQ(request().training.grad_dtype, "fp16");
  set("accumulate_allreduce_grads_in_fp32", "True");
  EXPECT_EQ(request().training.grad_dtype, "fp32");

  set("num_experts", "8");
  set("moe_router_topk", "2");
  set("expert_model_parallel_size", "4");
  set("expert_tensor_parallel_size", "1");
  set("moe_expert_capacity_factor", "1.25");
  set("moe_pad_expert_input_to_capacity", "True");
  api::EstimateRequest moe = request();
  EXPECT_EQ(moe.layout.etp, 1);
  EXPECT_EQ(moe.training.moe_capacity_factor, 1.25);
  EXPECT_TRUE(moe.training.moe_pad_to_capacity);
  EXPECT_EQ(moe.training.moe_dispatcher, "alltoall");   // allgather is priced as the all-to-all
  EXPECT_GT(estimate_step(api::detail::estimate_job_inputs(moe)).step_s, 0);
  set("moe_expert_capacity_factor", "None");
  set("moe_pad_expert_input_to_capacity", "False");
  set("moe_token_dispatcher_type", "flex");
  moe = request();
  EXPECT_FALSE(moe.training.moe_capacity_factor.has_value());   // dropless
  EXPECT_EQ(moe.training.moe_dispatcher, "flex");
  set("moe_expert_capacity_factor", "-1");
  const std::string message = test::error_of([&] { request(); });
  EXPECT_NE(message.find("argument moe_expert_capacity_factor"), std::string::npos) << message;
  EXPECT_NE(message.find("a finite number > 0"), std::string::npos) << message;
}

// The CSV's expert columns: expert tensor parallelism, capacity factor (empty or 0: dropless), padding, dispatcher.
TEST(CalibrateRuns, CsvExpertColumns) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  const auto runs = api::detail::read_runs(file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/moe-columns.csv"), defaults);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].request.layout.etp, 1);
  EXPECT_EQ(runs[0].request.training.moe_capacity_factor, 1.0);
  EXPECT_TRUE(runs[0].request.training.moe_pad_to_capacity);
  EXPECT_EQ(runs[0].request.training.moe_dispatcher, "alltoall");
  EXPECT_FALSE(runs[1].request.training.moe_capacity_factor.has_value());
  EXPECT_FALSE(runs[1].request.training.moe_pad_to_capacity);
  EXPECT_EQ(runs[1].request.training.moe_dispatcher, "flex");
  // The columns reach the model: across two nodes the flex dispatcher moves fewer bytes than the all-to-all.
  api::EstimateRequest alltoall = runs[1].request;
  alltoall.training.moe_dispatcher = "alltoall";
  EXPECT_LT(estimate_step(api::detail::estimate_job_inputs(runs[1].request)).step_s,
            estimate_step(api::detail::estimate_job_inputs(alltoall)).step_s);
  try {
    const std::string header = "model,gpus,ep,moe_token_dispatcher_type,step_s\n";
    api::detail::read_runs({"runs.csv", header + "qwen3-30b-a3b,16,8,deepep,5.0\n"}, defaults);
    FAIL() << "accepted dispatcher deepep";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), std::string("runs.csv:2: column 'moe_token_dispatcher_type'"));
    EXPECT_NE(std::string(e.what()).find("one of alltoall|flex"), std::string::npos) << e.what();
  }
}

TEST(CalibrateRuns, ReadsALogWhoseArgumentsAreNotUtf8) {
  // A data path in Latin-1 ("caf\xe9") is a byte that is not UTF-8; the log reads as it would without it.
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  api::FileInput log = file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log");
  const std::string first_argument = "  accumulate_allreduce_grads_in_fp32";
  const auto at = log.text->find(first_argument);
  ASSERT_NE(at, std::string::npos);
  log.text->insert(at, "  data_path ....................................... ['/data/caf\xe9/text_document']\n");
  const auto records = api::detail::read_runs(log, defaults);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_DOUBLE_EQ(records[0].step_s, 1.2012);
  EXPECT_EQ(records[0].request.layout.tp, 2);
  EXPECT_EQ(api::detail::estimate_job_inputs(records[0].request).memory.model->layers, 24);
}

TEST(CalibrateRuns, CliJsonWithAFileNameThatIsNotUtf8) {
  // The runs' labels are their file names, and a file name is bytes: the JSON answer carries U+FFFD for them.
  const std::string path = ::testing::TempDir() + "runs-\xff.csv";
  std::ofstream(path) << read_file_text(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/a100-vtrain-6.csv");
  const auto r = test::run_cli("calibrate --runs '" + path + "' --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(nlohmann::json::parse(r.out).dump().find("runs-\xef\xbf\xbd.csv"), std::string::npos);
}

TEST(CalibrateRuns, BadCsvValueNamesFileLineColumn) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  const api::FileInput bad{"runs.csv", "model,tp,pp,dp,seq,micro_batch,step_ms\nllama-3.1-8b,2,1,4,4096,1,900\n"
                                       "llama-3.1-8b,two,1,4,4096,1,900\n"};
  try {
    api::detail::read_runs(bad, defaults);
    FAIL() << "accepted tp 'two'";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "runs.csv:3: column 'tp'");
    EXPECT_EQ(e.given(), "'two'");
  }
}

TEST(CalibrateRuns, CsvGradientDtypeDropoutAndLossColumns) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-h100";
  const std::string header = "model,tp,gpus,seq,global_batch,Main Grads Dtype,hidden-dropout,loss,step_s\n";
  const auto runs = api::detail::read_runs(
      {"runs.csv", header + "llama-3.1-8b,1,8,4096,32,bf16,0.1,fused-te,5.0\nllama-3.1-8b,1,8,4096,32,,,,5.0\n"},
      defaults);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].request.training.grad_dtype, "bf16");
  EXPECT_DOUBLE_EQ(runs[0].request.training.dropout, 0.1);
  EXPECT_EQ(runs[0].request.training.loss, "fused-te");
  EXPECT_EQ(runs[1].request.training.grad_dtype, "");   // empty cells: the defaults (here the framework's)
  EXPECT_DOUBLE_EQ(runs[1].request.training.dropout, 0.0);
  EXPECT_EQ(runs[1].request.training.loss, "unfused");
  // The columns reach the model: reduced in bf16, the gradients move half the bytes of fp32 ones.
  api::EstimateRequest fp32_gradients = runs[0].request;
  fp32_gradients.training.grad_dtype = "fp32";
  EXPECT_LT(estimate_step(api::detail::estimate_job_inputs(runs[0].request)).step_s,
            estimate_step(api::detail::estimate_job_inputs(fp32_gradients)).step_s);
  for (const auto& [row, column, accepted] :
       {std::tuple{"llama-3.1-8b,1,8,4096,32,bf8,0,unfused,5\n", "Main Grads Dtype", "one of fp32|bf16|fp16"},
        std::tuple{"llama-3.1-8b,1,8,4096,32,bf16,1.5,unfused,5\n", "hidden-dropout", "a probability from 0 to 1"},
        std::tuple{"llama-3.1-8b,1,8,4096,32,bf16,0,fused,5\n", "loss", "one of unfused|fused-te|fused-native|chunked"}}) {
    try {
      api::detail::read_runs({"runs.csv", header + row}, defaults);
      FAIL() << "accepted " << row;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), std::string("runs.csv:2: column '") + column + "'");
      EXPECT_NE(std::string(e.what()).find(accepted), std::string::npos) << e.what();
    }
  }
}

TEST(CalibrateRuns, CliWritesAPerfFileThatMovesTheEstimateTheFittedWay) {
  const std::string data = std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/a100-vtrain-6.csv";
  const std::string out = ::testing::TempDir() + "calibrated-perf.json";
  const auto fit = test::run_cli("calibrate --runs " + data + " --out " + out + " --json");
  ASSERT_EQ(fit.status, 0) << fit.err;
  const auto j = nlohmann::json::parse(fit.out);
  // The six runs are measured slower than the published constants predict (vTrain's bias): the fit slows the model.
  double measured = 0, before = 0;
  for (const auto& r : j.at("runs_fit").at("runs")) {
    measured += r.at("measured_s").get<double>();
    before += r.at("before_s").get<double>();
  }
  ASSERT_GT(measured, before);
  const std::string job = "estimate --model gpt2 --hidden 2048 --heads 16 --layers 24 --seq-len 1024 --system dgx-a100 "
                          "--tp 2 --pp 2 --dp 2 --micro-batch 4 --global-batch 32 --precision fp16 --recompute full "
                          "--attention eager --json";
  const auto plain = test::run_cli(job), calibrated = test::run_cli(job + " --perf " + out);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(calibrated.status, 0) << calibrated.err;
  const double plain_s = nlohmann::json::parse(plain.out).at("time").at("step_s");
  const double calibrated_s = nlohmann::json::parse(calibrated.out).at("time").at("step_s");
  EXPECT_GT(calibrated_s, plain_s);
}

TEST(CalibrateRuns, StepTimesMustBeFiniteAndIterationNumbersReal) {
  api::CalibrateRequest defaults;
  defaults.cluster.system = "dgx-a100";
  const api::FileInput infinite{"runs.csv", "model,tp,pp,dp,seq,micro_batch,step_ms\nllama-3.1-8b,2,1,4,4096,1,inf\n"};
  EXPECT_THROW(api::detail::read_runs(infinite, defaults), InputError);
  // An iteration number past any run (1e19 is not a long) counts as the next line, as a line without one does.
  api::FileInput log = file(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log");
  *log.text += " iteration 1e19/ 1000 | elapsed time per iteration (ms): 1300.0 |\n"
               " iteration 70/ 1000 | elapsed time per iteration (ms): inf |\n";
  const auto records = api::detail::read_runs(log, defaults);
  ASSERT_EQ(records.size(), 1u);
  // The five timed iterations 1203.4, 1198.7, 1201.2, 1199.9, 1204.8 ms and 1300.0: the median of six is
  // (1201.2 + 1203.4) / 2; the infinite line is not a measurement.
  EXPECT_DOUBLE_EQ(records[0].step_s, (1.2012 + 1.2034) / 2);
}

TEST(CalibrateRuns, CliBadInputExitsTwoWithOneLine) {
  const std::string path = ::testing::TempDir() + "bad-runs.csv";
  std::ofstream(path) << "model,tp,step_ms\nllama-3.1-8b,2,-5\n";
  const auto r = test::run_cli("calibrate --runs " + path + " --system dgx-h100");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(path + ":2: column 'step_ms'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'-5'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace gpuplan
