// The B200 and bus-bandwidth sets of the step-time report (time_sets.hpp).
#include "time_sets.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpuplan/api.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/host.hpp"

namespace validation {

using nlohmann::json;
namespace api = gpuplan::api;

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto rank = [](const std::vector<double>& x) {
    std::vector<std::size_t> idx(x.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::size_t i, std::size_t j) { return x[i] < x[j]; });
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i);
    return r;
  };
  const auto ra = rank(a), rb = rank(b);
  const double n = static_cast<double>(a.size());
  double d2 = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

SetStats set_stats(const std::vector<SetRow>& rows) {
  SetStats s;
  if (rows.empty()) return s;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const SetRow& r : rows) {
    const double e = (r.predicted - r.measured) / r.measured;
    s.mape += std::abs(e);
    s.bias += e;
    s.max_error = std::max(s.max_error, std::abs(e));
    groups[r.group].first.push_back(r.measured);
    groups[r.group].second.push_back(r.predicted);
  }
  s.mape /= static_cast<double>(rows.size());
  s.bias /= static_cast<double>(rows.size());
  double sum = 0;
  for (const auto& [name, g] : groups) {
    if (g.first.size() < 3) continue;
    sum += spearman(g.first, g.second);
    ++s.groups;
  }
  s.spearman = s.groups > 0 ? sum / s.groups : 0;
  return s;
}

namespace {

json read_json(const std::string& path) { return json::parse(gpuplan::read_text_file(path, "validation data")); }

// A B200 run as `gpuplan estimate` takes it (the data files' `settings` say what the runs were).
struct B200Run {
  std::string model_name;   // a catalog name, or a config file under validation/data/models
  std::string model_file;
  std::int64_t layers = 0, seq = 0, tp = 1, pp = 1, cp = 1, ep = 1, global_batch = 0;
  std::string cp_comm = "p2p";
  bool moe_padded = false;
  bool dp_overlap = false;  // --overlap-grad-reduce: not set by these runs (the files' `settings`), Megatron's default
};

double b200_step_ms(const std::string& repo, const B200Run& run) {
  api::EstimateRequest r;
  if (run.model_file.empty()) {
    r.model.name_or_path = run.model_name;
    r.overrides.layers = run.layers;
  } else {
    const std::string path = repo + "/validation/data/models/" + run.model_file;
    r.model.name_or_path = path;
    r.model.config = gpuplan::read_text_file(path, "validation data");
  }
  r.cluster.system = "dgx-b200";
  r.cluster.nodes = 1;
  r.layout.tp = run.tp;
  r.layout.pp = run.pp;
  r.layout.cp = run.cp;
  r.layout.cp_comm_type = run.cp_comm;
  r.layout.ep = run.ep;
  r.layout.sequence_parallel = run.tp > 1;
  r.layout.zero = 1;
  r.training.seq_len = run.seq;
  r.training.global_batch = run.global_batch;
  r.training.loss = "fused-te";
  r.timing.dp_overlap = run.dp_overlap;
  if (run.moe_padded) {
    r.training.moe_capacity_factor = 1.0;
    r.training.moe_pad_to_capacity = true;
  }
  return 1000 * api::run(r).time.step_s;
}

const std::map<std::string, std::string> kModelFiles = {{"llama3-405b", "llama3-405b-l4-kv16.json"},
                                                        {"deepseekv2", "deepseek-v2-l4.json"},
                                                        {"deepseekv3", "deepseek-v3-l4.json"}};

}  // namespace

ValidationSet b200_megatron_runs(const std::string& repo) {
  const json data = read_json(repo + "/validation/data/b200-megatron-llama3-70b.json");
  ValidationSet set{"Megatron-LM + TE on 8x B200, Llama-3 70B shape (dev runs)", "ms",
                    "validation/data/b200-megatron-llama3-70b.json (MooreThreads/SimuMax)", {}, {}};
  for (const json& run : data.at("runs")) {
    B200Run b{"llama-3.1-70b", "", run.at("layers"), run.at("seq"), run.at("tp"), run.at("pp"),
              run.at("cp"), 1, run.at("global_batch")};
    // The layouts of one global batch are what a plan orders.
    const std::string group = fmt::format("global batch {}", run.at("global_batch").get<std::int64_t>() /
                                                                 run.at("dp").get<std::int64_t>());
    set.rows.push_back({run.at("case"), group, run.at("measured").at("real_ms"), b200_step_ms(repo, b)});
  }
  return set;
}

ValidationSet b200_further_runs(const std::string& repo) {
  const json data = read_json(repo + "/validation/data/b200-simumax-further-runs.json");
  ValidationSet set{"Megatron-LM + TE on 8x B200: 405B shape, DeepSeek-V2/V3, CP a2a", "ms",
                    "validation/data/b200-simumax-further-runs.json (MooreThreads/SimuMax)", {}, {}};
  for (const json& run : data.at("runs")) {
    const std::string model = run.at("model");
    const bool catalog = kModelFiles.count(model) == 0;
    for (const json& it : run.at("iterations")) {
      B200Run b{catalog ? "llama-3.1-70b" : "", catalog ? "" : kModelFiles.at(model), run.at("layers"),
                run.at("seq"), run.at("tp"), run.at("pp"), run.at("cp"), run.at("ep"),
                it.at("mbc").get<std::int64_t>() * run.at("dp").get<std::int64_t>()};
      b.cp_comm = run.at("cp_comm_type");
      b.moe_padded = run.at("moe_pad_to_capacity").is_boolean() && run.at("moe_pad_to_capacity").get<bool>();
      const std::string group = fmt::format("{} seq {} mbc {}", model, run.at("seq").get<std::int64_t>(),
                                            it.at("mbc").get<int>());
      set.rows.push_back({fmt::format("{} mbc {}", run.at("case").get<std::string>(), it.at("mbc").get<int>()), group,
                          it.at("real_ms"), b200_step_ms(repo, b)});
    }
  }
  return set;
}

