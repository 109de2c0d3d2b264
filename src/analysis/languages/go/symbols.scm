; Definitions of Go symbols: functions, methods (qualified by the receiver's type through
; `@qualifier`, pointer or not, generic or not) and type declarations.

(function_declaration name: (identifier) @name) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @qualifier
        (pointer_type (type_identifier) @qualifier)
        (generic_type type: (type_identifier) @qualifier)
        (pointer_type (generic_type type: (type_identifier) @qualifier))
      ]))
  name: (field_identifier) @name) @definition.method

(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec
  name: (type_identifier) @name
  type: [
    (type_identifier) (qualified_type) (generic_type) (pointer_type) (array_type)
    (slice_type) (map_type) (channel_type) (function_type) (negated_type)
    (parenthesized_type)
  ]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
