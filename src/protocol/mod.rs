//! The wire protocol: the types, error codes and params decoders generated from
//! `openrpc.json` (by `build.rs` through `wit-codegen`), plus the small hand-written runtime
//! they rely on.
//!
//! Everything that knows JSON-RPC wire shapes lives here, in `client`, `rpc` and `daemon`.
//! The generated code is in `OUT_DIR`, never in `src/`; a golden copy is kept in
//! `codegen/tests/golden/`.

pub mod params;
mod protocol_error;
#[cfg(feature = "daemon")]
pub mod server;

pub use protocol_error::{
    ParamErrors, ProtocolError, INTERNAL_ERROR_CODE, INVALID_REQUEST_CODE, METHOD_NOT_FOUND_CODE,
    PARSE_ERROR_CODE, VERSION_MISMATCH_CODE, WIT_VERSION,
};

/// The generated types. typify documents the types and the fields that have a description
/// in the spec, not every field and enum variant, and emits helper impls clippy dislikes.
#[allow(
    missing_docs,
    reason = "typify does not document every field and variant of the spec's schemas"
)]
#[allow(
    clippy::all,
    clippy::pedantic,
    reason = "generated code: fixed in the generator, not by hand"
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/types.rs"));
}

pub use generated::*;

/// The text of `openrpc.json`, the protocol's single source of truth (`rpc.discover`).
pub const SPEC_JSON: &str = include_str!("../../openrpc.json");

/// One method of the protocol, as listed in [`METHODS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo {
    /// The wire name, e.g. `lock.acquire`.
    pub name: &'static str,
    /// The spec's one-line summary.
    pub summary: &'static str,
    /// The wire names of its params, in spec order.
    pub params: &'static [&'static str],
    /// The rules its params decoder checks (empty when it declares no params).
    pub rules: &'static [params::ParamRule],
}

/// Finds a method of the protocol by wire name.
pub fn method(name: &str) -> Option<&'static MethodInfo> {
    METHODS.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests;
