// nccl-tests outputs (all_reduce_perf & co., and vTrain's CSV lookup tables) read into rows.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan {

namespace {

constexpr const char* kAccepted =
    "the text all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf or sendrecv_perf "
    "print (a '#  size  count  type ...  time  algbw  busbw' header and one row per size), or a CSV table "
    "'size(B),count,type,time(ns),busbw(GB/s),...' (vTrain NCCL lookup tables)";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split_ws(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool parse_num(const std::string& s, double& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e && std::isfinite(out);
}

bool parse_int(const std::string& s, double& out) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return false;
  return parse_num(s, out);
}

bool is_numeric_cell(const std::string& s) {
  double d;
  return parse_num(s, d) || s == "N/A" || s == "n/a";
}

[[noreturn]] void reject(const std::string& origin, const std::string& why) {
  throw InputError(origin, "not an nccl-tests output: " + why, kAccepted);
}

std::optional<Collective> collective_in_name(std::string_view text) {
  const std::string s = lower(text);
  struct Hint {
    const char* needle;
    Collective c;
  };
  static const Hint hints[] = {
      {"all_reduce", Collective::allreduce},      {"allreduce", Collective::allreduce},
      {"all_gather", Collective::allgather},      {"allgather", Collective::allgather},
      {"reduce_scatter", Collective::reducescatter}, {"reducescatter", Collective::reducescatter},
      {"alltoall", Collective::alltoall},         {"all_to_all", Collective::alltoall},
      {"all2all", Collective::alltoall},          {"broadcast", Collective::broadcast},
      {"sendrecv", Collective::sendrecv},         {"send_recv", Collective::sendrecv}};
  for (const auto& h : hints)
    if (s.find(h.needle) != std::string::npos) return h.c;
  return std::nullopt;
}

// vTrain names its tables AR_GPU8_..., AG_..., RS_..., A2A_...
std::optional<Collective> collective_in_file_name(std::string_view origin) {
  if (auto c = collective_in_name(origin)) return c;
  std::string base(origin);
  const auto slash = base.find_last_of("/\\");
  if (slash != std::string::npos) base = base.substr(slash + 1);
  const std::string b = lower(base);
  if (b.rfind("ar_", 0) == 0) return Collective::allreduce;
  if (b.rfind("ag_", 0) == 0) return Collective::allgather;
  if (b.rfind("rs_", 0) == 0) return Collective::reducescatter;
  if (b.rfind("a2a_", 0) == 0) return Collective::alltoall;
  return std::nullopt;
}

// "GPU8", "8gpu", "8gpus", "np8", "n8" in a file name.
int ranks_in_file_name(std::string_view origin) {
  std::string base(origin);
  const auto slash = base.find_last_of("/\\");
  if (slash != std::string::npos) base = base.substr(slash + 1);
  const std::string b = lower(base);
  auto digits_after = [&](std::size_t pos) {
    int v = 0, nd = 0;
    while (pos < b.size() && std::isdigit(static_cast<unsigned char>(b[pos])) && nd < 6) v = v * 10 + (b[pos++] - '0'), ++nd;
    return nd > 0 ? v : 0;
  };
  for (std::size_t p = b.find("gpu"); p != std::string::npos; p = b.find("gpu", p + 1)) {
    if (int v = digits_after(p + 3); v > 0) return v;
    // "8gpu": digits before
    std::size_t q = p;
    while (q > 0 && std::isdigit(static_cast<unsigned char>(b[q - 1]))) --q;
    if (q < p) return std::stoi(b.substr(q, p - q));
  }
  for (std::size_t p = b.find("np"); p != std::string::npos; p = b.find("np", p + 1))
    if (int v = digits_after(p + 2); v > 0) return v;
  return 0;
}

struct Columns {
  int size = -1, time = -1, algbw = -1, busbw = -1, time2 = -1, count = -1;
  std::size_t ncols = 0;
  double time_scale_us = 1.0;   // multiply the time column by this to get microseconds
};

}  // namespace

