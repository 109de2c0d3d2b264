//! `wit lock`, `wit release`, `wit locks`.

use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::context::Context;
use super::duration::{format_left, parse_duration};
use super::output::{CliError, Report};
use super::render;
use crate::protocol::{LockAcquireParams, LockQueryParams, LockReleaseParams};

/// The longest lock the protocol accepts (7 days).
const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest wait for a lock the protocol accepts (10 minutes).
const MAX_WAIT: Duration = Duration::from_secs(600);

/// `wit lock`.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// The symbol, `file:name` (e.g. `src/auth.ts:validateToken`, `app/models.py:User.save`).
    pub symbol_path: String,
    /// How long the lock lives: 90s, 10m, 2h, 1h30m (at most 7d; default 30m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// When another session holds it, wait up to this long for it (first come, first
    /// served; at most 10m): 30s, 5m …
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub wait: Option<Duration>,
}

/// `wit release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The locked symbol, `file:name`.
    pub symbol_path: String,
}

/// `wit locks`.
#[derive(Debug, Args)]
pub struct LocksArgs {
    /// Only locks held by this session.
    #[arg(long, conflicts_with = "held_by")]
    pub mine: bool,
    /// Only locks held by the given session.
    #[arg(long, value_name = "SESSION")]
    pub held_by: Option<String>,
}

/// Acquires (or refreshes) a lock.
pub async fn lock(ctx: &Context, args: LockArgs) -> Result<Report, CliError> {
    let ttl_ms = match args.ttl {
        Some(ttl) if ttl > MAX_TTL => {
            return Err(CliError::Usage(format!(
                "--ttl {} is longer than the 7d maximum",
                format_left(ttl.as_millis() as i64)
            )))
        }
        Some(ttl) => Some(ttl.as_millis() as i64),
        None => None,
    };
    let wait_ms = match args.wait {
        Some(wait) if wait > MAX_WAIT => {
            return Err(CliError::Usage(format!(
                "--wait {} is longer than the 10m maximum",
                format_left(wait.as_millis() as i64)
            )))
        }
        Some(wait) => Some(wait.as_millis() as i64),
        None => None,
    };
    let params = LockAcquireParams {
        symbol_path: args.symbol_path,
        session_id: ctx.session()?,
        ttl_ms,
        wait_ms,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.lock_acquire(params).await }
        })
        .await?;
    let left = crate::doorway::clock::parse_iso_ms(&result.expires_at)
        .map(|at| {
            format!(
                " ({} left)",
                format_left(at - crate::doorway::clock::now_ms())
            )
        })
        .unwrap_or_default();
    let human = format!(
        "locked {} for {} until {}{left}\n{}",
        result.symbol_path,
        result.session_id,
        result.expires_at,
        render::caller_warnings(&result.warnings)
    );
    Ok(Report::new(json!(result), human))
}

/// Releases a lock of this session.
pub async fn release(ctx: &Context, args: ReleaseArgs) -> Result<Report, CliError> {
    let params = LockReleaseParams {
        symbol_path: args.symbol_path,
        session_id: ctx.session()?,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.lock_release(params).await }
        })
        .await?;
    let human = format!("released {}", params.symbol_path);
    Ok(Report::new(json!(result), human))
}

/// Lists live locks.
pub async fn list(ctx: &Context, args: LocksArgs) -> Result<Report, CliError> {
    let session_id = match (args.mine, args.held_by) {
        (true, _) => Some(ctx.session()?),
        (false, held_by) => held_by,
    };
    let params = LockQueryParams { session_id };
    let locks = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.lock_query(params).await }
        })
        .await?;
    let human = render::locks_section(&locks);
    Ok(Report::new(json!(locks), human))
}
