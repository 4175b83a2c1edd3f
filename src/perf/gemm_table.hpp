#pragma once
// Measured GEMM efficiency by shape: the lookup the compute model uses, and the tables data/gemm/ ships.
#include <memory>
#include <string_view>

#include "gpuplan/estimate.hpp"

namespace gpuplan::perf {

struct GemmEfficiencies {
  double forward = 0, dgrad = 0, wgrad = 0;
};

// The efficiencies at a linear layer's forward shape: exact where the table has the shape, otherwise weighted
// from the four nearest measured shapes in log2(rows, outputs, inputs), closer ones weighing more (inverse
// squared distance). Never above the table's best entry.
GemmEfficiencies lookup(const GemmEfficiencyTable& table, bool grouped, double rows, double outputs, double inputs);

// The measured flash-attention efficiencies (the table's convention: full s x s FLOPs) of a kernel call over `keys`
// keys, for `batch_heads` sequences x heads (the table's entries are of batch 1). The kernel runs one thread block
// per sequence, head and tile of queries, and each block loops over the keys: so a call is placed by its blocks
// (batch x heads x keys) and its keys, and a batch of 2 with 32 heads runs as one sequence with 64. Exact where
// measured, otherwise weighted from the nearest measured calls in log2(blocks, keys) as `lookup` does, among the
// entries of the same qk head dim where there are any (else with log2 of the head dim as a third coordinate).
// Zeros when the table has no attention entries.
struct AttentionEfficiencies {
  double forward = 0, backward = 0;
};
AttentionEfficiencies lookup_attention(const GemmEfficiencyTable& table, double batch_heads, double keys,
                                       double qk_head_dim);

// The table data/gemm/ holds for this GPU, or null.
std::shared_ptr<const GemmEfficiencyTable> builtin_gemm_table(std::string_view gpu);

}  // namespace gpuplan::perf
