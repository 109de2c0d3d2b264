//! `wit ui`: a local web page for the person supervising the agents: sessions, locks and
//! waits, the work map, contracts and the live timeline, with the few actions a person may
//! take.
//!
//! The server is one more client of the daemon, like the CLI and `wit mcp`: every read and
//! action is an ordinary protocol call through the generated client
//! ([`crate::doorway::Doorway`]); the daemon stays on its Unix socket. [`guard`] admits
//! requests (loopback `Host`, the run's secret in a cookie, one-time codes), [`handoff`] gets
//! the address to the person without the secret in any argv, [`routes`] answers requests,
//! [`feed`] follows `events.poll` and re-reads [`snapshot`]s, [`stream`] pushes both to each
//! page over Server-Sent Events, [`actions`] holds what a person may do, [`assets`] the
//! embedded page, [`backoff`] keeps the accept loop from spinning when descriptors run out.
//!
//! Routing is a `match` on method and path over hyper (already the daemon's and the client's
//! HTTP stack): seven fixed routes do not justify a router crate and its tower stack.

pub mod actions;
pub mod assets;
pub mod backoff;
pub mod feed;
pub mod guard;
pub mod handoff;
pub mod routes;
pub mod snapshot;
pub mod stream;

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::TcpListener;

use crate::daemon::paths::WitPaths;
use crate::doorway::Doorway;

/// How `wit ui` runs.
#[derive(Debug, Clone)]
pub struct UiOptions {
    /// The port on 127.0.0.1 (0: any free one).
    pub port: u16,
    /// Whether to open the page in the browser.
    pub open: bool,
    /// The person's session id (default: `ui:<user>:<pid>`).
    pub session: Option<String>,
    /// Whether calls may start the daemon.
    pub autostart: bool,
}

/// Why `wit ui` stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The async runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for.
        port: u16,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The daemon could not be reached (or started) to register the person's session.
    #[error("{0}")]
    Daemon(String),
}

/// Serves the page until Ctrl-C; prints its address (with a one-time code) on stdout first.
pub fn serve(paths: WitPaths, options: UiOptions) -> Result<(), UiError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(UiError::Runtime)?
        .block_on(run(paths, options))
}

async fn run(paths: WitPaths, options: UiOptions) -> Result<(), UiError> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, options.port)))
        .await
        .map_err(|source| UiError::Bind {
            port: options.port,
            source,
        })?;
    let port = listener
        .local_addr()
        .map_err(|source| UiError::Bind {
            port: options.port,
            source,
        })?
        .port();
    let acting = Doorway::new(paths.clone(), options.autostart);
    // Reads never start a daemon: a person who stopped it sees it stopped.
    let watching = Doorway::new(paths.clone(), false);
    let reading = watching.clone();
    let person = options.session.clone().unwrap_or_else(default_person);
    let user = std::env::var("USER").unwrap_or_else(|_| "person".into());
    acting
        .call_raw(
            "register",
            json!({"sessionId": person, "name": format!("{user} (wit ui)"),
                   "pid": std::process::id()}),
        )
        .await
        .map_err(|error| UiError::Daemon(error.to_string()))?;
    let hub = feed::Hub::new();
    tokio::spawn(feed::follow_events(Arc::clone(&hub), watching.clone()));
    tokio::spawn(feed::refresh_sections(
        Arc::clone(&hub),
        watching,
        paths.root.clone(),
    ));
    let guard = guard::Guard::new(port);
    let handoff = handoff::Handoff::new(port);
    handoff.print_address(&guard);
    handoff::say("(Ctrl-C to stop)");
    if options.open {
        handoff.launch(&guard, &paths.worktree_dir);
    }
    let title = paths
        .root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| paths.root.display().to_string());
    let ui = Arc::new(routes::Ui {
        guard,
        handoff,
        hub,
        daemon: acting.clone(),
        watching: reading,
        person: person.clone(),
        title,
    });
    if options.open {
        let ui = Arc::clone(&ui);
        tokio::spawn(async move {
            tokio::time::sleep(guard::LAUNCH_CODE_TTL).await;
            ui.handoff.expire_launch(&ui.guard);
        });
    }
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut backoff = backoff::AcceptBackoff::default();
    loop {
        let stream = tokio::select! {
            _ = &mut interrupted => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    backoff.reset();
                    stream
                }
                Err(error) => {
                    if let Some(pause) = backoff.after(&error) {
                        tokio::select! {
                            _ = &mut interrupted => break,
                            () = tokio::time::sleep(pause) => {}
                        }
                    }
                    continue;
                }
            },
        };
        let ui = Arc::clone(&ui);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let ui = Arc::clone(&ui);
                async move { Ok::<_, Infallible>(ui.handle(request).await) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    ui.handoff.remove_launch_file();
    let _ = acting
        .call_raw("session.end", json!({"sessionId": person}))
        .await;
    Ok(())
}

fn default_person() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "person".into());
    format!("ui:{user}:{}", std::process::id())
}
