//! How the page's address reaches the person without the run's secret in any argv or URL.
//!
//! `wit ui` prints `http://127.0.0.1:PORT/?code=C`: `C` is a one-time code ([`super::guard`]);
//! once it is used, the page keeps the secret in its cookie and `wit ui` prints the next
//! address, for another browser. The browser `wit ui` launches gets no code on its command
//! line (any local user reads argvs from the process table): it is given the path of a launch
//! file, mode 0600 in the worktree's `.wit/` (0700), whose page redirects to an address with a
//! code of its own, valid for [`LAUNCH_CODE_TTL`]; the file is removed once that code is used
//! or has expired, and when `wit ui` stops.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::guard::{CodeKind, Guard, CODE_PARAM, LAUNCH_CODE_TTL};

/// The printed address and the launch file of one `wit ui` run.
#[derive(Debug)]
pub struct Handoff {
    port: u16,
    launch_file: Mutex<Option<PathBuf>>,
}

/// The address that opens the page with `code`.
pub fn address(port: u16, code: &str) -> String {
    format!("http://127.0.0.1:{port}/?{CODE_PARAM}={code}")
}

/// Writes one line on standard output without panicking: a reader that went away must not
/// stop the server.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

impl Handoff {
    /// The hand-off of a server on `port`, with no launch file yet.
    pub fn new(port: u16) -> Self {
        Self {
            port,
            launch_file: Mutex::new(None),
        }
    }

    /// Mints a printed code and prints its address (`wit ui: URL`).
    pub fn print_address(&self, guard: &Guard) {
        let code = guard.mint(CodeKind::Printed, None);
        say(&format!("wit ui: {}", address(self.port, &code)));
    }

    /// Writes the launch file in `dir` and opens it in the desktop's browser; when either
    /// fails the person opens the printed address themselves.
    pub fn launch(&self, guard: &Guard, dir: &Path) {
        let code = guard.mint(CodeKind::Launch, Some(LAUNCH_CODE_TTL));
        let file = dir.join(format!("ui-{}.html", std::process::id()));
        if let Err(error) = write_launch_file(&file, &address(self.port, &code)) {
            eprintln!(
                "wit ui: cannot write {}: {error}; open the address above yourself",
                file.display()
            );
            return;
        }
        *self.lock_file() = Some(file.clone());
        open_in_browser(&file);
    }

    /// What follows a code's use: the next printed address, or the launch file's removal.
    pub fn redeemed(&self, guard: &Guard, kind: CodeKind) {
        match kind {
            CodeKind::Printed => self.print_address(guard),
            CodeKind::Launch => self.remove_launch_file(),
        }
    }

    /// Removes the launch file unless its code is still live (called when it may expire).
    pub fn expire_launch(&self, guard: &Guard) {
        if !guard.has_live(CodeKind::Launch) {
            self.remove_launch_file();
        }
    }

    /// Removes the launch file, if there is one.
    pub fn remove_launch_file(&self) {
        if let Some(file) = self.lock_file().take() {
            let _ = fs::remove_file(file);
        }
    }

    fn lock_file(&self) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
        self.launch_file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A page that sends the browser on to `url` (a file of a killed run with our pid is replaced).
fn write_launch_file(file: &Path, url: &str) -> std::io::Result<()> {
    let _ = fs::remove_file(file);
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)?;
    write!(
        out,
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>wit ui</title>\n\
         <meta http-equiv=\"refresh\" content=\"0;url={url}\">\n\
         <p><a href=\"{url}\">Open wit ui</a></p>\n"
    )?;
    out.flush()
}

/// Opens `file` with the desktop's opener (`xdg-open`, `open` on macOS), found on `PATH`.
fn open_in_browser(file: &Path) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped on a thread of its own: the opener returns at once, the server runs on.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(_) => eprintln!("wit ui: could not run {opener}; open the address above yourself"),
    }
}
