// The C++-UDF adapter: C++ UDFs (rayorch_cpp.CppModule) in Python pipelines.
//
// A C++ UDF's Call keeps Python values in its blocks like any other Call: its inputs are
// converted to the C++ types of its run() under the GIL, run() runs without the GIL, and its
// results are converted back to Python objects (ro::Row failures become RecordFailure /
// GroupFailure) and checked like a Python UDF's (udf_output.h).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "py_values.h"
#include "udf_output.h"
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "rayorch/column.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/outcome.h"

namespace rayorch::python {

/// A C++ UDF registered for Python pipelines.
struct CppUdf {
  std::string doc;
  std::size_t inputs = 0;
  std::size_t outputs = 0;
  std::string signature;  ///< constructor argument types, for messages
  /// The actors' factory from the constructor arguments given to pre_init() (a tuple);
  /// throws nanobind::cast_error when they do not convert.
  std::function<rd::Factory(nanobind::handle args)> factory;
  /// The invoker of one Call of the UDF named `name`.
  std::function<rd::Invoker(std::shared_ptr<CallInfo> info, std::string name)> invoker;
};

/// The C++ UDFs usable in Python pipelines, by name (cpp_udf_registry.cc).
const std::map<std::string, CppUdf>& cpp_udfs();

/// The C++ stages of an optional workload, which an extension built without the workload's
/// libraries (the wheel: RAYORCH_WHEEL) leaves out of `cpp_udfs()`.
struct OptionalStages {
  std::string workload;
  std::vector<std::string> stages;
  std::string needs;  ///< the pkg-config modules the build needs for them
  bool built = false;
};

/// Every optional workload's stages, built or not (cpp_udf_registry.cc).
const std::vector<OptionalStages>& optional_stages();

/// Binds `cpp_udfs()` and `optional_stages()`, the listings of the registry, into the extension
/// module.
void bind_cpp_udfs(nanobind::module_& m);

/// The TypeError of an input that does not convert to its C++ type.
[[noreturn]] void throw_input_conversion(const std::string& name, std::size_t input,
                                         const char* detail);

namespace cpp_udf_detail {

namespace nb = nanobind;

/// The C++ values of one input column of a C++ UDF, and the Column view over them.
template <class T>
struct CppColumn {
  std::vector<T> values;
  std::vector<const void*> pointers;
  void load(const rd::ColumnInput& c) {
    values.reserve(c.size);
    for (std::size_t r = 0; r < c.size; ++r)
      values.push_back(nb::cast<T>(nb::handle(object_at(c.data[r]))));
    for (const T& v : values) pointers.push_back(&v);
  }
  Column<T> column() const { return Column<T>(pointers.data(), pointers.size()); }
};

template <class E>
struct CppColumn<Group<E>> {
  std::vector<Group<E>> values;
  std::vector<const void*> pointers;
  void load(const rd::ColumnInput& c) {
    values.reserve(c.size);
    for (std::size_t r = 0; r < c.size; ++r) {
      auto storage = std::make_shared<std::vector<E>>(
          nb::cast<std::vector<E>>(nb::handle(object_at(c.data[r]))));
      std::vector<const void*> members;
      for (const E& e : *storage) members.push_back(&e);
      values.emplace_back(std::move(members), std::move(storage));
    }
    for (const auto& v : values) pointers.push_back(&v);
  }
  Column<Group<E>> column() const { return Column<Group<E>>(pointers.data(), pointers.size()); }
};

template <class T>
PyObject* to_python(const T& value) {
  return nb::cast(value).release().ptr();
}

template <class E>
PyObject* to_python(const Row<E>& row) {
  if (row.ok()) return to_python(row.value());
  PyObject* cls = row.is_group_failure() ? registry.group_failure : registry.record_failure;
  return PyObject_CallFunction(cls, "s#", row.message().data(),
                               static_cast<Py_ssize_t>(row.message().size()));
}

template <class E>
PyObject* column_to_python(const std::vector<E>& column) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(column.size()));
  if (list == nullptr) return nullptr;
  for (std::size_t i = 0; i < column.size(); ++i) {
    PyObject* v = to_python(column[i]);
    if (v == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), v);
  }
  return list;
}

template <class E>
PyObject* result_to_python(const std::vector<E>& result) {
  return column_to_python(result);
}

template <class... E>
PyObject* result_to_python(const std::tuple<std::vector<E>...>& result) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(sizeof...(E)));
  if (tuple == nullptr) return nullptr;
  bool ok = true;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((ok = ok &&
           [&] {
             PyObject* c = column_to_python(std::get<K>(result));
             if (c == nullptr) return false;
             PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(K), c);
             return true;
           }()),
     ...);
  }
  (std::index_sequence_for<E...>{});
  if (!ok) {
    Py_DECREF(tuple);
    return nullptr;
  }
  return tuple;
}

template <class U, std::size_t... I>
rd::RpcOutput invoke_cpp(const CallInfo& info, const std::string& name, U& udf,
                         std::span<const rd::ColumnInput> in, std::index_sequence<I...>) {
  using columns = typename rd::UdfTraits<U>::columns;
  const std::size_t rows = in.empty() ? 0 : in[0].size;
  std::tuple<CppColumn<typename rd::ColumnOf<std::tuple_element_t<I, columns>>::type>...> converted;
  {
    Gil gil;
    std::size_t at = 0;
    try {
      ((at = I, std::get<I>(converted).load(in[I])), ...);
    } catch (const nb::cast_error&) {
      throw_input_conversion(name, at, nullptr);
    } catch (const nb::python_error& e) {
      throw_input_conversion(name, at, e.what());
    }
  }
  auto result = udf.run(std::get<I>(converted).column()...);  // without the GIL
  Gil gil;
  PyObject* py = result_to_python(result);
  if (py == nullptr) throw_foreign();
  Ref owned = Ref::steal(py);
  return checked_output(info, py, rows);
}

}  // namespace cpp_udf_detail

/// The registry entry of the C++ UDF `U`, built from constructor arguments of types Ctor.
template <class U, class... Ctor>
CppUdf register_cpp(std::string doc, std::string signature) {
  namespace nb = nanobind;
  using traits = rd::UdfTraits<U>;
  static_assert(std::tuple_size_v<typename traits::statics> == 0,
                "C++ UDFs for Python take no static arguments");
  CppUdf e;
  e.doc = std::move(doc);
  e.inputs = traits::column_count;
  e.outputs = traits::shape::outputs;
  e.signature = std::move(signature);
  e.factory = [](nb::handle args) -> rd::Factory {
    auto captured =
        std::make_shared<const std::tuple<Ctor...>>(nb::cast<std::tuple<Ctor...>>(args));
    return [captured]() {
      return std::apply(
          [](const Ctor&... a) -> std::unique_ptr<rd::UdfInstance> {
            return std::make_unique<rd::UdfBox<U>>(a...);
          },
          *captured);
    };
  };
  e.invoker = [](std::shared_ptr<CallInfo> info, std::string name) -> rd::Invoker {
    return [info, name](rd::UdfInstance& instance, std::span<const rd::ColumnInput> in) {
      U& udf = static_cast<rd::UdfBox<U>&>(instance).udf;
      return cpp_udf_detail::invoke_cpp(*info, name, udf, in,
                                        std::make_index_sequence<traits::column_count>{});
    };
  };
  return e;
}

}  // namespace rayorch::python
