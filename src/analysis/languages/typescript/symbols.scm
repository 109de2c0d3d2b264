; Definitions of TypeScript / JavaScript symbols (shared by the TypeScript and TSX grammars).
; `@definition.<kind>` marks the declaration node, `@name` its name. Ranges, qualified names,
; kinds of methods (getter, setter, constructor) and signatures follow the table in
; `languages/typescript.rs`.

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
; Overload signatures and ambient declarations: merged with the implementation that follows.
(function_signature name: (identifier) @name) @definition.function

(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class

(class_body (method_definition name: (_) @name) @definition.method)
(class_body (method_signature name: (_) @name) @definition.method)
(class_body (abstract_method_signature name: (_) @name) @definition.method)
(class_body
  (public_field_definition
    name: (_) @name
    value: [(arrow_function) (function_expression) (generator_function)]) @definition.method)

(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum

; `const f = (..) => ..`, `let g = function (..) {..}`
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; `export default function () {}`, `export default () => {}`, `export default class {}`:
; anonymous (no `@name`), so named `default` by the table.
(export_statement
  "default"
  value: [(function_expression) (arrow_function) (generator_function)] @definition.function)
(export_statement "default" value: (class) @definition.class)
(export_statement
  "default"
  declaration: [(function_declaration !name) (generator_function_declaration !name)] @definition.function)
(export_statement "default" declaration: (class_declaration !name) @definition.class)

; The name a default export refers to: `export default f;` or `export default function f() {}`.
(export_statement "default" value: (identifier) @export.default)
(export_statement "default" declaration: (_ name: (_) @export.default))
