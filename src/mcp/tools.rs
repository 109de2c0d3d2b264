//! The generated MCP tool table and how a tool call's arguments become a method's params.
//!
//! `wit-codegen` writes the table (`mcp_tools.json` in `OUT_DIR`, golden copy in
//! `codegen/tests/golden/`): one tool per protocol method with its wire name, its JSON Schemas
//! and how `sessionId` is filled in. A method added to `openrpc.json` is a tool here with no
//! hand-written code.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde::Deserialize;
use serde_json::Value;

use crate::protocol::ParamErrors;

/// The table as `wit-codegen` generated it.
const TABLE_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/mcp_tools.json"));

/// The param the server fills in with its own session.
const SESSION_PARAM: &str = "sessionId";
/// The boolean that stands for an optional `sessionId` filter.
pub const MINE_PARAM: &str = "mine";

/// How a tool's `sessionId` is filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionParam {
    /// The method requires `sessionId`: it is always the server's session.
    Caller,
    /// `sessionId` is an optional filter: the server's session when `mine` is true.
    Filter,
    /// The method takes no `sessionId`.
    None,
}

/// One entry of the generated table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The MCP tool name (`lock_acquire`).
    pub name: String,
    /// The protocol method it calls (`lock.acquire`).
    pub method: String,
    /// How `sessionId` is filled in.
    pub session: SessionParam,
    /// The tool's description.
    pub description: String,
    /// The params without `sessionId`, as a JSON Schema object.
    pub input_schema: JsonObject,
    /// The result's schema (an object; see `wraps_result`).
    pub output_schema: JsonObject,
    /// Whether the result is not an object and is answered as `{"result": ..}`.
    pub wraps_result: bool,
}

/// The tools, as the table lists them and as rmcp serves them.
#[derive(Debug, Clone)]
pub struct ToolTable {
    specs: Vec<ToolSpec>,
    tools: Vec<Tool>,
}

impl ToolTable {
    /// Parses the generated table.
    pub fn load() -> Result<Self, serde_json::Error> {
        Self::parse(TABLE_JSON)
    }

    /// Parses a table in the generated format.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        let specs: Vec<ToolSpec> = serde_json::from_str(text)?;
        let tools = specs
            .iter()
            .map(|spec| {
                Tool::new(
                    spec.name.clone(),
                    spec.description.clone(),
                    Arc::new(spec.input_schema.clone()),
                )
                .with_raw_output_schema(Arc::new(spec.output_schema.clone()))
            })
            .collect();
        Ok(Self { specs, tools })
    }

    /// The entry of tool `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.iter().find(|spec| spec.name == name)
    }

    /// Every entry, in spec order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The tools as `tools/list` answers them.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }
}

/// The method's params for a call of `spec` with `arguments`, acting as `session`: the
/// arguments as given, `sessionId` set by the server (an agent's own `sessionId` is dropped:
/// the server decides who it is) and `mine` turned into the `sessionId` filter. Everything else
/// is checked by the daemon, whose INVALID_REQUEST names every problem.
pub fn params(
    spec: &ToolSpec,
    arguments: Option<JsonObject>,
    session: &str,
) -> Result<Value, ParamErrors> {
    let mut params = arguments.unwrap_or_default();
    params.remove(SESSION_PARAM);
    let mine = params.remove(MINE_PARAM);
    let fill = match spec.session {
        SessionParam::Caller => true,
        SessionParam::Filter => match mine {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => {
                let mut errors = ParamErrors::default();
                errors
                    .field_errors
                    .entry(MINE_PARAM.to_string())
                    .or_default()
                    .push("Expected boolean".to_string());
                return Err(errors);
            }
        },
        SessionParam::None => false,
    };
    if fill {
        params.insert(
            SESSION_PARAM.to_string(),
            Value::String(session.to_string()),
        );
    }
    Ok(Value::Object(params))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn the_generated_table_parses_and_names_every_method() {
        let table = ToolTable::load().unwrap();
        assert_eq!(table.specs().len(), crate::protocol::METHODS.len());
        for method in crate::protocol::METHODS {
            let name = method.name.replace(['.', '-'], "_");
            let spec = table.get(&name).expect(&name);
            assert_eq!(spec.method, method.name);
        }
        assert_eq!(table.tools().len(), table.specs().len());
    }

    #[test]
    fn the_server_fills_in_the_session() {
        let table = ToolTable::load().unwrap();
        let acquire = table.get("lock_acquire").unwrap();
        let got = params(
            acquire,
            Some(object(
                json!({"symbolPath": "a.ts:f", "sessionId": "someone-else"}),
            )),
            "me",
        )
        .unwrap();
        assert_eq!(got, json!({"symbolPath": "a.ts:f", "sessionId": "me"}));

        let query = table.get("lock_query").unwrap();
        assert_eq!(params(query, None, "me").unwrap(), json!({}));
        assert_eq!(
            params(query, Some(object(json!({"mine": true}))), "me").unwrap(),
            json!({"sessionId": "me"})
        );
        assert_eq!(
            params(query, Some(object(json!({"mine": false}))), "me").unwrap(),
            json!({})
        );
        let errors = params(query, Some(object(json!({"mine": "yes"}))), "me").unwrap_err();
        assert!(errors.field_errors.contains_key("mine"));

        let ping = table.get("ping").unwrap();
        assert_eq!(params(ping, None, "me").unwrap(), json!({}));
    }
}
