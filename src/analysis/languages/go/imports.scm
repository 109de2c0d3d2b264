; Imports. `import "example.com/m/geom"` binds `geom` (the last segment of the path,
; `@import.package`); `import g "example.com/m/geom"` binds `g`.

(import_spec
  name: (package_identifier) @import.namespace
  path: (interpreted_string_literal (interpreted_string_literal_content) @import.source))
(import_spec
  !name
  path: (interpreted_string_literal (interpreted_string_literal_content) @import.package))
