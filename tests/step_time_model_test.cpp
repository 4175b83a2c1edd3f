// Step-time model: FLOP convention, pipeline bubble, placement, overlap and bad input, against hand derivations
// and published measurements.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/host.hpp"
#include "test_support.hpp"

namespace gpuplan {
namespace {

EstimateInputs gpt(const char* model, std::int64_t gpus, std::int64_t tp, std::int64_t pp, std::int64_t mbs,
                   std::int64_t gbs, int nodes) {
  EstimateInputs in;
  in.memory.model = model_from_catalog(model);
  in.memory.training.seq_len = 2048;
  in.memory.training.micro_batch = mbs;
  in.memory.training.global_batch = gbs;
  in.memory.training.precision = Precision::fp16;
  in.memory.layout.gpus = gpus;
  in.memory.layout.tp = tp;
  in.memory.layout.pp = pp;
  in.memory.layout.recompute = Recompute::full;
  in.memory.layout.attention = Attention::eager;
  in.memory.overheads = default_overheads();
  const Cluster c = make_cluster("dgx-a100", nodes);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(c);
  return in;
}

TEST(StepTime, ModelFlopsFollowNarayananFormula) {
  // Narayanan et al. SC'21 eq. (without recompute): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) per iteration.
  const EstimateInputs in = gpt("megatron-gpt-1.7b", 32, 1, 1, 16, 512, 4);
  const StepEstimate e = estimate_step(in);
  const double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  const double flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(e.model_tflops_per_gpu * 1e12 * e.step_s * 32, flops, flops * 1e-9);
  // With full recomputation the hardware count is eq. (96 ...): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
  const double hw = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(e.hardware_tflops_per_gpu * 1e12 * e.step_s * 32, hw, hw * 1e-9);
  EXPECT_NEAR(e.mfu, e.model_tflops_per_gpu / 312.0, 1e-12);  // A100 dense fp16 peak 312 TFLOP/s
  double sum = 0;
  for (const auto& [name, t] : e.breakdown) sum += t;
  EXPECT_NEAR(sum, e.step_s, 1e-12);
}

TEST(StepTime, NarayananTable1WithinFifteenPercent) {
  // Published achieved TFLOP/s per GPU (with recompute), SC'21 Table 1; settings of examples/sc21/run_table_1.sh.
  struct Case { const char* model; int gpus, tp, pp, mbs, gbs; bool torch_ddp; double tflops; };
  const Case cases[] = {{"megatron-gpt-1.7b", 32, 1, 1, 16, 512, true, 137},
                        {"megatron-gpt-18b", 256, 8, 1, 8, 1024, true, 135},
                        {"megatron-gpt-39b", 512, 8, 2, 4, 1536, false, 138}};
  for (const auto& c : cases) {
    EstimateInputs in = gpt(c.model, c.gpus, c.tp, c.pp, c.mbs, c.gbs, c.gpus / 8);
    in.memory.training.dropout = 0.1;
    in.time.dp_overlap = c.torch_ddp;
    const double pred = estimate_step(in).hardware_tflops_per_gpu;
    EXPECT_NEAR(pred, c.tflops, 0.15 * c.tflops) << c.model;
  }
}

TEST(StepTime, KorthikantiTable5WithinTenPercent) {
  // Korthikanti et al. 2022 (arXiv 2205.05198), Tables 3 and 5: end-to-end iteration time in seconds on A100 80GB
  // (Selene), TP 8, seq 2048, vocab 51200, no data parallelism; interleaved with 3 chunks for 175B and 530B.
  struct Case { int h, layers, heads, gpus, pp, vpp, mbs, gbs; bool selective; double seconds; };
  const Case cases[] = {{6144, 48, 64, 8, 1, 1, 4, 4, false, 1.42},       {12288, 96, 96, 64, 8, 3, 1, 64, false, 18.13},
                        {25600, 128, 160, 512, 64, 1, 1, 512, false, 94.42}, {6144, 48, 64, 8, 1, 1, 4, 4, true, 1.10},
                        {12288, 96, 96, 64, 8, 3, 1, 64, true, 13.75},        {20480, 105, 128, 280, 35, 3, 1, 280, true, 37.83}};
  for (const auto& c : cases) {
    EstimateInputs in = gpt("megatron-gpt-1t", c.gpus, 8, c.pp, c.mbs, c.gbs, (c.gpus + 7) / 8);
    ModelConfig& m = *in.memory.model;
    m.hidden = c.h; m.layers = c.layers; m.heads = c.heads; m.kv_heads = c.heads; m.head_dim = 0; m.ffn_hidden = 4LL * c.h;
    m.vocab = 51200;
    in.memory.training.dropout = 0.1;
    in.memory.layout.vpp = c.vpp;
    in.memory.layout.schedule = c.vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
    in.memory.layout.recompute = c.selective ? Recompute::selective : Recompute::full;
    in.memory.layout.sequence_parallel = c.selective;
    in.time.dp_overlap = false;
    EXPECT_NEAR(estimate_step(in).step_s, c.seconds, 0.10 * c.seconds) << c.h << (c.selective ? " selective" : " full");
  }
}

TEST(StepTime, DgxCloudH100WithinTenPercent) {
  // NVIDIA DGX Cloud Benchmarking recipes (GSW 25.02, NeMo 24.12), H100 SXM BF16, step time in seconds
  // (validation/data/dgxc-h100-bf16.csv): sequence parallelism, distributed optimizer, no recomputation, TP overlap.
  struct Case { const char* model; int gpus, seq, gbs, tp, pp, cp, vpp; double seconds; };
  const Case cases[] = {{"gpt3-175b", 128, 2048, 256, 4, 8, 1, 12, 8.309},
                        {"llama-3.1-8b", 8, 8192, 128, 1, 1, 2, 1, 12.78},
                        {"llama-3.1-70b", 64, 8192, 128, 4, 4, 2, 5, 14.61},
                        {"llama-3.1-405b", 576, 8192, 252, 8, 9, 2, 7, 17.50}};
  for (const auto& c : cases) {
    EstimateInputs in;
    in.memory.model = model_from_catalog(c.model);
    in.memory.training.seq_len = c.seq;
    in.memory.training.global_batch = c.gbs;
    in.memory.layout = Layout{};
    in.memory.layout.gpus = c.gpus;
    in.memory.layout.tp = c.tp;
    in.memory.layout.pp = c.pp;
    in.memory.layout.cp = c.cp;
    in.memory.layout.vpp = c.vpp;
    in.memory.layout.schedule = c.vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
    in.memory.layout.sequence_parallel = c.tp > 1;
    in.memory.layout.zero = 1;
    in.memory.overheads = default_overheads();
    const Cluster cl = make_cluster("dgx-h100", c.gpus / 8);
    in.gpu = cl.gpu;
    in.memory.capacity_bytes = cl.gpu.usable_memory_bytes;
    in.fabric = fabric_from_cluster(cl);
    in.time.tp_overlap = true;
    EXPECT_NEAR(estimate_step(in).step_s, c.seconds, 0.10 * c.seconds) << c.model;
  }
}

TEST(StepTime, FlashAttentionByKeysPerCall) {
  // Selective recomputation re-runs exactly the attention core, so the `recompute` term of one microbatch is
  // layers x (t + calls x kernel overhead), t = causal FLOPs / (peak x efficiency x L / (L + half length)).
  // Without context parallelism one call sees all 4096 keys; with cp = 2 each rank runs 2 ring steps on
  // Megatron's load-balanced chunks of 4096 / (2 x 2) = 1024 keys, for its 2048 queries.
  auto recompute_s = [](std::int64_t cp) {
    EstimateInputs in;
    in.memory.model = model_from_catalog("llama-3.1-8b");
    in.memory.training.seq_len = 4096;
    in.memory.training.global_batch = 1;
    in.memory.layout.gpus = cp;
    in.memory.layout.cp = cp;
    in.memory.layout.recompute = Recompute::selective;
    in.memory.overheads = default_overheads();
    const Cluster cl = make_cluster("dgx-h100", 1);
    in.gpu = cl.gpu;
    in.memory.capacity_bytes = cl.gpu.usable_memory_bytes;
    in.fabric = fabric_from_cluster(cl);
    for (const auto& t : estimate_step(in).breakdown)
      if (t.name == "recompute") return t.seconds;
    return -1.0;
  };
  const PerfConstants c = perf_constants(make_cluster("dgx-h100", 1).gpu);
  const double peak = 989.4e12;  // H100 SXM dense bf16 (catalog)
  auto core = [&](double queries, double keys_per_call, double calls) {
    const double flops = 2 * queries * 4096 * 32 * (128 + 128) * 0.5;  // 32 heads of 128, causal half
    const double efficiency = c.flash_attention_efficiency * keys_per_call / (keys_per_call + c.flash_attention_half_length);
    return flops / (peak * efficiency) + calls * c.kernel_overhead_s;
  };
  EXPECT_NEAR(recompute_s(1), 32 * core(4096, 4096, 1), 1e-9);
  // With cp = 2 the recomputed forward also merges the ring's partial outputs (perf/cp_bookkeeping.hpp): K and V
  // (2048 tokens x 8 heads x 128 x 2 each) packed into the send buffer, the output (2048 x 32 x 128 x 2) copied
  // once and merged once, in 4 kernels at memory_bound_efficiency of the H100's 3350 GB/s.
  const double kv = 2 * 2048.0 * 8 * 128 * 2, out = 2048.0 * 32 * 128 * 2;
  const double merges = (2 * kv + 2 * out + 3 * out) / (3350e9 * c.memory_bound_efficiency) + 4 * c.kernel_overhead_s;
  EXPECT_NEAR(recompute_s(2), 32 * (core(2048, 1024, 2) + merges), 1e-9);
}

TEST(StepTime, WeightGradientsAccumulateIntoTheMainGradient) {
  // Megatron-LM's gradient-accumulation fusion: each weight-gradient GEMM reads and writes the fp32 main gradient.
  // Half-precision gradients halve that traffic: the backward pass gets cheaper, the forward pass does not change.
  EstimateInputs fp32 = gpt("megatron-gpt-1.7b", 8, 1, 1, 1, 8, 1);
  EstimateInputs bf16 = fp32;
  bf16.memory.training.grad_dtype = DType::bf16;
  const StepEstimate a = estimate_step(fp32), b = estimate_step(bf16);
  EXPECT_EQ(test::step_term(a, "forward"), test::step_term(b, "forward"));
  EXPECT_GT(test::step_term(a, "backward"), test::step_term(b, "backward"));
}

TEST(StepTime, OptimizerZeroesEveryGradientTheRankHolds) {
  // Per parameter of the optimizer shard: Adam reads grad, master, m, v (16 B) and writes master, m, v (12 B), the
  // copy into the 16-bit weight reads the master and writes the weight (6 B), the norm reads the grad (4 B): 38 B.
  // Zeroing the fp32 gradients writes 4 B for every gradient the rank holds: all of them below ZeRO-2 (Megatron-LM's
  // zero_grad_buffer), the shard from ZeRO-2 on. With P local parameters over dp = 4, the kernel overheads cancel in
  // the differences:  ZeRO-0 - ZeRO-2 = (38 + 4) x 3P/4 bytes,  ZeRO-1 - ZeRO-2 = 4 x 3P/4 bytes.
  // Megatron-LM's NaN check (on by default) reads the same gradients once more before they are reduced
  // (param_and_grad_buffer.py check_grads: the norm of each bucket): 4 B more where the zeroing writes 4, so
  // ZeRO-0 - ZeRO-2 = (38 + 8) x 3P/4 and ZeRO-1 - ZeRO-2 = 8 x 3P/4. DeepSpeed's engine has no such check.
  // These runs are fp16: before the step the loss scaler unscales the shard's fp32 gradients, a read and a write
  // (8 B, Megatron's _unscale_main_grads_and_check_for_nan, DeepSpeed's unscale_and_clip_grads), which adds
  // 8 x 3P/4 to ZeRO-0 - ZeRO-2 and nothing to ZeRO-1 - ZeRO-2.
  auto optimizer_s = [](int zero, bool check, Framework framework) {
    EstimateInputs in = gpt("megatron-gpt-1.7b", 4, 1, 1, 1, 4, 1);
    in.memory.layout.zero = zero;
    in.memory.layout.framework = framework;
    in.memory.training.grad_nan_check = check;
    in.memory.training.grad_dtype = DType::fp32;   // DeepSpeed's too, so that the frameworks differ by the check
    for (const auto& t : estimate_step(in).breakdown)
      if (t.name == "optimizer") return t.seconds;
    return -1.0;
  };
  auto ratio = [&](bool check, Framework framework) {
    const double zero0 = optimizer_s(0, check, framework), zero1 = optimizer_s(1, check, framework),
                 zero2 = optimizer_s(2, check, framework);
    EXPECT_GT(zero2, 0);
    return (zero1 - zero2) / (zero0 - zero2);
  };
  EXPECT_NEAR(ratio(false, Framework::megatron), 4.0 / 50.0, 1e-9);
  EXPECT_NEAR(ratio(true, Framework::megatron), 8.0 / 54.0, 1e-9);
  EXPECT_NEAR(ratio(true, Framework::deepspeed), 4.0 / 50.0, 1e-9);
  // The check alone, at ZeRO-1: one more read of the 3P/4 + P/4 = P fp32 gradients held, and its kernel.
  EstimateInputs in = gpt("megatron-gpt-1.7b", 4, 1, 1, 1, 4, 1);
  const double local = static_cast<double>(count_params(*in.memory.model).total);
  const PerfConstants c = perf_constants(in.gpu);
  const double read_s = 4 * local / (in.gpu.memory_GBps * 1e9 * c.memory_bound_efficiency) + c.kernel_overhead_s;
  EXPECT_NEAR(optimizer_s(1, true, Framework::megatron) - optimizer_s(1, false, Framework::megatron), read_s,
              1e-9 * read_s);
}

// Megatron-LM's optimizer steps on fp32 gradients: with a bf16 gradient buffer (--no-accumulate-allreduce-grads-
// in-fp32, NeMo's grad_reduce_in_fp32 false) it first casts the shard's gradients into fp32 copies
// (_copy_model_grads_to_main_grads: main_grad.float()), reading 2 B and writing 4 B per parameter in one more
// kernel; with an fp32 buffer .float() is the buffer itself. Zeroing and the NaN check then touch 2 B instead of 4
// of every gradient held. At ZeRO-1 over dp = 4 (shard P/4, all P held), bf16 training without loss scaling:
//   bf16 buffer - fp32 buffer = 6 x P/4 - (4 + 4 - 2 - 2) x P bytes, plus one kernel.
TEST(StepTime, MegatronCastsSixteenBitGradientsToFp32BeforeTheStep) {
  auto optimizer_s = [](DType grads) {
    EstimateInputs in = gpt("megatron-gpt-1.7b", 4, 1, 1, 1, 4, 1);
    in.memory.training.precision = Precision::bf16;
    in.memory.training.grad_dtype = grads;
    in.memory.layout.zero = 1;
    return test::step_term(estimate_step(in), "optimizer");
  };
  EstimateInputs in = gpt("megatron-gpt-1.7b", 4, 1, 1, 1, 4, 1);
  const double local = static_cast<double>(count_params(*in.memory.model).total);
  const PerfConstants c = perf_constants(in.gpu);
  const double hbm_Bps = in.gpu.memory_GBps * 1e9 * c.memory_bound_efficiency;
  const double expected = (6 * local / 4 - 4 * local) / hbm_Bps + c.kernel_overhead_s;
  EXPECT_NEAR(optimizer_s(DType::bf16) - optimizer_s(DType::fp32), expected, 1e-9 * std::abs(expected));
}

TEST(StepTime, OverlappedCommunicationIsNotFree) {
  // TP inside one node with --tp-overlap: the hidden part still slows the GEMMs by overlap_slowdown of its time.
  EstimateInputs in = gpt("megatron-gpt-7.5b", 8, 8, 1, 4, 8, 1);
  const double exposed = test::step_term(estimate_step(in), "tp_comm");
  in.time.tp_overlap = true;
  const double hidden = test::step_term(estimate_step(in), "tp_comm");
  EXPECT_GT(exposed, 0);
  EXPECT_LT(hidden, exposed);
  EXPECT_GE(hidden, perf_constants(in.gpu).overlap_slowdown * exposed * (1 - 1e-9));
  // ZeRO-3 over 4 nodes (one rank per node): each microbatch gathers the 2-byte weights forward and backward; the
  // first layer's gather of each pass waits, the rest slows the compute it hides behind, or is exposed.
  EstimateInputs z = gpt("megatron-gpt-7.5b", 32, 8, 1, 1, 4, 4);
  z.memory.layout.zero = 3;
  z.memory.layout.recompute = Recompute::none;
  const StepEstimate e = estimate_step(z);
  const RankPlacement pl = place_ranks(resolve_layout(z.memory), 8, parse_order("tp-cp-ep-dp-pp"));
  const double weights = static_cast<double>(count_params(*z.memory.model).total) / 8 * 2;  // per TP rank, fp16
  const double ag = collective_time_s(z.fabric, Collective::allgather, weights, pl.dp);
  const double layers = static_cast<double>(z.memory.model->layers);
  EXPECT_GE(test::step_term(e, "zero3_comm"), (2 * ag / layers + perf_constants(z.gpu).overlap_slowdown * 2 * ag * (1 - 1 / layers)) * 0.999);
}

TEST(StepTime, ZeroThreeWaitsForItsLastReduceScatter) {
  // ZeRO-3 over the 8 GPUs of one node, one microbatch of 8 sequences, so that the compute can hide the collectives:
  // besides the first layer's gather in each pass, the reduce-scatter of the layer whose gradients come last (FSDP's
  // last unit) runs after the backward with nothing to hide behind. The rest of the gathers and reduce-scatters
  // hides behind the forward and the backward, slowing them by overlap_slowdown of its time.
  EstimateInputs z = gpt("megatron-gpt-1.7b", 8, 1, 1, 8, 64, 1);
  z.memory.layout.zero = 3;
  z.memory.layout.recompute = Recompute::none;
  const StepEstimate e = estimate_step(z);
  const RankPlacement pl = place_ranks(resolve_layout(z.memory), 8, parse_order("tp-cp-ep-dp-pp"));
  const double params = static_cast<double>(count_params(*z.memory.model).total);
  // Each collective on the wire, plus the framework's cost of one call (collective_call_s).
  const PerfConstants pc = perf_constants(z.gpu);
  const double ag = collective_time_s(z.fabric, Collective::allgather, params * 2, pl.dp) + pc.collective_call_s;
  const double rs = collective_time_s(z.fabric, Collective::reducescatter, params * 4, pl.dp) + pc.collective_call_s;
  const double layers = static_cast<double>(z.memory.model->layers);
  const double slowdown = pc.overlap_slowdown;
  ASSERT_LT(ag + rs, test::step_term(e, "forward"));   // all of it could hide
  const double expected =
      2 * ag / layers + rs / layers + slowdown * (2 * (ag - ag / layers) + rs - rs / layers);
  EXPECT_NEAR(test::step_term(e, "zero3_comm"), expected, 1e-6 * expected);
}

TEST(StepTime, OneF1BBubbleIsPMinusOneOverM) {
  // Uniform stages, no communication: bubble / (m x per-microbatch compute) = (p - 1) / m; interleaved: / v.
  EstimateInputs in = gpt("megatron-gpt-39b", 4, 1, 4, 1, 8, 1);
  in.memory.model->vocab = 128;  // embedding and head negligible: stages uniform
  in.memory.model->layers = 48;
  const StepEstimate e = estimate_step(in);
  const double work = test::step_term(e, "forward") + test::step_term(e, "backward") + test::step_term(e, "recompute");
  EXPECT_NEAR(test::step_term(e, "pipeline_bubble") / work, 3.0 / 8.0, 0.01);
  in.memory.layout.schedule = PpSchedule::interleaved;
  in.memory.layout.vpp = 3;
  const StepEstimate ei = estimate_step(in);
  EXPECT_NEAR(test::step_term(ei, "pipeline_bubble") / work, 3.0 / (3.0 * 8.0), 0.01);
}

TEST(StepTime, OverlapOnlyRemovesTime) {
  EstimateInputs in = gpt("megatron-gpt-7.5b", 32, 4, 1, 4, 64, 4);
  in.time.dp_overlap = false;
  const double base = estimate_step(in).step_s;
  in.time.dp_overlap = true;
  const double dp = estimate_step(in).step_s;
  in.time.tp_overlap = true;
  const double both = estimate_step(in).step_s;
  EXPECT_LT(dp, base);
  EXPECT_LT(both, dp);
}

// Megatron-Core sizes its gradient buckets max(40 M, 1 M x dp) elements (DistributedDataParallelConfig.bucket_size).
// GPT 7.5B at tp 8 holds under 1 B gradient elements per GPU (7.5 B / 8), so at dp 1,024 one bucket of 1,024 M
// holds them all: the reduction starts only when the backward pass ends, and overlapping hides none of it.
TEST(StepTime, GradientBucketsGrowWithTheDataParallelGroup) {
  auto dp_comm = [](const EstimateInputs& in) {
    for (const auto& [name, t] : estimate_step(in).breakdown)
      if (name == "dp_comm") return t;
    return -1.0;
  };
  EstimateInputs in = gpt("megatron-gpt-7.5b", 8192, 8, 1, 1, 4096, 1024);
  in.memory.layout.recompute = Recompute::none;
  in.time.dp_overlap = false;
  const double waited = dp_comm(in);
  in.time.dp_overlap = true;
  EXPECT_GT(waited, 0);
  EXPECT_NEAR(dp_comm(in), waited, 1e-9 * waited);
  // At dp 8 (40 M-element buckets, 24 of them) overlapping hides part of it behind the backward pass.
  EstimateInputs small = gpt("megatron-gpt-7.5b", 64, 8, 1, 1, 32, 8);
  small.memory.layout.recompute = Recompute::none;
  small.time.dp_overlap = false;
  const double small_waited = dp_comm(small);
  small.time.dp_overlap = true;
  EXPECT_LT(dp_comm(small), 0.9 * small_waited);
}

TEST(StepTime, RankPlacementFromOrder) {
  Layout l;
  l.tp = 8;
  l.pp = 2;
  l.dp = 4;
  l.cp = 1;
  l.ep = 1;
  // Megatron order on 8-GPU nodes: each TP group fills a node; DP peers are 8 ranks apart (one per node).
  RankPlacement r = place_ranks(l, 8, parse_order("tp-cp-ep-dp-pp"));
  EXPECT_EQ(r.tp.ranks, 8);
  EXPECT_EQ(r.tp.ranks_per_node, 8);
  EXPECT_EQ(r.dp.ranks, 4);
  EXPECT_EQ(r.dp.ranks_per_node, 1);
  EXPECT_EQ(r.dp.concurrent_groups_per_node, 8);
  EXPECT_EQ(r.pp.ranks_per_node, 1);
  // DP innermost: the 4 DP peers share a node, TP spans 4 nodes with 2 ranks on each.
  r = place_ranks(l, 8, parse_order("dp,tp,cp,ep,pp"));
  EXPECT_EQ(r.dp.ranks_per_node, 4);
  EXPECT_EQ(r.tp.ranks_per_node, 2);
  EXPECT_EQ(r.tp.concurrent_groups_per_node, 4);
}

TEST(StepTime, ExpertGroupsRepartitionContextAndDataRanks) {
  // Megatron-Core's expert rank generator: expert-TP innermost, then EP, then expert-DP, over the context x data
  // ranks of a stage. 8-GPU nodes, order tp-cp-ep-dp-pp.
  Layout l;
  l.pp = 2;
  l.tp = 1;
  l.cp = 8;
  l.dp = 1;
  l.ep = 8;
  // EP over the 8 context-parallel ranks of one node; nothing left for expert-DP.
  RankPlacement r = place_ranks(l, 8, parse_order("tp-cp-ep-dp-pp"));
  EXPECT_EQ(r.ep.ranks, 8);
  EXPECT_EQ(r.ep.ranks_per_node, 8);
  EXPECT_EQ(r.edp.ranks, 1);
  // TP 2 inside the node: EP 4 takes ranks 2 apart (4 per node, 2 such groups), expert-DP 2 is 8 apart.
  l.tp = 2;
  l.cp = 1;
  l.dp = 8;
  l.ep = 4;
  r = place_ranks(l, 8, parse_order("tp-cp-ep-dp-pp"));
  EXPECT_EQ(r.ep.ranks, 4);
  EXPECT_EQ(r.ep.ranks_per_node, 4);
  EXPECT_EQ(r.ep.concurrent_groups_per_node, 2);
  EXPECT_EQ(r.edp.ranks, 2);
  EXPECT_EQ(r.edp.ranks_per_node, 1);
  // TP 8 fills the node: EP peers are on different nodes.
  l.tp = 8;
  l.dp = 4;
  r = place_ranks(l, 8, parse_order("tp-cp-ep-dp-pp"));
  EXPECT_EQ(r.ep.ranks, 4);
  EXPECT_EQ(r.ep.ranks_per_node, 1);
  EXPECT_EQ(r.ep.concurrent_groups_per_node, 8);
}

TEST(StepTime, BadInputIsInputError) {
  EXPECT_THROW(parse_order("tp-cp-dp-pp"), InputError);
  EXPECT_THROW(parse_order("tp-cp-ep-dp-pp-tp"), InputError);
  EXPECT_THROW(parse_order("tp-tp-ep-dp-pp"), InputError);
  EXPECT_THROW(parse_order("tp-xp-ep-dp-pp"), InputError);
  EstimateInputs in = gpt("megatron-gpt-1.7b", 32, 1, 1, 16, 512, 2);  // 32 ranks on 2 nodes of 8
  EXPECT_THROW(estimate_step(in), InputError);
  EXPECT_THROW(make_cluster("dgx-a1000", 1), InputError);
  in = gpt("megatron-gpt-1.7b", 8, 1, 1, 1, 8, 1);
  in.time.order = "pp";
  EXPECT_THROW(estimate_step(in), InputError);
}

TEST(StepTime, MeasuredSingleNodeRanking) {
  // vTrain ground truth (tests/data/measured): layouts of one model, GPU count and batch must mostly rank right.
  std::ifstream f(std::string(GPUPLAN_TEST_DATA_DIR) + "/measured/a100-megatron-single-node-steps.csv");
  ASSERT_TRUE(f.good());
  const Cluster node = make_cluster("dgx-a100", 1);
  const Fabric fabric = fabric_from_cluster(node);
  struct R { int key; double ms, pred; };
  std::vector<R> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (line.find('#') != std::string::npos) continue;
    int g, gbs, mbs, h, a, l, s, tp, dp, pp;
    double ms;
    char c;
    std::istringstream in(line);
    in >> g >> c >> gbs >> c >> mbs >> c >> h >> c >> a >> c >> l >> c >> s >> c >> tp >> c >> dp >> c >> pp >> c >> ms;
    if (h != 2048 || l != 24) continue;  // one model keeps the test fast
    EstimateInputs e;
    ModelConfig m = model_from_catalog("gpt2");
    m.layers = l; m.hidden = h; m.heads = a; m.kv_heads = a; m.head_dim = 0; m.ffn_hidden = 4 * h;
    m.vocab = (50257 + 128 * tp - 1) / (128 * tp) * (128 * tp);  // GPT-2 vocabulary padded to 128 x tp
    e.memory.model = m;
    e.memory.training.seq_len = s; e.memory.training.micro_batch = mbs; e.memory.training.global_batch = gbs;
    e.memory.training.precision = Precision::fp16; e.memory.training.dropout = 0.1;
    e.memory.layout.tp = tp; e.memory.layout.pp = pp; e.memory.layout.dp = dp;
    e.memory.layout.recompute = Recompute::full; e.memory.layout.attention = Attention::eager;
    e.memory.overheads = default_overheads();
    e.memory.capacity_bytes = node.gpu.usable_memory_bytes;
    e.gpu = node.gpu; e.fabric = fabric; e.time.dp_overlap = false;
    rows.push_back({g * 100000 + gbs, ms, estimate_step(e).step_s * 1e3});
  }
  ASSERT_EQ(rows.size(), 180u);
  long pairs = 0, right = 0;
  double ape = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ape += std::abs(rows[i].pred - rows[i].ms) / rows[i].ms;
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      if (rows[i].key != rows[j].key || std::abs(rows[i].ms - rows[j].ms) < 0.1 * std::min(rows[i].ms, rows[j].ms)) continue;
      ++pairs;
      right += (rows[i].ms < rows[j].ms) == (rows[i].pred < rows[j].pred);
    }
  }
  EXPECT_GT(static_cast<double>(right) / static_cast<double>(pairs), 0.75);
  EXPECT_LT(ape / static_cast<double>(rows.size()), 0.35);  // published constants; see validation/time_report.md
}

