; Call sites: `f()`, paths (`crate::a::f()`, `Type::new()`, `Self::f()`, through
; `@receiver.path`) and method calls (`self.m()`, `x.m()`, through `@receiver`).

(call_expression function: (identifier) @callee) @call
(call_expression
  function: (scoped_identifier
    path: (_) @receiver.path
    name: (identifier) @callee)) @call
(call_expression
  function: (field_expression
    value: (_) @receiver
    field: (field_identifier) @callee)) @call
(call_expression function: (generic_function function: (identifier) @callee)) @call
(call_expression
  function: (generic_function
    function: (scoped_identifier
      path: (_) @receiver.path
      name: (identifier) @callee))) @call
