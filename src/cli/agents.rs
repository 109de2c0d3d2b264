//! `wit register`.

use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::context::Context;
use super::duration::{format_left, parse_duration};
use super::output::{CliError, Report};
use crate::protocol::RegisterParams;

/// `wit register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// A display name for this session (e.g. `claude-backend`).
    pub name: String,
    /// The process whose life is the session's life: when it exits, the daemon releases the
    /// session's locks and abandons its intents.
    #[arg(long, value_name = "PID", conflicts_with = "parent")]
    pub pid: Option<i64>,
    /// Tie the session to the process that runs this command (e.g. the agent's shell).
    #[arg(long)]
    pub parent: bool,
    /// The session stays live while it makes a call at least this often (1s to 24h; e.g.
    /// 10m); `wit session heartbeat` is such a call.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub lease: Option<Duration>,
}

/// Registers this session under a name (idempotent: the same session keeps its agent id;
/// the pid and lease are replaced).
pub async fn register(ctx: &Context, args: RegisterArgs) -> Result<Report, CliError> {
    let pid = match (args.pid, args.parent) {
        (Some(pid), _) => Some(pid),
        (None, true) => Some(crate::platform::process::parent_pid()),
        (None, false) => None,
    };
    let params = RegisterParams {
        name: args.name,
        session_id: ctx.session()?,
        pid,
        lease_ms: args.lease.map(|lease| lease.as_millis() as i64),
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.register(params).await }
        })
        .await?;
    let mut human = format!(
        "registered {} (session {}) as agent {}",
        params.name, params.session_id, result.agent_id
    );
    if let Some(pid) = params.pid {
        human.push_str(&format!("; it ends when process {pid} exits"));
    }
    if let Some(lease) = params.lease_ms {
        human.push_str(&format!(
            "; it ends after {} without a call",
            format_left(lease)
        ));
    }
    Ok(Report::new(json!(result), human))
}
