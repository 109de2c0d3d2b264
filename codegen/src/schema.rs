//! Rewrites the spec's JSON Schemas into the shape typify turns into the Rust types wit wants.
//!
//! typify reads plain JSON Schema (draft 7 style, `#/definitions/..` refs). The spec is
//! OpenRPC, so every schema passes through [`prepare`] first:
//! - `#/components/schemas/X` refs become `#/definitions/X`;
//! - refs directly inside `oneOf` are replaced by the referenced schema, so that typify sees
//!   the single-value `type` enums of the alternatives and emits one `#[serde(tag = "type")]`
//!   enum (`ConflictItem`) instead of an untagged enum of newtypes;
//! - a property whose type admits `null` is made required, so typify emits `Option<T>` without
//!   `skip_serializing_if` and `null` is written instead of the field being left out;
//! - `format: date-time` is dropped: typify would emit `chrono::DateTime`, which re-serialises
//!   `2026-01-15T10:30:00.000Z` without its `.000`; timestamps stay `String`;
//! - validation keywords (`minLength`, `maxLength`, `pattern`, `minItems`, `maxItems`,
//!   `minimum`, `maximum`) are dropped: typify would emit constrained newtypes, fixed-size
//!   arrays or unsigned and non-zero integers. Params are checked
//!   by the generated decoder instead (see `decode.rs`); results are produced by the daemon.

use serde_json::{Map, Value};

use crate::spec::Ordered;
use crate::CodegenError;

/// Prefix of refs to component schemas in OpenRPC documents.
pub const COMPONENT_REF: &str = "#/components/schemas/";
/// Prefix of refs to definitions as typify reads them.
pub const DEFINITION_REF: &str = "#/definitions/";

/// Keywords removed everywhere before typify sees a schema.
const DROPPED_KEYWORDS: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
];

/// The name a `$ref` points to, if it is a component ref.
pub fn component_ref_name(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(COMPONENT_REF))
}

/// Prepares one schema for typify (see the module documentation).
///
/// `components` resolves refs that must be inlined (inside `oneOf`); an unknown ref is an
/// error naming it.
pub fn prepare(schema: &Value, components: &Ordered<Value>) -> Result<Value, CodegenError> {
    prepare_depth(schema, components, 0)
}

/// Bound on `oneOf` inlining depth, so that a schema inlining itself fails instead of looping.
const MAX_INLINE_DEPTH: usize = 32;

fn prepare_depth(
    schema: &Value,
    components: &Ordered<Value>,
    depth: usize,
) -> Result<Value, CodegenError> {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                if DROPPED_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                match key.as_str() {
                    "$ref" => {
                        out.insert(key.clone(), rewrite_ref(value, components)?);
                    }
                    "format" if value.as_str() == Some("date-time") => {}
                    "oneOf" | "anyOf" if value.is_array() => {
                        let inline = key == "oneOf";
                        let mut alternatives = Vec::new();
                        for alternative in value.as_array().into_iter().flatten() {
                            let resolved = match component_ref_name(alternative) {
                                Some(name) if inline => {
                                    if depth >= MAX_INLINE_DEPTH {
                                        return Err(CodegenError::Invalid(format!(
                                            "oneOf inlining of `{name}` does not terminate"
                                        )));
                                    }
                                    let target = components.get(name).ok_or_else(|| {
                                        CodegenError::Invalid(format!(
                                            "unknown schema ref `{COMPONENT_REF}{name}`"
                                        ))
                                    })?;
                                    prepare_depth(target, components, depth + 1)?
                                }
                                _ => prepare_depth(alternative, components, depth)?,
                            };
                            alternatives.push(resolved);
                        }
                        out.insert(key.clone(), Value::Array(alternatives));
                    }
                    // `properties` maps names to schemas: recurse into each value but keep the
                    // names, even one that happens to equal a keyword such as `pattern`.
                    "properties" | "definitions" | "$defs" if value.is_object() => {
                        let mut props = Map::new();
                        for (name, prop) in value.as_object().into_iter().flatten() {
                            props.insert(name.clone(), prepare_depth(prop, components, depth)?);
                        }
                        out.insert(key.clone(), Value::Object(props));
                    }
                    // OpenRPC-only annotations typify does not know.
                    "discriminator" => {}
                    _ => {
                        out.insert(key.clone(), prepare_depth(value, components, depth)?);
                    }
                }
            }
            require_nullable_properties(&mut out);
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .map(|item| prepare_depth(item, components, depth))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// Rewrites a component ref to a definitions ref; checks that it names a known schema.
fn rewrite_ref(value: &Value, components: &Ordered<Value>) -> Result<Value, CodegenError> {
    let Some(reference) = value.as_str() else {
        return Err(CodegenError::Invalid(format!(
            "`$ref` must be a string, found {value}"
        )));
    };
    match reference.strip_prefix(COMPONENT_REF) {
        Some(name) if components.get(name).is_some() => {
            Ok(Value::String(format!("{DEFINITION_REF}{name}")))
        }
        _ => Err(CodegenError::Invalid(format!(
            "unknown schema ref `{reference}` (only {COMPONENT_REF}<name> is supported)"
        ))),
    }
}

