// Compile-time checks of a Module's UDF and of the arguments of a Call, and the type
// helpers Module<U> is built from. Internal to rayorch/module.h.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "rayorch/codec.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/port.h"

namespace rayorch {

namespace detail {

// Each check below is instantiated only for the first failing argument, so one mistake gives
// one message. The template parameters name the argument: the compiler prints them in the
// "In instantiation of ..." line above the message.
template <std::size_t ArgumentIndex, class Passed>
constexpr void argument_must_be_a_port() {
  static_assert(IsPort<Passed>::value,
                "Module call: this argument must be a ro::Port<T>, because the UDF's run() takes "
                "a ro::Column<T> there; pass the Ports first (one per Column parameter), then the "
                "static arguments (the instantiation line above names ArgumentIndex and its type)");
}

template <std::size_t ArgumentIndex, class PortValue, class ColumnValue>
constexpr void port_type_must_match() {
  static_assert(std::is_same_v<PortValue, ColumnValue>,
                "Module call: Port type does not match the UDF's run() parameter: a "
                "ro::Port<PortValue> was passed where run() takes ro::Column<ColumnValue> (the "
                "instantiation line above names ArgumentIndex and both types)");
}

template <std::size_t PortsExpected, std::size_t ArgumentsPassed>
constexpr void too_few_ports() {
  static_assert(ArgumentsPassed >= PortsExpected,
                "Module call: too few Ports: pass one ro::Port<T> per ro::Column<T> parameter "
                "of the UDF's run()");
}

template <std::size_t StaticsExpected, std::size_t StaticsPassed>
constexpr void static_argument_count_must_match() {
  static_assert(
      StaticsExpected == StaticsPassed,
      "Module call: wrong number of static arguments: after the Ports, pass exactly the "
      "static (non-Column) parameters of the UDF's run(), in order (the instantiation line "
      "above gives both counts)");
}

template <std::size_t StaticIndex, class Parameter, class Passed>
constexpr void static_argument_must_convert() {
  static_assert(!IsPort<std::remove_cvref_t<Passed>>::value,
                "Module call: a ro::Port was passed where the UDF's run() takes a static "
                "argument: run() has fewer ro::Column<T> parameters than Ports passed");
  static_assert(
      IsPort<std::remove_cvref_t<Passed>>::value || std::is_constructible_v<Parameter, Passed>,
      "Module call: a static argument does not convert to the type of the UDF's run() "
      "parameter (the instantiation line above names StaticIndex, run()'s Parameter type and "
      "the Passed type)");
}

template <class Arg, class Column>
constexpr bool port_matches() {
  if constexpr (IsPort<Arg>::value) {
    return std::is_same_v<typename Arg::value_type, typename ColumnOf<Column>::type>;
  } else {
    return true;  // reported as "must be a Port" instead
  }
}

/// Checks the arguments `A` (as forwarded) of a call of a Module of the valid UDF `U`.
template <class U, class... A>
struct CallCheck {
  using traits = UdfTraits<U>;
  using args = std::tuple<A...>;
  static constexpr std::size_t ports = traits::column_count;
  static constexpr std::size_t statics = std::tuple_size_v<typename traits::statics>;
  static constexpr std::size_t passed = sizeof...(A);
  static constexpr std::size_t leading = ports < passed ? ports : passed;

  // How argument I reaches the static's constructor: as an lvalue of the forwarded tuple.
  template <std::size_t I>
  using passed_as = std::remove_reference_t<std::tuple_element_t<I, args>>&;

  template <std::size_t... I>
  static constexpr std::array<bool, sizeof...(I)> not_ports(std::index_sequence<I...>) {
    return {!IsPort<std::remove_cvref_t<std::tuple_element_t<I, args>>>::value...};
  }
  template <std::size_t... I>
  static constexpr std::array<bool, sizeof...(I)> wrong_types(std::index_sequence<I...>) {
    return {!port_matches<std::remove_cvref_t<std::tuple_element_t<I, args>>,
                          std::tuple_element_t<I, typename traits::columns>>()...};
  }
  template <std::size_t... J>
  static constexpr std::array<bool, sizeof...(J)> bad_statics(std::index_sequence<J...>) {
    return {(IsPort<std::remove_cvref_t<std::tuple_element_t<ports + J, args>>>::value ||
             !std::is_constructible_v<std::tuple_element_t<J, typename traits::statics>,
                                      passed_as<ports + J>>)...};
  }

