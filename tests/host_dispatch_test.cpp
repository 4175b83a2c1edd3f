// The host's share of a step: an eager framework dispatches every kernel from the CPU, and a Grace CPU dispatches
// each operation slower than the x86 hosts of DGX systems (NVIDIA/TransformerEngine issue #2053: one
// torch.nn.Linear forward took 37.08 us of CPU time on GB200 and 13.48 us on an H100 DGX, Xeon Platinum 8480C).
#include <gtest/gtest.h>

#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

TEST(HostDispatch, GraceDispatchesAtTheMeasuredRatio) {
  const HardwareCatalog& catalog = HardwareCatalog::builtin();
  const double grace = perf_constants(catalog.gpu("gb200")).host_op_s;
  const double x86 = perf_constants(catalog.gpu("h100-sxm-80gb")).host_op_s;
  EXPECT_NEAR(grace / x86, 37.08 / 13.48, 0.01 * 37.08 / 13.48);
  EXPECT_EQ(perf_constants(catalog.gpu("b200")).host_op_s, x86);
}

double host_bound_s(std::string_view system) {
  // GPT-2 small on one GPU, 512 tokens per microbatch: kernels far shorter than their dispatch.
  EstimateInputs in;
  in.memory.model = model_from_catalog("gpt2");
  in.memory.training.seq_len = 512;
  in.memory.training.micro_batch = 1;
  in.memory.training.global_batch = 8;
  in.memory.layout.gpus = 1;
  in.memory.overheads = default_overheads();
  test::place_on(in, system, 1);
  for (const TimeTerm& t : estimate_step(in).breakdown)
    if (t.name == "host_bound") return t.seconds;
  ADD_FAILURE() << "no host_bound term";
  return 0;
}

TEST(HostDispatch, AGraceHostedGpuWaitsLongerForItsHost) {
  // A B200 behind x86 hosts and a GB200 behind Grace: the wait is the dispatch time less the GPU time. With 2.75x
  // the dispatch time and a GPU no slower, the GB200 waits more than 2.75x as long.
  const double x86 = host_bound_s("dgx-b200");
  const double grace = host_bound_s("gb200-nvl72");
  EXPECT_GT(x86, 0.0);
  EXPECT_GT(grace, x86 * 2.75);
}

}  // namespace
}  // namespace gpuplan
