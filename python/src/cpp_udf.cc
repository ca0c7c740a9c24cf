#include "cpp_udf.h"

#include <fmt/format.h>

namespace rayorch::python {

namespace nb = nanobind;

void throw_input_conversion(const std::string& name, std::size_t input, const char* detail) {
  if (detail != nullptr) {
    throw rd::ForeignError("TypeError",
                           fmt::format("CppModule({}): input {}: {}", name, input, detail));
  }
  throw rd::ForeignError("TypeError",
                         fmt::format("CppModule({}): input {} does not convert to the C++ type of "
                                     "its run() parameter",
                                     name, input));
}

void bind_cpp_udfs(nb::module_& m) {
  m.def(
      "cpp_udfs",
      []() {
        nb::dict out;
        for (const auto& [name, udf] : cpp_udfs()) {
          nb::dict d;
          d["doc"] = udf.doc;
          d["inputs"] = udf.inputs;
          d["outputs"] = udf.outputs;
          d["constructor"] = udf.signature;
          out[nb::str(name.c_str())] = d;
        }
        return out;
      },
      "The C++ UDFs usable in Python pipelines: name -> doc, inputs, outputs, constructor.");
}

}  // namespace rayorch::python
