//! `wit ui`: serves the supervision page (see [`crate::ui`]).

use clap::Args;

use super::context::Context;
use super::output::{CliError, Report};
use crate::ui::{self, UiOptions};

/// `wit ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// Port on 127.0.0.1 (default: any free port).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Print the page's address without opening a browser.
    #[arg(long)]
    pub no_open: bool,
}

/// Serves the page until Ctrl-C.
pub fn run(ctx: &Context, args: &UiArgs, session: Option<String>) -> Result<Report, CliError> {
    let options = UiOptions {
        port: args.port,
        open: !args.no_open,
        session,
        autostart: ctx.autostart(),
    };
    ui::serve(ctx.paths.clone(), options)
        .map(|()| Report::nothing())
        .map_err(|error| match error {
            ui::UiError::Daemon(detail) => CliError::Unreachable(detail),
            other => CliError::Failed(format!("wit ui: {other}")),
        })
}
