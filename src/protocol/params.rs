//! The runtime behind the generated params decoders (`XParams::from_params`).
//!
//! The generator turns each param's JSON Schema into a [`ParamRule`] (data, not code); the
//! [`ParamDecoder`] checks every param against its rule and against the size limits of
//! docs/protocol.md 1.6 ([`size_limit`]), records every problem in [`ParamErrors`], and
//! deserialises a field only once it passed its checks, so one request reports all of its
//! problems, not only the first. Messages follow zod's wording ("Required",
//! "Expected string, received number") because clients of the earlier implementation show
//! them to people.

use serde::Deserialize;
use serde_json::{Map, Value};

pub use super::ParamErrors;

/// One param (or one property of an object param) as the decoder checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamRule {
    /// The wire name.
    pub name: &'static str,
    /// Whether the param must be present.
    pub required: bool,
    /// What its value must look like.
    pub check: Check,
}

/// The JSON Schema constraints the decoder checks for one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// The JSON type.
    pub kind: Kind,
    /// Whether `null` is allowed too.
    pub nullable: bool,
    /// `minLength`, in characters.
    pub min_length: Option<usize>,
    /// `maxLength`, in characters.
    pub max_length: Option<usize>,
    /// `pattern`.
    pub pattern: Option<Pattern>,
    /// `enum` (strings only); empty means any value.
    pub enum_values: &'static [&'static str],
    /// `minItems`.
    pub min_items: Option<usize>,
    /// `maxItems`.
    pub max_items: Option<usize>,
    /// `minimum` (integers).
    pub minimum: Option<i64>,
    /// `maximum` (integers).
    pub maximum: Option<i64>,
}

impl Check {
    /// Accepts any value.
    pub const ANY: Check = Check {
        kind: Kind::Any,
        nullable: false,
        min_length: None,
        max_length: None,
        pattern: None,
        enum_values: &[],
        min_items: None,
        max_items: None,
        minimum: None,
        maximum: None,
    };
}

/// The JSON type a value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No `type` in the schema.
    Any,
    /// A string.
    String,
    /// A number without fractional part that fits `i64`.
    Integer,
    /// Any number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// An array whose elements pass the check.
    Array(&'static Check),
    /// An object with these properties (others are ignored).
    Object(&'static [ParamRule]),
}

/// The regular expressions the decoder understands (see codegen/src/decode.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// `.*LITERAL.*`: the string contains LITERAL.
    Contains(&'static str),
}

impl Pattern {
    /// Whether `value` matches.
    pub fn matches(self, value: &str) -> bool {
        match self {
            Pattern::Contains(literal) => value.contains(literal),
        }
    }

    /// The problem message for a value that does not match.
    fn message(self) -> String {
        match self {
            Pattern::Contains(literal) => {
                format!("Invalid format: must contain \"{literal}\"")
            }
        }
    }
}

/// Size bounds applied by param (or property) name, whatever the method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SizeLimit {
    /// Most bytes (UTF-8) of a string value.
    pub max_bytes: Option<usize>,
    /// Most elements of an array value.
    pub max_items: Option<usize>,
    /// Most bytes of each string element of an array value.
    pub max_item_bytes: Option<usize>,
}

/// Most bytes of a session id or agent name.
pub const MAX_ID_BYTES: usize = 256;
/// Most bytes of an intent description.
pub const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;
/// Most bytes of a path or symbol path.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most elements of `files` and `symbols`.
pub const MAX_LIST_ITEMS: usize = 1000;
/// The request body limit by default (docs/protocol.md 1.4: 32 MiB), and the most bytes any
/// text a request makes the daemon build may have (the new text of `edit.preflight`'s
/// edits): a request never makes the daemon hold more than a small multiple of it.
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The size limits of docs/protocol.md 1.6 for a param or property name.
///
/// File `content` is bounded only by the body limit.
pub fn size_limit(name: &str) -> SizeLimit {
    match name {
        "sessionId" | "name" => SizeLimit {
            max_bytes: Some(MAX_ID_BYTES),
            ..SizeLimit::default()
        },
        "description" => SizeLimit {
            max_bytes: Some(MAX_DESCRIPTION_BYTES),
            ..SizeLimit::default()
        },
        "path" | "symbolPath" | "file" => SizeLimit {
            max_bytes: Some(MAX_PATH_BYTES),
            ..SizeLimit::default()
        },
        "files" | "symbols" => SizeLimit {
            max_items: Some(MAX_LIST_ITEMS),
            max_item_bytes: Some(MAX_PATH_BYTES),
            ..SizeLimit::default()
        },
        _ => SizeLimit::default(),
    }
}

/// Most problems reported for the elements of one array param; the rest are counted.
const MAX_ELEMENT_PROBLEMS: usize = 10;

/// Checks the params of one request against generated [`ParamRule`]s.
#[derive(Debug)]
pub struct ParamDecoder<'a> {
    object: Option<&'a Map<String, Value>>,
    errors: ParamErrors,
}

