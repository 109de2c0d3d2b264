//! A small WebDriver client (W3C protocol, JSON over HTTP/1.1) driving Debian's headless
//! Chromium through `chromedriver`, and a plain HTTP/1.1 request helper for raw checks.
//!
//! Both binaries must be installed (`.ci/run` installs them): a missing one fails the test
//! with what to install; nothing is skipped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One HTTP/1.1 response: status, headers (lower-case names) and body.
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole answer.
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
    let mut request = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    // Read until the body is complete (by Content-Length or the last chunk), or the peer
    // closes: some servers keep the connection open despite `Connection: close`, and a
    // server that refuses early may reset it once it has answered.
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        if complete(&raw) {
            break;
        }
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && complete(&raw) => break,
            Err(e) => panic!("{method} {target}: {e} after {} bytes", raw.len()),
        }
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete HTTP head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    HttpResponse {
        status,
        headers,
        body,
    }
}

/// Whether `raw` holds a whole response: head, then Content-Length bytes or a last chunk.
fn complete(raw: &[u8]) -> bool {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let body = &raw[split + 4..];
    if let Some(length) = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return body.len() >= length;
    }
    head.contains("transfer-encoding: chunked") && body.ends_with(b"0\r\n\r\n")
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(std::str::from_utf8(&data[..end]).unwrap().trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
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
