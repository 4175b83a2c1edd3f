// Results to and from JSON from one table per type: each member with its key, in the order JSON shows them.
// std::optional members are left out when empty; Nullable ones are null. Reading checks every value's type and
// names the key path of any that is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/api/results.hpp"
#include "gpuplan/error.hpp"

namespace gpuplan::api::detail {

template <typename T, typename V>
struct Member {
  const char* key;
  V T::*field;
};
template <typename T, typename V>
constexpr Member<T, V> member(const char* key, V T::*field) {
  return {key, field};
}

// Specialized for every result type with `static constexpr auto list = std::make_tuple(member(...), ...)`.
template <typename T>
struct Members;

template <typename T>
concept HasMembers = requires { Members<T>::list; };
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsNullable : std::false_type {};
template <typename T>
struct IsNullable<Nullable<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

template <typename T>
void write(nlohmann::ordered_json& out, const T& value);

template <typename T, typename V>
void write_member(nlohmann::ordered_json& out, const T& object, const Member<T, V>& m) {
  const V& value = object.*(m.field);
  if constexpr (IsOptional<V>::value) {
    if (value) write(out[m.key], *value);
  } else {
    write(out[m.key], value);
  }
}

template <typename T>
void write(nlohmann::ordered_json& out, const T& value) {
  if constexpr (HasMembers<T>) {
    out = nlohmann::ordered_json::object();
    std::apply([&](const auto&... m) { (write_member(out, value, m), ...); }, Members<T>::list);
  } else if constexpr (IsNullable<T>::value) {
    if (value) write(out, *value);
    else out = nullptr;
  } else if constexpr (std::is_same_v<T, NamedSeconds>) {
    out = nlohmann::ordered_json::object();
    for (const auto& [name, seconds] : value) out[name] = seconds;
  } else if constexpr (IsVector<T>::value) {
    out = nlohmann::ordered_json::array();
    for (const auto& item : value) write(out.emplace_back(), item);
  } else {
    out = value;
  }
}

[[noreturn]] inline void wrong_type(const std::string& path, const nlohmann::json& value, const char* expected) {
  throw InputError(path, value.dump(), expected);
}

template <typename T>
void read(const nlohmann::json& in, T& value, const std::string& path);

template <typename T, typename V>
void read_member(const nlohmann::json& in, T& object, const Member<T, V>& m, const std::string& path) {
  V& value = object.*(m.field);
  const auto it = in.find(m.key);
  const std::string where = path.empty() ? m.key : path + "." + m.key;
  if constexpr (IsOptional<V>::value) {
    if (it == in.end() || it->is_null()) {
      value.reset();
      return;
    }
    read(*it, value.emplace(), where);
  } else {
    if (it == in.end()) throw InputError(where, "missing", "the key, as gpuplan writes it");
    read(*it, value, where);
  }
}

template <typename T>
void read(const nlohmann::json& in, T& value, const std::string& path) {
  if constexpr (HasMembers<T>) {
    if (!in.is_object()) wrong_type(path, in, "an object");
    std::apply([&](const auto&... m) { (read_member(in, value, m, path), ...); }, Members<T>::list);
  } else if constexpr (IsNullable<T>::value) {
    if (in.is_null()) value.reset();
    else read(in, value.emplace(), path);
  } else if constexpr (std::is_same_v<T, NamedSeconds>) {
    if (!in.is_object()) wrong_type(path, in, "an object of seconds");
    value.clear();
    for (const auto& [name, seconds] : in.items()) {
      if (!seconds.is_number()) wrong_type(path + "." + name, seconds, "a number");
      value.emplace_back(name, seconds.template get<double>());
    }
  } else if constexpr (IsVector<T>::value) {
    if (!in.is_array()) wrong_type(path, in, "an array");
    value.clear();
    for (const auto& item : in) read(item, value.emplace_back(), path + "[]");
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!in.is_boolean()) wrong_type(path, in, "true or false");
    value = in.get<bool>();
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (!in.is_number()) wrong_type(path, in, "a number");
    value = in.template get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!in.is_string()) wrong_type(path, in, "text");
    value = in.get<std::string>();
  } else {
    static_assert(sizeof(T) == 0, "no JSON members for this type");
  }
}

template <typename T>
nlohmann::ordered_json members_to_json(const T& value) {
  nlohmann::ordered_json out;
  write(out, value);
  return out;
}

template <typename T>
T members_from_json(const nlohmann::json& in) {
  T value;
  read(in, value, "");
  return value;
}

}  // namespace gpuplan::api::detail
