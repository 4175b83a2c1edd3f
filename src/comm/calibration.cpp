// Calibration: fit latency and bus bandwidth per tier to nccl-tests rows, write and read the override file.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "comm/constants.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "util/json_input.hpp"
#include "util/json_text.hpp"

namespace gpuplan {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

double ring_steps(Collective c, int n) {
  return c == Collective::allreduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
}

// One nccl-tests row as a least-squares equation: t_us = columns . coefficients, with the columns
// [1, ring steps, x at the 1st rank count, x at the 2nd, ...] (x = size x busbw factor in bytes, 0 in the columns
// of the other rank counts): a latency, a latency per ring step, and 1 / bus bandwidth per rank count.
struct Equation {
  std::vector<double> columns;
  double t_us = 0;
};

// Weighted least squares (weights 1/t^2: relative residuals) on the columns `use` selects; false when singular.
bool solve(const std::vector<Equation>& equations, const std::vector<bool>& use, std::vector<double>& coef) {
  std::vector<std::size_t> idx;
  for (std::size_t j = 0; j < use.size(); ++j)
    if (use[j]) idx.push_back(j);
  const std::size_t k = idx.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));   // augmented normal equations
  for (const Equation& e : equations) {
    const double w = 1.0 / (e.t_us * e.t_us);
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = 0; b < k; ++b) m[a][b] += w * e.columns[idx[a]] * e.columns[idx[b]];
      m[a][k] += w * e.columns[idx[a]] * e.t_us;
    }
  }
  // Gauss-Jordan elimination with partial pivoting.
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) piv = r;
    if (std::fabs(m[piv][c]) < 1e-300) return false;
    std::swap(m[c], m[piv]);
    for (std::size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (std::size_t q = c; q <= k; ++q) m[r][q] -= f * m[c][q];
    }
  }
  coef.assign(use.size(), 0.0);
  for (std::size_t a = 0; a < k; ++a) coef[idx[a]] = m[a][k] / m[a][a];   // column k: the right-hand side
  return true;
}

// The equations of a tier's rows; `rank_counts` (sorted) gives each rank count its bandwidth column when there
// are several. Counts the distinct ring-step counts, which decide whether a per-step latency can be fitted.
std::vector<Equation> tier_equations(const std::vector<const NcclTestsLog*>& logs, const std::vector<int>& rank_counts,
                                     std::set<double>& steps_seen) {
  std::vector<Equation> equations;
  const bool per_ranks = rank_counts.size() >= 2;
  for (const auto* l : logs) {
    const double factor = busbw_factor(l->collective, l->ranks);
    const double steps = ring_steps(l->collective, l->ranks);
    const auto at = std::lower_bound(rank_counts.begin(), rank_counts.end(), l->ranks) - rank_counts.begin();
    const std::size_t column = 2 + (per_ranks ? static_cast<std::size_t>(at) : 0);
    for (const auto& r : l->rows) {
      Equation e{std::vector<double>(2 + (per_ranks ? rank_counts.size() : 1), 0.0), r.time_us};
      e.columns[0] = 1.0;
      e.columns[1] = steps;
      e.columns[column] = r.size_bytes * factor;
      equations.push_back(std::move(e));
      steps_seen.insert(steps);
    }
  }
  return equations;
}

// Fits the coefficients; a negative latency or step latency is dropped and the rest refitted.
std::vector<double> fit_coefficients(const std::vector<Equation>& equations, bool with_steps, const char* tier) {
  std::vector<bool> use(equations.front().columns.size(), true);
  use[1] = with_steps;
  std::vector<double> coef;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!solve(equations, use, coef)) {
      if (use[1]) {
        use[1] = false;
        continue;
      }
      throw InputError(fmt::format("logs ({} tier)", tier), "rows from which no fit can be made",
                       "rows of several sizes");
    }
    bool again = false;
    if (use[1] && coef[1] < 0) use[1] = false, again = true;
    else if (use[0] && coef[0] < 0) use[0] = false, again = true;
    if (!again) break;
  }
  for (std::size_t j = 2; j < coef.size(); ++j)
    if (!(coef[j] > 0))
      throw InputError(fmt::format("logs ({} tier)", tier), "times that do not grow with the size",
                       "nccl-tests rows spanning sizes large enough to be bandwidth-bound (MiB to GiB)");
  return coef;
}

