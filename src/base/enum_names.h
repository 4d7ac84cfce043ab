// An enum's names, in one table for both directions: parse a name (with
// aliases) and print a value. The error for an unknown name lists the
// names the table offers, in its order:
//   "<unknown> 'x' (expected a, b or c)"
// where <unknown> is the caller's, e.g. "unknown order" or
// "--optimizer: unknown value".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::detail {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
  bool alias = false;  // parsed, but neither printed nor offered
};

template <typename E, size_t N>
std::string_view enum_name(E value, const EnumName<E> (&table)[N], std::string_view unknown = "?") {
  for (const EnumName<E>& e : table) {
    if (!e.alias && e.value == value) return e.name;
  }
  return unknown;
}

template <typename E, size_t N>
Result<E> parse_enum_name(std::string_view name, const EnumName<E> (&table)[N],
                          std::string_view unknown) {
  for (const EnumName<E>& e : table) {
    if (e.name == name) return e.value;
  }
  std::string offered;
  size_t listed = 0, count = 0;
  for (const EnumName<E>& e : table) count += e.alias ? 0 : 1;
  for (const EnumName<E>& e : table) {
    if (e.alias) continue;
    if (listed > 0)
      offered += ++listed == count ? " or " : ", ";
    else
      ++listed;
    offered += e.name;
  }
  return invalid_argument_error(std::string(unknown) + " '" + std::string(name) + "' (expected " +
                                offered + ")");
}

}  // namespace sluice::detail
