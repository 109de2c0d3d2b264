//! The rmcp handler of `wit mcp` and its life: register at `initialize` (or, from protocol
//! revision 2026-07-28 on, which has no `initialize`, at the first request naming its client
//! in `_meta`), serve `tools/list` and `tools/call`, end the session when stdin closes. The
//! revision is rmcp's negotiation over every revision it knows: the client's own when rmcp
//! serves it (2026-07-28 through `server/discover` and per-request `_meta`, as Claude Code
//! 2.1.332 speaks it), else the newest rmcp answers `initialize` with.
//!
//! The handler is written by hand (`list_tools`/`call_tool`) rather than with rmcp's tool
//! macros: the tools are data from the generated table, registered at run time from their JSON
//! Schemas, plus the one hand-written tool, [`commit_tool`] (listed after them).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, ServerInitializeError};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use tokio::sync::Mutex;

use super::commit_tool;
use super::identity::{self, Identity};
use super::stdio::LineTransport;
use super::tools::{self, ToolTable};
use super::{render, Result, ServeError};
use crate::daemon::paths::WitPaths;
use crate::doorway::{Doorway, Failure};
use crate::protocol::{RegisterParams, SessionEndParams};

/// What `initialize` tells the agent, once per session: the workflow in two lines.
const INSTRUCTIONS: &str = "wit coordinates the agents editing this repository. Before editing, \
    intent_declare your plan and read its conflicts; lock_acquire each symbol (file:name) you \
    change and lock_release it when done. LOCK_CONFLICT means another agent holds it: do not \
    edit it. Commit with the commit tool: it commits only your own lines.";

/// How long the `session.end` at exit may take.
const END_TIMEOUT: Duration = Duration::from_secs(2);

/// The MCP server of one repository, acting for one session.
#[derive(Debug, Clone)]
pub struct WitMcp {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    table: ToolTable,
    daemon: Doorway,
    identity: Identity,
    registration: Mutex<Registration>,
}

/// The session's registration with the daemon.
#[derive(Debug, Default)]
struct Registration {
    /// The MCP client's name, known from `initialize` on.
    client_name: Option<String>,
    /// Whether `register` was answered (success, or an error a retry would not change).
    settled: bool,
}

impl WitMcp {
    /// A server of the daemon at `paths`, acting as `identity`.
    pub fn new(table: ToolTable, daemon: Doorway, identity: Identity) -> Self {
        Self {
            shared: Arc::new(Shared {
                table,
                daemon,
                identity,
                registration: Mutex::new(Registration::default()),
            }),
        }
    }

    /// Notes the client's name from a request's `_meta` (`io.modelcontextprotocol/clientInfo`):
    /// from protocol revision 2026-07-28 on there is no `initialize`, and every request says
    /// who the client is instead.
    async fn note_client(&self, context: &RequestContext<RoleServer>) {
        let Some(info) = context.meta.client_info() else {
            return;
        };
        let mut registration = self.shared.registration.lock().await;
        if registration.client_name.is_none() {
            registration.client_name = Some(identity::registered_name(&info.name));
        }
    }

    /// Registers the session with the daemon if `initialize` was seen and it is not registered
    /// yet: name = the client's name, pid = this server's parent (the agent). A failure is
    /// reported on stderr and tried again before the next call, unless the daemon rejected it.
    async fn ensure_registered(&self) {
        let mut registration = self.shared.registration.lock().await;
        if registration.settled {
            return;
        }
        let Some(name) = registration.client_name.clone() else {
            return;
        };
        let params = RegisterParams {
            name,
            session_id: self.shared.identity.session_id.clone(),
            pid: Some(identity::agent_pid()),
            lease_ms: None,
        };
        let params = serde_json::to_value(&params).unwrap_or_default();
        match self.shared.daemon.call_raw("register", params).await {
            Ok(_) => registration.settled = true,
            Err(Failure::Rpc(error)) => {
                registration.settled = true;
                eprintln!(
                    "wit mcp: the daemon refused to register session {}: {error}",
                    self.shared.identity.session_id
                );
            }
            Err(error) => eprintln!(
                "wit mcp: cannot register session {} yet: {error}",
                self.shared.identity.session_id
            ),
        }
    }

