#pragma once
// The enumerated space and the search loop (internal to src/search).
#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "perf/step_floor.hpp"
#include "search/bound_memo.hpp"
#include "search/evaluator.hpp"

namespace gpuplan::search {

struct ZeroOffload {
  int zero = 0;
  Offload offload = Offload::none;
  OffloadTarget target = OffloadTarget::cpu;
};

// The space: every valid shape with its micro-batches; inside each (shape, micro-batch) the same ZeRO/offload,
// sequence-parallel/overlap and recompute choices. Built once (shapes only); layouts are generated lazily.
class Space {
 public:
  explicit Space(const Evaluator& ev);
  // The space of `ev`'s filters taken from `wider`, a space of the same job whose filters are no narrower (the
  // sensitivity's constrained searches) in its degrees and micro-batches: the shapes and micro-batches of `wider`
  // that the filters keep, with the framework's ZeRO/offload verdicts read from it instead of checked again. The
  // same space as Space(ev).
  Space(const Evaluator& ev, const Space& wider);
  const Evaluator& evaluator() const { return ev_; }
  const std::vector<Shape>& shapes() const { return shapes_; }
  const std::vector<std::vector<std::int64_t>>& micro_batches() const { return mbs_; }
  const std::vector<ZeroOffload>& zero_offload() const { return zo_; }
  const std::vector<std::pair<bool, bool>>& spov(const Shape& s) const;
  bool rc_none() const { return rc_none_; }
  bool rc_selective() const { return rc_selective_; }
  bool rc_full() const { return rc_full_; }
  bool partial_recompute() const { return partial_recompute_; }   // full recompute of 1 .. all layers of a stage
  std::uint64_t rc_count(const Shape& s) const;
  std::uint64_t inner_count(const Shape& s) const;   // layouts per (shape, micro-batch)
  // Whether the framework runs the i-th ZeRO/offload choice of zero_offload() on this shape.
  static bool runs(const Shape& s, std::size_t zero_offload_index) { return ((s.zero_offload_mask >> zero_offload_index) & 1u) != 0; }
  std::uint64_t total() const { return total_; }
  // For a space narrowed from a wider one: each wider shape's index here (-1: dropped); empty otherwise.
  const std::vector<std::int64_t>& index_of_wider() const { return index_of_wider_; }

 private:
  void check_filters() const;
  void add_all_shapes();
  void choose_variants(const SearchSpace& filters);
  bool keeps(const Shape& shape) const;   // whether the degrees of a shape pass the filters
  void add_shapes(std::int64_t gpus);
  std::vector<std::pair<CpComm, std::int64_t>> cp_exchanges(std::int64_t tp, std::int64_t cp) const;
  std::pair<CpComm, std::int64_t> fastest_cp_exchange(const Shape& shape);
  void add_pipeline_splits(Shape shape);
  void add_expert_shapes(Shape shape);
  // The framework's rules for a shape (layout.framework of the inputs): false when it rejects the shape, else the
  // mask of the ZeRO/offload choices it runs there.
  bool framework_allows(Shape& shape) const;

  const Evaluator& ev_;
  perf::StepFloor cp_floor_;   // prices the CP exchanges fastest_cp_exchange compares
  std::vector<Shape> shapes_;
  std::vector<std::vector<std::int64_t>> mbs_;
  std::vector<ZeroOffload> zo_;
  std::vector<std::pair<bool, bool>> spov_tp_, spov_tp_no_overlap_, spov_1_;
  bool rc_none_ = true, rc_selective_ = true, rc_full_ = true, partial_recompute_ = true;
  std::uint64_t total_ = 0;
  std::vector<std::int64_t> index_of_wider_;
};

struct Candidate {
  std::size_t shape_index = 0;
  Variant variant;
  bytes_t memory_bytes = 0;
  double step_s = 0;                    // estimate_step
  double score = 0;
  std::array<std::int64_t, 15> key{};   // deterministic tie-break
  // Variants of the same layout that differ only in ZeRO stage or offload and have exactly its step time and
  // memory (ZeRO-1 and ZeRO-2 at dp 1; offload to CPU or to NVMe when its traffic is hidden): one plan, not several.
  std::vector<Variant> equivalents;
};
bool better(const Candidate& a, const Candidate& b);
bool equivalent(const Candidate& a, const Candidate& b);
// Layouts that differ only in how many layers of a stage recompute in full (none being no layer). The fewest that
// fit is the fastest of them, and a list of the best layouts shows that one rather than a row for every count.
bool recompute_count_siblings(const Candidate& a, const Candidate& b);
std::array<std::int64_t, 15> key_of(const Shape& s, const Variant& v);

// One choice of a layout, as the sensitivity varies it.
enum class Choice { tp, pp, cp, ep, vpp, micro_batch, zero, recompute, sequence_parallel, offload };
inline constexpr std::size_t kChoices = 10;

// The best score timed for each value of each choice (TP=4, ZeRO-1, recompute full, ...). Each is the score of a
// layout that fits, so it bounds from above the best layout with that value: the sensitivity's constrained
// searches start from it and prune from their first item.
// Recording is cheap enough for every layout timed: the choices inside a work item (ZeRO, recompute, sequence
// parallelism, offload) are small ranges kept in arrays; the shape's (degrees, micro-batch) once per item.
class ChoiceBests {
 public:
  ChoiceBests();
  void record_variant(const Variant& variant, double score);
  void record_shape(const Shape& shape, std::int64_t micro_batch, double best_score);
  void merge(const ChoiceBests& other);
  double best(Choice choice, std::int64_t value) const;   // +infinity when no layout with it was timed

 private:
  static constexpr std::size_t kValues = 4;   // every variant-level choice has at most 4 values
  void record(Choice choice, std::int64_t value, double score);
  std::array<std::vector<std::pair<std::int64_t, double>>, kChoices> shape_bests_;
  std::array<std::array<double, kValues>, kChoices> variant_bests_;
};

struct Stats {
  std::uint64_t evaluated = 0, feasible = 0, timed = 0, pruned_states = 0, pruned_time = 0;
};

struct SearchOutcome {
  std::vector<Candidate> top;   // best first
  Stats stats;
  ChoiceBests choice_bests;
};

// The top k of the space. `known_best`: the score of a layout of the space known to fit (an upper bound on the
// best), which prunes from the start; +infinity when none is known.
// `memo.known`: item bounds an earlier search of the same job computed, read instead of computed again;
// `memo.record`: where this search keeps the bounds it computes (its workers write them as they go); never
// `memo.known`. Either may be null.
struct BoundSharing {
  const BoundMemo* known = nullptr;
  BoundMemo* record = nullptr;
};
SearchOutcome run_search(const Space& space, std::size_t k, const ParallelRunner& runner,
                         const ProgressCallback& progress,
                         double known_best = std::numeric_limits<double>::infinity(), BoundSharing memo = {});

}  // namespace gpuplan::search