TierFit fit_tier(const std::vector<const NcclTestsLog*>& logs, const char* tier) {
  TierFit out;
  if (logs.empty()) return out;
  std::set<int> distinct;
  for (const auto* l : logs) {
    if (l->ranks < 2)
      throw InputError(l->origin, fmt::format("{} rank(s)", l->ranks), "a log of 2 or more ranks (a collective)");
    out.sources.push_back(l->origin);
    distinct.insert(l->ranks);
  }
  const std::vector<int> rank_counts(distinct.begin(), distinct.end());
  std::set<double> steps_seen;
  const std::vector<Equation> equations = tier_equations(logs, rank_counts, steps_seen);
  if (equations.size() < 2)
    throw InputError(fmt::format("logs ({} tier)", tier), fmt::format("{} result row(s)", equations.size()),
                     "at least 2 sizes per tier to fit a latency and a bandwidth");
  const std::vector<double> coef = fit_coefficients(equations, steps_seen.size() >= 2, tier);
  out.fitted = true;
  out.files = static_cast<int>(logs.size());
  out.points = static_cast<int>(equations.size());
  out.calibration.latency_us = std::max(0.0, coef[0]);
  out.calibration.step_latency_us = std::max(0.0, coef[1]);
  out.calibration.bus_GBps = 1.0 / coef.back() / 1e3;   // bytes/us -> GB/s; the largest group measured
  if (rank_counts.size() >= 2)
    for (std::size_t i = 0; i < rank_counts.size(); ++i)
      out.calibration.bus_GBps_by_ranks[rank_counts[i]] = 1.0 / coef[2 + i] / 1e3;
  double sum = 0, worst = 0;
  for (const Equation& e : equations) {
    double predicted = 0;
    for (std::size_t j = 0; j < coef.size(); ++j) predicted += coef[j] * e.columns[j];
    const double relative = std::fabs(predicted - e.t_us) / e.t_us;
    sum += relative;
    worst = std::max(worst, relative);
  }
  out.mean_rel_error = sum / static_cast<double>(equations.size());
  out.max_rel_error = worst;
  return out;
}

[[noreturn]] void bad(const std::string& field, const json& v, const std::string& accepted) {
  std::string given = v.dump();
  if (given.size() > 80) given = given.substr(0, 77) + "...";
  throw InputError(field, given, accepted);
}

void check_keys(const json& obj, const std::string& where, const std::vector<std::string>& keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (!k.empty() && k[0] == '_') continue;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      const std::string hint = did_you_mean(k, keys);
      std::string list;
      for (const auto& x : keys) list += (list.empty() ? "" : ", ") + x;
      throw InputError(where + "." + k, "an unknown key" + (hint.empty() ? "" : " (" + hint + ")"), list);
    }
  }
}

// [{"ranks": 2, "bus_GBps": 197.1}, ...]: ranks 2 or more, each once, a bandwidth above 0.
std::map<int, double> read_bus_by_ranks(const json& list, const std::string& where) {
  const std::string field = where + ".bus_GBps_by_ranks";
  const char* accepted = "an array of {\"ranks\": 2 or more, \"bus_GBps\": above 0}, each rank count once";
  if (!list.is_array()) bad(field, list, accepted);
  std::map<int, double> by_ranks;
  for (const json& entry : list) {
    if (!entry.is_object() || entry.size() != 2 || !entry.contains("ranks") || !entry.contains("bus_GBps"))
      bad(field, entry, accepted);
    const json& ranks = entry.at("ranks");
    const json& bus = entry.at("bus_GBps");
    if (!ranks.is_number_integer() || ranks.get<std::int64_t>() < 2 || ranks.get<std::int64_t>() > 1'000'000 ||
        !bus.is_number() || !(bus.get<double>() > 0) || bus.get<double>() > 1e6 ||
        !by_ranks.emplace(ranks.get<int>(), bus.get<double>()).second)
      bad(field, entry, accepted);
  }
  return by_ranks;
}

TierCalibration read_tier(const json& v, const std::string& where) {
  if (!v.is_object()) bad(where, v, "an object with bus_GBps, latency_us, step_latency_us");
  check_keys(v, where, {"bus_GBps", "latency_us", "step_latency_us", "bus_GBps_by_ranks", "fit", "sources"});
  TierCalibration t;
  auto num = [&](const char* key, double hi) {
    if (!v.contains(key) || v.at(key).is_null()) return 0.0;
    const json& x = v.at(key);
    if (!x.is_number() || !(x.get<double>() >= 0) || x.get<double>() > hi)
      bad(where + "." + key, x, fmt::format("a number from 0 to {}", hi));
    return x.get<double>();
  };
  t.bus_GBps = num("bus_GBps", 1e6);
  t.latency_us = num("latency_us", 1e7);
  t.step_latency_us = num("step_latency_us", 1e6);
  if (v.contains("bus_GBps_by_ranks")) t.bus_GBps_by_ranks = read_bus_by_ranks(v.at("bus_GBps_by_ranks"), where);
  return t;
}

}  // namespace

