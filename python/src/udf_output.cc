#include "udf_output.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace rayorch::python {

namespace {

/// The result's columns, or a contract error message.
std::string split_columns(const CallInfo& info, PyObject* result, std::size_t rows,
                          std::vector<PyObject*>& columns) {
  if (info.outputs == 1) {
    columns.push_back(result);
  } else {
    if (!PyList_Check(result) && !PyTuple_Check(result)) {
      return fmt::format(
          "the UDF declares {} outputs, so it must return a tuple or list of {} "
          "columns; it returned {}",
          info.outputs, info.outputs, type_name_of(result));
    }
    const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(result));
    if (n != info.outputs) {
      return fmt::format("{} outputs for {} declared", n, info.outputs);
    }
    for (std::size_t k = 0; k < n; ++k)
      columns.push_back(PySequence_Fast_GET_ITEM(result, static_cast<Py_ssize_t>(k)));
  }
  for (std::size_t k = 0; k < columns.size(); ++k) {
    PyObject* c = columns[k];
    if (!PyList_Check(c) && !PyTuple_Check(c)) {
      return fmt::format(
          "output {} must be a list or tuple with one element per input row; "
          "the UDF returned {}",
          k, type_name_of(c));
    }
    const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(c));
    if (n != rows) return fmt::format("output {} has {} rows for {} input rows", k, n, rows);
  }
  return {};
}

rd::RowKind failure_kind(PyObject* v) {
  if (registry.group_failure &&
      PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(registry.group_failure)))
    return rd::RowKind::group_failure;
  if (registry.record_failure &&
      PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(registry.record_failure)))
    return rd::RowKind::record_failure;
  return rd::RowKind::ok;
}

/// The text of a typed failure's cause, as the reference gives it: none for None (the
/// OutputIssue's cause is then None), str(cause), or the type's name when str() raises.
std::string cause_text(PyObject* cause) {
  if (cause == Py_None) return std::string();
  PyObject* s = PyObject_Str(cause);
  if (s != nullptr) {
    Py_DECREF(s);
    return str_of(cause);
  }
  PyErr_Clear();
  PyObject* name = PyType_GetName(Py_TYPE(cause));
  if (name == nullptr) {
    PyErr_Clear();
    return type_name_of(cause);
  }
  std::string out = str_of(name);
  Py_DECREF(name);
  return out;
}

/// The typed failures of the rows (empty when none): a GroupFailure in any output wins over
/// a RecordFailure.
void find_failures(const std::vector<PyObject*>& columns, std::size_t rows,
                   std::vector<rd::RowKind>& kinds, std::vector<std::string>& messages) {
  for (PyObject* c : columns) {
    PyObject** items = PySequence_Fast_ITEMS(c);
    for (std::size_t r = 0; r < rows; ++r) {
      const rd::RowKind k = failure_kind(items[r]);
      if (k == rd::RowKind::ok) continue;
      if (kinds.empty()) {
        kinds.assign(rows, rd::RowKind::ok);
        messages.assign(rows, std::string());
      }
      if (kinds[r] == rd::RowKind::ok ||
          (k == rd::RowKind::group_failure && kinds[r] == rd::RowKind::record_failure)) {
        kinds[r] = k;
        PyObject* cause = PyObject_GetAttrString(items[r], "cause");
        if (cause == nullptr) {
          PyErr_Clear();
          messages[r] = str_of(items[r]);
        } else {
          messages[r] = cause_text(cause);
          Py_DECREF(cause);
        }
      }
    }
  }
}

/// Fills `out` from columns whose contract holds.
void keep_columns(const CallInfo& info, const std::vector<PyObject*>& columns, std::size_t rows,
                  const std::vector<rd::RowKind>& kinds, std::vector<std::string>& messages,
                  rd::RpcOutput& out) {
  auto failed = [&](std::size_t r) { return !kinds.empty() && kinds[r] != rd::RowKind::ok; };
  for (std::size_t k = 0; k < columns.size(); ++k) {
    PyObject** items = PySequence_Fast_ITEMS(columns[k]);
    auto block = std::make_shared<PyBlock>();
    block->rows.resize(rows);
    if (info.expanded[k]) {
      std::size_t total = 0;
      for (std::size_t r = 0; r < rows; ++r)
        if (!failed(r)) total += static_cast<std::size_t>(PySequence_Fast_GET_SIZE(items[r]));
      block->children.resize(total);
    }
    std::vector<const void*> values(rows, nullptr);
    std::size_t next_child = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      if (failed(r)) continue;
      PyObject* v = items[r];
      PyValue& pv = block->rows[r];
      pv.obj = Py_NewRef(v);
      pv.truth = v == Py_True;
      if (info.expanded[k]) {
        const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(v));
        PyObject** elements = PySequence_Fast_ITEMS(v);
        pv.children = block->children.data() + next_child;
        pv.child_count = n;
        for (std::size_t i = 0; i < n; ++i) {
          PyValue& child = block->children[next_child++];
          child.obj = Py_NewRef(elements[i]);
          child.truth = elements[i] == Py_True;
        }
      }
      values[r] = &pv;
    }
    out.blocks.push_back(std::move(block));
    out.values.push_back(std::move(values));
  }
  for (std::size_t r = 0; r < kinds.size(); ++r) {
    if (kinds[r] != rd::RowKind::ok) {
      out.failures.push_back(
          rd::RowFailure{static_cast<std::uint32_t>(r), kinds[r], std::move(messages[r])});
    }
  }
}

}  // namespace

rd::RpcOutput checked_output(const CallInfo& info, PyObject* result, std::size_t rows) {
  rd::RpcOutput out;
  std::vector<PyObject*> columns;
  out.contract_error = split_columns(info, result, rows, columns);
  if (!out.contract_error.empty()) return out;
  std::vector<rd::RowKind> kinds;
  std::vector<std::string> messages;
  find_failures(columns, rows, kinds, messages);
  // The contracts of expanded and mask outputs are checked before anything is kept, so a
  // broken contract leaves no blocks behind.
  for (std::size_t k = 0; k < columns.size(); ++k) {
    PyObject** items = PySequence_Fast_ITEMS(columns[k]);
    for (std::size_t r = 0; r < rows; ++r) {
      if (!kinds.empty() && kinds[r] != rd::RowKind::ok) continue;
      if (info.expanded[k] && !PyList_Check(items[r]) && !PyTuple_Check(items[r])) {
        out.contract_error = fmt::format(
            "output {} is expanded (F.expand), so each row must be a list or "
            "tuple; row {} is {}",
            k, r, type_name_of(items[r]));
        return out;
      }
      if (info.mask[k] && !PyBool_Check(items[r])) {
        out.contract_error = fmt::format(
            "output {} is an F.filter mask, so each row must be a bool; row {} "
            "is {}",
            k, r, type_name_of(items[r]));
        return out;
      }
    }
  }
  keep_columns(info, columns, rows, kinds, messages, out);
  return out;
}

}  // namespace rayorch::python
