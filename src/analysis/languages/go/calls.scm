; Call sites: `f()`, `pkg.F()`, `x.m()` (a method on a value: never bound).

(call_expression function: (identifier) @callee) @call
(call_expression
  function: (selector_expression
    operand: (_) @receiver
    field: (field_identifier) @callee)) @call
