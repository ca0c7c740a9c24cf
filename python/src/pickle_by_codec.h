// Pickling of a bound C++ value through its rayorch::Codec, so the value can travel between
// processes (the Ray backend's actors and object store).
#pragma once

#include <new>
#include <string>
#include <string_view>

#include <nanobind/nanobind.h>

#include "rayorch/codec.h"
#include "rayorch/errors.h"

namespace rayorch::python {

template <class T, class Class>
Class pickle_by_codec(Class cls) {
  namespace nb = nanobind;
  cls.def("__getstate__",
          [](const T& v) {
            std::string out;
            Codec<T>::encode(v, out);
            return nb::bytes(out.data(), out.size());
          })
      .def("__setstate__", [](T& self, nb::bytes state) {
        std::string_view in(state.c_str(), state.size());
        new (&self) T(Codec<T>::decode(in));
        if (!in.empty()) throw DecodeError("trailing bytes in a pickled C++ value");
      });
  return cls;
}

}  // namespace rayorch::python
