//! `wit register`.

use clap::Args;
use serde_json::json;

use super::context::Context;
use super::output::{CliError, Report};
use crate::protocol::RegisterParams;

/// `wit register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// A display name for this session (e.g. `claude-backend`).
    pub name: String,
}

/// Registers this session under a name (idempotent: the same session keeps its agent id).
pub async fn register(ctx: &Context, args: RegisterArgs) -> Result<Report, CliError> {
    let params = RegisterParams {
        name: args.name,
        session_id: ctx.session()?,
        pid: None,
        lease_ms: None,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.register(params).await }
        })
        .await?;
    let human = format!(
        "registered {} (session {}) as agent {}",
        params.name, params.session_id, result.agent_id
    );
    Ok(Report::new(json!(result), human))
}
