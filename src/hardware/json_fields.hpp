#pragma once
// Reading one catalog entry (a JSON object) field by field, with errors that name the file, the entry and the
// field, say what was given and what is accepted. Unknown keys are rejected with the closest key suggested, so a
// typo in a user catalog cannot pass silently. Keys starting with '_' are comments.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::hwjson {

class Entry {
 public:
  Entry(const nlohmann::json& j, std::string origin, std::string path, std::initializer_list<const char*> allowed)
      : j_(j), origin_(std::move(origin)), path_(std::move(path)) {
    if (!j_.is_object()) throw InputError(origin_ + ": " + path_, std::string(j_.type_name()), "an object");
    std::vector<std::string> keys(allowed.begin(), allowed.end());
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      const std::string& k = it.key();
      if (!k.empty() && k[0] == '_') continue;
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        const std::string hint = did_you_mean(k, keys);
        throw InputError(field(k), "an unknown key" + (hint.empty() ? "" : " (" + hint + ")"),
                         fmt::format("{}", fmt::join(keys, ", ")));
      }
    }
  }

  std::string field(std::string_view key) const { return origin_ + ": " + path_ + "." + std::string(key); }

  // Every key of `required` the entry lacks, named in one error: a new entry written by hand learns all of them at
  // once instead of one per run.
  void require(std::initializer_list<const char*> required) const {
    std::vector<std::string> missing;
    for (const char* key : required)
      if (!has(key)) missing.emplace_back(key);
    if (missing.empty()) return;
    throw InputError(origin_ + ": " + path_, fmt::format("missing {}", fmt::join(missing, ", ")),
                     fmt::format("an entry with {} (docs/hardware.md; 'gpuplan catalog KIND NAME --json' shows a "
                                 "built-in one)",
                                 fmt::join(required, ", ")));
  }

  const nlohmann::json* find(const char* key) const {
    auto it = j_.find(key);
    return (it == j_.end() || it->is_null()) ? nullptr : &*it;
  }
  bool has(const char* key) const { return find(key) != nullptr; }

  std::string string(const char* key, std::optional<std::string> fallback = std::nullopt) const {
    const auto* v = find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      throw InputError(field(key), "(missing)", "a string");
    }
    if (!v->is_string()) throw InputError(field(key), v->dump(), "a string");
    return v->get<std::string>();
  }

  double number(const char* key, std::optional<double> fallback, double lo, double hi) const {
    const auto* v = find(key);
    const std::string accepted = fmt::format("a number from {} to {}", lo, hi);
    if (v == nullptr) {
      if (fallback) return *fallback;
      throw InputError(field(key), "(missing)", accepted);
    }
    if (!v->is_number()) throw InputError(field(key), v->dump(), accepted);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) throw InputError(field(key), v->dump(), accepted);
    return x;
  }

  int integer(const char* key, std::optional<int> fallback, int lo, int hi) const {
    const auto* v = find(key);
    const std::string accepted = fmt::format("a whole number from {} to {}", lo, hi);
    if (v == nullptr) {
      if (fallback) return *fallback;
      throw InputError(field(key), "(missing)", accepted);
    }
    if (!v->is_number_integer()) throw InputError(field(key), v->dump(), accepted);
    const long long x = v->get<long long>();
    if (x < lo || x > hi) throw InputError(field(key), v->dump(), accepted);
    return static_cast<int>(x);
  }

  // A byte count: a positive whole number of bytes, or a string with a unit ("2 TB", "96 GiB").
  bytes_t bytes(const char* key) const {
    const auto* v = find(key);
    const char* accepted = "a positive number of bytes, or a size string such as \"2 TB\" or \"80 GiB\"";
    if (v == nullptr) throw InputError(field(key), "(missing)", accepted);
    bytes_t b = 0;
    if (v->is_number_integer()) {
      b = v->get<bytes_t>();
    } else if (v->is_number_float()) {
      const double d = v->get<double>();
      if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e18) throw InputError(field(key), v->dump(), accepted);
      b = static_cast<bytes_t>(d);
    } else if (v->is_string()) {
      b = parse_bytes(v->get<std::string>(), field(key));
    } else {
      throw InputError(field(key), v->dump(), accepted);
    }
    if (b <= 0) throw InputError(field(key), v->dump(), accepted);
    return b;
  }

  std::vector<std::string> string_list(const char* key) const {
    std::vector<std::string> out;
    const auto* v = find(key);
    if (v == nullptr) return out;
    if (!v->is_array()) throw InputError(field(key), v->dump(), "an array of strings");
    for (const auto& x : *v) {
      if (!x.is_string()) throw InputError(field(key), x.dump(), "an array of strings");
      out.push_back(x.get<std::string>());
    }
    return out;
  }

  std::map<std::string, double, std::less<>> number_map(const char* key,
                                                        std::initializer_list<const char*> allowed) const {
    std::map<std::string, double, std::less<>> out;
    const auto* v = find(key);
    if (v == nullptr) return out;
    if (!v->is_object()) throw InputError(field(key), v->dump(), "an object of positive numbers");
    const std::vector<std::string> names(allowed.begin(), allowed.end());
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string sub = std::string(key) + "." + it.key();
      if (!it.key().empty() && it.key()[0] == '_') continue;
      if (std::find(names.begin(), names.end(), it.key()) == names.end()) {
        const std::string hint = did_you_mean(it.key(), names);
        throw InputError(field(sub), "an unknown key" + (hint.empty() ? "" : " (" + hint + ")"),
                         fmt::format("{}", fmt::join(names, ", ")));
      }
      if (it->is_null()) continue;
      if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
        throw InputError(field(sub), it->dump(), "a positive number");
      out.emplace(it.key(), it->get<double>());
    }
    return out;
  }

  template <typename T>
  T choice(const char* key, const std::vector<std::pair<std::string, T>>& options) const {
    const std::string given = string(key);
    std::vector<std::string> names;
    for (const auto& [n, t] : options) {
      if (n == given) return t;
      names.push_back(n);
    }
    const std::string hint = did_you_mean(given, names);
    throw InputError(field(key), "'" + given + "'" + (hint.empty() ? "" : " (" + hint + ")"),
                     fmt::format("{}", fmt::join(names, ", ")));
  }

  // A nested object, read with the same rules.
  Entry object(const char* key, std::initializer_list<const char*> allowed) const {
    const auto* v = find(key);
    if (v == nullptr) throw InputError(field(key), "(missing)", "an object");
    return Entry(*v, origin_, path_ + "." + key, allowed);
  }

  // "source": required, non-empty.
  std::string source() const {
    std::string s = string("source");
    if (s.find_first_not_of(" \t\n") == std::string::npos)
      throw InputError(field("source"), "an empty string", "where the values come from");
    return s;
  }

  // "sources": optional object of per-field notes.
  std::map<std::string, std::string> sources() const {
    std::map<std::string, std::string> out;
    const auto* v = find("sources");
    if (v == nullptr) return out;
    if (!v->is_object()) throw InputError(field("sources"), v->dump(), "an object of field name to source text");
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (!it->is_string()) throw InputError(field("sources." + it.key()), it->dump(), "a string");
      out.emplace(it.key(), it->get<std::string>());
    }
    return out;
  }

 private:
  const nlohmann::json& j_;
  std::string origin_;
  std::string path_;
};

}  // namespace gpuplan::hwjson
