// Readable C++ type names (declared in include/rayorch/detail/erased.h): demangling, short
// names without namespace qualifiers, and the type of the exception being handled.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

#include "rayorch/detail/erased.h"

namespace rayorch::detail {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

std::string short_type_name(std::string name) {
  // Drop namespace qualifiers outside template arguments: "ns::(anonymous namespace)::Ocr" ->
  // "Ocr", keeping "Ocr<int>" intact.
  int depth = 0;
  std::size_t cut = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char ch = name[i];
    if (ch == '<' || ch == '(') ++depth;
    if (ch == '>' || ch == ')') --depth;
    if (depth == 0 && ch == ':' && i + 1 < name.size() && name[i + 1] == ':') cut = i + 2;
  }
  return name.substr(cut);
}

std::string current_exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  return type ? demangle(type->name()) : std::string("unknown exception");
}

}  // namespace rayorch::detail
