; Definitions of Rust symbols. An `impl` block is a `@scope`: not a symbol, but its type
; (`@scope.name`) qualifies the items inside (`Circle.area`, also for `impl Shape for Circle`).

(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type

(impl_item
  type: [
    (type_identifier) @scope.name
    (generic_type type: (type_identifier) @scope.name)
    (scoped_type_identifier name: (type_identifier) @scope.name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @scope.name))
  ]) @scope