TEST(StepTime, MeasuredSingleNodeWithCalibration) {
  // All 1,440 vTrain measurements with the calibration of validation/data (perf constants fitted on these steps,
  // comm fitted on the same testbed's nccl-tests tables): within 10% on average, layouts mostly in order.
  const std::string dir = std::string(GPUPLAN_TEST_DATA_DIR) + "/../../validation/data/";
  const Cluster node = make_cluster("dgx-a100", 1);
  Fabric fabric = fabric_from_cluster(node);
  apply_comm_overrides(fabric, read_text_file(dir + "a100-vtrain-comm-calibration.json", "comm"), "comm calibration");
  const PerfConstants perf =
      perf_constants(node.gpu, {{"calibration", read_text_file(dir + "a100-megatron-calibration.json", "perf")}});
  std::ifstream f(std::string(GPUPLAN_TEST_DATA_DIR) + "/measured/a100-megatron-single-node-steps.csv");
  ASSERT_TRUE(f.good());
  struct R { int key; double ms, pred; };
  std::vector<R> rows;
  std::string line;
  while (std::getline(f, line)) {
    if (line.find('#') != std::string::npos) continue;
    int g, gbs, mbs, h, a, l, s, tp, dp, pp;
    double ms;
    char c;
    std::istringstream in(line);
    in >> g >> c >> gbs >> c >> mbs >> c >> h >> c >> a >> c >> l >> c >> s >> c >> tp >> c >> dp >> c >> pp >> c >> ms;
    EstimateInputs e;
    ModelConfig m = model_from_catalog("gpt2");
    m.layers = l; m.hidden = h; m.heads = a; m.kv_heads = a; m.head_dim = 0; m.ffn_hidden = 4 * h;
    m.vocab = (50257 + 128 * tp - 1) / (128 * tp) * (128 * tp);
    e.memory.model = m;
    e.memory.training.seq_len = s; e.memory.training.micro_batch = mbs; e.memory.training.global_batch = gbs;
    e.memory.training.precision = Precision::fp16; e.memory.training.dropout = 0.1;
    e.memory.layout.tp = tp; e.memory.layout.pp = pp; e.memory.layout.dp = dp;
    e.memory.layout.recompute = Recompute::full; e.memory.layout.attention = Attention::eager;
    e.memory.overheads = default_overheads();
    e.memory.capacity_bytes = node.gpu.usable_memory_bytes;
    e.gpu = node.gpu; e.fabric = fabric; e.time.dp_overlap = false; e.perf = perf;
    rows.push_back({(g * 1000 + gbs) * 10000 + h + l, ms, estimate_step(e).step_s * 1e3});
  }
  ASSERT_EQ(rows.size(), 1440u);
  long pairs = 0, right = 0;
  double ape = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ape += std::abs(rows[i].pred - rows[i].ms) / rows[i].ms;
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      if (rows[i].key != rows[j].key || std::abs(rows[i].ms - rows[j].ms) < 0.1 * std::min(rows[i].ms, rows[j].ms)) continue;
      ++pairs;
      right += (rows[i].ms < rows[j].ms) == (rows[i].pred < rows[j].pred);
    }
  }
  EXPECT_LT(ape / static_cast<double>(rows.size()), 0.10);
  EXPECT_GT(static_cast<double>(right) / static_cast<double>(pairs), 0.93);
}

}  // namespace
}  // namespace gpuplan