NcclTestsLog parse_nccl_tests(std::string_view text, std::string_view origin_view, std::optional<Collective> fallback,
                              int ranks_hint) {
  const std::string origin(origin_view);
  NcclTestsLog log;
  log.origin = origin;
  if (text.find('\0') != std::string_view::npos) reject(origin, "binary data");

  std::optional<Collective> coll;
  std::set<std::string> hosts;
  std::set<int> rank_ids;
  std::optional<Columns> header;
  bool csv = false;
  int ngpus_header = 0;
  std::size_t skipped = 0, inconsistent = 0;

  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    std::string line = raw;
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (line[0] == '#') {
      const std::string body = line.substr(1);
      const auto toks = split_ws(body);
      const std::string lb = lower(body);
      if (!coll) {
        if (lb.find("collective test starting") != std::string::npos || lb.find("_perf") != std::string::npos)
          coll = collective_in_name(lb);
      }
      if (lb.find("avg bus bandwidth") != std::string::npos) {
        const auto colon = body.find(':');
        double v;
        if (colon != std::string::npos) {
          const auto t = split_ws(body.substr(colon + 1));
          if (!t.empty() && parse_num(t[0], v)) log.avg_busbw_GBps = v;
        }
        continue;
      }
      // "#  Rank  0 Group  0 Pid 1234 on host1 device  0 [0x07] NVIDIA A100-SXM4-80GB"
      if (toks.size() >= 2 && lower(toks[0]) == "rank") {
        double r;
        if (parse_int(toks[1], r) && r < 1e9) rank_ids.insert(static_cast<int>(r));
        for (std::size_t i = 0; i + 1 < toks.size(); ++i)
          if (toks[i] == "on") hosts.insert(toks[i + 1]);
        continue;
      }
      // "# nThread 1 nGpus 8 minBytes ..."
      for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
        double v;
        if (lower(toks[i]) == "ngpus" && parse_int(toks[i + 1], v) && v < 1e9) ngpus_header = static_cast<int>(v);
      }
      // Column header: "size count type redop root time algbw busbw #wrong time algbw busbw #wrong".
      if (!toks.empty() && lower(toks[0]) == "size") {
        Columns c;
        c.ncols = toks.size();
        for (std::size_t i = 0; i < toks.size(); ++i) {
          const std::string t = lower(toks[i]);
          const int idx = static_cast<int>(i);
          if (t == "count") c.count = idx;
          if (t == "time") {
            if (c.time < 0) c.time = idx;
            else if (c.time2 < 0) c.time2 = idx;
          }
          if (t == "algbw" && c.algbw < 0) c.algbw = idx;
          if (t == "busbw" && c.busbw < 0) c.busbw = idx;
        }
        c.size = 0;
        if (c.time >= 0 && c.busbw >= 0) header = c;
      }
      continue;
    }
    // vTrain CSV header: size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)
    if (line.find(',') != std::string::npos && lower(line).rfind("size", 0) == 0) {
      const auto cells = split_csv(lower(line));
      Columns c;
      c.ncols = cells.size();
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::string& t = cells[i];
        const int idx = static_cast<int>(i);
        if (t.rfind("size", 0) == 0) c.size = idx;
        if (t.rfind("count", 0) == 0) c.count = idx;
        if (t.rfind("time", 0) == 0) {
          if (c.time < 0) c.time = idx;
          else if (c.time2 < 0) c.time2 = idx;
          c.time_scale_us = t.find("(ns)") != std::string::npos ? 1e-3
                            : t.find("(ms)") != std::string::npos ? 1e3
                            : t.find("(s)") != std::string::npos  ? 1e6
                                                                   : 1.0;
        }
        if (t.rfind("algbw", 0) == 0 && c.algbw < 0) c.algbw = idx;
        if (t.rfind("busbw", 0) == 0 && c.busbw < 0) c.busbw = idx;
      }
      if (c.size >= 0 && c.time >= 0) {
        header = c;
        csv = true;
      }
      continue;
    }
    // A data row.
    const auto toks = csv ? split_csv(line) : split_ws(line);
    double size = 0, count = 0;
    if (toks.size() < 4 || !parse_int(toks[0], size) || !parse_int(toks[1], count)) {
      ++skipped;
      continue;
    }
    double t1 = -1, t2 = -1, algbw = -1, busbw = -1;
    if (header && toks.size() == header->ncols) {
      const Columns& c = *header;
      auto cell = [&](int idx, double& v) { return idx >= 0 && parse_num(toks[static_cast<std::size_t>(idx)], v); };
      if (!cell(c.time, t1)) {
        ++skipped;
        continue;
      }
      t1 *= c.time_scale_us;
      if (cell(c.time2, t2)) t2 *= c.time_scale_us;
      else t2 = -1;
      if (!cell(c.algbw, algbw)) algbw = -1;
      if (!cell(c.busbw, busbw)) busbw = -1;
    } else {
      // No (matching) header: after size and count come the type, an optional redop, an optional root, then
      // groups of time, algbw, busbw, #wrong (out-of-place, in-place).
      std::size_t i = 2;
      while (i < toks.size() && !is_numeric_cell(toks[i])) ++i;
      if (i == 2 || i >= toks.size()) {
        ++skipped;
        continue;
      }
      std::vector<std::string> rest(toks.begin() + static_cast<long>(i), toks.end());
      if (rest.size() == 9 || rest.size() == 5) rest.erase(rest.begin());   // root
      if (rest.size() != 8 && rest.size() != 4) {
        ++skipped;
        continue;
      }
      if (!parse_num(rest[0], t1) || !parse_num(rest[1], algbw) || !parse_num(rest[2], busbw)) {
        ++skipped;
        continue;
      }
      if (rest.size() == 8 && !parse_num(rest[4], t2)) t2 = -1;
    }
    if (!(t1 > 0) || (size <= 0)) continue;   // size 0 rows time nothing
    const double time_us = t2 > 0 ? 0.5 * (t1 + t2) : t1;
    const double computed_algbw = size / (t1 * 1e3);
    if (algbw >= 0) {
      // nccl-tests prints algbw = size / time with two decimals: a mismatch means these are not its columns.
      if (std::fabs(algbw - computed_algbw) > 0.05 * computed_algbw + 0.011) {
        ++inconsistent;
        continue;
      }
    }
    NcclTestsRow row;
    row.size_bytes = size;
    row.time_us = time_us;
    row.algbw_GBps = size / (time_us * 1e3);
    row.busbw_GBps = busbw;   // factor applied below when it was not printed
    log.rows.push_back(row);
  }

  if (log.rows.empty()) {
    if (inconsistent > 0)
      reject(origin, fmt::format("{} row(s) whose algbw is not size/time", inconsistent));
    if (header) reject(origin, "a column header but no result rows");
    reject(origin, "no '#  size  count  type ... time  algbw  busbw' header and no result rows");
  }
  if (inconsistent > 0)
    log.warnings.push_back(fmt::format("{} row(s) skipped: algbw is not size/time", inconsistent));
  if (skipped > 0) log.warnings.push_back(fmt::format("{} line(s) that are not result rows were ignored", skipped));

  // Which collective.
  if (!coll) coll = collective_in_file_name(origin);
  if (!coll) coll = fallback;
  if (!coll)
    throw InputError(origin, "an nccl-tests output that does not say which collective it measured",
                     "a file whose text or name says (all_reduce_perf, AR_..., ...), or the collective given on "
                     "the command line: gpuplan comm allreduce --calibrate FILE");
  log.collective = *coll;

  // How many ranks.
  log.hosts = static_cast<int>(hosts.size());
  if (ranks_hint > 0) log.ranks = ranks_hint;
  else if (!rank_ids.empty()) log.ranks = static_cast<int>(rank_ids.size());
  else if (int from_name = ranks_in_file_name(origin); from_name > 0) log.ranks = from_name;
  else {
    // From busbw / algbw, which is nccl-tests' factor: 2(n-1)/n or (n-1)/n.
    const NcclTestsRow* best = nullptr;
    for (const auto& r : log.rows)
      if (r.busbw_GBps > 0 && (best == nullptr || r.algbw_GBps > best->algbw_GBps)) best = &r;
    if (best != nullptr && best->algbw_GBps >= 1 && log.collective != Collective::broadcast &&
        log.collective != Collective::sendrecv) {
      const double ratio = best->busbw_GBps / best->algbw_GBps;
      const double n = log.collective == Collective::allreduce ? 2.0 / (2.0 - ratio) : 1.0 / (1.0 - ratio);
      if (std::isfinite(n) && n >= 1.5 && n < 100000) log.ranks = static_cast<int>(std::lround(n));
    }
    if (log.ranks == 0 && ngpus_header > 0) log.ranks = ngpus_header;
  }
  if (log.ranks < 2)
    throw InputError(origin, "an nccl-tests output whose number of ranks cannot be told",
                     "an output with its '#  Rank' lines, or the rank count given with --ranks");
  const double factor = busbw_factor(log.collective, log.ranks);
  // Printed busbw (out-of-place) must match the factor for that many ranks.
  for (const auto& r : log.rows) {
    if (r.algbw_GBps < 1 || r.busbw_GBps <= 0) continue;
    const double ratio = r.busbw_GBps / (r.size_bytes / (r.time_us * 1e3));
    if (std::fabs(ratio - factor) > 0.05 * factor + 0.02) {
      log.warnings.push_back(fmt::format(
          "busbw/algbw = {:.3f} at {} bytes, but nccl-tests' factor for {} on {} ranks is {:.3f}: check --ranks",
          ratio, r.size_bytes, to_string(log.collective), log.ranks, factor));
      break;
    }
  }
  // busbw of the (averaged) time, by nccl-tests' definition.
  for (auto& r : log.rows) r.busbw_GBps = r.algbw_GBps * factor;
  return log;
}

}  // namespace gpuplan
