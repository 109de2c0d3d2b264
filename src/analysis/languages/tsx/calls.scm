; JSX elements render components: `<Button />` calls `Button`. Lower-case names are intrinsic
; elements (`<div>`), not calls.

(jsx_self_closing_element name: (identifier) @callee (#match? @callee "^[A-Z]")) @call
(jsx_opening_element name: (identifier) @callee (#match? @callee "^[A-Z]")) @call
(jsx_self_closing_element
  name: (member_expression object: (identifier) @receiver property: (property_identifier) @callee)) @call
(jsx_opening_element
  name: (member_expression object: (identifier) @receiver property: (property_identifier) @callee)) @call
