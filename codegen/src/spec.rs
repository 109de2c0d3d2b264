//! The subset of OpenRPC 1.x that wit's protocol uses, as serde structs.
//!
//! Unknown fields are ignored so the spec may carry extra documentation; fields the generator
//! depends on are required so that a malformed spec fails the build with a clear message.

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// An OpenRPC document.
#[derive(Debug, Clone, Deserialize)]
pub struct Spec {
    /// The `info` block (title, version, description).
    pub info: Info,
    /// Reusable schemas and errors.
    #[serde(default)]
    pub components: Components,
    /// Every method, in spec order.
    pub methods: Vec<Method>,
}

/// The `info` block of the document.
#[derive(Debug, Clone, Deserialize)]
pub struct Info {
    /// Human-readable title.
    pub title: String,
    /// Protocol version.
    pub version: String,
    /// Longer description.
    #[serde(default)]
    pub description: Option<String>,
}

/// `components`: named schemas and named errors, kept in document order.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Components {
    /// JSON Schemas by name.
    #[serde(default)]
    pub schemas: Ordered<Value>,
    /// Errors by name.
    #[serde(default)]
    pub errors: Ordered<ErrorSpec>,
}

/// One named error of `components.errors`.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorSpec {
    /// JSON-RPC error code.
    pub code: i32,
    /// The error message (a SCREAMING_CASE name in wit's protocol).
    pub message: String,
    /// Documentation of the error's `data`.
    #[serde(default)]
    pub data: Option<ErrorData>,
}

/// The documented shape of an error's `data`.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorData {
    /// What `data` holds.
    #[serde(default)]
    pub description: Option<String>,
}

/// One method of the protocol.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Method {
    /// The wire name, e.g. `lock.acquire`.
    pub name: String,
    /// One-line summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// Longer description.
    #[serde(default)]
    pub description: Option<String>,
    /// Only `by-name` is supported.
    #[serde(default)]
    pub param_structure: Option<String>,
    /// The params, in spec order.
    #[serde(default)]
    pub params: Vec<Param>,
    /// The result.
    pub result: ContentDescriptor,
    /// Errors the method may answer (documentation only).
    #[serde(default)]
    pub errors: Vec<Value>,
}

/// One by-name param of a method.
#[derive(Debug, Clone, Deserialize)]
pub struct Param {
    /// The param's name on the wire.
    pub name: String,
    /// Whether the param must be present.
    #[serde(default)]
    pub required: bool,
    /// A few words for a reader who has only the param's name and schema (the MCP tool
    /// table shows this, never the description).
    #[serde(default)]
    pub summary: Option<String>,
    /// Documentation.
    #[serde(default)]
    pub description: Option<String>,
    /// The param's JSON Schema.
    pub schema: Value,
}

/// A method's result descriptor.
#[derive(Debug, Clone, Deserialize)]
pub struct ContentDescriptor {
    /// Name of the result (documentation only).
    #[serde(default)]
    pub name: Option<String>,
    /// Documentation.
    #[serde(default)]
    pub description: Option<String>,
    /// The result's JSON Schema.
    pub schema: Value,
}

/// A JSON object read as a list of `(key, value)` pairs in document order.
///
/// serde_json's map sorts keys unless its `preserve_order` feature is on; the generator wants
/// the spec's order for enum variants and type order, so it reads objects through this.
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V> Default for Ordered<V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<V> Ordered<V> {
    /// Iterates over the entries in document order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<V>(std::marker::PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for OrderedVisitor<V> {
            type Value = Ordered<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, V>()? {
                    entries.push((key, value));
                }
                Ok(Ordered(entries))
            }
        }

        deserializer.deserialize_map(OrderedVisitor(std::marker::PhantomData))
    }
}

/// Parses and checks an OpenRPC document.
pub fn parse(spec_json: &str) -> Result<Spec, crate::CodegenError> {
    let spec: Spec = serde_json::from_str(spec_json).map_err(crate::CodegenError::Parse)?;
    let mut seen = std::collections::BTreeSet::new();
    for method in &spec.methods {
        if !seen.insert(method.name.as_str()) {
            return Err(crate::CodegenError::Invalid(format!(
                "method `{}` is declared twice",
                method.name
            )));
        }
        if let Some(structure) = &method.param_structure {
            if structure != "by-name" {
                return Err(crate::CodegenError::Invalid(format!(
                    "method `{}`: paramStructure `{structure}` is not supported (only by-name)",
                    method.name
                )));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for param in &method.params {
            if !names.insert(param.name.as_str()) {
                return Err(crate::CodegenError::Invalid(format!(
                    "method `{}`: param `{}` is declared twice",
                    method.name, param.name
                )));
            }
        }
    }
    Ok(spec)
}
