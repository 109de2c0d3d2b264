//! The bench repository's fixtures: generated sources, the scratch directory, the daemon
//! under test, and the request sequences the sections share.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::net::{request, Conn};

/// A generated TypeScript file of about `target` bytes: functions calling their neighbour.
pub(crate) fn generated_ts(target: usize) -> (String, usize) {
    let mut out = String::with_capacity(target + 1024);
    let mut n = 0;
    while out.len() < target {
        out.push_str(&format!(
            "/** Function {n}. */\nexport function fn_{n}(a: number, b: string = \"x\"): number {{\n  const c = a + b.length;\n  if (c > 10) {{\n    return fn_{next}(c - 1, b);\n  }}\n  return c * {n};\n}}\n\n",
            next = n + 1
        ));
        n += 1;
    }
    (out, n)
}

/// A scratch directory under /tmp (short: socket paths must stay under 108 bytes), removed on
/// drop.
pub(crate) struct WorkDir(PathBuf);

impl WorkDir {
    pub(crate) fn new() -> Result<Self> {
        let path = PathBuf::from(format!("/tmp/witb-{}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Self(path))
    }
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A daemon child process, killed on drop.
pub(crate) struct Daemon {
    child: Child,
    pub(crate) socket: PathBuf,
}

impl Daemon {
    pub(crate) async fn start(wit: &Path, root: &Path) -> Result<(Self, Duration)> {
        Self::start_with_env(wit, root, &[]).await
    }

    /// Starts like [`Daemon::start`] with `env` added to the daemon's environment.
    pub(crate) async fn start_with_env(
        wit: &Path,
        root: &Path,
        env: &[(&str, &str)],
    ) -> Result<(Self, Duration)> {
        Self::start_with(wit, root, env, "warn", Stdio::inherit()).await
    }

    /// Starts like [`Daemon::start`] logging at `level` (a filter such as
    /// `warn,wit::daemon::work_snapshots=debug`) into `log`.
    pub(crate) async fn start_logging(
        wit: &Path,
        root: &Path,
        level: &str,
        log: &Path,
    ) -> Result<(Self, Duration)> {
        let file =
            std::fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
        Self::start_with(wit, root, &[], level, Stdio::from(file)).await
    }

    async fn start_with(
        wit: &Path,
        root: &Path,
        env: &[(&str, &str)],
        level: &str,
        stderr: Stdio,
    ) -> Result<(Self, Duration)> {
        let started = Instant::now();
        let child = Command::new(wit)
            .args(["daemon", "run", "--log-level", level, "--repo"])
            .arg(root)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("spawn {}", wit.display()))?;
        let daemon = Daemon {
            child,
            socket: root.join(".wit/daemon.sock"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut conn) = Conn::open(&daemon.socket).await {
                if conn.call("ping", json!({})).await.is_ok() {
                    return Ok((daemon, started.elapsed()));
                }
            }
            if Instant::now() > deadline {
                bail!("the daemon did not answer ping within 20 s");
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An acquire (60 s) and a release of `symbol` by `session`.
pub(crate) fn lock_cycle(symbol: &str, session: &str) -> Vec<Vec<u8>> {
    vec![
        request(
            "lock.acquire",
            &json!({"symbolPath": symbol, "sessionId": session, "ttlMs": 60_000}),
        ),
        request(
            "lock.release",
            &json!({"symbolPath": symbol, "sessionId": session}),
        ),
    ]
}

/// Proposes a contract on `symbol` as session `owner` and has `peer` accept it.
pub(crate) async fn accept_contract(conn: &mut Conn, symbol: &str) -> Result<()> {
    let proposed = conn
        .call(
            "contract.propose",
            json!({"sessionId": "owner", "symbolPath": symbol}),
        )
        .await?;
    let id = proposed["contractId"]
        .as_str()
        .context("contract.propose answered no contractId")?;
    conn.call(
        "contract.respond",
        json!({"contractId": id, "sessionId": "peer", "accept": true}),
    )
    .await?;
    Ok(())
}