namespace {

// The rows of published-busbw.csv a catalog system describes as published: (row's system, catalog system, nodes).
struct BusbwSystem {
  const char* row;
  const char* system;
  const char* gpu;          // a GPU other than the system's (empty: the system's)
  int nodes;
};
constexpr BusbwSystem kBusbwSystems[] = {
    {"8x A100 SXM (NVSwitch)", "dgx-a100", "", 1},       {"8x H100 SXM (NVSwitch)", "dgx-h100", "", 1},
    {"8x H800 (NVLink 400 GB/s)", "hgx-h800", "", 1},     {"4x (8x H200)", "dgx-h200", "", 4},
    {"4x (8x B200)", "dgx-b200", "", 4},                 {"GB200 NVL72", "gb200-nvl72", "", 1},
    {"8x MI300X (Infinity Fabric)", "mi300x-8x", "", 1}};

double size_bytes(const std::string& size) {
  if (size == "4GiB") return 4294967296.0;
  if (size == "16GiB") return 17179869184.0;
  if (size == "4GB" || size == "1-8GB") return 4e9;
  if (size == "8GB") return 8e9;
  if (size == "<=128MB") return 134217728.0;
  return 8589934592.0;   // "large": 8 GiB
}


}  // namespace

std::vector<std::vector<std::string>> csv_records(const std::string& path) {
  std::vector<std::vector<std::string>> records;
  std::istringstream in(gpuplan::read_text_file(path, "validation data"));
  bool header = true;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (std::exchange(header, false)) continue;
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, {}));
      else cell += c;
    }
    cells.push_back(cell);
    records.push_back(std::move(cells));
  }
  return records;
}

ValidationSet published_busbw(const std::string& repo) {
  ValidationSet set{"Published all-reduce bus bandwidths (nccl-tests)", "GB/s",
                    "tests/data/nccl-tests/published-busbw.csv (each row's source in the file)", {}, {}};
  for (const std::vector<std::string>& c : csv_records(repo + "/tests/data/nccl-tests/published-busbw.csv")) {
    const auto* match = std::find_if(std::begin(kBusbwSystems), std::end(kBusbwSystems),
                                     [&](const BusbwSystem& s) { return c[0] == s.row && std::stoi(c[2]) == s.nodes; });
    const bool forced_ring = c[7].find("NCCL_ALGO=Ring") != std::string::npos;
    if (match == std::end(kBusbwSystems) || forced_ring) {
      set.not_checked.push_back(fmt::format("{}, {} ({}): {}", c[0], c[5], c[7],
                                            forced_ring ? "an algorithm forced by the user"
                                                        : "no catalog system as published (give its NICs with --catalog)"));
      continue;
    }
    gpuplan::Cluster cluster = gpuplan::make_cluster(match->system, match->nodes);
    if (*match->gpu) cluster.gpu = gpuplan::HardwareCatalog::builtin().gpu(match->gpu);
    const gpuplan::Fabric f = gpuplan::fabric_from_cluster(cluster);
    const std::int64_t ranks = std::stoll(c[1]), per_node = std::min<std::int64_t>(ranks, f.gpus_per_node);
    const double busbw =
        gpuplan::collective_cost(f, gpuplan::Collective::allreduce, size_bytes(c[5]), {ranks, per_node, 1}).busbw_GBps;
    const std::string label = fmt::format("{}, {} ({})", c[0], c[5], c[8]);
    // An acceptance threshold is the least a healthy node must reach, not what one measured: checked as a floor.
    if (c[7].find("acceptance threshold") != std::string::npos) {
      set.not_checked.push_back(fmt::format("{}: a pass threshold, not a measurement; predicted {:.1f} GB/s {} {} GB/s",
                                            label, busbw, busbw >= std::stod(c[6]) ? ">=" : "< (FAILS)", c[6]));
      continue;
    }
    set.rows.push_back({label, label, std::stod(c[6]), busbw});   // each row its own system: nothing to rank
  }
  return set;
}

std::string set_table(const ValidationSet& set) {
  std::string md = fmt::format("\n## {}\n\nSource: {}.\n\n| run | measured ({}) | predicted | error |\n|---|---|---|---|\n",
                               set.name, set.source, set.unit);
  // Two decimals below 100 (step times of a few seconds), one above (milliseconds, GB/s).
  auto value = [](double x) { return x < 100 ? fmt::format("{:.2f}", x) : fmt::format("{:.1f}", x); };
  for (const SetRow& r : set.rows)
    md += fmt::format("| {} | {} | {} | {:+.1f}% |\n", r.label, value(r.measured), value(r.predicted),
                      100 * (r.predicted - r.measured) / r.measured);
  if (!set.not_checked.empty()) {
    md += "\nNot checked:\n\n";
    for (const std::string& n : set.not_checked) md += "- " + n + "\n";
  }
  return md;
}

}  // namespace validation