/// Whether a schema's `type` admits `null` (`"type": ["integer", "null"]`).
pub fn is_nullable(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some("null")),
        Some(Value::String(t)) => t == "null",
        _ => false,
    }
}

/// Adds every nullable property of an object schema to its `required` list.
fn require_nullable_properties(schema: &mut Map<String, Value>) {
    let nullable: Vec<String> = match schema.get("properties").and_then(Value::as_object) {
        Some(props) => props
            .iter()
            .filter(|(_, prop)| is_nullable(prop))
            .map(|(name, _)| name.clone())
            .collect(),
        None => return,
    };
    if nullable.is_empty() {
        return;
    }
    let required = schema
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = required {
        for name in nullable {
            if !list.iter().any(|r| r.as_str() == Some(name.as_str())) {
                list.push(Value::String(name));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    fn components() -> Ordered<Value> {
        Ordered(vec![
            (
                "A".to_string(),
                json!({"type": "object", "title": "A", "required": ["type"],
                       "properties": {"type": {"type": "string", "enum": ["KIND_A"]}}}),
            ),
            (
                "U".to_string(),
                json!({"oneOf": [{"$ref": "#/components/schemas/A"}],
                       "discriminator": {"propertyName": "type"}}),
            ),
        ])
    }

    #[test]
    fn rewrites_refs_to_definitions() {
        let prepared = prepare(
            &json!({"type": "array", "items": {"$ref": "#/components/schemas/A"}}),
            &components(),
        )
        .unwrap();
        assert_eq!(prepared["items"]["$ref"], "#/definitions/A");
    }

    #[test]
    fn rejects_unknown_refs() {
        let err = prepare(&json!({"$ref": "#/components/schemas/Nope"}), &components())
            .unwrap_err()
            .to_string();
        assert!(err.contains("#/components/schemas/Nope"), "{err}");
    }

    #[test]
    fn inlines_refs_inside_one_of_and_drops_the_discriminator() {
        let comps = components();
        let prepared = prepare(comps.get("U").unwrap(), &comps).unwrap();
        assert_eq!(
            prepared["oneOf"][0]["properties"]["type"]["enum"][0],
            "KIND_A"
        );
        assert!(prepared.get("discriminator").is_none());
    }

    #[test]
    fn makes_nullable_properties_required() {
        let prepared = prepare(
            &json!({"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string"},
                "b": {"type": ["integer", "null"]},
                "c": {"type": "string"}}}),
            &Ordered::default(),
        )
        .unwrap();
        assert_eq!(prepared["required"], json!(["a", "b"]));
    }

    #[test]
    fn drops_date_time_format_and_validation_keywords() {
        let prepared = prepare(
            &json!({"type": "object", "properties": {
                "at": {"type": "string", "format": "date-time"},
                "s": {"type": "string", "minLength": 1, "pattern": ".*:.*", "maxLength": 9},
                "pattern": {"type": "array", "items": {"type": "string", "minLength": 1},
                            "minItems": 1, "maxItems": 2}}}),
            &Ordered::default(),
        )
        .unwrap();
        assert_eq!(
            prepared,
            json!({"type": "object", "properties": {
                "at": {"type": "string"},
                "s": {"type": "string"},
                "pattern": {"type": "array", "items": {"type": "string"}}}})
        );
    }
}
