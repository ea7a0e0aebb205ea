// Constant tables in place of switch statements that map an enum to its name
// or to a library's constant: the table is the whole definition, and one
// loop reads every table. A value missing from a table gets the caller's
// fallback, so a table stays correct (if incomplete) when an enum grows.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace asynctp::core {

template <typename Key, typename Value>
struct Entry {
  Key key;
  Value value;
};

// The value `key` maps to, else `missing`.
template <typename Key, typename Value, std::size_t N>
constexpr Value lookup(const Entry<Key, Value> (&table)[N], Key key,
                       std::type_identity_t<Value> missing) noexcept {
  for (const Entry<Key, Value>& entry : table) {
    if (entry.key == key) return entry.value;
  }
  return missing;
}

// The key whose name is `name` (a table of names read backwards), if any.
template <typename Key, std::size_t N>
constexpr std::optional<Key> key_named(const Entry<Key, const char*> (&table)[N],
                                       std::string_view name) noexcept {
  for (const Entry<Key, const char*>& entry : table) {
    if (name == entry.value) return entry.key;
  }
  return std::nullopt;
}

}  // namespace asynctp::core
