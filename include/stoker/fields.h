// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Header only; walked by src/python/binding.h (ToPython) and src/util/fields_json.h (JSON).
#pragma once

#include <string_view>

namespace stoker {

/// One named field of a plain result struct (StatsSnapshot, ServeStats, CpuBudget, …): the
/// name a binding or serializer gives it and the member it reads. Each such struct lists its
/// fields once, in a `FieldsOf(const T&)` overload right below its definition that returns a
/// std::tuple of Fields (found by argument-dependent lookup). The Python binding turns any
/// struct that has one into a dict by walking it (src/python/binding.h, ToPython), so a field
/// added to the struct and its list reaches Python, nested structs and lists of them
/// included, with no other change.
template <typename Struct, typename Member>
struct Field {
  std::string_view name;
  Member Struct::*member;
};
template <typename Struct, typename Member>
Field(std::string_view, Member Struct::*) -> Field<Struct, Member>;

/// A struct that lists its fields (a `FieldsOf` overload beside it).
template <typename T>
concept HasFields = requires(const T& value) {
  FieldsOf(value);
};

}  // namespace stoker