  static constexpr std::size_t first_non_port =
      first_true(not_ports(std::make_index_sequence<leading>{}));
  static constexpr std::size_t first_wrong_type =
      first_true(wrong_types(std::make_index_sequence<leading>{}));
  static constexpr bool count_ok = passed == ports + statics;
  static constexpr std::size_t find_bad_static() {
    if constexpr (count_ok) {
      return first_true(bad_statics(std::make_index_sequence<statics>{}));
    } else {
      return statics;
    }
  }
  static constexpr std::size_t first_bad_static = find_bad_static();
  static constexpr bool ok = first_non_port == leading && first_wrong_type == leading && count_ok &&
                             first_bad_static == statics;

  /// Reports the first problem (only called when !ok).
  static constexpr void report() {
    if constexpr (first_non_port < leading) {
      argument_must_be_a_port<first_non_port,
                              std::remove_cvref_t<std::tuple_element_t<first_non_port, args>>>();
    } else if constexpr (first_wrong_type < leading) {
      port_type_must_match<
          first_wrong_type,
          typename std::remove_cvref_t<std::tuple_element_t<first_wrong_type, args>>::value_type,
          typename ColumnOf<
              std::tuple_element_t<first_wrong_type, typename traits::columns>>::type>();
    } else if constexpr (passed < ports) {
      too_few_ports<ports, passed>();
    } else if constexpr (!count_ok) {
      static_argument_count_must_match<statics, passed - ports>();
    } else if constexpr (first_bad_static < statics) {
      static_argument_must_convert<first_bad_static,
                                   std::tuple_element_t<first_bad_static, typename traits::statics>,
                                   passed_as<ports + first_bad_static>>();
    }
  }
};

template <class Values>
struct PortsOf;
template <class V>
struct PortsOf<std::tuple<V>> {
  using type = Port<V>;
};
template <class V1, class V2, class... V>
struct PortsOf<std::tuple<V1, V2, V...>> {
  using type = std::tuple<Port<V1>, Port<V2>, Port<V>...>;
};

template <class U>
struct CallPortsOf {
  using type = InvalidPort;
};
template <class U>
requires ValidUdf<U>
struct CallPortsOf<U> {
  using type = typename PortsOf<typename UdfTraits<U>::shape::values>::type;
};

/// What calling a Module of `U` returns: Port<R>, a std::tuple of Ports, or InvalidPort for
/// a UDF that failed its checks.
template <class U>
using CallPorts = typename CallPortsOf<U>::type;

/// The name of UDF `U` in explain(), metrics and messages; specialised by ro::function.
template <class U>
struct UdfNameOf {
  static std::string get() { return short_type_name(type_name<U>()); }
};

template <class T>
std::string printable(const T& value) {
  if constexpr (fmt::is_formattable<T>::value) {
    return fmt::format("{}", value);
  } else {
    return "<" + type_name<T>() + ">";
  }
}

// One check per type, so the "In instantiation of ..." line names the type without a codec.
template <class T>
constexpr void isolated_module_needs_a_codec_for() {
  static_assert(has_codec<T>,
                "Module::isolation(): the values of a process-isolated Module cross a process "
                "boundary, and this type has no codec (the instantiation line above names it "
                "as T): specialise rayorch::Codec<T> with encode and decode (see "
                "rayorch/codec.h), or keep the Module on threads");
}

template <class Columns>
struct ColumnValues;
template <class... C>
struct ColumnValues<std::tuple<C...>> {
  using type = std::tuple<typename ColumnOf<C>::type...>;
};

template <class... In, class... Out>
constexpr void check_isolation_codecs(std::tuple<In...>*, std::tuple<Out...>*) {
  (isolated_module_needs_a_codec_for<In>(), ...);
  (isolated_module_needs_a_codec_for<Out>(), ...);
}

template <class... T>
std::vector<std::string> output_type_names(std::tuple<T...>*) {
  return {type_name<T>()...};
}

}  // namespace detail

}  // namespace rayorch
