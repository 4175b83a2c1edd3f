// The Megatron-Core + Transformer Engine allocation sequence of megatron_replay.hpp.
#include "memory/megatron_replay.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "memory/caching_allocator.hpp"

namespace gpuplan::memory {

namespace {

using Handle = CachingAllocator::Handle;

struct Param {
  double elements = 0;
  bool decay = true;   // weight decay: matrices; norms have none (a parameter group of their own)
};

std::vector<Param> stage_parameters(const ReplayShape& s) {
  const double h = static_cast<double>(s.hidden), tp = static_cast<double>(s.tp);
  const double attention = static_cast<double>(s.heads * s.head_dim) / tp;
  const double qkv = static_cast<double>((s.heads + 2 * s.kv_heads) * s.head_dim) / tp;
  const double ffn = static_cast<double>(s.ffn) / tp;
  std::vector<Param> out;
  if (s.stage == 0) out.push_back({static_cast<double>(s.vocab) / tp * h, true});
  for (std::int64_t layer = 0; layer < s.layers; ++layer) {
    out.push_back({h, false});
    out.push_back({qkv * h, true});
    out.push_back({attention * h, true});
    out.push_back({h, false});
    out.push_back({(s.gated_mlp ? 2 : 1) * ffn * h, true});
    out.push_back({ffn * h, true});
  }
  if (s.stage == s.pp - 1) {
    out.push_back({h, false});
    if (s.output_layer) out.push_back({static_cast<double>(s.vocab) / tp * h, true});
  }
  return out;
}

// Elements of each parameter in this rank's shard: the buffer holds the parameters in reverse order, each starting
// at a multiple of 64 elements, the whole padded to a multiple of lcm(ranks, 128); rank r owns the r-th 1/ranks.
std::vector<double> shard_elements(const std::vector<Param>& params, std::int64_t ranks, std::int64_t rank) {
  std::vector<double> start(params.size()), out(params.size());
  double position = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    if (ranks > 1) position = std::ceil(position / 64) * 64;
    start[k] = position;
    position += params[k].elements;
  }
  const double unit = ranks > 1 ? static_cast<double>(std::lcm(ranks, std::int64_t{128})) : 1.0;
  const double share = std::ceil(position / unit) * unit / static_cast<double>(ranks);
  const double lo = share * static_cast<double>(rank), hi = lo + share;
  for (std::size_t k = 0; k < params.size(); ++k)
    out[k] = std::max(0.0, std::min(start[k] + params[k].elements, hi) - std::max(start[k], lo));
  return out;
}

class StageReplay {
 public:
  StageReplay(const ReplayShape& shape, std::int64_t rank);
  ReplayPeaks run();

 private:
  // What a layer's forward keeps for its backward.
  enum Saved { kInput, kNorm1, kNormStats1, kQkv, kAttention, kLogsumexp, kMid, kNorm2, kNormStats2, kUp, kAct,
               kSavedCount };
  struct Microbatch {
    std::vector<std::array<Handle, kSavedCount>> layers;
    Handle hidden = 0, head_norm = 0, head_stats = 0, logits = 0, loss = 0;
  };
  Handle take(double bytes) { return allocator_.allocate(static_cast<std::uint64_t>(std::clamp(bytes, 1.0, 0x1p62))); }
  void drop(Handle handle) { allocator_.release(handle); }
  // The SP collectives' whole-sequence tensors: gathered before a column-parallel GEMM, scattered after a
  // row-parallel one. Without SP the tensor is used as it is.
  Handle reduce_scatter(Handle whole);
  void start_up();
  void first_optimizer_step();
  void iteration();
  void forward(Microbatch& mb);
  void layer_forward(std::array<Handle, kSavedCount>& saved, Handle& hidden);
  void norm_and_column_parallel(Handle& norm, Handle& stats, Handle& output, double output_bytes);
  void head_forward(Microbatch& mb);
  void backward(Microbatch& mb);
  Handle layer_backward(std::array<Handle, kSavedCount>& saved, Handle grad);
  Handle row_parallel_backward(double input_bytes, int weight);
  Handle column_parallel_backward(int weight);
  Handle head_backward(Microbatch& mb);
  void weight_gradient(int weight);

