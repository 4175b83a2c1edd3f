#pragma once
// Small helpers shared by the unit tests. The tests compile in batches (a unity build), so a helper that two files
// would each define for themselves lives here once.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/api.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "perf/layer_cost.hpp"

namespace gpuplan::test {

// The message of the InputError that `action` throws; empty when it throws none.
template <typename Action>
std::string error_of(const Action& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// tests/data/runs/megatron-gpt-1.3b-tp2.log (a Megatron-LM log of GPT 1.3B on 8 GPUs), with `argument` (a line of
// its arguments block, "  name ...... value") added to the block when given.
inline std::string megatron_log(const std::string& argument = "") {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/runs/megatron-gpt-1.3b-tp2.log");
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  const std::string first_argument = "  accumulate_allreduce_grads_in_fp32";
  EXPECT_NE(log.find(first_argument), std::string::npos);
  if (!argument.empty() && log.find(first_argument) != std::string::npos)
    log.insert(log.find(first_argument), argument + "\n");
  return log;
}

// The seconds of one term of an estimate's step-time breakdown; a missing term fails the test.
inline double time_term(const api::EstimateResult& result, std::string_view name) {
  for (const auto& [term_name, seconds] : result.time.breakdown)
    if (term_name == name) return seconds;
  ADD_FAILURE() << "no term " << name;
  return 0;
}

// The seconds of one term of a step estimate's breakdown; a missing term fails the test.
inline double step_term(const StepEstimate& estimate, std::string_view name) {
  for (const auto& [term_name, seconds] : estimate.breakdown)
    if (term_name == name) return seconds;
  ADD_FAILURE() << "no term " << name;
  return 0;
}

// The attention of `heads` query heads of dimension 128 in `kv_heads` groups (hidden: heads x 128), for the tests
// that count its bytes by hand.
inline ModelConfig attention_of(std::int64_t heads, std::int64_t kv_heads,
                                PositionKind positions = PositionKind::rotary) {
  ModelConfig m;
  m.hidden = heads * 128;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = 128;
  m.positions = positions;
  return m;
}

// One microbatch of 4096 local tokens in bf16 attending to as many keys, without parallelism.
inline perf::MicrobatchShape bf16_tokens() {
  perf::MicrobatchShape s;
  s.micro_batch = 1;
  s.tokens = s.local_sequence = s.keys_per_query = 4096;
  s.element_bytes = s.gemm_element_bytes = 2;
  return s;
}

// `value` rounded to `digits` significant digits, the precision of a published figure such as "671B".
inline double significant(double value, int digits) {
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(value))));
  return std::round(value * scale) / scale;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The text of a file under tests/data/ ("topo/05_hgx-h100.txt"); a file that cannot be read fails the test.
inline std::string read_test_data(const std::string& relative) {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether any of `lines` contains `part`.
inline bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& line : lines) {
    if (contains(line, part)) return true;
  }
  return false;
}

// Puts an estimate on `nodes` nodes of a built-in system: its GPU, that GPU's usable memory, and its fabric.
inline void place_on(EstimateInputs& in, std::string_view system, int nodes) {
  const Cluster c = make_cluster(system, nodes);
  in.gpu = c.gpu;
  in.memory.capacity_bytes = c.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(c);
}

}  // namespace gpuplan::test
