// Live topology discovery through NVML, loaded at run time with dlopen: no build dependency on CUDA or the driver.
// The few declarations below follow nvml.h (NVIDIA Management Library API reference).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan {

namespace {

using nvmlReturn_t = int;  // NVML_SUCCESS == 0
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr int kFeatureEnabled = 1;        // NVML_FEATURE_ENABLED

struct nvmlPciInfo_t {  // nvmlPciInfo_st (v3 layout)
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

// nvmlGpuTopologyLevel_t
constexpr int kTopoSingle = 10;
constexpr int kTopoMultiple = 20;
constexpr int kTopoHostbridge = 30;
constexpr int kTopoNode = 40;

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using CountFn = nvmlReturn_t (*)(unsigned int*);
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using AncestorFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t, int*);
using LinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
using RemotePciFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using PciFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using NameFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);

const char* kPassFile =
    "pass a file instead: run `nvidia-smi topo -m > topo.txt` on the GPU machine and then `gpuplan topo topo.txt` "
    "(or `rocm-smi --showtopo` / `amd-smi topology` on AMD)";

class Library {
 public:
  Library() : handle_(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  bool loaded() const { return handle_ != nullptr; }
  template <typename Fn>
  Fn get(const char* name) const {
    void* p = dlsym(handle_, name);
    if (p == nullptr) {
      throw InputError(fmt::format("NVML: libnvidia-ml.so.1 lacks {} (driver too old?); {}", name, kPassFile));
    }
    Fn fn = nullptr;
    static_assert(sizeof(fn) == sizeof(p));
    std::memcpy(&fn, &p, sizeof(fn));
    return fn;
  }

 private:
  void* handle_;
};

std::string lower_bus(const char* s) {
  std::string out(s, strnlen(s, 32));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Topology discover_topology_nvml() {
  Library lib;
  if (!lib.loaded()) {
    throw InputError(fmt::format("no NVIDIA driver found (libnvidia-ml.so.1 could not be loaded): {}", kPassFile));
  }
  const auto init = lib.get<InitFn>("nvmlInit_v2");
  const auto shutdown = lib.get<ShutdownFn>("nvmlShutdown");
  const auto count_fn = lib.get<CountFn>("nvmlDeviceGetCount_v2");
  const auto handle_fn = lib.get<HandleFn>("nvmlDeviceGetHandleByIndex_v2");
  const auto ancestor_fn = lib.get<AncestorFn>("nvmlDeviceGetTopologyCommonAncestor");
  const auto state_fn = lib.get<LinkStateFn>("nvmlDeviceGetNvLinkState");
  const auto remote_fn = lib.get<RemotePciFn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  const auto pci_fn = lib.get<PciFn>("nvmlDeviceGetPciInfo_v3");
  const auto name_fn = lib.get<NameFn>("nvmlDeviceGetName");
  if (const nvmlReturn_t rc = init(); rc != kNvmlSuccess) {
    throw InputError(fmt::format("NVML could not start (nvmlInit_v2 returned {}: no GPU or driver?); {}", rc, kPassFile));
  }
  struct Guard {
    ShutdownFn fn;
    ~Guard() { fn(); }
  } guard{shutdown};

  unsigned int count = 0;
  if (count_fn(&count) != kNvmlSuccess || count == 0) {
    throw InputError(fmt::format("NVML reports no GPUs; {}", kPassFile));
  }
  Topology topo;
  topo.format = "nvml";
  std::vector<nvmlDevice_t> dev(count);
  std::map<std::string, int> by_bus;
  for (unsigned int i = 0; i < count; ++i) {
    if (handle_fn(i, &dev[i]) != kNvmlSuccess) throw InputError(fmt::format("NVML: no handle for GPU {}; {}", i, kPassFile));
    TopoGpu g;
    g.index = static_cast<int>(i);
    char name[96] = {};
    if (name_fn(dev[i], name, sizeof(name)) == kNvmlSuccess) g.name = std::string(name, strnlen(name, sizeof(name)));
    nvmlPciInfo_t pci{};
    if (pci_fn(dev[i], &pci) == kNvmlSuccess) {
      g.pci_bus_id = lower_bus(pci.busId);
      by_bus[g.pci_bus_id] = g.index;
    }
    topo.gpus.push_back(std::move(g));
  }
  // NVLinks: to other GPUs directly, or into switches (every switch-attached pair then shares the fabric).
  std::vector<std::map<int, int>> direct(count);
  std::vector<int> to_switch(count, 0);
  for (unsigned int i = 0; i < count; ++i) {
    for (unsigned int l = 0; l < kNvlinkMaxLinks; ++l) {
      int state = 0;
      if (state_fn(dev[i], l, &state) != kNvmlSuccess || state != kFeatureEnabled) continue;
      nvmlPciInfo_t remote{};
      if (remote_fn(dev[i], l, &remote) != kNvmlSuccess) continue;
      const auto it = by_bus.find(lower_bus(remote.busId));
      if (it != by_bus.end()) ++direct[i][it->second];
      else ++to_switch[i];
    }
  }
  auto pair_code = [&](unsigned int i, unsigned int j) -> std::string {
    if (i == j) return std::string("X");
    int nv = 0;
    if (auto it = direct[i].find(static_cast<int>(j)); it != direct[i].end()) nv = it->second;
    if (nv == 0 && to_switch[i] > 0 && to_switch[j] > 0) nv = std::min(to_switch[i], to_switch[j]);
    if (nv > 0) return fmt::format("NV{}", nv);
    int level = -1;
    if (ancestor_fn(dev[i], dev[j], &level) != kNvmlSuccess) return std::string("?");
    const char* code = level <= kTopoSingle ? "PIX" : level <= kTopoMultiple ? "PXB" : level <= kTopoHostbridge ? "PHB"
                       : level <= kTopoNode ? "NODE" : "SYS";
    return std::string(code);
  };
  for (unsigned int i = 0; i < count; ++i) {
    std::vector<std::string> row;
    for (unsigned int j = 0; j < count; ++j) row.push_back(pair_code(i, j));
    topo.links.push_back(std::move(row));
  }
  topo.warnings.push_back("discovered through NVML: NICs, CPU and NUMA affinity are not read; pass a `nvidia-smi topo "
                          "-m` file for GPU-NIC pairing");
  return topo;
}

}  // namespace gpuplan