  ReplayShape s_;
  std::vector<Param> params_;
  std::vector<double> shard_;
  std::vector<std::size_t> optimizer_order_;   // the parameters this rank's optimizer holds, in its group order
  CachingAllocator allocator_;
  bool sp_ = false, first_ = false, last_ = false;
  double whole_ = 0, local_ = 0, stats_ = 0, qkv_ = 0, attention_ = 0, logsumexp_ = 0, up_ = 0, act_ = 0;
  double vocab_weight_ = 0;
  std::array<double, 4> weights_{};      // the bytes of the four Linear weights of a layer
  std::array<bool, 4> wgrad_buffer_{};   // Transformer Engine's cached weight-gradient buffer made yet
  bool global_buffer_ = false;           // Megatron's global memory buffer for the output layer's SP gather
  std::vector<Microbatch> microbatches_;
};

StageReplay::StageReplay(const ReplayShape& shape, std::int64_t rank)
    : s_(shape), params_(stage_parameters(shape)), shard_(shard_elements(params_, shape.shard_ranks, rank)) {
  const double tokens = static_cast<double>(s_.tokens), h = static_cast<double>(s_.hidden);
  const double tp = static_cast<double>(s_.tp);
  sp_ = s_.sequence_parallel && s_.tp > 1;
  first_ = s_.stage == 0;
  last_ = s_.stage == s_.pp - 1;
  whole_ = tokens * h * 2;
  local_ = sp_ ? whole_ / tp : whole_;
  stats_ = (sp_ ? tokens / tp : tokens) * 4;
  qkv_ = tokens * static_cast<double>((s_.heads + 2 * s_.kv_heads) * s_.head_dim) / tp * 2;
  attention_ = tokens * static_cast<double>(s_.heads * s_.head_dim) / tp * 2;
  logsumexp_ = tokens * static_cast<double>(s_.heads) / tp * 4;
  act_ = tokens * static_cast<double>(s_.ffn) / tp * 2;
  up_ = (s_.gated_mlp ? 2 : 1) * act_;
  vocab_weight_ = static_cast<double>(s_.vocab) / tp * h * 2;
  weights_ = {qkv_ / tokens * h, attention_ / tokens * h, up_ / tokens * h, act_ / tokens * h};
  for (bool decay : {true, false})   // Megatron's parameter groups: weights with decay first, then the norms
    for (std::size_t k = 0; k < params_.size(); ++k)
      if (params_[k].decay == decay && shard_[k] > 0) optimizer_order_.push_back(k);
  microbatches_.resize(static_cast<std::size_t>(replayed_microbatches(s_)));
  for (Microbatch& mb : microbatches_) mb.layers.resize(static_cast<std::size_t>(s_.layers));
}

Handle StageReplay::reduce_scatter(Handle whole) {
  if (!sp_) return whole;
  const Handle scattered = take(local_);
  drop(whole);
  return scattered;
}

void StageReplay::start_up() {
  std::vector<Handle> created;
  double total = 0;
  for (const Param& p : params_) {
    created.push_back(take(2 * p.elements));
    total += p.elements;
  }
  if (s_.distributed_optimizer) take(2 * total);   // the contiguous parameter buffer; weights become its views
  take(s_.grad_bytes * total);                     // the contiguous gradient buffer (main_grad)
  if (s_.distributed_optimizer)
    for (Handle h : created) drop(h);
  for (std::size_t k : optimizer_order_) take(4 * shard_[k]);   // fp32 main parameters
}

void StageReplay::first_optimizer_step() {
  for (std::size_t k : optimizer_order_)
    for (std::int64_t moment = 0; moment < s_.optimizer_moments; ++moment) take(4 * shard_[k]);
}

void StageReplay::weight_gradient(int weight) {
  const auto w = static_cast<std::size_t>(weight);
  if (!s_.persistent_wgrad_buffers) {
    drop(take(weights_[w]));
  } else if (!wgrad_buffer_[w]) {
    take(weights_[w]);
    wgrad_buffer_[w] = true;
  }
}

// A norm and the column-parallel Linear after it: the norm's output and statistics kept, its output gathered over
// the sequence (SP) for the GEMM and the gathered copy freed after it.
void StageReplay::norm_and_column_parallel(Handle& norm, Handle& stats, Handle& output, double output_bytes) {
  norm = take(local_);
  stats = take(stats_);
  const Handle gathered = sp_ ? take(whole_) : 0;
  output = take(output_bytes);
  if (sp_) drop(gathered);
}

void StageReplay::layer_forward(std::array<Handle, kSavedCount>& saved, Handle& hidden) {
  saved[kInput] = hidden;
  norm_and_column_parallel(saved[kNorm1], saved[kNormStats1], saved[kQkv], qkv_);
  saved[kAttention] = take(attention_);
  saved[kLogsumexp] = take(logsumexp_);
  const Handle projected = reduce_scatter(take(whole_));   // the row-parallel output projection
  saved[kMid] = take(local_);                              // the residual sum
  drop(projected);
  norm_and_column_parallel(saved[kNorm2], saved[kNormStats2], saved[kUp], up_);
  saved[kAct] = take(act_);
  const Handle down = reduce_scatter(take(whole_));
  hidden = take(local_);
  drop(down);
}

void StageReplay::head_forward(Microbatch& mb) {
  mb.head_norm = take(local_);
  mb.head_stats = take(stats_);
  if (sp_ && !global_buffer_) take(whole_);   // get_global_memory_buffer(): allocated once, kept
  global_buffer_ = true;
  mb.logits = take(s_.logits_bytes);
  mb.loss = take(static_cast<double>(s_.tokens) * 8);
}

void StageReplay::forward(Microbatch& mb) {
  if (first_) {
    mb.hidden = reduce_scatter(take(whole_));   // the vocabulary-parallel embedding, reduced over TP
  } else {
    mb.hidden = take(local_);                   // received from the previous stage
  }
  for (auto& saved : mb.layers) layer_forward(saved, mb.hidden);
  if (last_) head_forward(mb);
}

// The loss's gradient through the output layer and the final norm; returns the gradient into the last layer.
Handle StageReplay::head_backward(Microbatch& mb) {
  const Handle input_grad = take(whole_);
  drop(take(vocab_weight_));   // the output layer's weight-gradient tensor, added to main_grad and freed
  const Handle local_grad = reduce_scatter(input_grad);
  drop(mb.logits);
  drop(mb.loss);
  const Handle grad = take(local_);
  drop(local_grad);
  drop(mb.head_norm);
  drop(mb.head_stats);
  return grad;
}

// A row-parallel Linear's backward (output projection, down-projection): the output gradient gathered over the
// sequence, the input gradient, the weight gradient into main_grad through TE's buffer.
Handle StageReplay::row_parallel_backward(double input_bytes, int weight) {
  const Handle gathered = sp_ ? take(whole_) : 0;
  const Handle input_grad = take(input_bytes);
  weight_gradient(weight);
  if (sp_) drop(gathered);
  return input_grad;
}

// A column-parallel Linear's backward (QKV, up-projection): the whole-sequence input gradient, the input gathered
// again for the weight gradient, then the input gradient reduce-scattered.
Handle StageReplay::column_parallel_backward(int weight) {
  const Handle input_grad = take(whole_);
  const Handle regathered = sp_ ? take(whole_) : 0;
  weight_gradient(weight);
  if (sp_) drop(regathered);
  return reduce_scatter(input_grad);
}

Handle StageReplay::layer_backward(std::array<Handle, kSavedCount>& saved, Handle grad) {
  const Handle act_grad = row_parallel_backward(act_, 3);
  drop(saved[kAct]);
  const Handle up_grad = take(up_);
  drop(act_grad);
  drop(saved[kUp]);
  const Handle mlp_grad = column_parallel_backward(2);
  drop(up_grad);
  drop(saved[kNorm2]);
  const Handle mid_grad = take(local_);
  for (Handle h : {mlp_grad, saved[kNormStats2], saved[kMid], grad}) drop(h);
  const Handle attention_grad = row_parallel_backward(attention_, 1);
  const Handle qkv_grad = take(qkv_);
  for (Handle h : {saved[kAttention], saved[kLogsumexp], attention_grad, saved[kQkv]}) drop(h);
  const Handle input_grad = column_parallel_backward(0);
  drop(qkv_grad);
  drop(saved[kNorm1]);
  const Handle out = take(local_);
  for (Handle h : {input_grad, saved[kNormStats1], saved[kInput], mid_grad}) drop(h);
  return out;
}

void StageReplay::backward(Microbatch& mb) {
  Handle grad = 0;
  if (last_) {
    grad = head_backward(mb);
    drop(mb.hidden);
  } else {
    drop(mb.hidden);              // the output sent on, kept until this backward
    grad = take(local_);          // the gradient received from the next stage
  }
  for (auto layer = mb.layers.rbegin(); layer != mb.layers.rend(); ++layer) grad = layer_backward(*layer, grad);
  if (first_) drop(take(vocab_weight_));   // the embedding's dense weight gradient, added to main_grad and freed
  drop(grad);
}

// 1F1B: the stage runs pp - stage - 1 forwards ahead, then alternates, then drains.
void StageReplay::iteration() {
  const std::size_t count = microbatches_.size();
  const std::size_t warmup = std::min(count, static_cast<std::size_t>(s_.pp - s_.stage - 1));
  std::size_t forwards = 0, backwards = 0;
  while (forwards < warmup) forward(microbatches_[forwards++]);
  while (forwards < count) {
    forward(microbatches_[forwards++]);
    backward(microbatches_[backwards++]);
  }
  while (backwards < count) backward(microbatches_[backwards++]);
}

ReplayPeaks StageReplay::run() {
  start_up();
  for (int step = 0; step < 2; ++step) {
    iteration();
    if (step == 0) first_optimizer_step();
  }
  return {static_cast<double>(allocator_.peak_allocated()), static_cast<double>(allocator_.peak_reserved())};
}

}  // namespace

std::int64_t replayed_microbatches(const ReplayShape& shape) {
  const std::int64_t in_flight = std::min(shape.microbatches, shape.pp - shape.stage);
  return std::min(shape.microbatches, in_flight + 1);
}

ReplayPeaks replay_megatron_stage(const ReplayShape& shape, std::int64_t shard_rank) {
  return StageReplay(shape, shard_rank).run();
}

double replayed_fragmentation(const ReplayShape& shape) {
  const std::int64_t ranks = std::max<std::int64_t>(1, shape.shard_ranks);
  const std::int64_t replayed = std::clamp<std::int64_t>(shape.max_ranks, 1, ranks);
  double most = 0;
  for (std::int64_t k = 0; k < replayed; ++k) {
    const ReplayPeaks peaks = replay_megatron_stage(shape, k * ranks / replayed);
    most = std::max(most, peaks.reserved - peaks.allocated);
  }
  return most;
}

}  // namespace gpuplan::memory
