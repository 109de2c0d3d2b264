//! The `mcp_tools` file: one MCP tool per protocol method, as a JSON array that `wit mcp`
//! serves from `tools/list` and dispatches `tools/call` with.
//!
//! Each entry holds:
//! - `name`: the method name with `.` and `-` replaced by `_` (`lock.acquire` -> `lock_acquire`);
//! - `method`: the wire name the call is sent as;
//! - `session`: how the server fills in `sessionId`: `caller` (a required `sessionId`: the
//!   server's own session), `filter` (an optional `sessionId` filter: exposed as the boolean
//!   `mine`) or `none`;
//! - `description`: the summary's first clause (up to its first `:`, `;` or dash);
//! - `inputSchema`: the params as one self-contained JSON Schema object without `sessionId`,
//!   refs inlined, validation keywords (`minimum`, `enum`, `minLength`, ..) kept; a param is
//!   described by its OpenRPC `summary` when it has one, and by nothing else (its name and
//!   schema say the rest; the spec's descriptions are for the reference documentation);
//! - `outputSchema`: the result's schema, wrapped as `{"result": ..}` when the result is not an
//!   object (`wrapsResult` says so), refs inlined, two levels of properties deep with their
//!   `required` lists (a client may rely on `agentId`, `released`, …), without documentation
//!   or validation keywords (`format` and `enum` included: the daemon produces the results).
//!
//! Everything is cut for size: the whole `tools/list` answer must stay small (a test in the
//! `wit` crate bounds it), because every agent pays for it in context on every session. Some
//! MCP clients validate any `structuredContent` against the output schema, errors' too: a tool
//! error therefore carries its `{code, message, data}` as text, never as structured content
//! (`src/mcp/render.rs`).

use serde_json::{json, Map, Value};

use crate::schema::{component_ref_name, COMPONENT_REF};
use crate::spec::{Method, Ordered, Param, Spec};
use crate::CodegenError;

/// The param the server fills in with its session.
pub const SESSION_PARAM: &str = "sessionId";
/// The boolean that replaces an optional `sessionId` filter: only this session's records.
pub const MINE_PARAM: &str = "mine";
/// Output schemas keep the properties of this many levels of objects; deeper objects keep only
/// their `type`.
const OUTPUT_DEPTH: usize = 2;
/// Alternatives (`oneOf`, `anyOf`) inside a result's fields become their common type: each
/// alternative names itself in its `type` field at run time, and spelling them all out cost
/// a kilobyte per tool that returns conflicts.
const ALTERNATIVES_DEPTH: usize = 1;
/// Bound on ref inlining depth, so that a recursive schema fails instead of looping.
const MAX_INLINE_DEPTH: usize = 32;

/// Keywords dropped from output schemas: documentation, and checks a reader of results does not
/// need (the daemon produces the results).
const OUTPUT_DROPPED: &[&str] = &[
    "description",
    "title",
    "discriminator",
    "format",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "enum",
];
/// Keywords dropped from input schemas: OpenRPC-only annotations, and the schemas' own
/// documentation (a param's `summary` describes it).
const INPUT_DROPPED: &[&str] = &["title", "discriminator", "description"];

/// Generates the `mcp_tools` file: pretty-printed JSON with a trailing newline.
pub fn generate(spec: &Spec) -> Result<String, CodegenError> {
    let mut tools = Vec::new();
    for method in &spec.methods {
        tools.push(tool(method, &spec.components.schemas)?);
    }
    let mut text = serde_json::to_string_pretty(&Value::Array(tools))
        .map_err(|e| CodegenError::Invalid(format!("cannot print the MCP tool table: {e}")))?;
    text.push('\n');
    Ok(text)
}

/// The MCP tool name of a method: `lock.acquire` -> `lock_acquire`.
pub fn tool_name(method: &str) -> String {
    method.replace(['.', '-'], "_")
}

