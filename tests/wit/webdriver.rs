//! A small WebDriver client (W3C protocol, JSON over HTTP/1.1) driving Debian's headless
//! Chromium through `chromedriver`, and a plain HTTP/1.1 request helper for raw checks.
//!
//! Both binaries must be installed (`.ci/run` installs them): a missing one fails the test
//! with what to install; nothing is skipped.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{request_bytes, HttpResponse, ResponseReader};

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole answer
/// (some servers keep the connection open despite `Connection: close`, so the answer ends where
/// its framing says, or where the peer closes or resets the connection).
pub fn http(
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let host = format!("127.0.0.1:{port}");
    let mut all = vec![("Connection", "close")];
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        all.push(("Host", &host));
    }
    all.extend_from_slice(headers);
    stream
        .write_all(&request_bytes(method, target, &all, body))
        .unwrap();
    ResponseReader::new(stream)
        .next_response()
        .unwrap_or_else(|e| panic!("{method} {target}: {e}"))
}

/// A free port on 127.0.0.1 (bound, then released for the child to take).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn installed(name: &str, candidates: &[&str]) -> PathBuf {
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not installed (looked at {candidates:?}); the browser tests need \
                 Debian's chromium and chromium-driver: apt-get install -y chromium chromium-driver \
                 (.ci/run installs them)"
            )
        })
}

/// A running chromedriver and one headless Chromium session; both end on drop.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a fresh headless Chromium (new profile, no network services).
    pub fn start(width: u32, height: u32) -> Self {
        let chromium = installed(
            "chromium",
            &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        );
        let chromedriver = installed("chromedriver", &["/usr/bin/chromedriver"]);
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = TcpStream::connect(("127.0.0.1", port)).is_ok()
                && request(port, "GET", "/status", None)["value"]["ready"] == true;
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::Builder::new()
            .prefix("wit-chromium")
            .tempdir()
            .unwrap();
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--hide-scrollbars".to_owned(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let answer = request(port, "POST", "/session", Some(capabilities));
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {answer}"))
            .to_owned();
        Self {
            driver,
            port,
            session,
            _profile: profile,
        }
    }

    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let answer = request(
            self.port,
            method,
            &format!("/session/{}{path}", self.session),
            body,
        );
        if answer["value"]["error"].is_string() {
            panic!("WebDriver {method} {path}: {answer}");
        }
        answer["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.command("POST", "/url", Some(json!({"url": url})));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page; its result.
    pub fn eval(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Waits until `script` returns something truthy (polling, up to `limit`); its value.
    pub fn wait_for(&self, what: &str, script: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let value = self.eval(script, json!([]));
            if !(value.is_null() || value == false || value == 0 || value == "") {
                return value;
            }
            assert!(Instant::now() < deadline, "the page never showed {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Clicks the first element matching the CSS `selector`, as a user would (found again
    /// when the page replaced it between the lookup and the click).
    pub fn click(&self, selector: &str) {
        for _ in 0..10 {
            let found = self.command(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": selector})),
            );
            let id = found
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("no element {selector}: {found}"))
                .to_owned();
            let answer = request(
                self.port,
                "POST",
                &format!("/session/{}/element/{id}/click", self.session),
                Some(json!({})),
            );
            match answer["value"]["error"].as_str() {
                None => return,
                Some("stale element reference") => continue,
                Some(_) => panic!("click on {selector}: {answer}"),
            }
        }
        panic!("{selector} kept being replaced");
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let data = self.command("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = request_result(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn request(port: u16, method: &str, path: &str, body: Option<Value>) -> Value {
    request_result(port, method, path, body).unwrap()
}

fn request_result(
    port: u16,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let answer = http(
        port,
        method,
        path,
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    serde_json::from_slice(&answer.body).map_err(|e| format!("{e}: {}", answer.status))
}
