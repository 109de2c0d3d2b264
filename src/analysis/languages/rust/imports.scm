; Imports. `use a::b::f;` binds `f` from `a::b`; `use a::b::f as g;` binds `g`;
; `use a::{f, g as h};` binds each; `mod m;` binds the child module `m` (`@import.module`).

(use_declaration
  argument: (scoped_identifier path: (_) @import.source name: (identifier) @import.name))
(use_declaration
  argument: (use_as_clause
    path: (scoped_identifier path: (_) @import.source name: (identifier) @import.name)
    alias: (identifier) @import.alias))
(use_declaration
  argument: (scoped_use_list
    path: (_) @import.source
    list: (use_list (identifier) @import.name)))
(use_declaration
  argument: (scoped_use_list
    path: (_) @import.source
    list: (use_list
      (use_as_clause path: (identifier) @import.name alias: (identifier) @import.alias))))
(mod_item !body name: (identifier) @import.module)