fn tool(method: &Method, components: &Ordered<Value>) -> Result<Value, CodegenError> {
    let mut session = "none";
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in &method.params {
        if param.name == SESSION_PARAM {
            if param.required {
                session = "caller";
            } else {
                session = "filter";
                properties.insert(MINE_PARAM.to_string(), json!({"type": "boolean"}));
            }
            continue;
        }
        if param.name == MINE_PARAM {
            return Err(CodegenError::Invalid(format!(
                "method `{}`: param `{MINE_PARAM}` clashes with the MCP tool's session filter",
                method.name
            )));
        }
        properties.insert(param.name.clone(), input_param(param, components)?);
        if param.required {
            required.push(Value::String(param.name.clone()));
        }
    }
    let mut input = Map::new();
    input.insert("type".into(), json!("object"));
    input.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input.insert("required".into(), Value::Array(required));
    }

    let result = resolve_refs(&method.result.schema, components, 0)?;
    let wraps = result.get("type").and_then(Value::as_str) != Some("object");
    let output = if wraps {
        // The wrapper is a level: `result`'s records keep their fields, not their fields' fields.
        // `result` is always there: MCP clients validate `structuredContent` against this.
        json!({
            "type": "object",
            "properties": {"result": output_schema(&result, 1)},
            "required": ["result"]
        })
    } else {
        output_schema(&result, 0)
    };

    Ok(json!({
        "name": tool_name(&method.name),
        "method": method.name,
        "session": session,
        "description": description(method),
        "inputSchema": Value::Object(input),
        "outputSchema": output,
        "wrapsResult": wraps,
    }))
}

/// The summary's first clause, ending with a full stop: every agent pays for the table in
/// context on every session, and the tool's name and schemas say the rest.
fn description(method: &Method) -> String {
    let mut text = first_clause(&collapse(method.summary.as_deref().unwrap_or(&method.name)));
    if !text.ends_with('.') {
        text.push('.');
    }
    text
}

/// One param's schema, refs inlined, described by the param's `summary` (if any).
fn input_param(param: &Param, components: &Ordered<Value>) -> Result<Value, CodegenError> {
    let mut schema = input_schema(&resolve_refs(&param.schema, components, 0)?);
    if let (Some(text), Value::Object(map)) = (&param.summary, &mut schema) {
        map.insert("description".into(), Value::String(collapse(text)));
    }
    Ok(schema)
}

/// An input schema: annotations and documentation dropped, everything else kept.
fn input_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                match key.as_str() {
                    k if INPUT_DROPPED.contains(&k) => {}
                    "properties" => {
                        let props = value
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(name, prop)| (name.clone(), input_schema(prop)))
                            .collect();
                        out.insert(key.clone(), Value::Object(props));
                    }
                    _ => {
                        out.insert(key.clone(), input_schema(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(input_schema).collect()),
        other => other.clone(),
    }
}

/// An output schema at `depth` (see the module documentation): an object at depth
/// `OUTPUT_DEPTH` or deeper keeps its `type` but not its `properties`, and alternatives
/// (`oneOf`, `anyOf`) from `ALTERNATIVES_DEPTH` on become their common type.
fn output_schema(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let deep = depth >= OUTPUT_DEPTH;
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            k if OUTPUT_DROPPED.contains(&k) => {}
            // `required` goes with the properties it names.
            "properties" | "required" if deep => {}
            "oneOf" | "anyOf" | "allOf" if deep || depth >= ALTERNATIVES_DEPTH => {
                if let Some(t) = schema_type(schema) {
                    out.insert("type".into(), t);
                }
            }
            "properties" => {
                let props = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, prop)| (name.clone(), output_schema(prop, depth + 1)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" => {
                out.insert(key.clone(), output_schema(value, depth));
            }
            "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), output_schema(value, depth + 1));
            }
            "oneOf" | "anyOf" | "allOf" => {
                let alternatives = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|alt| output_schema(alt, depth))
                    .collect();
                out.insert(key.clone(), Value::Array(alternatives));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// A schema's `type`, or the one type all its `oneOf`/`anyOf` alternatives share.
fn schema_type(schema: &Value) -> Option<Value> {
    if let Some(t) = schema.get("type") {
        return Some(t.clone());
    }
    let alternatives = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))?
        .as_array()?;
    let mut types = alternatives.iter().map(schema_type);
    let first = types.next()??;
    types.all(|t| t.as_ref() == Some(&first)).then_some(first)
}

