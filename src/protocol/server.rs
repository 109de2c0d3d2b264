//! The server side of the protocol (feature `daemon`): the generated per-namespace traits
//! (`WitMethods`, `LockMethods`, `IntentMethods`, `ContractMethods`) and their
//! `register_*_methods` functions, plus the glue they use to decode params and turn a
//! [`ProtocolError`] into a jsonrpsee error object.

use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde_json::Value;

use super::{ParamErrors, ProtocolError};

#[allow(
    clippy::all,
    reason = "generated code: fixed in the generator, not by hand"
)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/server.rs"));
}

pub use generated::*;

/// Parses a request's raw `params` and runs a generated decoder on them; any problem becomes
/// `-32600 INVALID_REQUEST` with `{formErrors, fieldErrors}`.
pub fn decode_params<P>(
    params: &Params<'_>,
    decode: fn(Option<&Value>) -> Result<P, ParamErrors>,
) -> Result<P, ProtocolError> {
    let value = match params.as_str() {
        None => None,
        Some(raw) => Some(serde_json::from_str::<Value>(raw).map_err(|e| {
            ProtocolError::invalid_params(ParamErrors::form(format!("params are not JSON: {e}")))
        })?),
    };
    decode(value.as_ref()).map_err(ProtocolError::invalid_params)
}

impl From<ProtocolError> for ErrorObjectOwned {
    fn from(error: ProtocolError) -> Self {
        ErrorObjectOwned::owned(error.code, error.message, error.data)
    }
}

/// Registers `rpc.discover` (the OpenRPC convention): it answers the `openrpc.json` document.
pub fn register_discover<T: Send + Sync + 'static>(
    module: &mut jsonrpsee::RpcModule<T>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    module.register_method("rpc.discover", |_params, _context, _extensions| {
        serde_json::value::RawValue::from_string(super::SPEC_JSON.to_string())
            .map_err(|e| ProtocolError::internal(format!("openrpc.json is not JSON: {e}")))
    })?;
    Ok(())
}
