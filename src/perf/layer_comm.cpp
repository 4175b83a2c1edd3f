#include "perf/layer_comm.hpp"

#include "memory/internal.hpp"

namespace gpuplan::perf {

MicrobatchShape microbatch_shape(const EstimateInputs& in, const Layout& l) {
  const ModelConfig& m = *in.memory.model;
  const TrainingConfig& tr = in.memory.training;
  MicrobatchShape s;
  s.tp = static_cast<double>(l.tp);
  s.micro_batch = static_cast<double>(tr.micro_batch);
  s.local_sequence = static_cast<double>(tr.seq_len) / static_cast<double>(l.cp);
  s.keys_per_query = static_cast<double>(tr.seq_len);
  s.tokens = s.micro_batch * s.local_sequence;
  s.hidden = static_cast<double>(m.hidden);
  s.element_bytes = memory::activation_element_bytes(tr);
  s.gemm_element_bytes = tr.precision == Precision::fp8 ? 1.0 : s.element_bytes;
  const double grad_bytes = tr.grad_dtype == DType::fp32 ? 4.0 : 2.0;
  s.gradient_rw_bytes = 2 * (tr.precision == Precision::fp32 ? 4.0 : grad_bytes);
  s.sequence_parallel = l.sequence_parallel && l.tp > 1;
  s.dropout = tr.dropout > 0;
  s.flash = l.attention == Attention::flash;
  return s;
}

}  // namespace gpuplan::perf
