; Imports. `@import.source` is the module specifier; the binding is one of
; `@import.default` (local name), `@import.namespace` (local name) or `@import.named`
; (a node with `name` and optional `alias` fields, or a bare identifier).

(import_statement
  (import_clause (identifier) @import.default)
  source: (string (string_fragment) @import.source))
(import_statement
  (import_clause (namespace_import (identifier) @import.namespace))
  source: (string (string_fragment) @import.source))
(import_statement
  (import_clause (named_imports (import_specifier) @import.named))
  source: (string (string_fragment) @import.source))

; CommonJS: `const m = require("./m")` and `const { f } = require("./m")`.
(variable_declarator
  name: (identifier) @import.namespace
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.source) .))
  (#eq? @_require "require"))
(variable_declarator
  name: (object_pattern (shorthand_property_identifier_pattern) @import.named)
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.source) .))
  (#eq? @_require "require"))
