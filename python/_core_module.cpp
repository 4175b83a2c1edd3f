// gpuplan._core: the library's questions for Python, as dicts in and dicts out. The functions with keyword
// arguments, the typed results and the documentation live in python/gpuplan/__init__.py.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/host.hpp"

namespace py = pybind11;
using gpuplan::InputError;
namespace api = gpuplan::api;

namespace {

// A Python value as JSON: None, bool, int, float, str, os.PathLike, dict, list and tuple; objects with to_dict()
// (a transformers PretrainedConfig) as that dict. Anything else is an InputError naming `where`.
nlohmann::json to_json(py::handle value, const std::string& where) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    try {
      return value.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      throw InputError(where, py::repr(value).cast<std::string>(), "an integer that fits 64 bits");
    }
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::hasattr(value, "__fspath__")) return value.attr("__fspath__")().cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [key, item] : value.cast<py::dict>()) {
      const std::string name = py::str(key).cast<std::string>();
      object[name] = to_json(item, where + "." + name);
    }
    return object;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& item : value) array.push_back(to_json(item, where));
    return array;
  }
  if (py::hasattr(value, "to_dict")) return to_json(value.attr("to_dict")(), where);
  throw InputError(where, py::repr(value).cast<std::string>(), "a number, text, a list or a dict");
}

// A new reference to the Python string of a result's key. Results repeat the same few hundred keys call after
// call, so each is made once and kept (up to a bound, past which keys no schema has are made anew). Called with the
// GIL held.
PyObject* new_key(const std::string& key) {
  static std::unordered_map<std::string, PyObject*> keys;
  if (const auto it = keys.find(key); it != keys.end()) {
    Py_INCREF(it->second);
    return it->second;
  }
  PyObject* made = PyUnicode_FromStringAndSize(key.data(), static_cast<Py_ssize_t>(key.size()));
  if (made != nullptr && keys.size() < 4096) {
    Py_INCREF(made);  // the cache's own reference
    keys.emplace(key, made);
  }
  return made;
}

// A result as Python objects, built with the C API directly: results carry hundreds of values (every memory term
// with its source), and this conversion is most of what a Python call adds to the library's own time.
PyObject* new_python_value(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: Py_RETURN_NONE;
    case nlohmann::json::value_t::boolean: return PyBool_FromLong(j.get<bool>() ? 1 : 0);
    case nlohmann::json::value_t::number_integer: return PyLong_FromLongLong(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return PyLong_FromUnsignedLongLong(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return PyFloat_FromDouble(j.get<double>());
    case nlohmann::json::value_t::string: {
      const std::string& text = j.get_ref<const std::string&>();
      return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
    }
    case nlohmann::json::value_t::array: {
      PyObject* list = PyList_New(static_cast<Py_ssize_t>(j.size()));
      Py_ssize_t i = 0;
      for (const auto& item : j) PyList_SET_ITEM(list, i++, new_python_value(item));  // steals the reference
      return list;
    }
    case nlohmann::json::value_t::object: {
      PyObject* dict = PyDict_New();
      for (const auto& [key, item] : j.items()) {
        PyObject* name = new_key(key);
        PyObject* value = new_python_value(item);
        PyDict_SetItem(dict, name, value);
        Py_DECREF(name);
        Py_DECREF(value);
      }
      return dict;
    }
    default: Py_RETURN_NONE;
  }
}

py::object to_python(const nlohmann::ordered_json& j) { return py::reinterpret_steal<py::object>(new_python_value(j)); }

api::Question question_of(const std::string& name) {
  if (const auto q = api::question_from_string(name)) return *q;
  throw py::value_error("unknown question: " + name);
}

// The error with request fields named as the keyword arguments that set them ("layout.tp" -> "tp"), raised as
// gpuplan.InputError(field, value, accepted).
[[noreturn]] void raise_input_error(const InputError& e, api::Question question) {
  const auto keyword = [](const api::OptionInfo& o) { return std::string(o.name); };
  const std::string field = e.field().empty() ? "" : api::rename_fields(question, e.field(), keyword);
  const py::object cls = py::module_::import("gpuplan._errors").attr("InputError");
  if (e.field().empty()) {
    PyErr_SetObject(cls.ptr(), cls(py::str(e.what()), py::none(), py::none(), py::none()).ptr());
  } else {
    const py::object error = cls(py::str(field + ": " + api::rename_fields(question, e.given(), keyword, true) +
                                         "; accepted: " + api::rename_fields(question, e.accepted(), keyword, true)),
                                 field, api::rename_fields(question, e.given(), keyword, true),
                                 api::rename_fields(question, e.accepted(), keyword, true));
    PyErr_SetObject(cls.ptr(), error.ptr());
  }
  throw py::error_already_set();
}

// One question answered with the GIL released; the progress callback (from one thread) takes it back. An
// exception raised by the callback stops the reports and is raised after the search.
py::object answer(const std::string& name, const py::dict& request, const py::object& progress) {
  const api::Question question = question_of(name);
  try {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [key, value] : request) {
      const std::string option = py::str(key).cast<std::string>();
      json[option] = to_json(value, option);
    }
    std::optional<py::error_already_set> callback_error;
    gpuplan::ProgressCallback report;
    if (!progress.is_none())
      report = [&progress, &callback_error](std::uint64_t done, std::uint64_t total) {
        py::gil_scoped_acquire gil;
        if (callback_error) return;
        try {
          progress(done, total);
        } catch (py::error_already_set& e) {
          callback_error.emplace(std::move(e));
        }
      };
    nlohmann::ordered_json result;
    {
      py::gil_scoped_release released;
      result = api::answer_json(question, json, report);
    }
    if (callback_error) throw std::move(*callback_error);
    return to_python(result);
  } catch (const InputError& e) {
    raise_input_error(e, question);
  }
}

py::list options(const std::string& name) {
  py::list out;
  for (const api::OptionInfo& o : api::request_options(question_of(name))) {
    py::dict d;
    d["name"] = std::string(o.name);
    d["path"] = std::string(o.path);
    d["kind"] = static_cast<int>(o.kind);
    d["value"] = std::string(o.value);
    d["help"] = std::string(o.help);
    d["group"] = std::string(o.group);
    d["negated"] = o.negated;
    d["positional"] = o.positional;
    out.append(d);
  }
  return out;
}

// The library's own time for a question, in seconds per call: answer_json on the request already as JSON, in a
// loop in C++ (for the Python module's overhead benchmark, bench/python_overhead.py).
double time_answer(const std::string& name, const py::dict& request, int repeats) {
  const api::Question question = question_of(name);
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [key, value] : request) json[py::str(key).cast<std::string>()] = to_json(value, "request");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) (void)api::answer_json(question, json).size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / std::max(1, repeats);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "gpuplan's C++ library: each question as a request dict in and a result dict out";
  m.def("answer", &answer, py::arg("question"), py::arg("request"), py::arg("progress") = py::none(),
        "Answers a question (model, memory, estimate, plan, comm, calibrate, topo, catalog) for a request of option "
        "names and values; returns the result as `gpuplan ... --json` prints it.");
  m.def("options", &options, py::arg("question"), "The options of a question's request, as --help lists them.");
  m.def("time_answer", &time_answer, py::arg("question"), py::arg("request"), py::arg("repeats"),
        "Seconds per call of the library itself answering a request (for benchmarks).");
  py::list kinds;
  for (const char* kind : {"integer", "number", "text", "flag", "integer_list", "text_list", "file", "file_list",
                           "model"})
    kinds.append(kind);
  m.attr("OPTION_KINDS") = kinds;
}
