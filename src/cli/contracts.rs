//! `wit contract propose|accept|reject|list` and `wit check-contracts` (the pre-commit check).

use std::collections::BTreeSet;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;

use super::context::Context;
use super::output::{self, CliError, Report};
use super::render;
use crate::git::Git;
use crate::protocol::{
    CheckContractsParams, CheckContractsParamsFilesItem, ContractProposeParams,
    ContractQueryParams, ContractRespondParams,
};

/// The whole budget of `check-contracts --hook`: after it the commit goes through.
pub const HOOK_BUDGET: Duration = Duration::from_secs(2);

/// The environment variable that overrides [`HOOK_BUDGET`], in milliseconds (for slow machines
/// and for the demo; a value that is not a positive integer is ignored).
pub const HOOK_BUDGET_ENV: &str = "WIT_HOOK_TIMEOUT_MS";

/// The hook's budget: [`HOOK_BUDGET_ENV`] when it holds a positive integer, else
/// [`HOOK_BUDGET`].
pub fn hook_budget() -> Duration {
    std::env::var(HOOK_BUDGET_ENV)
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(HOOK_BUDGET, Duration::from_millis)
}

/// Whether wit understands the symbols of the file at `path` (docs/protocol.md 2.3, 11.1): the
/// language registry's answer, by suffix.
pub fn is_supported_path(path: &str) -> bool {
    crate::analysis::Language::for_path(path).is_some()
}

/// `wit contract ...`.
#[derive(Debug, Subcommand)]
pub enum ContractCommand {
    /// Capture the current signature of a symbol and propose it as a contract.
    ///
    /// Example: wit contract propose src/auth.ts:validateToken
    Propose {
        /// The symbol, `file:name`.
        symbol_path: String,
    },
    /// Accept another session's proposed contract.
    Accept {
        /// The contract id.
        contract_id: String,
    },
    /// Reject another session's proposed contract.
    Reject {
        /// The contract id.
        contract_id: String,
    },
    /// List contracts.
    List {
        /// Only contracts on this symbol (`file:name`).
        #[arg(long, value_name = "SYMBOL_PATH")]
        symbol: Option<String>,
        /// Only contracts with this status (proposed, accepted, rejected).
        #[arg(long, value_name = "STATUS")]
        status: Option<String>,
    },
}

/// `wit check-contracts`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check these working-tree files (paths relative to the repository root) instead of the
    /// staged changes.
    pub paths: Vec<String>,
    /// Pre-commit mode: never starts a daemon, gives up after 2 s and then lets the commit
    /// through with a one-line warning; silent when nothing is broken.
    #[arg(long)]
    pub hook: bool,
}

/// Runs a `contract` subcommand.
pub async fn run(ctx: &Context, command: ContractCommand) -> Result<Report, CliError> {
    match command {
        ContractCommand::Propose { symbol_path } => {
            let params = ContractProposeParams {
                session_id: ctx.session()?,
                symbol_path,
            };
            let result = ctx
                .call(|client| {
                    let params = params.clone();
                    async move { client.contract_propose(params).await }
                })
                .await?;
            let human = format!(
                "proposed contract {} on {}\n  signature: {}\nAnother session accepts it with: wit contract accept {}",
                result.contract_id, result.symbol_path, result.signature, result.contract_id
            );
            Ok(Report::new(json!(result), human))
        }
        ContractCommand::Accept { contract_id } => respond(ctx, contract_id, true).await,
        ContractCommand::Reject { contract_id } => respond(ctx, contract_id, false).await,
        ContractCommand::List { symbol, status } => {
            let params = ContractQueryParams {
                symbol_path: symbol,
                status,
            };
            let contracts = ctx
                .call(|client| {
                    let params = params.clone();
                    async move { client.contract_query(params).await }
                })
                .await?;
            let human = render::contracts_section(&contracts);
            Ok(Report::new(json!(contracts), human))
        }
    }
}

async fn respond(ctx: &Context, contract_id: String, accept: bool) -> Result<Report, CliError> {
    let params = ContractRespondParams {
        contract_id,
        session_id: ctx.session()?,
        accept,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.contract_respond(params).await }
        })
        .await?;
    let status = result.status;
    let human = format!("contract {} {status}", result.contract_id);
    Ok(Report::new(json!(result), human))
}

/// Checks staged content (or the given files) against accepted contracts. In hook mode every
/// failure to check lets the commit through with one line on stderr.
pub async fn check(ctx: &Context, args: &CheckArgs) -> Result<Report, CliError> {
    if !args.hook {
        return check_files(ctx, args, true).await;
    }
    let budget = hook_budget();
    let reason = match tokio::time::timeout(budget, check_files(ctx, args, false)).await {
        Ok(Ok(report)) => return Ok(report),
        Ok(Err(error)) => output::error_text(&error)
            .trim_start_matches("wit: ")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
        Err(_) => format!("no answer within {} ms", budget.as_millis()),
    };
    Ok(
        Report::quiet(json!({"checked": false, "reason": reason})).with_note(format!(
            "wit: contracts not checked ({reason}); commit allowed"
        )),
    )
}

