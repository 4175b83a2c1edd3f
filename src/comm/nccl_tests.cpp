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
#include "util/from_chars.hpp"

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
  auto r = detail::from_chars_double(b, e, out);
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

// What the lines read so far say, besides the result rows.
struct ParseState {
  std::optional<Collective> collective;  // from the "Collective test starting: all_reduce_perf" or "*_perf" line
  std::set<std::string> hosts;           // hosts of the "#  Rank ... on HOST ..." lines
  std::set<int> rank_ids;                // ranks of those lines
  std::optional<Columns> header;         // the last valid column header
  bool csv = false;                      // the header was a CSV one: rows are comma-separated
  int ngpus_header = 0;                  // "# nThread 1 nGpus 8 ..."; 0 when not printed
  std::size_t skipped = 0;               // lines that are not result rows
  std::size_t inconsistent = 0;          // rows whose algbw is not size/time
};

// Column header: "size count type redop root time algbw busbw #wrong time algbw busbw #wrong". The first time
// column is out-of-place, the second in-place. nullopt without a time and a busbw column.
std::optional<Columns> text_header(const std::vector<std::string>& toks) {
  Columns columns;
  columns.ncols = toks.size();
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const std::string name = lower(toks[i]);
    const int idx = static_cast<int>(i);
    if (name == "count") columns.count = idx;
    if (name == "time") {
      if (columns.time < 0) columns.time = idx;
      else if (columns.time2 < 0) columns.time2 = idx;
    }
    if (name == "algbw" && columns.algbw < 0) columns.algbw = idx;
    if (name == "busbw" && columns.busbw < 0) columns.busbw = idx;
  }
  columns.size = 0;
  if (columns.time >= 0 && columns.busbw >= 0) return columns;
  return std::nullopt;
}

// Microseconds per unit of a time column named "time(ns)", "time(ms)", "time(s)"; plain "time" is in us.
double time_unit_us(const std::string& name) {
  if (name.find("(ns)") != std::string::npos) return 1e-3;
  if (name.find("(ms)") != std::string::npos) return 1e3;
  if (name.find("(s)") != std::string::npos) return 1e6;
  return 1.0;
}

// vTrain CSV header: size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s). nullopt without a size and a
// time column.
std::optional<Columns> csv_header(const std::string& line) {
  const auto cells = split_csv(lower(line));
  Columns columns;
  columns.ncols = cells.size();
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string& name = cells[i];
    const int idx = static_cast<int>(i);
    if (name.rfind("size", 0) == 0) columns.size = idx;
    if (name.rfind("count", 0) == 0) columns.count = idx;
    if (name.rfind("time", 0) == 0) {
      if (columns.time < 0) columns.time = idx;
      else if (columns.time2 < 0) columns.time2 = idx;
      columns.time_scale_us = time_unit_us(name);
    }
    if (name.rfind("algbw", 0) == 0 && columns.algbw < 0) columns.algbw = idx;
    if (name.rfind("busbw", 0) == 0 && columns.busbw < 0) columns.busbw = idx;
  }
  if (columns.size >= 0 && columns.time >= 0) return columns;
  return std::nullopt;
}

// A line starting with '#' (body: the rest): the collective's name, the average bus bandwidth, the ranks and
// their hosts, the GPU count, or the column header.
void read_comment_line(const std::string& body, ParseState& state, NcclTestsLog& log) {
  const auto toks = split_ws(body);
  const std::string lowered = lower(body);
  if (!state.collective) {
    if (lowered.find("collective test starting") != std::string::npos || lowered.find("_perf") != std::string::npos)
      state.collective = collective_in_name(lowered);
  }
  if (lowered.find("avg bus bandwidth") != std::string::npos) {
    const auto colon = body.find(':');
    double value;
    if (colon != std::string::npos) {
      const auto cells = split_ws(body.substr(colon + 1));
      if (!cells.empty() && parse_num(cells[0], value)) log.avg_busbw_GBps = value;
    }
    return;
  }
  // "#  Rank  0 Group  0 Pid 1234 on host1 device  0 [0x07] NVIDIA A100-SXM4-80GB"
  if (toks.size() >= 2 && lower(toks[0]) == "rank") {
    double rank;
    if (parse_int(toks[1], rank) && rank < 1e9) state.rank_ids.insert(static_cast<int>(rank));
    for (std::size_t i = 0; i + 1 < toks.size(); ++i)
      if (toks[i] == "on") state.hosts.insert(toks[i + 1]);
    return;
  }
  // "# nThread 1 nGpus 8 minBytes ..."
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    double gpus;
    if (lower(toks[i]) == "ngpus" && parse_int(toks[i + 1], gpus) && gpus < 1e9)
      state.ngpus_header = static_cast<int>(gpus);
  }
  if (!toks.empty() && lower(toks[0]) == "size") {
    if (auto columns = text_header(toks)) state.header = columns;
  }
}

