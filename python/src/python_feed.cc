// A lazy source in Python. See python_feed.h.
#include "python_feed.h"

#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nanobind/nanobind.h>

namespace rayorch::python {

PythonFeed::PythonFeed(PyObject* columns, std::vector<int> mask_columns, PyObject* row_key,
                       CallbackError& error)
    : mask_columns_(std::move(mask_columns)),
      row_key_(Ref::borrow(row_key == Py_None ? nullptr : row_key)),
      error_(error) {
  const Py_ssize_t n = PyList_GET_SIZE(columns);
  for (Py_ssize_t c = 0; c < n; ++c) {
    PyObject* it = PyObject_GetIter(PyList_GET_ITEM(columns, c));
    if (it == nullptr) throw nanobind::python_error();
    iterators_.push_back(Ref::steal(it));
  }
}

void PythonFeed::fail(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  error_.fetch_and_abort();
}

PyObject* PythonFeed::pull(std::size_t c) {
  PyObject* item = PyIter_Next(iterators_[c].get());
  if (item == nullptr && PyErr_Occurred() != nullptr) error_.fetch_and_abort();
  return item;
}

rd::SourceChunk PythonFeed::next(std::size_t rows) {
  Gil gil;
  const std::size_t columns = iterators_.size();
  std::vector<std::shared_ptr<PyBlock>> blocks;
  for (std::size_t c = 0; c < columns; ++c) {
    blocks.push_back(std::make_shared<PyBlock>());
    // A short source may end long before a large input batch is full.
    blocks.back()->rows.reserve(std::min<std::size_t>(rows, 4096));
  }
  rd::SourceChunk chunk;
  std::vector<Ref> row(columns);
  while (chunk.rows < rows) {
    std::size_t got = 0;
    for (; got < columns; ++got) {
      PyObject* item = pull(got);
      if (item == nullptr) break;
      row[got] = Ref::steal(item);
    }
    if (got < columns) {
      // A column ended: every column must end at this row. The first one found otherwise is
      // the error, raised now, before anything of this row runs.
      if (got > 0) {
        fail(PyExc_ValueError,
             fmt::format("source columns are not row-aligned: column {} ended at row {} while "
                         "column 0 goes on; pass columns of equal length",
                         got, pulled_));
      }
      for (std::size_t c = 1; c < columns; ++c) {
        if (Ref extra = Ref::steal(pull(c))) {
          fail(PyExc_ValueError,
               fmt::format("source columns are not row-aligned: column 0 ended at row {} while "
                           "column {} goes on; pass columns of equal length",
                           pulled_, c));
        }
      }
      ended_ = chunk.ended = true;
      break;
    }
    for (int c : mask_columns_) {
      PyObject* v = row[static_cast<std::size_t>(c)].get();
      if (!PyBool_Check(v)) {
        fail(PyExc_ValueError,
             fmt::format("source column {} is an F.filter mask, so each row must be a bool; "
                         "row {} is {}",
                         c, pulled_, type_name_of(v)));
      }
    }
    if (row_key_) {
      PyObject* values = PyTuple_New(static_cast<Py_ssize_t>(columns));
      if (values == nullptr) error_.fetch_and_abort();
      for (std::size_t c = 0; c < columns; ++c)
        PyTuple_SET_ITEM(values, static_cast<Py_ssize_t>(c), Py_NewRef(row[c].get()));
      Ref key = Ref::steal(
          PyObject_CallFunction(row_key_.get(), "nN", static_cast<Py_ssize_t>(pulled_), values));
      if (!key) error_.fetch_and_abort();
      Py_ssize_t size = 0;
      const char* text =
          PyUnicode_Check(key.get()) ? PyUnicode_AsUTF8AndSize(key.get(), &size) : nullptr;
      if (text == nullptr) {
        if (PyErr_Occurred() != nullptr) error_.fetch_and_abort();
        fail(PyExc_TypeError, fmt::format("journal key(row) must return a str; row {} gave {}",
                                          pulled_, type_name_of(key.get())));
      }
      chunk.keys.emplace_back(text, static_cast<std::size_t>(size));
    }
    for (std::size_t c = 0; c < columns; ++c) {
      PyObject* v = row[c].get();
      blocks[c]->rows.push_back(PyValue{.truth = v == Py_True, .obj = Py_NewRef(v)});
      row[c] = Ref();
    }
    ++pulled_;
    ++chunk.rows;
  }
  // The blocks are complete: their rows' addresses are final now.
  for (std::size_t c = 0; c < columns; ++c) {
    std::vector<const void*> values;
    values.reserve(chunk.rows);
    for (const PyValue& v : blocks[c]->rows) values.push_back(&v);
    chunk.values.push_back(std::move(values));
    chunk.blocks.push_back(std::move(blocks[c]));
  }
  return chunk;
}

}  // namespace rayorch::python
