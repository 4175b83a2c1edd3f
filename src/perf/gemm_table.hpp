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

// The measured flash-attention efficiencies (the table's convention: full s x s FLOPs) of a kernel call with
// `heads` heads over `keys` keys: exact where measured, otherwise weighted from the nearest measured calls in
// log2(heads, keys, qk head dim) as `lookup` does. Zeros when the table has no attention entries.
struct AttentionEfficiencies {
  double forward = 0, backward = 0;
};
AttentionEfficiencies lookup_attention(const GemmEfficiencyTable& table, double heads, double keys, double qk_head_dim);

// The table data/gemm/ holds for this GPU, or null.
std::shared_ptr<const GemmEfficiencyTable> builtin_gemm_table(std::string_view gpu);

}  // namespace gpuplan::perf
