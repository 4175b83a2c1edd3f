// gpuplan catalog: the built-in GPUs, links, systems and models (with any catalog files merged), each with its
// sources.
#include <algorithm>

#include "api/resolve.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan::api {

namespace {

ModelSummary model_summary(const std::string& name) {
  const ModelConfig m = model_from_catalog(name);
  const ParamCounts p = count_params(m);
  return ModelSummary{name, m.model_type, m.layers, m.hidden, p.total, p.active};
}

template <typename Map>
auto values_of(const Map& map) {
  std::vector<typename Map::mapped_type> out;
  for (const auto& [name, entry] : map) out.push_back(entry);
  return out;
}

std::vector<ModelSummary> all_models() {
  std::vector<ModelSummary> out;
  for (const auto& name : model_catalog_names()) out.push_back(model_summary(name));
  return out;
}

}  // namespace

CatalogResult run(const CatalogRequest& r) {
  static const std::vector<std::string> kinds = {"gpus", "links", "systems", "models"};
  const std::string kind = r.kind.value_or("");
  if (!kind.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    const std::string hint = did_you_mean(kind, kinds);
    throw InputError("kind", "'" + kind + "'" + (hint.empty() ? "" : " (" + hint + ")"), "gpus, links, systems or models");
  }
  if (r.name && kind.empty()) throw InputError("name", *r.name, "a kind first: gpus, links, systems or models");
  const auto catalog_owner = detail::resolve_catalog(r.catalog, "catalog");
  const HardwareCatalog& catalog = *catalog_owner;
  CatalogResult out;
  if (r.name) {  // one entry, every field with its sources
    out.detail = true;
    try {
      if (kind == "gpus") out.gpus = std::vector<GpuSpec>{catalog.gpu(*r.name)};
      else if (kind == "links") out.links = std::vector<LinkSpec>{catalog.link(*r.name)};
      else if (kind == "systems") out.systems = std::vector<SystemSpec>{catalog.system(*r.name)};
      else out.models = std::vector<ModelSummary>{model_summary(*r.name)};
    } catch (const InputError& e) {  // the lookups name the option that usually gives the name
      throw InputError("name", e.given(), e.accepted());
    }
    return out;
  }
  const bool all = kind.empty();
  if (all || kind == "gpus") out.gpus = values_of(catalog.gpus());
  if (all || kind == "links") out.links = values_of(catalog.links());
  if (all || kind == "systems") out.systems = values_of(catalog.systems());
  if (all || kind == "models") out.models = all_models();
  return out;
}

}  // namespace gpuplan::api
