#include "python_sink.h"

#include <string>
#include <utility>

#include "root_objects.h"
#include <fmt/format.h>

namespace rayorch::python {

namespace nb = nanobind;

namespace {

// The Python values of a root's call: its key, row and output tuple (new references).
struct RootArgs {
  Ref key;
  Ref row;
  Ref outputs;
};

// Null members when Python raised. The caller holds the GIL.
RootArgs root_args(const SinkRoot& root, std::size_t outputs) {
  return RootArgs{Ref::steal(PyUnicode_FromStringAndSize(root.key.data(),
                                                         static_cast<Py_ssize_t>(root.key.size()))),
                  Ref::steal(PyLong_FromSize_t(root.row)),
                  Ref::steal(root_tuple(root.outputs, outputs))};
}

bool complete(const RootArgs& a) {
  return a.key.get() != nullptr && a.row.get() != nullptr && a.outputs.get() != nullptr;
}

class PythonPartWriter final : public PartWriter {
 public:
  PythonPartWriter(Ref writer, std::size_t outputs, CallbackError& error)
      : writer_(std::move(writer)), outputs_(outputs), error_(error) {}

  void write(const SinkRoot& root) override {
    Gil gil;
    const RootArgs a = root_args(root, outputs_);
    if (!complete(a)) error_.fetch_and_abort();
    Ref r = Ref::steal(PyObject_CallMethod(writer_.get(), "write", "OOO", a.key.get(), a.row.get(),
                                           a.outputs.get()));
    if (r.get() == nullptr) error_.fetch_and_abort();
    // A writer that returns its byte count from write() saves a call of bytes() per root.
    reported_ = PyLong_Check(r.get()) != 0;
    if (reported_) {
      bytes_ = PyLong_AsUnsignedLongLong(r.get());
      if (PyErr_Occurred() != nullptr) error_.fetch_and_abort();
    }
  }

  std::uint64_t bytes() const override {
    if (reported_) return bytes_;
    Gil gil;
    Ref r = Ref::steal(PyObject_CallMethod(writer_.get(), "bytes", nullptr));
    if (r.get() == nullptr) error_.fetch_and_abort();
    const unsigned long long n = PyLong_AsUnsignedLongLong(r.get());
    if (n == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr)
      error_.fetch_and_abort();
    return n;
  }

  void finish() override {
    Gil gil;
    Ref r = Ref::steal(PyObject_CallMethod(writer_.get(), "finish", nullptr));
    if (r.get() == nullptr) error_.fetch_and_abort();
  }

 private:
  Ref writer_;
  std::size_t outputs_;
  CallbackError& error_;
  bool reported_ = false;    // the last write() returned the byte count
  std::uint64_t bytes_ = 0;  // that count
};

class PythonPartFormat final : public PartFormat {
 public:
  PythonPartFormat(Ref format, std::size_t outputs, std::size_t max_rows, CallbackError& error)
      : format_(std::move(format)), outputs_(outputs), max_rows_(max_rows), error_(error) {}

  std::string part_name(std::uint64_t sequence, const SinkRoot& first) const override {
    Gil gil;
    const RootArgs a = root_args(first, outputs_);
    if (!complete(a)) error_.fetch_and_abort();
    Ref name = Ref::steal(PyObject_CallMethod(format_.get(), "part_name", "KOOO",
                                              static_cast<unsigned long long>(sequence),
                                              a.key.get(), a.row.get(), a.outputs.get()));
    if (name.get() == nullptr) error_.fetch_and_abort();
    Py_ssize_t size = 0;
    const char* text =
        PyUnicode_Check(name.get()) != 0 ? PyUnicode_AsUTF8AndSize(name.get(), &size) : nullptr;
    if (text == nullptr) {
      if (PyErr_Occurred() == nullptr) {
        PyErr_SetString(PyExc_TypeError,
                        fmt::format("a sink's part_name() must return a str; it gave {}",
                                    type_name_of(name.get()))
                            .c_str());
      }
      error_.fetch_and_abort();
    }
    return std::string(text, static_cast<std::size_t>(size));
  }

  std::size_t max_rows() const override { return max_rows_; }

  std::unique_ptr<PartWriter> open(const std::string& path) const override {
    Gil gil;
    Ref writer = Ref::steal(PyObject_CallMethod(format_.get(), "open", "s#", path.data(),
                                                static_cast<Py_ssize_t>(path.size())));
    if (writer.get() == nullptr) error_.fetch_and_abort();
    return std::make_unique<PythonPartWriter>(std::move(writer), outputs_, error_);
  }

 private:
  Ref format_;
  std::size_t outputs_;
  std::size_t max_rows_;
  CallbackError& error_;
};

}  // namespace

std::shared_ptr<const PartFormat> python_part_format(nb::object format, std::size_t outputs,
                                                     CallbackError& error) {
  const auto max_rows = nb::cast<std::size_t>(format.attr("max_rows")());
  return std::make_shared<PythonPartFormat>(Ref::borrow(format.ptr()), outputs, max_rows, error);
}

}  // namespace rayorch::python
