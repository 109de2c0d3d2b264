; Imports. `import a.b.C;` binds `C` from `a.b.C`; `import static a.b.C.m;` binds `m` from
; `a.b.C.m`. Wildcard imports (`import a.b.*;`) bind nothing.

(import_declaration
  (scoped_identifier name: (identifier) @import.name) @import.source .)
