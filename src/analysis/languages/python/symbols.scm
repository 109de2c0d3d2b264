; Definitions of Python symbols: functions (`def`, `async def`, nested or methods) and classes.
; Decorators are included in the range by the Rust side (the `decorated_definition` parent).

(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class
