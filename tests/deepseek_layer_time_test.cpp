// Pieces of a DeepSeek-V2 layer as Megatron-LM runs them: multi-head latent attention
// (megatron/core/transformer/multi_latent_attention.py), four projection GEMMs of their own shapes, not one qkv GEMM,
// and the assembly of contiguous query, key and value; its TP collectives; and the all-to-all dispatcher's sort of
// the received tokens by local expert (moe/token_dispatcher.py). Checked on one B200 against the measured GEMM table
// (data/gemm/b200-bf16.json, whose shapes SimuMax measured for these models) and hand counts of the bytes.
#include <gtest/gtest.h>

#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "perf/layer_comm.hpp"
#include "perf/layer_cost.hpp"

namespace gpuplan {
namespace {

// DeepSeek-V2's attention (Hugging Face config): hidden 5120, 128 heads, q_lora_rank 1536, kv_lora_rank 512,
// qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.
ModelConfig deepseek_v2_attention() {
  ModelConfig m;
  m.hidden = 5120;
  m.heads = 128;
  m.kv_heads = 128;
  m.positions = PositionKind::rotary;
  m.mla = {true, 1536, 512, 128, 64, 128};
  return m;
}

TEST(MlaProjectionTime, FourGemmsOfTheirOwnShapesAndTheAssembly) {
  const PerfConstants pc = perf_constants(HardwareCatalog::builtin().gpu("b200"));
  const perf::Machine mc{2250e12, 8000e9, &pc};
  perf::MicrobatchShape s;
  s.tokens = 4096;
  s.hidden = 5120;
  const perf::Cost c = perf::attention_projections(mc, deepseek_v2_attention(), s);
  // Forward efficiencies of the measured shapes (rows, outputs, inputs): q down 4096 x 1536 x 5120 at 0.4138, q up
  // 4096 x (128 x 192) x 1536 at 0.6328, kv down 4096 x (512 + 64) x 5120 at 0.3215, kv up 4096 x (128 x 256) x 512
  // at 0.3188; each kernel plus kernel_overhead_s.
  auto gemm = [&](double n, double k, double efficiency) {
    return 2.0 * 4096 * n * k / (2250e12 * efficiency) + pc.kernel_overhead_s;
  };
  const double gemms = gemm(1536, 5120, 0.4138) + gemm(24576, 1536, 0.6328) + gemm(576, 5120, 0.3215) +
                       gemm(32768, 512, 0.3188);
  // Bytes (bf16): the two latent norms read and write 4096 x (1536 + 512); the assembly reads q (192 per head) and
  // kv (128 + 128 per head) and writes query (192), key (192) and value (128) for 128 heads. Four kernels.
  const double bytes = 2.0 * 2 * 4096 * (1536 + 512) + 2.0 * 4096 * 128 * (192 + 256 + 192 + 192 + 128);
  const double assembly = bytes / (8000e9 * pc.memory_bound_efficiency) + 4 * pc.kernel_overhead_s;
  EXPECT_NEAR(c.forward_s, gemms + assembly, 1e-4 * (gemms + assembly));
  // Under tensor parallelism with sequence parallelism the up projections split over the heads, the duplicated
  // down projections see the rank's share of the sequence: less of every piece, and no piece is free.
  s.tp = 8;
  s.sequence_parallel = true;
  const perf::Cost split = perf::attention_projections(mc, deepseek_v2_attention(), s);
  EXPECT_LT(split.forward_s, c.forward_s / 4);
  EXPECT_GT(split.forward_s, 0.0);
}

TEST(MlaProjectionTime, TensorParallelCollectivesCarryTheLatents) {
  // With sequence parallelism the up projections all-gather the q latent (1536), the kv latent (512) and the shared
  // rotary key (64) of every token, not the 5120-wide activation the MLP's fc1 gathers; their input gradients are
  // reduce-scattered back. Priced here by bytes alone, to count what each collective carries.
  Layout l;
  l.tp = 8;
  l.sequence_parallel = true;
  perf::MicrobatchShape s;
  s.tokens = 4096;
  s.hidden = 5120;
  s.tp = 8;
  s.sequence_parallel = true;
  const auto bytes = [](Collective, double size, const GroupPlacement&) { return size; };
  const perf::LayerComm c = perf::layer_comm(deepseek_v2_attention(), l, s, RankPlacement{}, bytes);
  const double activation = 4096.0 * 5120 * 2, latents = 4096.0 * (1536 + 512 + 64) * 2;
  // Forward: the attention's and fc1's all-gathers, the out projection's and fc2's reduce-scatters.
  EXPECT_DOUBLE_EQ(c.tp_forward_s, latents + 3 * activation);
  // Backward, waited for: the row-parallel output gradients gathered; beside the GEMMs: the column-parallel inputs
  // gathered again and their gradients reduce-scattered.
  EXPECT_DOUBLE_EQ(c.tp_backward_s, 2 * activation);
  EXPECT_DOUBLE_EQ(c.tp_backward_async_s, 2 * latents + 2 * activation);
}

TEST(MoeDispatcherTime, SortsByLocalExpertOnlyWhenARankHoldsSeveral) {
  // DeepSeek-V2 on 8 expert-parallel ranks: 160 experts, 20 on each rank, 4096 tokens routed to 6 experts of 5120
  // channels (bf16). The received copies are sorted by local expert and unsorted again: two reads and two writes
  // of 4096 x 6 x 5120 x 2 B, in two kernels, each way.
  const PerfConstants pc = perf_constants(HardwareCatalog::builtin().gpu("b200"));
  const perf::Machine mc{2250e12, 8000e9, &pc};
  const double routed = 4096.0 * 6 * 5120 * 2;
  const perf::Cost sorts = perf::dispatcher_sorts(mc, routed, 8, 20);
  const double expected = 4 * routed / (8000e9 * pc.memory_bound_efficiency) + 2 * pc.kernel_overhead_s;
  EXPECT_NEAR(sorts.forward_s, expected, 1e-9 * expected);
  EXPECT_NEAR(sorts.backward_s, expected, 1e-9 * expected);
  // One expert per rank, or no expert parallelism: nothing to sort.
  EXPECT_EQ(perf::dispatcher_sorts(mc, routed, 160, 1).forward_s, 0.0);
  EXPECT_EQ(perf::dispatcher_sorts(mc, routed, 1, 160).forward_s, 0.0);
}

TEST(MoeRouterTime, UnfusedRoutingLaunchesItsSmallKernels) {
  // DeepSeek-V2's router on one rank: 4096 tokens over 160 experts, tokens dropped beyond capacity. Counted in
  // Megatron-LM's moe_utils.py (topk_routing_with_score_function, apply_router_token_dropping) and router.py
  // (TopKRouter.aux_loss_load_balancing), as PyTorch launches them:
  //   forward: topk 1; softmax + type_as 2; zeros_like + scatter (copy, scatter) 3; the map: zeros_like, int,
  //   scatter (copy, scatter), bool 5; the loss's scores: softmax, topk, zeros_like, int, scatter (2), bool 7; two
  //   sums over the tokens 2; capacity: topk over the tokens, zeros_like, scatter (2), bool, the masked product 6 = 26
  //   backward: the masked product, the scatter's gather, the cast, the softmax, the topk's zeros and scatter = 6.
  // Each moves a read and a write of the fp32 4096 x 160 scores.
  const PerfConstants pc = perf_constants(HardwareCatalog::builtin().gpu("b200"));
  const perf::Machine mc{2250e12, 8000e9, &pc};
  const double pass = 2 * 4 * 4096.0 * 160;
  auto kernels = [&](double n) { return n * pass / (8000e9 * pc.memory_bound_efficiency) + n * pc.kernel_overhead_s; };
  const perf::Cost dropping = perf::router_ops(mc, 4096, 160, true);
  EXPECT_NEAR(dropping.forward_s, kernels(26), 1e-9 * kernels(26));
  EXPECT_NEAR(dropping.backward_s, kernels(6), 1e-9 * kernels(6));
  // Dropless: no capacity mask, no masked product.
  const perf::Cost dropless = perf::router_ops(mc, 4096, 160, false);
  EXPECT_NEAR(dropless.forward_s, kernels(20), 1e-9 * kernels(20));
  EXPECT_NEAR(dropless.backward_s, kernels(5), 1e-9 * kernels(5));
}

TEST(MoeDispatcherTime, AllToAllsCarryTheBusiestRanksShare) {
  // Padded to a capacity factor of 1.25, every expert receives 1.25x its balanced tokens: each dispatch and combine
  // all-to-all moves 1.25 x 4096 x 6 x 5120 x 2 B, and the routing probabilities travel in an all-to-all of their
  // own, 1.25 x 4096 x 6 x 4 B (Megatron-Core 0.13+; priced here by bytes alone).
  ModelConfig m = deepseek_v2_attention();
  m.moe.routed_experts = 160;
  m.moe.top_k = 6;
  Layout l;
  l.ep = 8;
  perf::MicrobatchShape s;
  s.tokens = 4096;
  s.hidden = 5120;
  s.routed_share = 1.25;
  const auto bytes = [](Collective, double size, const GroupPlacement&) { return size; };
  const perf::LayerComm c = perf::layer_comm(m, l, s, RankPlacement{}, bytes);
  EXPECT_DOUBLE_EQ(c.ep_per_layer_s, 2 * 1.25 * 4096 * 6 * 5120 * 2 + 1.25 * 4096 * 6 * 4);
  // Before 0.13 the probabilities stay where the tokens were routed.
  s.probs_dispatched = false;
  EXPECT_DOUBLE_EQ(perf::layer_comm(m, l, s, RankPlacement{}, bytes).ep_per_layer_s, 2 * 1.25 * 4096 * 6 * 5120 * 2);
}

TEST(MoeDispatcherTime, ExpertTensorParallelismGathersTheReceivedTokens) {
  // Mixtral 8x7B's shape (hidden 4096, 8 experts, top-2, no shared experts) at TP 2 with sequence parallelism, EP 4
  // and expert-TP 2 (Megatron's default, the TP degree), 4096 tokens. Each rank routes its 2048-token shard: the
  // all-to-alls move 2048 x 2 x 4096 x 2 B, the probabilities 2048 x 2 x 4 B. The alltoall dispatcher then gathers
  // what each expert-TP rank received (2 x that, as nccl-tests counts an all-gather's buffer), probabilities too,
  // and reduce-scatters the experts' outputs back (token_dispatcher.py, dispatch_postprocess / combine_preprocess).
  ModelConfig m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.moe.routed_experts = 8;
  m.moe.top_k = 2;
  Layout l;
  l.tp = 2;
  l.ep = 4;
  l.sequence_parallel = true;
  perf::MicrobatchShape s;
  s.tokens = 4096;
  s.hidden = 4096;
  s.tp = 2;
  s.sequence_parallel = true;
  // Priced by the bytes of one kind of collective at a time.
  const auto only = [&](Collective kind) {
    return perf::layer_comm(m, l, s, RankPlacement{},
                            [kind](Collective c, double size, const GroupPlacement&) { return c == kind ? size : 0.0; });
  };
  const double routed = 2048.0 * 2 * 4096 * 2, probs = 2048.0 * 2 * 4;
  const double activation = 4096.0 * 4096 * 2;   // the attention's input is the activation too
  EXPECT_DOUBLE_EQ(only(Collective::alltoall).ep_per_layer_s, 2 * routed + probs);
  EXPECT_DOUBLE_EQ(only(Collective::allgather).ep_per_layer_s, 2 * routed + 2 * probs);
  EXPECT_DOUBLE_EQ(only(Collective::reducescatter).ep_per_layer_s, 2 * routed);
  // A dense layer's TP collectives: forward the attention's and fc1's gathers, the out projection's and fc2's
  // reduce-scatters. A MoE layer without shared experts keeps the attention's: the attention's gather and the out
  // projection's reduce-scatter forward; backward the out projection's output gradient and the attention's input
  // gathered, the latter's gradient reduce-scattered.
  const perf::LayerComm gathered = only(Collective::allgather), scattered = only(Collective::reducescatter);
  EXPECT_DOUBLE_EQ(gathered.tp_forward_s, 2 * activation);
  EXPECT_DOUBLE_EQ(scattered.tp_forward_s, 2 * activation);
  EXPECT_DOUBLE_EQ(gathered.tp_moe_forward_s, activation);
  EXPECT_DOUBLE_EQ(scattered.tp_moe_forward_s, activation);
  EXPECT_DOUBLE_EQ(gathered.tp_moe_backward_s + gathered.tp_moe_backward_async_s, 2 * activation);
  EXPECT_DOUBLE_EQ(scattered.tp_moe_backward_s + scattered.tp_moe_backward_async_s, activation);
  // With shared experts the layer gathers for them and reduce-scatters their output as a dense MLP does.
  m.moe.shared_experts = 1;
  m.moe.shared_expert_ffn_hidden = 14336;
  EXPECT_DOUBLE_EQ(only(Collective::allgather).tp_moe_forward_s, 2 * activation);
}

}  // namespace
}  // namespace gpuplan