// One result row's figures: size, out-of-place time, in-place time (-1 when absent), algbw and busbw (-1 when
// absent). Times in microseconds.
struct RowFigures {
  double size = 0;
  double time = -1;
  double time_in_place = -1;
  double algbw = -1;
  double busbw = -1;
};

// The cells under a header of the same width. False when the time cell is not a number.
bool figures_by_header(const std::vector<std::string>& toks, const Columns& columns, RowFigures& row) {
  auto cell = [&](int index, double& value) {
    return index >= 0 && parse_num(toks[static_cast<std::size_t>(index)], value);
  };
  if (!cell(columns.time, row.time)) return false;
  row.time *= columns.time_scale_us;
  if (cell(columns.time2, row.time_in_place)) row.time_in_place *= columns.time_scale_us;
  else row.time_in_place = -1;
  if (!cell(columns.algbw, row.algbw)) row.algbw = -1;
  if (!cell(columns.busbw, row.busbw)) row.busbw = -1;
  return true;
}

// No (matching) header: after size and count come the type, an optional redop, an optional root, then groups of
// time, algbw, busbw, #wrong (out-of-place, in-place). False when the cells do not fit that layout.
bool figures_by_layout(const std::vector<std::string>& toks, RowFigures& row) {
  std::size_t i = 2;
  while (i < toks.size() && !is_numeric_cell(toks[i])) ++i;
  if (i == 2 || i >= toks.size()) return false;
  std::vector<std::string> rest(toks.begin() + static_cast<long>(i), toks.end());
  if (rest.size() == 9 || rest.size() == 5) rest.erase(rest.begin());   // root
  if (rest.size() != 8 && rest.size() != 4) return false;
  if (!parse_num(rest[0], row.time) || !parse_num(rest[1], row.algbw) || !parse_num(rest[2], row.busbw)) return false;
  if (rest.size() == 8 && !parse_num(rest[4], row.time_in_place)) row.time_in_place = -1;
  return true;
}

// A line that is neither a comment nor a header: a result row, or a line counted as skipped or inconsistent.
void read_data_row(const std::string& line, ParseState& state, NcclTestsLog& log) {
  const auto toks = state.csv ? split_csv(line) : split_ws(line);
  RowFigures row;
  double count = 0;
  if (toks.size() < 4 || !parse_int(toks[0], row.size) || !parse_int(toks[1], count)) {
    ++state.skipped;
    return;
  }
  const bool by_header = state.header && toks.size() == state.header->ncols;
  if (!(by_header ? figures_by_header(toks, *state.header, row) : figures_by_layout(toks, row))) {
    ++state.skipped;
    return;
  }
  if (!(row.time > 0) || (row.size <= 0)) return;   // size 0 rows time nothing
  const double time_us = row.time_in_place > 0 ? 0.5 * (row.time + row.time_in_place) : row.time;
  const double computed_algbw = row.size / (row.time * 1e3);
  if (row.algbw >= 0) {
    // nccl-tests prints algbw = size / time with two decimals: a mismatch means these are not its columns.
    if (std::fabs(row.algbw - computed_algbw) > 0.05 * computed_algbw + 0.011) {
      ++state.inconsistent;
      return;
    }
  }
  NcclTestsRow result;
  result.size_bytes = row.size;
  result.time_us = time_us;
  result.algbw_GBps = row.size / (time_us * 1e3);
  result.busbw_GBps = row.busbw;   // factor applied below when it was not printed
  log.rows.push_back(result);
}

void read_lines(std::string_view text, ParseState& state, NcclTestsLog& log) {
  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const auto first = raw.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const std::string line = raw.substr(first);
    if (line[0] == '#') {
      read_comment_line(line.substr(1), state, log);
    } else if (line.find(',') != std::string::npos && lower(line).rfind("size", 0) == 0) {
      if (auto columns = csv_header(line)) {
        state.header = columns;
        state.csv = true;
      }
    } else {
      read_data_row(line, state, log);
    }
  }
}

