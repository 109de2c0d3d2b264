//! `wit mcp`: a stdio MCP server that offers every protocol method as a tool, plus
//! [`commit_tool`], the one hand-written tool (`wit commit` for agents).
//!
//! The server is one more client of the daemon, like the CLI: the tools come from the table
//! `wit-codegen` generates out of `openrpc.json` ([`tools`]), each call goes to the daemon
//! through the shared [`crate::doorway::Doorway`] (which starts the daemon when none
//! answers), results and protocol errors become tool results an agent can act on
//! ([`render`]). The session the server acts for comes from [`identity`]; [`server`] holds the
//! rmcp handler, the registration at `initialize` and the `session.end` when stdin closes;
//! [`stdio`] the line transport that answers every line it cannot serve.

pub mod commit_tool;
pub mod identity;
pub mod render;
pub mod server;
pub mod stdio;
pub mod tools;

pub use server::serve;

/// Why `wit mcp` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--session` was given but empty.
    #[error("--session must not be empty")]
    EmptySession,
    /// The generated tool table does not parse (a generator bug).
    #[error("the generated MCP tool table does not parse: {0}")]
    Table(#[source] serde_json::Error),
    /// The async runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The MCP client's first messages were not a valid `initialize`.
    #[error("the MCP session did not start: {0}")]
    Initialize(String),
    /// The MCP service stopped abnormally.
    #[error("the MCP service failed: {0}")]
    Service(String),
}

/// `Result` with a [`ServeError`].
pub type Result<T> = std::result::Result<T, ServeError>;