impl<'a> ParamDecoder<'a> {
    /// Starts decoding `params`: omitted or `null` params are read as `{}`; anything else
    /// that is not an object is a form error.
    pub fn new(params: Option<&'a Value>) -> Result<Self, ParamErrors> {
        match params {
            None | Some(Value::Null) => Ok(Self {
                object: None,
                errors: ParamErrors::default(),
            }),
            Some(Value::Object(object)) => Ok(Self {
                object: Some(object),
                errors: ParamErrors::default(),
            }),
            Some(other) => Err(ParamErrors::form(format!(
                "Expected object, received {}",
                type_name(other)
            ))),
        }
    }

    /// Decodes a required param: `None` (with the problem recorded) when it is missing or
    /// invalid.
    pub fn required<T: Deserialize<'a>>(&mut self, rule: &ParamRule) -> Option<T> {
        match self.get(rule.name) {
            None => {
                self.errors.add_field(rule.name, "Required");
                None
            }
            Some(value) => self.decode(rule, value),
        }
    }

    /// Decodes an optional param: `None` when absent; when present and invalid the problem is
    /// recorded (and [`ParamDecoder::finish`] fails).
    pub fn optional<T: Deserialize<'a>>(&mut self, rule: &ParamRule) -> Option<T> {
        let value = self.get(rule.name)?;
        self.decode(rule, value)
    }

    /// An optional param as the struct field typify generated for it: `Option<T>`, or a
    /// collection that is simply empty when the param is absent.
    pub fn optional_field<F: OptionalField<'a>>(&mut self, rule: &ParamRule) -> F {
        F::from_decoded(self.optional(rule))
    }

    /// Whether no problem has been recorded so far.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// `Ok(value)` when every param passed, else every problem found.
    pub fn finish<T>(self, value: T) -> Result<T, ParamErrors> {
        if self.errors.is_empty() {
            Ok(value)
        } else {
            Err(self.errors)
        }
    }

    /// The problems found; the generated code calls this only when a required param is
    /// missing or invalid, so it is never empty then.
    pub fn into_errors(self) -> ParamErrors {
        if self.errors.is_empty() {
            ParamErrors::form("Invalid params")
        } else {
            self.errors
        }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.object.and_then(|object| object.get(name))
    }

    fn decode<T: Deserialize<'a>>(&mut self, rule: &ParamRule, value: &'a Value) -> Option<T> {
        let before = self.errors.field_errors.get(rule.name).map_or(0, Vec::len);
        let limit = size_limit(rule.name);
        check_value(&mut self.errors, rule.name, "", limit, &rule.check, value);
        let after = self.errors.field_errors.get(rule.name).map_or(0, Vec::len);
        if after > before {
            return None;
        }
        match T::deserialize(value) {
            Ok(decoded) => Some(decoded),
            Err(e) => {
                // The checks above mirror the field's type, so this only fires when they
                // disagree with typify (a generator bug); still report, never panic.
                self.errors.add_field(rule.name, e.to_string());
                None
            }
        }
    }
}

/// The JSON type name of a value, as zod names it.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks an integer against the schema's `minimum` and `maximum`, with one message that
/// states the whole accepted range.
fn check_integer_bounds(errors: &mut ParamErrors, field: &str, path: &str, check: &Check, v: i64) {
    let below = check.minimum.is_some_and(|min| v < min);
    let above = check.maximum.is_some_and(|max| v > max);
    if !(below || above) {
        return;
    }
    let message = match (check.minimum, check.maximum) {
        (Some(min), Some(max)) => format!("Number must be an integer from {min} to {max}"),
        (Some(min), None) => format!("Number must be greater than or equal to {min}"),
        (None, Some(max)) => format!("Number must be less than or equal to {max}"),
        (None, None) => return,
    };
    report(errors, field, path, message);
}

