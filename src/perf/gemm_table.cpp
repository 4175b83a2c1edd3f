// Measured GEMM efficiencies by shape (data/gemm/*.json, embedded) and the interpolation between shapes.
#include "perf/gemm_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "util/embedded_data.hpp"

namespace gpuplan::perf {

namespace {

constexpr std::size_t kNeighbours = 4;

// The kNeighbours entries closest to a query in log2 space, nearest first (insertion into a short array: no
// allocation on the step model's path), and their inverse-squared-distance weights.
template <class Entry>
class Nearest {
 public:
  void offer(double distance2, const Entry* entry) {
    std::size_t at = std::min(found_, kNeighbours - 1);
    if (found_ == kNeighbours && distance2 >= items_[at].distance2) return;
    while (at > 0 && items_[at - 1].distance2 > distance2) {
      items_[at] = items_[at - 1];
      --at;
    }
    items_[at] = {distance2, entry};
    found_ = std::min(found_ + 1, kNeighbours);
  }
  // Calls add(weight, entry) for each entry found; returns the sum of the weights.
  template <class Add>
  double weigh(Add add) const {
    double weights = 0;
    for (std::size_t i = 0; i < found_; ++i) {
      const double w = 1 / items_[i].distance2;
      add(w, *items_[i].entry);
      weights += w;
    }
    return weights;
  }

 private:
  struct Item {
    double distance2 = 0;
    const Entry* entry = nullptr;
  };
  std::array<Item, kNeighbours> items_{};
  std::size_t found_ = 0;
};

// Squared distance in log2 space; the query's logarithms are taken once per lookup, the entries' once per table.
double log_distance2(const GemmEfficiencyTable::Entry& e, double log2_rows, double log2_outputs, double log2_inputs) {
  const double dr = e.log2_rows - log2_rows, doo = e.log2_outputs - log2_outputs, di = e.log2_inputs - log2_inputs;
  return dr * dr + doo * doo + di * di;
}

std::vector<GemmEfficiencyTable::Entry> entries(const nlohmann::json& rows) {
  std::vector<GemmEfficiencyTable::Entry> out;
  for (const auto& r : rows) {
    GemmEfficiencyTable::Entry e{r.at(0).get<double>(), r.at(1).get<double>(), r.at(2).get<double>(),
                                 r.at(3).get<double>(), r.at(4).get<double>(), r.at(5).get<double>()};
    e.log2_rows = std::log2(e.rows);
    e.log2_outputs = std::log2(e.outputs);
    e.log2_inputs = std::log2(e.inputs);
    out.push_back(e);
  }
  return out;
}

std::vector<GemmEfficiencyTable::AttentionEntry> attention_entries(const nlohmann::json& j) {
  std::vector<GemmEfficiencyTable::AttentionEntry> out;
  if (!j.contains("attention")) return out;
  for (const auto& r : j.at("attention"))
    out.push_back({r.at(0).get<double>(), r.at(1).get<double>(), r.at(2).get<double>(), r.at(3).get<double>(),
                   r.at(4).get<double>(), r.at(5).get<double>()});
  return out;
}

std::shared_ptr<const GemmEfficiencyTable> parse_table(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  auto table = std::make_shared<GemmEfficiencyTable>();
  table->gpu = j.at("gpu").get<std::string>();
  table->source = j.at("source").get<std::string>();
  table->dense = entries(j.at("dense"));
  table->grouped = entries(j.at("grouped"));
  table->attention = attention_entries(j);
  for (const auto* list : {&table->dense, &table->grouped})
    for (const auto& e : *list) table->best = std::max({table->best, e.forward, e.dgrad, e.wgrad});
  return table;
}

}  // namespace

GemmEfficiencies lookup(const GemmEfficiencyTable& table, bool grouped, double rows, double outputs, double inputs) {
  const auto& list = grouped && !table.grouped.empty() ? table.grouped : table.dense;
  Nearest<GemmEfficiencyTable::Entry> nearest;
  const double log2_rows = std::log2(rows), log2_outputs = std::log2(outputs), log2_inputs = std::log2(inputs);
  for (const auto& e : list) {
    const double distance2 = log_distance2(e, log2_rows, log2_outputs, log2_inputs);
    if (distance2 == 0) return {e.forward, e.dgrad, e.wgrad};
    nearest.offer(distance2, &e);
  }
  GemmEfficiencies out;
  const double weights = nearest.weigh([&out](double w, const GemmEfficiencyTable::Entry& e) {
    out.forward += w * e.forward;
    out.dgrad += w * e.dgrad;
    out.wgrad += w * e.wgrad;
  });
  if (weights > 0) {
    out.forward /= weights;
    out.dgrad /= weights;
    out.wgrad /= weights;
  }
  return out;
}

AttentionEfficiencies lookup_attention(const GemmEfficiencyTable& table, double batch_heads, double keys,
                                       double qk_head_dim) {
  // Each head dimension is a kernel of its own (its own tile sizes): where the table measured this one, only its
  // entries are neighbours.
  const bool measured_dim = std::any_of(table.attention.begin(), table.attention.end(),
                                        [&](const auto& e) { return e.qk_head_dim == qk_head_dim; });
  const double log2_keys = std::log2(keys), log2_blocks = std::log2(batch_heads) + log2_keys;
  Nearest<GemmEfficiencyTable::AttentionEntry> nearest;
  for (const auto& e : table.attention) {
    if (measured_dim && e.qk_head_dim != qk_head_dim) continue;
    const double entry_log2_keys = std::log2(e.keys);
    const double dk = entry_log2_keys - log2_keys, db = std::log2(e.heads) + entry_log2_keys - log2_blocks,
                 dd = measured_dim ? 0.0 : std::log2(e.qk_head_dim / qk_head_dim);
    const double distance2 = db * db + dk * dk + dd * dd;
    if (distance2 == 0) return {e.forward, e.backward};
    nearest.offer(distance2, &e);
  }
  AttentionEfficiencies out;
  const double weights = nearest.weigh([&out](double w, const GemmEfficiencyTable::AttentionEntry& e) {
    out.forward += w * e.forward;
    out.backward += w * e.backward;
  });
  if (weights > 0) {
    out.forward /= weights;
    out.backward /= weights;
  }
  return out;
}

std::shared_ptr<const GemmEfficiencyTable> builtin_gemm_table(std::string_view gpu) {
  static const std::map<std::string, std::shared_ptr<const GemmEfficiencyTable>, std::less<>> tables = [] {
    std::map<std::string, std::shared_ptr<const GemmEfficiencyTable>, std::less<>> out;
    for (const auto& f : detail::embedded_files()) {
      if (f.path.rfind("gemm/", 0) != 0) continue;
      auto table = parse_table(std::string(f.content));
      out[table->gpu] = std::move(table);
    }
    return out;
  }();
  const auto it = tables.find(gpu);
  return it == tables.end() ? nullptr : it->second;
}

}  // namespace gpuplan::perf
