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
  m.def(
      "optional_stages",
      []() {
        nb::list out;
        for (const auto& w : optional_stages()) {
          nb::dict d;
          d["workload"] = w.workload;
          d["stages"] = w.stages;
          d["needs"] = w.needs;
          d["built"] = w.built;
          out.append(d);
        }
        return out;
      },
      "The C++ stages of each optional workload, whether this extension was built with them: "
      "[{workload, stages, needs, built}].");
}

}  // namespace rayorch::python