/// The schema with every `#/components/schemas/X` ref replaced by the schema it names, so each
/// tool's schemas stand alone.
fn resolve_refs(
    schema: &Value,
    components: &Ordered<Value>,
    depth: usize,
) -> Result<Value, CodegenError> {
    match schema {
        Value::Object(map) => {
            if let Some(reference) = map.get("$ref") {
                let name = component_ref_name(schema).ok_or_else(|| {
                    CodegenError::Invalid(format!(
                        "unknown schema ref `{reference}` (only {COMPONENT_REF}<name> is supported)"
                    ))
                })?;
                let target = components.get(name).ok_or_else(|| {
                    CodegenError::Invalid(format!("unknown schema ref `{COMPONENT_REF}{name}`"))
                })?;
                if depth >= MAX_INLINE_DEPTH {
                    return Err(CodegenError::Invalid(format!(
                        "inlining `{name}` for the MCP tools does not terminate (recursive schema)"
                    )));
                }
                return resolve_refs(target, components, depth + 1);
            }
            let mut out = Map::new();
            for (key, value) in map {
                out.insert(key.clone(), resolve_refs(value, components, depth)?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .map(|item| resolve_refs(item, components, depth))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// Whitespace runs (line breaks too) collapsed to one space.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where a summary's first clause ends: a `:` or `;` followed by a space, or a dash between
/// spaces (a comma may be inside a list: "for session, file, and status").
const CLAUSE_ENDS: &[&str] = &[": ", "; ", " — ", " - "];

/// `text` up to its first sentence's end (a `.`, `!` or `?` followed by a space and a capital
/// letter, so `e.g. the` does not end it), and within that up to its first clause's end.
fn first_clause(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?')
            && bytes.get(i + 1) == Some(&b' ')
            && bytes.get(i + 2).is_some_and(u8::is_ascii_uppercase)
        {
            end = i + 1;
            break;
        }
    }
    let sentence = &text[..end];
    let clause = CLAUSE_ENDS
        .iter()
        .filter_map(|mark| sentence.find(mark))
        .min()
        .map_or(sentence, |at| &sentence[..at]);
    clause.to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn components() -> Ordered<Value> {
        Ordered(vec![
            (
                "Rec".to_string(),
                json!({"type": "object", "required": ["a"], "description": "A record",
                       "properties": {"a": {"type": "string", "minLength": 1, "enum": ["x"]},
                                      "inner": {"$ref": "#/components/schemas/Inner"}}}),
            ),
            (
                "Inner".to_string(),
                json!({"type": "object", "properties": {
                    "deep": {"type": "object", "properties": {"x": {"type": "integer"}}}}}),
            ),
            (
                "Loop".to_string(),
                json!({"type": "object", "properties": {"me": {"$ref": "#/components/schemas/Loop"}}}),
            ),
        ])
    }

    #[test]
    fn names_tools_after_methods() {
        assert_eq!(tool_name("lock.acquire"), "lock_acquire");
        assert_eq!(tool_name("check-contracts"), "check_contracts");
        assert_eq!(tool_name("ping"), "ping");
    }

    #[test]
    fn tool_descriptions_are_the_summarys_first_clause() {
        assert_eq!(
            first_clause("Health check — verifies the daemon is reachable."),
            "Health check"
        );
        assert_eq!(
            first_clause("Read the log: the events after a seq. More words."),
            "Read the log"
        );
        assert_eq!(
            first_clause("A pid (e.g. the agent's own). More words here."),
            "A pid (e.g. the agent's own)."
        );
        assert_eq!(
            first_clause("Query intents for session, file, and status."),
            "Query intents for session, file, and status."
        );
    }

    #[test]
    fn params_are_described_by_their_summary_only() {
        let spec = |summary: Option<&str>| Param {
            name: "p".into(),
            required: false,
            summary: summary.map(str::to_string),
            description: Some("The long documentation. Default 3".into()),
            schema: json!({"type": "integer", "minimum": 1, "description": "inner"}),
        };
        assert_eq!(
            input_param(&spec(None), &components()).unwrap(),
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(
            input_param(&spec(Some("A  few\n words")), &components()).unwrap(),
            json!({"type": "integer", "minimum": 1, "description": "A few words"})
        );
    }

    #[test]
    fn inlines_refs_and_rejects_recursion() {
        let resolved = resolve_refs(
            &json!({"type": "array", "items": {"$ref": "#/components/schemas/Rec"}}),
            &components(),
            0,
        )
        .unwrap();
        assert_eq!(resolved["items"]["properties"]["inner"]["type"], "object");
        let err = resolve_refs(
            &json!({"$ref": "#/components/schemas/Loop"}),
            &components(),
            0,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("recursive"), "{err}");
        let err = resolve_refs(
            &json!({"$ref": "#/components/schemas/Nope"}),
            &components(),
            0,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("#/components/schemas/Nope"), "{err}");
    }

    #[test]
    fn output_schemas_keep_two_levels_and_their_required_lists_without_documentation() {
        let resolved = resolve_refs(
            &json!({"$ref": "#/components/schemas/Rec"}),
            &components(),
            0,
        )
        .unwrap();
        assert_eq!(
            output_schema(&resolved, 0),
            json!({"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string"},
                "inner": {"type": "object", "properties": {"deep": {"type": "object"}}}}})
        );
        assert_eq!(
            schema_type(&json!({"oneOf": [{"type": "object"}, {"type": "object"}]})),
            Some(json!("object"))
        );
        assert_eq!(
            schema_type(&json!({"oneOf": [{"type": "object"}, {"type": "string"}]})),
            None
        );
    }
}
