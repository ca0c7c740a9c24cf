#include "journal_codec.h"

#include <string>
#include <vector>

namespace rayorch::python {

rd::OutputCodec pickle_codec(std::size_t outputs, CallbackError& error) {
  rd::OutputCodec codec;
  codec.outputs = outputs;
  codec.available = true;
  codec.encode = [&error](std::size_t, const void* value, std::string& out) {
    Gil gil;
    PyObject* bytes = PyObject_CallOneArg(registry.pickle_dumps, object_at(value));
    if (bytes == nullptr) error.fetch_and_abort();
    char* data = nullptr;
    Py_ssize_t size = 0;
    PyBytes_AsStringAndSize(bytes, &data, &size);
    out.append(data, static_cast<std::size_t>(size));
    Py_DECREF(bytes);
  };
  codec.restore = [&error](std::size_t row, const rd::JournalEntry& entry,
                           const rd::RootCallback& sink) {
    std::vector<PyValue> values(entry.ports.size());
    std::vector<rd::ErasedOutput> erased(entry.ports.size());
    {
      Gil gil;
      for (std::size_t k = 0; k < entry.ports.size(); ++k) {
        const rd::JournalPort& p = entry.ports[k];
        if (p.outcome != Outcome::present) {
          erased[k] = rd::ErasedOutput{p.outcome, &p.cause, nullptr, p.origin};
          continue;
        }
        PyObject* bytes =
            PyBytes_FromStringAndSize(p.value.data(), static_cast<Py_ssize_t>(p.value.size()));
        values[k].obj =
            bytes == nullptr ? nullptr : PyObject_CallOneArg(registry.pickle_loads, bytes);
        Py_XDECREF(bytes);
        if (values[k].obj == nullptr) {
          for (PyValue& v : values) Py_XDECREF(v.obj);
          error.fetch_and_abort();
        }
        erased[k] = rd::ErasedOutput{p.outcome, nullptr, &values[k], std::nullopt};
      }
    }
    struct Release {
      std::vector<PyValue>& values;
      ~Release() {
        Gil gil;
        for (PyValue& v : values) Py_XDECREF(v.obj);
      }
    } release{values};
    sink(row, erased);
  };
  return codec;
}

}  // namespace rayorch::python
