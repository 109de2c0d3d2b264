; Call sites. `@call` is the whole call, `@callee` the called name and `@receiver` the object a
; method is called on (`this`, a namespace import, a class).

(call_expression function: (identifier) @callee) @call
(call_expression
  function: (member_expression
    object: (_) @receiver
    property: [(property_identifier) (private_property_identifier)] @callee)) @call
(new_expression constructor: (identifier) @callee) @call
(new_expression
  constructor: (member_expression
    object: (_) @receiver
    property: (property_identifier) @callee)) @call
