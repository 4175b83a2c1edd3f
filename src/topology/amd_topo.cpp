// Parsers for AMD's `rocm-smi --showtopo` and `amd-smi topology`, and the format detection of parse_topology.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "topology/topo_text.hpp"
#include "util/from_chars.hpp"

namespace gpuplan {

using namespace topo_text;

namespace {

constexpr std::size_t kMaxGpus = 1024;

struct Matrix {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> cells;  // rows in header order
};

// Reads a labelled square matrix whose header starts at lines[start] (the first non-blank line from there).
Matrix read_matrix(const std::vector<std::string>& lines, std::size_t start, std::string_view what) {
  std::size_t i = start;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  if (i == lines.size()) throw InputError(fmt::format("{}: the table ends before its header", what));
  Matrix m;
  m.labels = tokens(lines[i]);
  if (m.labels.empty() || m.labels.size() > kMaxGpus) {
    throw InputError(fmt::format("{}: the table header names {} GPUs; accepted: 1 to {}", what, m.labels.size(),
                                 kMaxGpus));
  }
  const std::size_t n = m.labels.size();
  m.cells.assign(n, {});
  std::vector<bool> seen(n, false);
  for (++i; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    if (line.empty() || line.starts_with("=") || line.back() == ':') break;
    auto t = tokens(line);
    const auto it = std::find(m.labels.begin(), m.labels.end(), t[0]);
    if (it == m.labels.end()) break;
    const auto r = static_cast<std::size_t>(it - m.labels.begin());
    if (t.size() != n + 1) {
      throw InputError(fmt::format("{}: the matrix is not square: row {} has {} entries but the header names {} "
                                   "GPUs; accepted: one entry per column", what, excerpt(t[0]), t.size() - 1, n));
    }
    if (seen[r]) throw InputError(fmt::format("{}: row {} appears twice; accepted: one row per GPU", what, t[0]));
    seen[r] = true;
    m.cells[r].assign(t.begin() + 1, t.end());
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (!seen[r]) {
      throw InputError(fmt::format("{}: no row for {} (output cut off?); accepted: one row per GPU column", what,
                                   excerpt(m.labels[r])));
    }
  }
  return m;
}

std::size_t find_line(const std::vector<std::string>& lines, std::string_view needle) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) return i;
  }
  return lines.size();
}

// Link-type cells to codes; the diagonal becomes "X".
std::vector<std::vector<std::string>> link_codes(const Matrix& m, std::string_view what, std::string_view self) {
  const std::size_t n = m.labels.size();
  std::vector<std::vector<std::string>> links;
  for (std::size_t i = 0; i < n; ++i) {
    links.emplace_back();
    for (std::size_t j = 0; j < n; ++j) {
      const std::string& c = m.cells[i][j];
      if (i == j) {
        if (c != self) {
          throw InputError(fmt::format("{}: row {}, column {}: the diagonal entry is '{}'; accepted: {}", what,
                                       m.labels[i], m.labels[j], excerpt(c), self));
        }
        links[i].emplace_back("X");
        continue;
      }
      const PathType t = classify_code(c).type;
      if (t != PathType::xgmi && t != PathType::pcie) {
        throw InputError(fmt::format("{}: row {}, column {}: unknown link type '{}'; accepted: XGMI, PCIE", what,
                                     m.labels[i], m.labels[j], excerpt(c)));
      }
      links[i].emplace_back(t == PathType::xgmi ? "XGMI" : "PCIE");
    }
  }
  return links;
}

}  // namespace