/// Checks `value` against `check` and `limit`; problems go to `field` (the top-level
/// param), prefixed with `path` (`files[2].path`) when nested.
fn check_value(
    errors: &mut ParamErrors,
    field: &str,
    path: &str,
    limit: SizeLimit,
    check: &Check,
    value: &Value,
) {
    if value.is_null() && check.nullable {
        return;
    }
    match (check.kind, value) {
        (Kind::Any, _) => {}
        (Kind::String, Value::String(s)) => {
            // Counting the characters of a MB-sized string costs a pass over it: count only as
            // far as a bound needs (a string has at most as many characters as bytes).
            if let Some(min) = check.min_length {
                if s.len() < min || s.chars().take(min).count() < min {
                    report(
                        errors,
                        field,
                        path,
                        format!("String must contain at least {min} character(s)"),
                    );
                }
            }
            if let Some(max) = check.max_length {
                if s.len() > max && s.chars().count() > max {
                    report(
                        errors,
                        field,
                        path,
                        format!("String must contain at most {max} character(s)"),
                    );
                }
            }
            if let Some(max) = limit.max_bytes {
                if s.len() > max {
                    report(
                        errors,
                        field,
                        path,
                        format!("String must be at most {max} bytes long (got {})", s.len()),
                    );
                }
            }
            if let Some(pattern) = check.pattern {
                if !pattern.matches(s) {
                    report(errors, field, path, pattern.message());
                }
            }
            if !check.enum_values.is_empty() && !check.enum_values.contains(&s.as_str()) {
                let expected: Vec<String> =
                    check.enum_values.iter().map(|v| format!("'{v}'")).collect();
                report(
                    errors,
                    field,
                    path,
                    format!(
                        "Invalid enum value. Expected {}, received '{s}'",
                        expected.join(" | ")
                    ),
                );
            }
        }
        (Kind::Integer, Value::Number(n)) => {
            if let Some(v) = n.as_i64() {
                check_integer_bounds(errors, field, path, check, v);
            } else if n.as_u64().is_some() || is_integral(n) {
                report(
                    errors,
                    field,
                    path,
                    format!(
                        "Number must be an integer between {} and {}",
                        i64::MIN,
                        i64::MAX
                    ),
                );
            } else {
                report(
                    errors,
                    field,
                    path,
                    "Expected integer, received float".to_string(),
                );
            }
        }
        (Kind::Number, Value::Number(_)) | (Kind::Boolean, Value::Bool(_)) => {}
        (Kind::Array(items), Value::Array(list)) => {
            if let Some(min) = check.min_items {
                if list.len() < min {
                    report(
                        errors,
                        field,
                        path,
                        format!("Array must contain at least {min} element(s)"),
                    );
                }
            }
            let max = match (check.max_items, limit.max_items) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(max) = max {
                if list.len() > max {
                    report(
                        errors,
                        field,
                        path,
                        format!(
                            "Array must contain at most {max} element(s) (got {})",
                            list.len()
                        ),
                    );
                    // Do not check thousands of elements of an array already rejected.
                    return;
                }
            }
            // Elements are bounded by the array's per-element limit, not by its own name.
            let element_limit = SizeLimit {
                max_bytes: limit.max_item_bytes,
                ..SizeLimit::default()
            };
            let before = errors.field_errors.get(field).map_or(0, Vec::len);
            let mut skipped = 0usize;
            for (index, element) in list.iter().enumerate() {
                let element_path = format!("{}[{index}]", display_path(path, field));
                let reported = errors.field_errors.get(field).map_or(0, Vec::len) - before;
                if reported >= MAX_ELEMENT_PROBLEMS {
                    let mut scratch = ParamErrors::default();
                    check_value(
                        &mut scratch,
                        field,
                        &element_path,
                        element_limit,
                        items,
                        element,
                    );
                    skipped += scratch.field_errors.values().map(Vec::len).sum::<usize>();
                    continue;
                }
                check_value(errors, field, &element_path, element_limit, items, element);
            }
            if skipped > 0 {
                errors.add_field(
                    field,
                    format!("{skipped} more problem(s) in the elements not shown"),
                );
            }
        }
        (Kind::Object(properties), Value::Object(object)) => {
            for property in properties {
                let property_path = format!("{}.{}", display_path(path, field), property.name);
                match object.get(property.name) {
                    None if property.required => {
                        errors.add_field(field, format!("{property_path}: Required"));
                    }
                    None => {}
                    Some(v) => check_value(
                        errors,
                        field,
                        &property_path,
                        size_limit(property.name),
                        &property.check,
                        v,
                    ),
                }
            }
        }
        (kind, other) => {
            let expected = match kind {
                Kind::Any => "any",
                Kind::String => "string",
                Kind::Integer => "integer",
                Kind::Number => "number",
                Kind::Boolean => "boolean",
                Kind::Array(_) => "array",
                Kind::Object(_) => "object",
            };
            report(
                errors,
                field,
                path,
                format!("Expected {expected}, received {}", type_name(other)),
            );
        }
    }
}

/// Records one problem of `field`, prefixed with `path` when nested.
fn report(errors: &mut ParamErrors, field: &str, path: &str, message: String) {
    if path.is_empty() {
        errors.add_field(field, message);
    } else {
        errors.add_field(field, format!("{path}: {message}"));
    }
}

/// The path shown for nested problems: `path` when nested, else the top-level param name.
fn display_path<'p>(path: &'p str, field: &'p str) -> &'p str {
    if path.is_empty() {
        field
    } else {
        path
    }
}

/// Whether a number is written without a fractional part (e.g. `1e30`, `99999999999999999999`).
fn is_integral(n: &serde_json::Number) -> bool {
    n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// How an absent-or-present optional param becomes its struct field: typify keeps most optional
/// params as `Option<T>` but gives optional arrays a `Vec<T>` field with a serde default.
pub trait OptionalField<'a>: Sized {
    /// What the decoder reads from the JSON value.
    type Decoded: Deserialize<'a>;
    /// The field value for an absent (`None`) or present param.
    fn from_decoded(decoded: Option<Self::Decoded>) -> Self;
}

impl<'a, T: Deserialize<'a>> OptionalField<'a> for Option<T> {
    type Decoded = T;
    fn from_decoded(decoded: Option<T>) -> Self {
        decoded
    }
}

impl<'a, T: Deserialize<'a>> OptionalField<'a> for Vec<T> {
    type Decoded = Vec<T>;
    fn from_decoded(decoded: Option<Vec<T>>) -> Self {
        decoded.unwrap_or_default()
    }
}