/// The pre-commit hook's contracts check of the staged content, with no budget of its own
/// (the hook's one budget is the caller's, docs/protocol.md 6); never starts a daemon.
pub async fn check_staged_for_hook(ctx: &Context) -> Result<Report, CliError> {
    let args = CheckArgs {
        paths: Vec::new(),
        hook: true,
    };
    check_files(ctx, &args, false).await
}

async fn check_files(ctx: &Context, args: &CheckArgs, autostart: bool) -> Result<Report, CliError> {
    let hook = args.hook;
    // The pre-commit hook looks at the staged files first: with no supported file staged there
    // is nothing to check, so it asks no daemon and prints nothing (docs/protocol.md 6).
    let staged = if hook && args.paths.is_empty() {
        let staged: Vec<String> = staged_paths(ctx)
            .await?
            .into_iter()
            .filter(|path| is_supported_path(path))
            .collect();
        if staged.is_empty() {
            return Ok(Report::new(json!({"violations": [], "checked": true}), ""));
        }
        Some(staged)
    } else {
        None
    };
    // Accepted contracts first: with none at stake the check needs no git command at all.
    let query = ContractQueryParams {
        symbol_path: None,
        status: Some("accepted".to_string()),
    };
    let contracts = if autostart {
        ctx.call(|client| {
            let query = query.clone();
            async move { client.contract_query(query).await }
        })
        .await?
    } else {
        ctx.client().contract_query(query).await?
    };
    let contracted: BTreeSet<&str> = contracts
        .iter()
        .filter_map(|c| c.symbol_path.split_once(':').map(|(file, _)| file))
        .collect();
    let candidates: Vec<String> = if contracted.is_empty() {
        Vec::new()
    } else if let Some(staged) = staged {
        staged
    } else if args.paths.is_empty() {
        staged_paths(ctx).await?
    } else {
        args.paths.clone()
    };
    let at_stake: Vec<String> = candidates
        .into_iter()
        .filter(|path| is_supported_path(path))
        .filter(|path| contracted.contains(path.trim_start_matches("./")))
        .collect();
    if at_stake.is_empty() {
        let human = if hook {
            ""
        } else {
            "ok: no accepted contract at stake"
        };
        return Ok(Report::new(
            json!({"violations": [], "checked": true}),
            human,
        ));
    }
    let mut files = Vec::with_capacity(at_stake.len());
    for path in at_stake {
        let bytes = if args.paths.is_empty() {
            staged_content(ctx, &path).await?
        } else {
            tokio::fs::read(ctx.paths.root.join(&path))
                .await
                .map_err(|error| CliError::Failed(format!("cannot read {path}: {error}")))?
        };
        // A file that is not UTF-8 is binary (docs/protocol.md 15.4): no symbols, no contract
        // to break, and never decoded lossily.
        if let Ok(content) = String::from_utf8(bytes) {
            files.push(CheckContractsParamsFilesItem { path, content });
        }
    }
    let count = files.len();
    let params = CheckContractsParams { files };
    let result = ctx.client().check_contracts(params).await?;
    if result.violations.is_empty() {
        let human = if hook {
            String::new()
        } else {
            format!("ok: {count} file(s) checked, every contract holds")
        };
        Ok(Report::new(
            json!({"violations": [], "checked": true}),
            human,
        ))
    } else {
        let human = render::violations(&result.violations);
        Ok(Report::new(
            json!({"violations": result.violations, "checked": true}),
            human,
        )
        .with_code(super::EXIT_PROTOCOL))
    }
}

/// Paths of staged files that were added, copied, modified or renamed.
async fn staged_paths(ctx: &Context) -> Result<Vec<String>, CliError> {
    let out = git(
        ctx,
        &[
            "diff",
            "--cached",
            "--name-only",
            "--diff-filter=ACMR",
            "-z",
        ],
    )
    .await?;
    Ok(String::from_utf8_lossy(&out)
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
}

/// The staged bytes of `path` (`git show :path`).
async fn staged_content(ctx: &Context, path: &str) -> Result<Vec<u8>, CliError> {
    git(ctx, &["show", &format!(":{path}")]).await
}

/// Runs git in the repository root (inheriting `GIT_INDEX_FILE` and friends from a hook)
/// and returns its stdout; the child is killed if the caller gives up.
async fn git(ctx: &Context, args: &[&str]) -> Result<Vec<u8>, CliError> {
    Git::new(&ctx.paths.root)
        .run_async(args)
        .await
        .map_err(|error| CliError::Failed(error.to_string()))
}
