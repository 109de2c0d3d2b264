//! `wit declare`, `wit intent list`, `wit intent update`.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use super::context::Context;
use super::output::{CliError, Report};
use super::render;
use crate::protocol::{
    IntentDeclareParams, IntentQueryParams, IntentRecord, IntentUpdateParams,
    IntentUpdateParamsStatus,
};

/// `wit declare`.
#[derive(Debug, Args)]
pub struct DeclareArgs {
    /// What you are about to do and why.
    #[arg(short, long, value_name = "TEXT")]
    pub description: String,
    /// A file you will change (repeat for several).
    #[arg(short, long = "file", value_name = "PATH", required = true)]
    pub files: Vec<String>,
    /// A symbol you will change, by name (`validateToken`, `User.save`; repeat for several).
    #[arg(short, long = "symbol", value_name = "NAME")]
    pub symbols: Vec<String>,
}

/// `wit intent ...`.
#[derive(Debug, Subcommand)]
pub enum IntentCommand {
    /// List intents (default: declared and active ones).
    List(ListArgs),
    /// Move one of your intents to `active`, `resolved` or `abandoned`.
    ///
    /// Example: wit intent update 0c5e…-…-… resolved
    Update {
        /// The intent id (as `wit declare` printed it).
        intent_id: String,
        /// The new status.
        status: Status,
    },
}

/// `wit intent list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this session's intents.
    #[arg(long, conflicts_with = "of")]
    pub mine: bool,
    /// Only the intents of the given session.
    #[arg(long, value_name = "SESSION")]
    pub of: Option<String>,
    /// Only intents listing this file.
    #[arg(long, value_name = "PATH")]
    pub file: Option<String>,
    /// Only intents with this status.
    #[arg(long, value_name = "STATUS", conflicts_with = "all")]
    pub status: Option<String>,
    /// Include resolved and abandoned intents.
    #[arg(long)]
    pub all: bool,
}

/// An intent status an agent can move to.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Status {
    /// Work has started.
    Active,
    /// Done.
    Resolved,
    /// Given up.
    Abandoned,
}

impl From<Status> for IntentUpdateParamsStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Active => Self::Active,
            Status::Resolved => Self::Resolved,
            Status::Abandoned => Self::Abandoned,
        }
    }
}

/// Declares an intent and shows its conflicts.
pub async fn declare(ctx: &Context, args: DeclareArgs) -> Result<Report, CliError> {
    let params = IntentDeclareParams {
        session_id: ctx.session()?,
        description: args.description,
        files: args.files,
        symbols: args.symbols,
    };
    let result = ctx
        .call(|client| {
            let params = params.clone();
            async move { client.intent_declare(params).await }
        })
        .await?;
    let human = format!(
        "declared intent {}\n{}",
        result.intent_id,
        render::conflicts(&result.conflicts)
    );
    Ok(Report::new(json!(result), human))
}

/// Runs an `intent` subcommand.
pub async fn run(ctx: &Context, command: IntentCommand) -> Result<Report, CliError> {
    match command {
        IntentCommand::List(args) => list(ctx, args).await,
        IntentCommand::Update { intent_id, status } => {
            let params = IntentUpdateParams {
                intent_id,
                session_id: ctx.session()?,
                status: status.into(),
            };
            let result = ctx
                .call(|client| {
                    let params = params.clone();
                    async move { client.intent_update(params).await }
                })
                .await?;
            let human = format!("intent {} is now {}", result.intent_id, result.status);
            Ok(Report::new(json!(result), human))
        }
    }
}

async fn list(ctx: &Context, args: ListArgs) -> Result<Report, CliError> {
    let session_id = match (args.mine, args.of) {
        (true, _) => Some(ctx.session()?),
        (false, of) => of,
    };
    // The protocol filters by one status (default: declared and active); `--all` asks for
    // each status and merges them by declaration time.
    let statuses: Vec<Option<String>> = if args.all {
        ["declared", "active", "resolved", "abandoned"]
            .into_iter()
            .map(|status| Some(status.to_owned()))
            .collect()
    } else {
        vec![args.status.clone()]
    };
    let mut intents: Vec<IntentRecord> = Vec::new();
    for status in statuses {
        let params = IntentQueryParams {
            session_id: session_id.clone(),
            file: args.file.clone(),
            status,
        };
        let found = ctx
            .call(|client| {
                let params = params.clone();
                async move { client.intent_query(params).await }
            })
            .await?;
        intents.extend(found);
    }
    if args.all {
        // Stable: each status's answer keeps the daemon's order (time, then creation).
        intents.sort_by_key(|intent| intent.declared_at);
    }
    let human = render::intents_section(&intents);
    Ok(Report::new(json!(intents), human))
}