double calibrated_bus_GBps(const TierCalibration& calibration, int ranks) {
  const auto& by_ranks = calibration.bus_GBps_by_ranks;
  if (by_ranks.empty()) return calibration.bus_GBps;
  const auto above = by_ranks.lower_bound(ranks);
  if (above == by_ranks.begin()) return above->second;
  if (above == by_ranks.end()) return std::prev(above)->second;
  if (above->first == ranks) return above->second;
  const auto below = std::prev(above);
  const double span = std::log2(static_cast<double>(above->first) / below->first);
  const double at = std::log2(static_cast<double>(ranks) / below->first) / span;
  return below->second + at * (above->second - below->second);
}

CommCalibration calibrate_comm(const std::vector<NcclTestsLog>& logs, int gpus_per_node) {
  if (logs.empty()) throw InputError("logs", "no files", "one or more nccl-tests output files");
  std::vector<const NcclTestsLog*> intra, inter;
  for (const auto& l : logs) {
    if (l.collective == Collective::sendrecv || l.collective == Collective::broadcast)
      throw InputError(l.origin, fmt::format("a {} output", to_string(l.collective)),
                       "all_reduce_perf, all_gather_perf, reduce_scatter_perf or alltoall_perf output");
    const bool across = l.hosts > 1 || (gpus_per_node > 0 && l.ranks > gpus_per_node);
    (across ? inter : intra).push_back(&l);
  }
  CommCalibration c;
  c.intra = fit_tier(intra, "intra-node");
  c.inter = fit_tier(inter, "inter-node");
  return c;
}

std::string comm_calibration_json(const CommCalibration& cal) {
  ordered_json comm;
  comm["_comment"] = "Fitted by gpuplan comm --calibrate: t = latency_us + steps x step_latency_us + size x factor / "
                     "bus_GBps per tier (docs/comm.md). Use with --comm-calibration.";
  std::vector<std::string> all;
  auto tier = [&](const TierFit& t) {
    ordered_json j;
    j["bus_GBps"] = t.calibration.bus_GBps;
    j["latency_us"] = t.calibration.latency_us;
    j["step_latency_us"] = t.calibration.step_latency_us;
    if (!t.calibration.bus_GBps_by_ranks.empty()) {
      ordered_json by_ranks = ordered_json::array();
      for (const auto& [ranks, bus] : t.calibration.bus_GBps_by_ranks)
        by_ranks.push_back({{"ranks", ranks}, {"bus_GBps", bus}});
      j["bus_GBps_by_ranks"] = by_ranks;
    }
    j["fit"] = {{"rows", t.points}, {"files", t.files}, {"mean_rel_error", t.mean_rel_error},
                {"max_rel_error", t.max_rel_error}};
    j["sources"] = t.sources;
    for (const auto& s : t.sources) all.push_back(s);
    return j;
  };
  if (cal.intra.fitted) comm["intra"] = tier(cal.intra);
  if (cal.inter.fitted) comm["inter"] = tier(cal.inter);
  comm["sources"] = all;
  ordered_json doc;
  doc["comm"] = comm;
  return gpuplan::detail::json_text(doc, 2) + "\n";
}

void apply_comm_overrides(Fabric& fabric, std::string_view json_text, std::string_view origin_view) {
  const std::string origin(origin_view);
  const json doc = detail::parse_json_input(json_text, origin, "a JSON object with a \"comm\" section");
  if (!doc.is_object() || !doc.contains("comm"))
    throw InputError(origin, doc.is_object() ? "an object without a \"comm\" section" : std::string(doc.type_name()),
                     "a JSON object with a \"comm\" section (as gpuplan comm --calibrate --out writes)");
  const json& comm = doc.at("comm");
  const std::string where = origin + ": comm";
  if (!comm.is_object()) bad(where, comm, "an object with intra, inter, constants, sources");
  check_keys(comm, where, {"intra", "inter", "constants", "sources"});
  Fabric next = fabric;
  if (comm.contains("intra")) next.intra = read_tier(comm.at("intra"), where + ".intra");
  if (comm.contains("inter")) next.inter = read_tier(comm.at("inter"), where + ".inter");
  if (comm.contains("constants")) {
    const CommConstants& base = fabric.constants ? *fabric.constants : *builtin_comm_constants();
    next.constants = patch_comm_constants(base, comm.at("constants"), origin);
  }
  if (comm.contains("sources")) {
    const json& s = comm.at("sources");
    if (!s.is_array()) bad(where + ".sources", s, "an array of file names");
    for (const auto& x : s) {
      if (!x.is_string()) bad(where + ".sources", x, "a file name (string)");
      next.calibration_sources.push_back(x.get<std::string>());
    }
  }
  if (next.calibration_sources.empty() && (comm.contains("intra") || comm.contains("inter")))
    next.calibration_sources.push_back(origin);
  fabric = std::move(next);
}

}  // namespace gpuplan
