// Expert parallelism on a model without experts: every command refuses --ep and --etp on a dense model with one
// line naming the option, its value and that it needs a mixture-of-experts model, instead of ignoring it (or, in
// plan, silently reading --etp as a TP filter).
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.hpp"

using gpuplan::test::run_cli;

namespace {

// Llama-3.1-8B is dense (no routed experts in its config.json).
void expect_refused(const std::string& args, const std::string& option, const std::string& value) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
  EXPECT_EQ(r.err.find("gpuplan: error: " + option + ": " + value), 0u) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("mixture-of-experts"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

}  // namespace

TEST(DenseExpertOptions, PlanRefusesEpAndEtp) {
  const std::string plan = "plan --model llama-3.1-8b --system dgx-h100 --nodes 1 --global-batch 8 --threads 1 ";
  expect_refused(plan + "--etp 2", "--etp", "2");
  expect_refused(plan + "--ep 2", "--ep", "2");
  expect_refused(plan + "--ep 1,2", "--ep", "2");
  expect_refused(plan + "--etp 1", "--etp", "1");   // would restrict TP to 1 without saying so
  EXPECT_EQ(run_cli(plan + "--ep 1").status, 0);   // one expert group is every dense layout
}

TEST(DenseExpertOptions, EstimateAndMemoryRefuseEtpEvenWhenItEqualsTp) {
  expect_refused("estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --tp 2 --global-batch 8 --etp 2", "--etp",
                 "2");
  expect_refused("estimate --model llama-3.1-8b --system dgx-h100 --nodes 1 --tp 2 --global-batch 8 --ep 2", "--ep",
                 "2");
  expect_refused("memory --model llama-3.1-8b --tp 2 --etp 2", "--etp", "2");
  expect_refused("memory --model llama-3.1-8b --etp 4", "--etp", "4");
  expect_refused("memory --model llama-3.1-8b --ep 2", "--ep", "2");
  // etp 1 on one GPU changes nothing (torchtitan files write it for dense models too).
  EXPECT_EQ(run_cli("memory --model llama-3.1-8b --etp 1").status, 0);
}

TEST(DenseExpertOptions, MoeModelsKeepThem) {
  EXPECT_EQ(run_cli("memory --model mixtral-8x7b --gpus 8 --tp 2 --ep 4 --etp 1").status, 0);
}
