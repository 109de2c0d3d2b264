; Imports. `import pkg.m` binds `pkg.m`; `import pkg.m as m` binds `m`;
; `from .m import f [as g]` binds `f` (or `g`).

(import_statement name: (dotted_name) @import.module)
(import_statement
  name: (aliased_import
    name: (dotted_name) @import.module
    alias: (identifier) @import.namespace))
(import_from_statement
  module_name: (_) @import.source
  name: [(dotted_name) (aliased_import)] @import.named)
