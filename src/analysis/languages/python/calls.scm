; Call sites: `f()`, `self.m()`, `module.f()`, `Class()`.

(call function: (identifier) @callee) @call
(call
  function: (attribute
    object: (_) @receiver
    attribute: (identifier) @callee)) @call