// No result rows: why. Otherwise a warning per kind of line left out.
void check_rows(const std::string& origin, const ParseState& state, NcclTestsLog& log) {
  if (log.rows.empty()) {
    if (state.inconsistent > 0)
      reject(origin, fmt::format("{} row(s) whose algbw is not size/time", state.inconsistent));
    if (state.header) reject(origin, "a column header but no result rows");
    reject(origin, "no '#  size  count  type ... time  algbw  busbw' header and no result rows");
  }
  if (state.inconsistent > 0)
    log.warnings.push_back(fmt::format("{} row(s) skipped: algbw is not size/time", state.inconsistent));
  if (state.skipped > 0)
    log.warnings.push_back(fmt::format("{} line(s) that are not result rows were ignored", state.skipped));
}

// The text, then the file name, then the caller's fallback.
Collective which_collective(const ParseState& state, const std::string& origin, std::optional<Collective> fallback) {
  std::optional<Collective> collective = state.collective;
  if (!collective) collective = collective_in_file_name(origin);
  if (!collective) collective = fallback;
  if (!collective)
    throw InputError(origin, "an nccl-tests output that does not say which collective it measured",
                     "a file whose text or name says (all_reduce_perf, AR_..., ...), or the collective given on "
                     "the command line: gpuplan comm allreduce --calibrate FILE");
  return *collective;
}

// From busbw / algbw, which is nccl-tests' factor: 2(n-1)/n or (n-1)/n. 0 when the rows cannot tell.
int ranks_from_busbw(const NcclTestsLog& log) {
  const NcclTestsRow* best = nullptr;
  for (const auto& row : log.rows)
    if (row.busbw_GBps > 0 && (best == nullptr || row.algbw_GBps > best->algbw_GBps)) best = &row;
  if (best == nullptr || !(best->algbw_GBps >= 1) || log.collective == Collective::broadcast ||
      log.collective == Collective::sendrecv)
    return 0;
  const double ratio = best->busbw_GBps / best->algbw_GBps;
  const double ranks = log.collective == Collective::allreduce ? 2.0 / (2.0 - ratio) : 1.0 / (1.0 - ratio);
  if (std::isfinite(ranks) && ranks >= 1.5 && ranks < 100000) return static_cast<int>(std::lround(ranks));
  return 0;
}

// The caller's count, the "#  Rank" lines, the file name, busbw / algbw, then nGpus.
void count_ranks(const ParseState& state, const std::string& origin, int ranks_hint, NcclTestsLog& log) {
  log.hosts = static_cast<int>(state.hosts.size());
  if (ranks_hint > 0) log.ranks = ranks_hint;
  else if (!state.rank_ids.empty()) log.ranks = static_cast<int>(state.rank_ids.size());
  else if (int from_name = ranks_in_file_name(origin); from_name > 0) log.ranks = from_name;
  else {
    log.ranks = ranks_from_busbw(log);
    if (log.ranks == 0 && state.ngpus_header > 0) log.ranks = state.ngpus_header;
  }
  if (log.ranks < 2)
    throw InputError(origin, "an nccl-tests output whose number of ranks cannot be told",
                     "an output with its '#  Rank' lines, or the rank count given with --ranks");
}

// Sets busbw from the (averaged) time by nccl-tests' definition, after checking that the printed busbw
// (out-of-place) matches the factor for that many ranks.
void apply_busbw_factor(NcclTestsLog& log) {
  const double factor = busbw_factor(log.collective, log.ranks);
  for (const auto& row : log.rows) {
    if (row.algbw_GBps < 1 || row.busbw_GBps <= 0) continue;
    const double ratio = row.busbw_GBps / (row.size_bytes / (row.time_us * 1e3));
    if (std::fabs(ratio - factor) > 0.05 * factor + 0.02) {
      log.warnings.push_back(fmt::format(
          "busbw/algbw = {:.3f} at {} bytes, but nccl-tests' factor for {} on {} ranks is {:.3f}: check --ranks",
          ratio, row.size_bytes, to_string(log.collective), log.ranks, factor));
      break;
    }
  }
  for (auto& row : log.rows) row.busbw_GBps = row.algbw_GBps * factor;
}

}  // namespace

NcclTestsLog parse_nccl_tests(std::string_view text, std::string_view origin_view, std::optional<Collective> fallback,
                              int ranks_hint) {
  const std::string origin(origin_view);
  NcclTestsLog log;
  log.origin = origin;
  if (text.find('\0') != std::string_view::npos) reject(origin, "binary data");
  ParseState state;
  read_lines(text, state, log);
  check_rows(origin, state, log);
  log.collective = which_collective(state, origin, fallback);
  count_ranks(state, origin, ranks_hint, log);
  apply_busbw_factor(log);
  return log;
}

}  // namespace gpuplan
