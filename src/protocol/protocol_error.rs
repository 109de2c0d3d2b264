//! `ProtocolError` (a JSON-RPC error object) and `ParamErrors` (invalid params, flattened).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ErrorCode;

/// JSON-RPC's code for a body that is not JSON.
pub const PARSE_ERROR_CODE: i32 = -32700;
/// The code of `INVALID_REQUEST` (the spec's, as a constant for the envelope; a test keeps the
/// two equal).
pub const INVALID_REQUEST_CODE: i32 = -32600;
/// The code of `METHOD_NOT_FOUND` (likewise).
pub const METHOD_NOT_FOUND_CODE: i32 = -32601;
/// JSON-RPC's code for an internal error.
pub const INTERNAL_ERROR_CODE: i32 = -32603;
/// wit's code for a missing or wrong `witVersion`.
pub const VERSION_MISMATCH_CODE: i32 = -32001;
/// The protocol version every request and response carries as `witVersion`.
pub const WIT_VERSION: &str = "1";

/// A JSON-RPC error object as the protocol sends it: code, message and optional data.
///
/// Handlers return it; the server turns it into the response's `error`; the client gives it
/// back unchanged as `ClientError::Rpc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct ProtocolError {
    /// The JSON-RPC error code (-32000 for domain errors).
    pub code: i32,
    /// The error's name, e.g. `LOCK_CONFLICT`.
    pub message: String,
    /// Details named by the spec (`heldBy`, `expiresAt`, ..), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ProtocolError {
    /// The error `code` of the spec, with `data`.
    pub fn new(code: ErrorCode, data: Option<Value>) -> Self {
        Self {
            code: code.code(),
            message: code.message().to_string(),
            data,
        }
    }

    /// `-32603 INTERNAL_ERROR`, with `detail` as `data.detail`.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self {
            code: INTERNAL_ERROR_CODE,
            message: "INTERNAL_ERROR".to_string(),
            data: Some(serde_json::json!({ "detail": detail.into() })),
        }
    }

    /// `-32600 INVALID_REQUEST` with data `{formErrors, fieldErrors}`.
    pub fn invalid_params(errors: ParamErrors) -> Self {
        Self::new(ErrorCode::InvalidRequest, Some(errors.to_value()))
    }

    /// The spec's error this is, matched by code and message; `None` for errors outside
    /// `components.errors` (parse, internal, version mismatch).
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_message(&self.message).filter(|c| c.code() == self.code)
    }

    /// Whether this is the spec's error `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.error_code() == Some(code)
    }
}

/// Every problem found in a request's `params`, shaped like zod's `flatten()`:
/// `formErrors` for `params` as a whole, `fieldErrors` keyed by top-level param name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamErrors {
    /// Problems with `params` as a whole (e.g. not an object).
    pub form_errors: Vec<String>,
    /// Problems per param, keyed by the param's wire name.
    pub field_errors: BTreeMap<String, Vec<String>>,
}

impl ParamErrors {
    /// One problem with param `name`.
    pub fn field(name: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = Self::default();
        errors.add_field(name, message);
        errors
    }

    /// One problem with `params` as a whole.
    pub fn form(message: impl Into<String>) -> Self {
        Self {
            form_errors: vec![message.into()],
            field_errors: BTreeMap::new(),
        }
    }

    /// Records one more problem with param `name`.
    pub fn add_field(&mut self, name: impl Into<String>, message: impl Into<String>) {
        self.field_errors
            .entry(name.into())
            .or_default()
            .push(message.into());
    }

    /// Whether no problem was recorded.
    pub fn is_empty(&self) -> bool {
        self.form_errors.is_empty() && self.field_errors.is_empty()
    }

    /// The `{formErrors, fieldErrors}` JSON object.
    pub fn to_value(&self) -> Value {
        let field_errors: serde_json::Map<String, Value> = self
            .field_errors
            .iter()
            .map(|(name, messages)| {
                let list = messages.iter().cloned().map(Value::String).collect();
                (name.clone(), Value::Array(list))
            })
            .collect();
        serde_json::json!({
            "formErrors": self.form_errors,
            "fieldErrors": field_errors,
        })
    }
}

impl std::fmt::Display for ParamErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        let mut sep = |f: &mut std::fmt::Formatter<'_>| {
            let s = if first { "" } else { "; " };
            first = false;
            f.write_str(s)
        };
        for message in &self.form_errors {
            sep(f)?;
            f.write_str(message)?;
        }
        for (name, messages) in &self.field_errors {
            for message in messages {
                sep(f)?;
                write!(f, "{name}: {message}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ParamErrors {}

impl From<ParamErrors> for ProtocolError {
    fn from(errors: ParamErrors) -> Self {
        Self::invalid_params(errors)
    }
}