Topology parse_rocm_smi_topo(std::string_view text) {
  const auto lines = clean_lines(text);
  constexpr std::string_view what = "rocm-smi --showtopo";
  const std::size_t at = find_line(lines, "Link Type between two GPUs");
  if (at == lines.size()) {
    throw InputError("not a rocm-smi --showtopo output: no 'Link Type between two GPUs' table");
  }
  const Matrix m = read_matrix(lines, at + 1, what);
  Topology topo;
  topo.format = "rocm-smi --showtopo";
  for (std::size_t i = 0; i < m.labels.size(); ++i) {
    if (m.labels[i] != fmt::format("GPU{}", i)) {
      throw InputError(std::string(what), fmt::format("column '{}' at position {}", excerpt(m.labels[i]), i + 1),
                       fmt::format("GPU0, GPU1, ... in order (expected GPU{})", i));
    }
  }
  topo.links = link_codes(m, what, "0");
  for (std::size_t i = 0; i < m.labels.size(); ++i) {
    TopoGpu gpu;
    gpu.index = static_cast<int>(i);
    topo.gpus.push_back(std::move(gpu));
  }
  // "GPU[3]          : (Topology) Numa Node: 0"
  for (const auto& raw : lines) {
    const std::string line = trim(raw);
    if (!line.starts_with("GPU[")) continue;
    const auto close = line.find(']');
    const auto key = line.find("Numa Node:");
    int g = 0;
    int node = 0;
    if (close == std::string::npos || key == std::string::npos || !parse_int(line.substr(4, close - 4), g)) continue;
    if (g < 0 || static_cast<std::size_t>(g) >= topo.gpus.size()) continue;
    const std::string v = trim(std::string_view(line).substr(key + 10));
    if (parse_int(v, node)) {
      topo.gpus[g].numa_node = node;
      topo.gpus[g].numa_affinity = {node};
    }
  }
  if (find_line(lines, "Numa Node:") == lines.size()) topo.warnings.push_back("no Numa Nodes section: NUMA unknown");
  return topo;
}

Topology parse_amd_smi_topology(std::string_view text) {
  const auto lines = clean_lines(text);
  constexpr std::string_view what = "amd-smi topology";
  const std::size_t at = find_line(lines, "LINK TYPE TABLE:");
  if (at == lines.size()) throw InputError("not an amd-smi topology output: no 'LINK TYPE TABLE:'");
  const Matrix m = read_matrix(lines, at + 1, what);
  Topology topo;
  topo.format = "amd-smi topology";
  topo.links = link_codes(m, what, "SELF");
  for (std::size_t i = 0; i < m.labels.size(); ++i) {
    TopoGpu gpu;
    gpu.index = static_cast<int>(i);
    gpu.pci_bus_id = m.labels[i];
    topo.gpus.push_back(std::move(gpu));
  }
  const std::size_t bw = find_line(lines, "NUMA BW TABLE:");
  if (bw != lines.size()) {
    const Matrix b = read_matrix(lines, bw + 1, what);
    if (b.labels != m.labels) {
      topo.warnings.push_back("NUMA BW TABLE names other GPUs than LINK TYPE TABLE: ignored");
    } else {
      const std::size_t n = m.labels.size();
      topo.reported_bandwidth_GBps.assign(n, std::vector<double>(n, 0.0));
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          const std::string& c = b.cells[i][j];
          if (i == j || equals_ci(c, "N/A")) continue;
          const auto dash = c.find('-');
          const std::string hi = dash == std::string::npos ? c : c.substr(dash + 1);
          double v = 0;
          const auto [ptr, ec] = detail::from_chars_double(hi.data(), hi.data() + hi.size(), v);
          if (ec != std::errc() || ptr != hi.data() + hi.size() || !(v >= 0) || v > 1e9) {
            throw InputError(fmt::format("{}: NUMA BW TABLE row {}, column {}: '{}'; accepted: <min>-<max> in MB/s "
                                         "or N/A", what, b.labels[i], b.labels[j], excerpt(c)));
          }
          topo.reported_bandwidth_GBps[i][j] = v / 1000.0;  // MB/s -> GB/s
        }
      }
    }
  }
  topo.warnings.push_back("amd-smi topology gives no NUMA nodes or CPU affinity");
  return topo;
}

Topology parse_topology(std::string_view text) {
  const auto lines = clean_lines(text);
  if (find_line(lines, "Link Type between two GPUs") != lines.size()) return parse_rocm_smi_topo(text);
  if (find_line(lines, "LINK TYPE TABLE:") != lines.size()) return parse_amd_smi_topology(text);
  try {
    return parse_nvidia_smi_topo(text);
  } catch (const InputError&) {
    // A `nvidia-smi nvlink -s` output given where a topology was expected: say so.
    bool nvlink = false;
    try {
      nvlink = !parse_nvlink_status(text).gpus.empty();
    } catch (const InputError&) {
    }
    if (nvlink) {
      throw InputError("this is an nvidia-smi nvlink -s output, not a topology: pass it with --nvlink next to a "
                       "`nvidia-smi topo -m` file");
    }
    throw;
  }
}

}  // namespace gpuplan
