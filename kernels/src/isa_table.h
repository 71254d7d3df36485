#pragma once
// How every op family picks its bodies: each ISA's file fills one table of the family (a struct
// of function pointers, with its `isa`), and the family's dispatch takes, once, the first table,
// widest ISA first, that cpu_has() allows and that has the body it needs (nullptr where an ISA
// has none). The scalar table comes last and is taken when nothing wider is.
#include <initializer_list>

#include "kernels/cpu_features.h"

namespace sandwich::kernels {

template <class Table, class Has>
const Table& pick_isa_table(std::initializer_list<const Table*> widest_first, Has has) {
  for (const Table* t : widest_first)
    if (cpu_has(t->isa) && has(*t)) return *t;
  return **(widest_first.end() - 1);
}

template <class Table>
const Table& pick_isa_table(std::initializer_list<const Table*> widest_first) {
  return pick_isa_table(widest_first, [](const Table&) { return true; });
}

}  // namespace sandwich::kernels