    /// Ends the session (releases its locks, abandons its open intents) if `initialize` was
    /// seen; never starts a daemon for it.
    async fn end_session(&self) {
        if self.shared.registration.lock().await.client_name.is_none() {
            return;
        }
        let params = SessionEndParams {
            session_id: self.shared.identity.session_id.clone(),
        };
        let params = serde_json::to_value(&params).unwrap_or_default();
        if let Err(error) = self
            .shared
            .daemon
            .call_if_running(END_TIMEOUT, |client| async move {
                client.call_raw("session.end", params).await
            })
            .await
        {
            eprintln!(
                "wit mcp: could not end session {}: {error}",
                self.shared.identity.session_id
            );
        }
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        if request.name == commit_tool::NAME {
            self.ensure_registered().await;
            let shared = &self.shared;
            let result = commit_tool::call(
                &shared.daemon,
                &shared.identity.session_id,
                request.arguments,
            )
            .await;
            return Ok(result.into());
        }
        let Some(spec) = self.shared.table.get(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`: wit has {} tools, tools/list names them",
                    request.name,
                    self.shared.table.specs().len() + 1
                ),
                Some(json!({ "tool": request.name })),
            ));
        };
        self.ensure_registered().await;
        let params = match tools::params(spec, request.arguments, &self.shared.identity.session_id)
        {
            Ok(params) => params,
            Err(errors) => return Ok(render::invalid_arguments(spec, errors).into()),
        };
        let result = match self
            .shared
            .daemon
            .call_raw(&spec.method, params.clone())
            .await
        {
            Ok(result) => render::success(spec, result),
            Err(Failure::Rpc(error)) => render::protocol_error(spec, &error, &params),
            Err(Failure::Unavailable(why)) => render::unavailable(&spec.name, &why),
        };
        Ok(result.into())
    }
}

impl ServerHandler for WitMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("wit", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.shared.registration.lock().await.client_name =
            Some(identity::registered_name(&request.client_info.name));
        // Registered in the background: `initialize` answers at once, and every tool call
        // waits for the registration first.
        let server = self.clone();
        tokio::spawn(async move { server.ensure_registered().await });
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        self.note_client(&context).await;
        let server = self.clone();
        tokio::spawn(async move { server.ensure_registered().await });
        let mut tools = self.shared.table.tools().to_vec();
        tools.push(commit_tool::tool());
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        self.note_client(&context).await;
        self.call(request).await
    }
}

/// `wit mcp`: serves MCP on stdin/stdout for the repository at `repo` (else the usual root
/// discovery) as session `session_flag` (else the environment, else a new id) until stdin
/// closes, then ends the session.
pub fn serve(repo: Option<&Path>, session_flag: Option<&str>, autostart: bool) -> Result<()> {
    let root = crate::daemon::paths::discover_root(repo).map_err(|error| {
        ServeError::Initialize(format!("cannot use the repository root: {error}"))
    })?;
    let identity = identity::resolve(session_flag, |name| std::env::var(name).ok())?;
    let table = ToolTable::load().map_err(ServeError::Table)?;
    let daemon = Doorway::new(WitPaths::for_root(&root), autostart);
    let server = WitMcp::new(table, daemon, identity);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?
        .block_on(run(server))
}

async fn run(server: WitMcp) -> Result<()> {
    let running = match server
        .clone()
        .serve(LineTransport::new(tokio::io::stdin(), tokio::io::stdout()))
        .await
    {
        Ok(running) => running,
        // Stdin closed before `initialize`: a probe, nothing to serve or end.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(ServeError::Initialize(error.to_string())),
    };
    let quit = running.waiting().await;
    server.end_session().await;
    match quit {
        Ok(_) => Ok(()),
        Err(error) => Err(ServeError::Service(error.to_string())),
    }
}
