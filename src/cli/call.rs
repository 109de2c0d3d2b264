//! `wit call METHOD [JSON]`: any RPC method with raw params.

use std::io::Read;

use clap::Args;
use serde_json::Value;

use super::context::Context;
use super::output::{CliError, Report};

/// `wit call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The method, e.g. `lock.query` (`rpc.discover` returns the whole spec).
    pub method: String,
    /// The params as JSON (`-` reads them from stdin); omitted: no params are sent.
    pub params: Option<String>,
}

/// Sends the call and prints the raw result.
pub async fn run(ctx: &Context, args: CallArgs) -> Result<Report, CliError> {
    let params = match args.params.as_deref() {
        None => Value::Null,
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| {
                    CliError::Usage(format!("cannot read params from stdin: {error}"))
                })?;
            parse_params(&text)?
        }
        Some(text) => parse_params(text)?,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            let method = args.method.clone();
            async move { client.call_raw(&method, params).await }
        })
        .await?;
    let human = serde_json::to_string_pretty(&result).unwrap_or_else(|_| result.to_string());
    Ok(Report::new(result, human))
}

fn parse_params(text: &str) -> Result<Value, CliError> {
    serde_json::from_str(text)
        .map_err(|error| CliError::Usage(format!("params are not valid JSON: {error}")))
}
