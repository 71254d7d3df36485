#pragma once
// Names of enum values for messages, flags and wire formats, kept in one table per enum so that
// printing and parsing cannot disagree. A value may have several names (aliases a user may type);
// its first is the one printed.
#include <optional>
#include <string>
#include <string_view>

namespace sandwich {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, size_t N>
constexpr std::string_view name_of(E value, const EnumName<E> (&table)[N],
                                   std::string_view missing = "?") {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return missing;
}

template <class E, size_t N>
constexpr std::optional<E> value_named(std::string_view name, const EnumName<E> (&table)[N]) {
  for (const auto& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

// "a, b or c": the printed names of a table, for messages that say what is accepted.
template <class E, size_t N>
std::string names_of(const EnumName<E> (&table)[N]) {
  std::string out;
  size_t listed = 0, total = 0;
  for (size_t i = 0; i < N; ++i)
    if (name_of(table[i].value, table) == table[i].name && !table[i].name.empty()) ++total;
  for (size_t i = 0; i < N; ++i) {
    if (name_of(table[i].value, table) != table[i].name || table[i].name.empty()) continue;
    out += listed == 0 ? "" : listed + 1 == total ? " or " : ", ";
    out += table[i].name;
    ++listed;
  }
  return out;
}

}  // namespace sandwich
