; Call sites: `m()`, `this.m()`, `C.m()` (static or on a value), and `new C(..)`
; (`@callee.new`: bound to the constructor `C.C`, or to the class when it declares none).

(method_invocation !object name: (identifier) @callee) @call
(method_invocation object: (_) @receiver name: (identifier) @callee) @call
(object_creation_expression type: (type_identifier) @callee.new) @call
(object_creation_expression type: (generic_type (type_identifier) @callee.new)) @call
