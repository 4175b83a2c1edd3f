#pragma once
// torchtitan's op-level selective activation checkpointing (activation_checkpoint.mode "selective" with
// selective_ac_option "op"; torchtitan/distributed/activation_checkpoint.py, _apply_op_sac, v0.2.x). Inside each
// checkpointed transformer block it keeps the outputs of the ops in the model's save list (aten.mm, the scaled-dot-
// product-attention kernels, reduce_scatter_tensor, all_to_all_single and max: torchtitan/models/*/parallelize.py
// _op_sac_save_list), except every second mm in call order, and recomputes everything else in the backward. The MoE
// router's gate is always recomputed and not counted (per_op_sac_force_recompute_mm_shapes_by_fqns, default
// ["moe.router.gate"]); the experts' grouped GEMMs (aten._grouped_mm) are not in the list.
#include <vector>

#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"

namespace gpuplan::detail {

// gpuplan's --recompute selective under --framework torchtitan is this policy, which torchtitan's launch files name
// selective_ac_option "op" (framework/emit_torchtitan.cpp, framework/read_torchtitan.cpp).
inline bool torchtitan_op_sac(Framework framework, Recompute recompute) {
  return framework == Framework::torchtitan && recompute == Recompute::selective;
}

// One aten.mm of a transformer block on one tensor-parallel rank: out_width x in_width per token. torchtitan's
// column-parallel linears split their output over TP, row-parallel ones their input; every mm sees the whole
// sequence of the rank (sequence parallelism gathers it first).
struct BlockMm {
  double out_width = 0;
  double in_width = 0;
  bool saved = false;   // an odd-numbered mm of the block: its output is kept
};

// The mms of one block in torchtitan's call order (Llama: wq, wk, wv, wo, then w1, w3, w2; DeepSeek MLA: wq or
// wq_a and wq_b, wkv_a, wkv_b, wo), then the dense MLP's or, in a MoE layer, the shared experts'. Routed experts run
// as grouped GEMMs and are not among them.
std::vector<BlockMm> torchtitan_block_mms(const ModelConfig& m, bool moe_layer, double tp);
// FLOPs per token of what the backward's replay runs again, over all of the model's layers and TP ranks: the
// even-numbered mms, and in MoE layers the router's gate and the routed experts.
double torchtitan_op_sac_recomputed_flops_per_token(const ModelConfig& m);

}  // namespace gpuplan::detail
