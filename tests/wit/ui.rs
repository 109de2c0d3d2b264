//! `wit ui` (issue 25) in a real browser: headless Chromium driven through chromedriver
//! shows the daemon's state, follows changes without a reload, carries out a person's
//! actions, survives a daemon restart; raw requests without the token learn nothing.
//!
//! `WIT_UI_SCREENSHOT=1` writes the README's screenshot to `docs/ui.png`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{block_on, wit_bin, Daemon, Repo};
use crate::safegit::{edit, git_text, wit_ok};
use crate::webdriver::{http, Browser};

/// One browser at a time: two Chromiums at once would fight over two cores.
static BROWSER: Mutex<()> = Mutex::new(());

/// How long the page may take to show the state it opens on (Chromium's first start).
const FIRST_PAINT: Duration = Duration::from_secs(20);

fn call(repo: &Repo, method: &str, params: Value) -> Value {
    block_on(repo.client().call_raw(method, params)).unwrap_or_else(|e| panic!("{method}: {e}"))
}

/// A running `wit ui --no-open`: its port, the addresses it prints (each opens the page once)
/// and the run's secret (got by redeeming the first one, as a browser would); stopped on drop.
struct UiServer {
    child: Child,
    port: u16,
    secret: String,
    addresses: std::sync::mpsc::Receiver<String>,
}

/// The port and the code of a printed address.
fn parse_address(url: &str) -> (u16, String) {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("not an address: {url:?}"));
    let (port, code) = rest
        .split_once("/?code=")
        .unwrap_or_else(|| panic!("no one-time code: {url:?}"));
    (port.parse().unwrap(), code.to_owned())
}

/// The secret a redemption's `Set-Cookie` carries.
fn cookie_secret(set_cookie: &str) -> String {
    set_cookie
        .split(';')
        .next()
        .and_then(|pair| pair.strip_prefix("wit_ui="))
        .unwrap_or_else(|| panic!("not our cookie: {set_cookie}"))
        .to_owned()
}

/// Reads `wit ui`'s standard output and sends on each address it prints.
fn follow_addresses(out: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (sender, addresses) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Keep reading to the end: a closed pipe would be an error for the server's next line.
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.trim().strip_prefix("wit ui: ") {
                let _ = sender.send(url.to_owned());
            }
        }
    });
    addresses
}

impl UiServer {
    fn start(repo: &Repo) -> Self {
        let mut child = Command::new(wit_bin())
            .args(["ui", "--no-open", "--port", "0", "--repo"])
            .arg(repo.path())
            .env("WIT_NO_AUTOSTART", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addresses = follow_addresses(child.stdout.take().unwrap());
        let first = addresses
            .recv_timeout(Duration::from_secs(30))
            .expect("no address printed");
        let (port, code) = parse_address(&first);
        let redeemed = http(port, "GET", &format!("/?code={code}"), &[], b"");
        assert_eq!(redeemed.status, 303, "the printed code was refused");
        let secret = cookie_secret(redeemed.header("set-cookie").unwrap());
        Self {
            child,
            port,
            secret,
            addresses,
        }
    }

    /// The next address `wit ui` printed (it prints one after each is used).
    fn url(&self) -> String {
        self.addresses
            .recv_timeout(Duration::from_secs(10))
            .expect("no next address printed after the last was used")
    }

    fn cookie(&self) -> String {
        format!("wit_ui={}", self.secret)
    }
}

impl Drop for UiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const SOURCE_A: &str = "export function f(a: number): number { return a; }\n\
export function g(b: string): string { return b; }\n\
export function h(): void { f(1); }\n\
export function k(): void {}\n";

/// Three agents: locks, a waiter, two intents colliding on `h`, two contracts.
fn scene(repo: &Repo) -> std::thread::JoinHandle<Value> {
    repo.write("src/a.ts", SOURCE_A);
    repo.write("src/b.ts", "export function x(): number { return 1; }\n");
    for (id, name) in [("s-alice", "alice"), ("s-bob", "bob"), ("s-carol", "carol")] {
        call(repo, "register", json!({"sessionId": id, "name": name}));
    }
    call(
        repo,
        "lock.acquire",
        json!({"sessionId": "s-alice", "symbolPath": "src/a.ts:f"}),
    );
    call(
        repo,
        "lock.acquire",
        json!({"sessionId": "s-bob", "symbolPath": "src/a.ts:g"}),
    );
    call(
        repo,
        "lock.acquire",
        json!({"sessionId": "s-carol", "symbolPath": "src/b.ts:x"}),
    );
    for (id, what) in [("s-alice", "tidy h"), ("s-bob", "rework h")] {
        call(
            repo,
            "intent.declare",
            json!({"sessionId": id, "description": what, "files": ["src/a.ts"], "symbols": ["h"]}),
        );
    }
    call(
        repo,
        "contract.propose",
        json!({"sessionId": "s-alice", "symbolPath": "src/a.ts:f"}),
    );
    call(
        repo,
        "contract.propose",
        json!({"sessionId": "s-carol", "symbolPath": "src/b.ts:x"}),
    );
    // Carol waits for bob's lock (answered when bob's session ends).
    let client = repo.client();
    std::thread::spawn(move || {
        block_on(client.call_raw(
            "lock.acquire",
            json!({"sessionId": "s-carol", "symbolPath": "src/a.ts:g", "waitMs": 120000}),
        ))
        .unwrap()
    })
}

const LOCK_ROWS: &str = "return document.querySelectorAll('#locks tr[data-lock]').length";

fn lock_holders(browser: &Browser) -> Vec<(String, String)> {
    let rows = browser.eval(
        "return [...document.querySelectorAll('#locks tr[data-lock]')]
           .map(r => [r.dataset.lock, r.cells[1].textContent.trim()])",
        json!([]),
    );
    serde_json::from_value(rows).unwrap()
}

#[test]
fn the_page_shows_the_state_follows_it_live_and_carries_out_a_persons_actions() {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let repo = Repo::new();
    let mut daemon = Daemon::start(&repo);
    let waiter = scene(&repo);
    let ui = UiServer::start(&repo);
    let browser = Browser::start(1480, 1010);
    browser.goto(&ui.url());

    // The state is shown: sessions, locks with holder/countdown/token, the collision on h,
    // the contracts, the timeline.
    browser.wait_for(
        "the three locks",
        &format!("{LOCK_ROWS} === 3"),
        FIRST_PAINT,
    );
    let mut holders = lock_holders(&browser);
    holders.sort();
    assert_eq!(
        holders,
        [
            ("src/a.ts:f".into(), "alice".into()),
            ("src/a.ts:g".into(), "bob".into()),
            ("src/b.ts:x".into(), "carol".into())
        ]
    );
    let text = browser.eval("return document.body.innerText", json!([]));
    let text = text.as_str().unwrap();
    for expected in [
        "alice",
        "bob",
        "carol",
        "(a: number): number",
        "tidy h",
        "rework h",
    ] {
        assert!(
            text.contains(expected),
            "{expected} not on the page:\n{text}"
        );
    }
    // The wait carol's request is in shows as an edge from carol to bob, the holder.
    let edge = browser.wait_for(
        "the wait of carol for bob",
        "const e = document.querySelector('#waits [data-wait-from=\"s-carol\"]');
         return e && [e.dataset.waitTo, e.dataset.waitSymbol, e.textContent.replace(/\\s+/g, ' ').trim()]",
        FIRST_PAINT,
    );
    assert_eq!(edge[0], "s-bob", "{edge}");
    assert_eq!(edge[1], "src/a.ts:g", "{edge}");
    assert!(
        edge[2]
            .as_str()
            .unwrap()
            .starts_with("carol waits for bob src/a.ts:g"),
        "{edge}"
    );
    let countdown = browser.eval(
        "return document.querySelector('#locks tr[data-lock=\"src/a.ts:f\"] [data-exp]').textContent",
        json!([]),
    );
    assert!(countdown.as_str().unwrap().ends_with('s'), "{countdown}");
    let tokens = browser.eval(
        "return [...document.querySelectorAll('#locks tr[data-lock]')].map(r => Number(r.cells[3].textContent))",
        json!([]),
    );
    assert!(tokens
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.as_i64().unwrap() > 0));
    let collision = browser.eval(
        "const f = document.querySelector('#workmap [data-file=\"src/a.ts\"]');
         return f && f.classList.contains('collision')",
        json!([]),
    );
    assert_eq!(
        collision, true,
        "the collision on src/a.ts:h is not highlighted"
    );
    // An accepted contract whose function changes on disk shows as violated.
    let on_f = call(&repo, "contract.query", json!({"symbolPath": "src/a.ts:f"}));
    let on_f = on_f[0]["contractId"].as_str().unwrap().to_owned();
    call(
        &repo,
        "contract.respond",
        json!({"contractId": on_f, "sessionId": "s-bob", "accept": true}),
    );
    repo.write(
        "src/a.ts",
        &SOURCE_A.replace(
            "f(a: number): number",
            "f(a: number, strict: boolean): number",
        ),
    );
    browser.wait_for(
        "the violated contract",
        &format!(
            "const r = document.querySelector('[data-contract-row=\"{on_f}\"]');
             return r && r.classList.contains('violated')
               && r.textContent.includes('(a: number, strict: boolean): number')"
        ),
        Duration::from_secs(10),
    );
    browser.wait_for(
        "timeline rows",
        "return document.querySelectorAll('#timeline tr[data-seq]').length >= 10",
        FIRST_PAINT,
    );

    // The timeline filters by type, session and file.
    let shown = |filters: Value| {
        browser.eval(
            "const [t, s, f] = arguments;
             for (const [id, v] of [['f-type', t], ['f-session', s], ['f-file', f]]) {
               const el = document.getElementById(id); el.value = v;
               el.dispatchEvent(new Event('input'));
             }
             return [...document.querySelectorAll('#timeline tr[data-seq]')]
               .map(r => [r.cells[2].textContent, r.cells[4].textContent]);",
            filters,
        )
    };
    let proposed = shown(json!(["contract.proposed", "", ""]));
    let proposed = proposed.as_array().unwrap();
    assert_eq!(proposed.len(), 2, "{proposed:?}");
    assert!(proposed.iter().all(|row| row[0] == "contract.proposed"));
    let bobs = shown(json!(["", "s-bob", ""]));
    assert!(!bobs.as_array().unwrap().is_empty());
    assert!(bobs
        .as_array()
        .unwrap()
        .iter()
        .all(|row| row[1].as_str().unwrap().starts_with("by bob")));
    let on_b = shown(json!(["lock.acquired", "", "src/b.ts"]));
    assert_eq!(on_b.as_array().unwrap().len(), 1, "{on_b}");
    shown(json!(["", "", ""]));

    // A new lock appears within 1 s, without a reload.
    browser.eval("window.__marker = 'same page'", json!([]));
    let before = Instant::now();
    call(
        &repo,
        "lock.acquire",
        json!({"sessionId": "s-alice", "symbolPath": "src/a.ts:k"}),
    );
    browser.wait_for(
        "the new lock",
        "return !!document.querySelector('#locks tr[data-lock=\"src/a.ts:k\"]')",
        Duration::from_secs(1),
    );
    let shown_after = before.elapsed();
    assert_eq!(
        browser.eval("return window.__marker", json!([])),
        "same page"
    );
    eprintln!("new lock on the page {shown_after:?} after the acquire was sent");

    if std::env::var_os("WIT_UI_SCREENSHOT").is_some() {
        // Let the countdowns tick once so the shot shows the page at rest.
        std::thread::sleep(Duration::from_millis(1100));
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ui.png");
        browser.screenshot(&path);
        eprintln!("screenshot written to {}", path.display());
    }

    // Ending bob's session through the page (two clicks: arm, confirm) removes his locks;
    // carol, who waited for his lock, is handed it.
    let end = "#sessions [data-session-row=\"s-bob\"] button[data-act=\"end-session\"]";
    browser.click(end);
    browser.click(end);
    browser.wait_for(
        "bob's locks gone",
        "return ![...document.querySelectorAll('#locks tr[data-lock]')]
            .some(r => r.cells[1].textContent.trim().startsWith('bob'))",
        Duration::from_secs(10),
    );
    let granted = waiter.join().unwrap();
    assert!(granted["token"].as_i64().is_some(), "{granted}");
    browser.wait_for(
        "carol holding src/a.ts:g",
        "const r = document.querySelector('#locks tr[data-lock=\"src/a.ts:g\"]');
         return r && r.cells[1].textContent.trim() === 'carol'",
        Duration::from_secs(10),
    );
    browser.wait_for(
        "carol's wait gone from the graph",
        "return !document.querySelector('#waits [data-wait-from]')",
        Duration::from_secs(10),
    );
    let sessions = call(&repo, "session.list", json!({}));
    let bob = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "s-bob")
        .unwrap();
    assert_eq!(bob["live"], false);

    // Accepting carol's contract from the page: contract.respond by the person's session.
    let contracts = call(&repo, "contract.query", json!({"symbolPath": "src/b.ts:x"}));
    let id = contracts[0]["contractId"].as_str().unwrap().to_owned();
    browser.click(&format!(
        "[data-contract-row=\"{id}\"] button[data-act=\"respond-contract\"][data-accept=\"true\"]"
    ));
    browser.wait_for(
        "the accepted contract",
        &format!(
            "const r = document.querySelector('[data-contract-row=\"{id}\"]');
             return r && r.textContent.includes('accepted by')"
        ),
        Duration::from_secs(10),
    );
    let contract = &call(&repo, "contract.query", json!({"symbolPath": "src/b.ts:x"}))[0];
    assert_eq!(contract["status"], "accepted");
    let person = contract["responderSessionId"].as_str().unwrap();
    assert!(person.starts_with("ui:"), "responder {person}");

    // A daemon restart: the page says so and keeps following.
    daemon.kill9();
    browser.wait_for(
        "the daemon reported down",
        "return document.getElementById('daemon').classList.contains('down')",
        Duration::from_secs(10),
    );
    let _daemon = Daemon::start(&repo);
    call(
        &repo,
        "lock.acquire",
        json!({"sessionId": "s-alice", "symbolPath": "src/b.ts:after"}),
    );
    browser.wait_for(
        "a lock taken after the restart",
        "return !!document.querySelector('#locks tr[data-lock=\"src/b.ts:after\"]')",
        Duration::from_secs(10),
    );
    browser.wait_for(
        "the restart in the timeline",
        "return [...document.querySelectorAll('#timeline tr.marker')]
           .some(r => r.textContent.includes('daemon back'))",
        Duration::from_secs(10),
    );
}

#[test]
fn requests_without_the_token_or_from_another_host_are_refused_and_learn_nothing() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    call(
        &repo,
        "lock.acquire",
        json!({"sessionId": "s1", "symbolPath": "a.ts:secret"}),
    );
    let ui = UiServer::start(&repo);
    let cookie = ui.cookie();
    let port = ui.port;
    let mut answers = Vec::new();
    for target in [
        "/",
        "/app.js",
        "/api/state",
        "/api/stream",
        "/nothing",
        "/?token=wrong",
        "/?code=wrong",
    ] {
        let answer = http(port, "GET", target, &[], b"");
        assert_eq!(answer.status, 401, "{target}");
        assert!(answer.body.is_empty(), "{target} said something");
        answers.push(answer);
    }
    let wrong = http(port, "GET", "/api/state", &[("Cookie", "wit_ui=0000")], b"");
    assert_eq!(wrong.status, 401);
    // An action needs the token in its header too, and POST.
    let action = br#"{"action":"end-session","sessionId":"s1"}"#;
    let no_header = http(port, "POST", "/api/action", &[("Cookie", &cookie)], action);
    assert_eq!(no_header.status, 401);
    let by_get = http(port, "GET", "/api/action", &[("Cookie", &cookie)], b"");
    assert_eq!(by_get.status, 405);
    // Another name for this address (DNS rebinding) is refused even with the token.
    let rebound = http(
        port,
        "GET",
        "/api/state",
        &[
            ("Host", &format!("attacker.example:{port}")),
            ("Cookie", &cookie),
        ],
        b"",
    );
    assert_eq!(rebound.status, 403);
    assert!(rebound.body.is_empty());
    // A printed code becomes an HttpOnly SameSite=Strict cookie and leaves the URL; it opens
    // the page once: a second use (a copied address, the history) is refused.
    let (_, code) = parse_address(&ui.url());
    let first = http(port, "GET", &format!("/?code={code}"), &[], b"");
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/"));
    let set = first.header("set-cookie").unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert_eq!(cookie_secret(set), ui.secret);
    assert!(!ui.secret.contains(&code) && !code.contains(&ui.secret));
    let again = http(port, "GET", &format!("/?code={code}"), &[], b"");
    assert_eq!(again.status, 401, "a used code opened the page again");
    assert!(again.body.is_empty());
    // The secret itself is no code, and the old `?token=` opens nothing.
    for target in [
        format!("/?code={}", ui.secret),
        format!("/?token={}", ui.secret),
    ] {
        assert_eq!(http(port, "GET", &target, &[], b"").status, 401, "{target}");
    }
    // The page's first state is read from the daemon in the background: wait for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let state = loop {
        let state = http(port, "GET", "/api/state", &[("Cookie", &cookie)], b"");
        assert_eq!(state.status, 200);
        let text = String::from_utf8(state.body.clone()).unwrap();
        if text.contains("a.ts:secret") || std::time::Instant::now() > deadline {
            break state;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let text = String::from_utf8(state.body.clone()).unwrap();
    assert!(text.contains("a.ts:secret"), "{text}");
    // No CORS, ever.
    let preflight = http(
        port,
        "OPTIONS",
        "/api/action",
        &[("Origin", "http://attacker.example"), ("Cookie", &cookie)],
        b"",
    );
    for answer in answers.iter().chain([&first, &state, &preflight]) {
        assert!(
            answer
                .headers
                .iter()
                .all(|(n, _)| !n.starts_with("access-control-")),
            "a CORS header was sent"
        );
    }
    // A live session's lock cannot be released from the page.
    let refused = http(
        port,
        "POST",
        "/api/action",
        &[("Cookie", &cookie), ("x-wit-token", &ui.secret)],
        br#"{"action":"release-lock","symbolPath":"a.ts:secret","sessionId":"s1"}"#,
    );
    assert_eq!(refused.status, 403);
    assert_eq!(
        call(&repo, "lock.query", json!({}))
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A session whose process is alive is ended by the daemon when it exits, not by a person.
    call(
        &repo,
        "register",
        json!({"sessionId": "s-pid", "name": "watched", "pid": std::process::id()}),
    );
    let watched = http(
        port,
        "POST",
        "/api/action",
        &[("Cookie", &cookie), ("x-wit-token", &ui.secret)],
        br#"{"action":"end-session","sessionId":"s-pid"}"#,
    );
    assert_eq!(watched.status, 403);
    let sessions = call(&repo, "session.list", json!({}));
    let watched = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "s-pid")
        .unwrap();
    assert_eq!(watched["live"], true);
    // Only the three actions exist.
    let other = http(
        port,
        "POST",
        "/api/action",
        &[("Cookie", &cookie), ("x-wit-token", &ui.secret)],
        br#"{"action":"lock.acquire","symbolPath":"a.ts:x","sessionId":"s1"}"#,
    );
    assert_eq!(other.status, 400);
}

fn median_and_p95(mut values: Vec<f64>) -> (f64, f64) {
    assert!(!values.is_empty());
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

/// 50 sessions holding 1,000 locks, then 100 events a second for 5 s: the page shows every
/// lock and receives every event, and reports (on stderr) its size and update latencies,
/// the figures of BENCHMARKS.md's `wit ui` section.
#[test]
fn the_page_keeps_up_with_50_sessions_1000_locks_and_100_events_a_second() {
    const SESSIONS: usize = 50;
    const LOCKS: usize = 1000;
    const RATE: u64 = 100;
    const LOAD_SECS: u64 = 5;
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    let client = repo.client();
    block_on(async {
        for s in 0..SESSIONS {
            let params = json!({"sessionId": format!("s{s}"), "name": format!("agent-{s}")});
            client.call_raw("register", params).await.unwrap();
        }
        for l in 0..LOCKS {
            let params = json!({"sessionId": format!("s{}", l % SESSIONS),
                                "symbolPath": format!("src/m{}.ts:f{l}", l % 40)});
            client.call_raw("lock.acquire", params).await.unwrap();
        }
    });
    let ui = UiServer::start(&repo);
    let browser = Browser::start(1480, 1010);
    browser.goto(&ui.url());
    browser.wait_for(
        "1,000 locks",
        &format!("{LOCK_ROWS} === {LOCKS}"),
        Duration::from_secs(60),
    );

    // What a page costs to open: the shell, script and style, and the state it is sent.
    let cookie = ui.cookie();
    let size = |target: &str| {
        let answer = http(ui.port, "GET", target, &[("Cookie", &cookie)], b"");
        assert_eq!(answer.status, 200, "{target}");
        answer.body.len()
    };
    let assets = size("/") + size("/app.js") + size("/app.css");
    let state = size("/api/state");

    // The server's share of the latency: a raw stream reader notes when each event's frame
    // arrives (event `at` -> frame on the socket, no browser involved).
    let stream_latencies = std::sync::Arc::new(Mutex::new(Vec::<f64>::new()));
    let reader = {
        let (port, cookie, sink) = (ui.port, cookie.clone(), stream_latencies.clone());
        std::thread::spawn(move || read_stream(port, &cookie, &sink))
    };
    browser.eval("window.witUi.trackLocks()", json!([]));
    let before_load = browser.eval("return window.witUi.received", json!([]));
    let first_seq = call(&repo, "events.poll", json!({}))["next"]
        .as_i64()
        .unwrap();
    let sent = block_on(async {
        let pace = Duration::from_micros(1_000_000 / RATE);
        let start = tokio::time::Instant::now();
        let mut sent = 0u64;
        for i in 0..RATE * LOAD_SECS {
            tokio::time::sleep_until(start + pace * i as u32).await;
            // Each load lock lives about 1 s: acquired, released 50 pairs later (the first
            // 50 odd calls refresh instead).
            let k = i / 2;
            let held = if i % 2 == 0 || k < 50 { k } else { k - 50 };
            let method = if i % 2 == 1 && k >= 50 {
                "lock.release"
            } else {
                "lock.acquire"
            };
            let params = json!({"sessionId": format!("s{}", held as usize % SESSIONS),
                                "symbolPath": format!("src/load.ts:g{held}")});
            client.call_raw(method, params).await.unwrap();
            sent += 1;
        }
        sent
    });
    let last_seq = call(&repo, "events.poll", json!({}))["next"]
        .as_i64()
        .unwrap();
    assert_eq!((last_seq - first_seq) as u64, sent, "one event per call");
    // Every event reaches the page, and the table ends at the daemon's lock count.
    browser.wait_for(
        "every event",
        &format!("return window.witUi.lastSeq >= {last_seq}"),
        Duration::from_secs(30),
    );
    let received = browser.eval("return window.witUi.received", json!([]));
    assert_eq!(
        received.as_u64().unwrap() - before_load.as_u64().unwrap(),
        sent
    );
    let held = call(&repo, "lock.query", json!({}))
        .as_array()
        .unwrap()
        .len();
    assert_eq!(held, LOCKS + 50);
    browser.wait_for(
        "the settled lock table",
        &format!("{LOCK_ROWS} === {held}"),
        Duration::from_secs(10),
    );
    let figures = browser.eval(
        &format!(
            "const m = window.witUi; return {{events: m.latencies.slice(-{sent}),
               locks: m.lockLatencies, longTasks: m.longTasks, renderMs: m.renderMs}}"
        ),
        json!([]),
    );
    let list = |key: &str| -> Vec<f64> {
        figures[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (events_median, events_p95) = median_and_p95(list("events"));
    let locks = list("locks");
    // Every lock the load acquired (every other call) reached the table.
    assert_eq!(locks.len() as u64, sent / 2, "new locks the table showed");
    let (locks_median, locks_p95) = median_and_p95(locks);
    let stream: Vec<f64> = {
        let deadline = Instant::now() + Duration::from_secs(10);
        while stream_latencies.lock().unwrap().len() < sent as usize && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        stream_latencies.lock().unwrap().clone()
    };
    assert_eq!(stream.len() as u64, sent, "events on the raw stream");
    drop(reader);
    let (stream_median, stream_p95) = median_and_p95(stream);
    let (render_median, _) = median_and_p95(list("renderMs"));
    let render_longest = list("renderMs").into_iter().fold(0.0, f64::max);
    let long_tasks = list("longTasks");
    let longest = long_tasks.iter().copied().fold(0.0, f64::max);
    eprintln!(
        "wit ui figures: page {assets} B (HTML+JS+CSS), state {state} B for {SESSIONS} sessions \
         and {LOCKS} locks; {sent} events at {RATE}/s: event->SSE frame median {stream_median} ms, \
         p95 {stream_p95} ms; event->timeline median {events_median} ms, \
         p95 {events_p95} ms; acquire->lock row median {locks_median} ms, p95 {locks_p95} ms; \
         one render median {render_median:.1} ms, longest {render_longest:.1} ms; \
         long tasks (>50 ms) {}, longest {longest} ms",
        long_tasks.len()
    );
}

/// Reads the page stream raw and notes, for each event of an `events` frame, the
/// milliseconds from the event's `at` to the frame's arrival; runs until the server stops.
fn read_stream(port: u16, cookie: &str, sink: &Mutex<Vec<f64>>) {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET /api/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
    )
    .unwrap();
    let mut lines = BufReader::new(stream).lines();
    let mut event = String::new();
    while let Some(Ok(line)) = lines.next() {
        if let Some(name) = line.strip_prefix("event: ") {
            event = name.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ") {
            if event == "events" {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as f64;
                let events: Value = serde_json::from_str(data).unwrap();
                let mut sink = sink.lock().unwrap();
                for e in events.as_array().unwrap() {
                    sink.push(now - e["at"].as_f64().unwrap());
                }
            }
        }
    }
}

const OWNED_PY: &str = "\
def alpha(x):
    return x + 1


def beta(y):
    return y * 2


def gamma(z):
    return z - 3
";

/// `work.owners` of `file` once `check` holds of it (at most 10 s).
fn owners_until(repo: &Repo, file: &str, check: impl Fn(&Value) -> bool) -> Value {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let found = call(repo, "work.owners", json!({"file": file}));
        if check(&found) || Instant::now() > until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A script: the owned runs the page shows for `file` (start, end, who, the lines' label,
/// since), once there are `count` of them; `false` until then.
fn shown_runs(file: &str, count: usize) -> String {
    format!(
        "const box = [...document.querySelectorAll('#workmap [data-owners]')]
           .find(b => b.dataset.owners === {file});
         const runs = box && box.dataset.state === 'ok' && [...box.querySelectorAll('.owned')].map(r => [
           Number(r.dataset.runStart), Number(r.dataset.runEnd), r.querySelector('.who').textContent,
           r.querySelector('.lines').textContent, r.querySelector('.muted').textContent.trim()]);
         return runs && runs.length === {count} && runs",
        file = json!(file)
    )
}

/// Issue 34 item 6 and docs/protocol.md 15.3, 15.7: a file opened in the work map shows who
/// owns its uncommitted lines — a session's lines under its name, lines changed on disk with
/// no window as nobody's — and follows new work; unowned work is shown as such everywhere on
/// the page, never as an agent's session.
#[test]
fn a_file_opened_in_the_work_map_shows_its_owners_and_unowned_work_as_such() {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let repo = Repo::new();
    repo.write("src/lib.py", OWNED_PY);
    std::fs::write(repo.path().join("notes.txt"), b"caf\xe9\n").unwrap();
    git_text(repo.path(), &["add", "."]);
    git_text(repo.path(), &["commit", "-q", "-m", "init"]);
    let _daemon = Daemon::start(&repo);
    wit_ok(&repo, "alice", &["register", "alice"]);
    wit_ok(&repo, "alice", &["hook", "install"]);
    // A person's editor changes line 2: no window is open, so it is nobody's.
    repo.write("src/lib.py", &OWNED_PY.replace("x + 1", "x + 2"));
    let found = owners_until(&repo, "src/lib.py", |o| {
        o["lines"].as_array().is_some_and(|l| !l.is_empty())
    });
    assert_eq!(found["lines"][0]["sessionIds"], json!([]), "{found}");
    // And a Latin-1 file, whose work is file-level.
    std::fs::write(repo.path().join("notes.txt"), b"caf\xe9\nna\xefve\n").unwrap();
    let found = owners_until(&repo, "notes.txt", |o| o["binary"] == true);
    assert_eq!(found["binary"], true, "{found}");
    // Alice edits line 10 through her harness's gate.
    edit(&repo, "alice", "src/lib.py", "z - 3", "z - 30");
    let found = owners_until(&repo, "src/lib.py", |o| {
        o["lines"].as_array().is_some_and(|l| l.len() == 2)
    });
    assert_eq!(found["lines"].as_array().map(Vec::len), Some(2), "{found}");

    let ui = UiServer::start(&repo);
    let browser = Browser::start(1280, 900);
    browser.goto(&ui.url());
    let opener = "#workmap button[data-open-file=\"src/lib.py\"]";
    browser.wait_for(
        "src/lib.py in the work map",
        &format!(
            "return !!document.querySelector('{}')",
            opener.replace('\'', "\\'")
        ),
        FIRST_PAINT,
    );
    assert_eq!(
        browser.eval(
            "return document.querySelectorAll('#workmap [data-owners]').length",
            json!([])
        ),
        0,
        "owners shown before the file was opened"
    );
    browser.click(opener);
    let runs = browser.wait_for(
        "the two owners of src/lib.py",
        &shown_runs("src/lib.py", 2),
        Duration::from_secs(10),
    );
    let rows = runs.as_array().unwrap();
    let plain: Vec<(i64, i64, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r[0].as_i64().unwrap(),
                r[1].as_i64().unwrap(),
                r[2].as_str().unwrap().to_owned(),
                r[3].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        plain,
        [
            (2, 2, "nobody (unowned)".into(), "line 2".into()),
            (10, 10, "alice".into(), "line 10".into())
        ],
        "{runs}"
    );
    for row in rows {
        let since = row[4].as_str().unwrap();
        assert!(
            since.starts_with("since ") && since.contains("ago"),
            "{since}"
        );
    }

    // New work in the open file shows without another click: alice changes line 6 too.
    edit(&repo, "alice", "src/lib.py", "y * 2", "y * 20");
    let three = browser.wait_for(
        "alice's line 6 among the owners",
        &shown_runs("src/lib.py", 3),
        Duration::from_secs(10),
    );
    assert_eq!(three[1][0], 6, "{three}");
    assert_eq!(three[1][2], "alice", "{three}");

    // Unowned work is shown as such: in the work map and among the sessions, with no
    // session id for a name and no button to end it.
    let unowned_row = browser.eval(
        "const w = document.querySelector('#workmap [data-file=\"src/lib.py\"] .work[data-unowned]');
         return w && w.textContent.replace(/\\s+/g, ' ').trim()",
        json!([]),
    );
    let unowned_row = unowned_row
        .as_str()
        .unwrap_or_else(|| panic!("no unowned row: {unowned_row}"));
    assert!(
        unowned_row.starts_with("nobody (unowned) unowned work"),
        "{unowned_row}"
    );
    let session = browser.eval(
        "const s = document.querySelector('#sessions [data-unowned]');
         return s && [s.textContent.replace(/\\s+/g, ' ').trim(), !!s.querySelector('button')]",
        json!([]),
    );
    assert!(
        session[0].as_str().is_some_and(
            |t| t.starts_with("unowned work unowned") && t.contains("a person's editor")
        ),
        "{session}"
    );
    assert_eq!(
        session[1], false,
        "unowned work offered an end button: {session}"
    );
    let shown = browser.eval(
        "return document.getElementById('sessions').innerText + document.getElementById('workmap').innerText",
        json!([]),
    );
    assert!(
        !shown.as_str().unwrap().contains("unowned:"),
        "a raw unowned session id on the page:\n{shown}"
    );
    // Closing the file hides its owners.
    browser.click(opener);
    browser.wait_for(
        "the owners closed",
        "return document.querySelectorAll('#workmap [data-owners]').length === 0",
        Duration::from_secs(5),
    );

    // A binary file's owners are one file-level run.
    browser.click("#workmap button[data-open-file=\"notes.txt\"]");
    let binary = browser.wait_for(
        "the owners of notes.txt",
        &shown_runs("notes.txt", 1),
        Duration::from_secs(10),
    );
    assert_eq!(binary[0][2], "nobody (unowned)", "{binary}");
    assert_eq!(binary[0][3], "whole file (binary)", "{binary}");

    // The route is guarded like the others and says what it needs.
    let cookie = ui.cookie();
    let target = "/api/owners?file=src%2Flib.py";
    assert_eq!(http(ui.port, "GET", target, &[], b"").status, 401);
    let owned = http(ui.port, "GET", target, &[("Cookie", &cookie)], b"");
    assert_eq!(owned.status, 200);
    let owned: Value = serde_json::from_slice(&owned.body).unwrap();
    assert_eq!(owned["result"]["file"], "src/lib.py", "{owned}");
    assert_eq!(
        owned["result"]["lines"].as_array().map(Vec::len),
        Some(3),
        "{owned}"
    );
    let bare = http(ui.port, "GET", "/api/owners", &[("Cookie", &cookie)], b"");
    assert_eq!(bare.status, 400);
    let outside = http(
        ui.port,
        "GET",
        "/api/owners?file=..%2F..%2Fetc%2Fpasswd",
        &[("Cookie", &cookie)],
        b"",
    );
    assert_eq!(
        outside.status,
        400,
        "{}",
        String::from_utf8_lossy(&outside.body)
    );
    let posted = http(
        ui.port,
        "POST",
        "/api/owners",
        &[("Cookie", &cookie), ("x-wit-token", &ui.secret)],
        b"",
    );
    assert_eq!(posted.status, 405);
    // Nor can the page end unowned work through an action.
    let root = std::fs::canonicalize(repo.path()).unwrap();
    let end = json!({"action": "end-session", "sessionId": format!("unowned:{}", root.display())});
    let refused = http(
        ui.port,
        "POST",
        "/api/action",
        &[("Cookie", &cookie), ("x-wit-token", &ui.secret)],
        end.to_string().as_bytes(),
    );
    assert_eq!(refused.status, 403);
}

/// Polls `check` every 20 ms for up to `limit`.
fn eventually(limit: Duration, check: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_browser_is_launched_with_no_secret_in_its_argv_and_each_code_works_once() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    // A fake desktop opener, first on PATH: it records its argv, and what the file it was
    // given holds and its mode, as a browser would read it.
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("record");
    let opener = bin.path().join("xdg-open");
    std::fs::write(
        &opener,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{0}.argv'\n\
             cat \"$1\" > '{0}.page'\nstat -c %a \"$1\" > '{0}.mode'\nmv '{0}.argv' '{0}'\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new(wit_bin())
        .args(["ui", "--port", "0", "--repo"])
        .arg(repo.path())
        .env("WIT_NO_AUTOSTART", "1")
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addresses = follow_addresses(child.stdout.take().unwrap());
    let printed = addresses.recv_timeout(Duration::from_secs(30)).unwrap();
    let (port, printed_code) = parse_address(&printed);
    assert!(
        eventually(Duration::from_secs(20), || record.exists()),
        "the opener was not run"
    );
    let argv = std::fs::read_to_string(&record).unwrap();
    let args: Vec<&str> = argv.lines().collect();
    assert_eq!(args.len(), 1, "{argv}");
    let launch_file = std::path::PathBuf::from(args[0]);
    assert!(launch_file.starts_with(repo.path().join(".wit")), "{argv}");
    assert!(
        !argv.contains("code=") && !argv.contains("token") && !argv.contains(&printed_code),
        "a code in the opener's argv: {argv}"
    );
    let mode = std::fs::read_to_string(bin.path().join("record.mode")).unwrap();
    assert_eq!(mode.trim(), "600", "the launch file is readable by others");
    let page = std::fs::read_to_string(bin.path().join("record.page")).unwrap();
    let url = page
        .split("url=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no redirect in the launch file: {page}"));
    let (launch_port, launch_code) = parse_address(url);
    assert_eq!(launch_port, port);
    assert_ne!(launch_code, printed_code);

    // The launched browser's code works once; the file is gone once it is used.
    let opened = http(port, "GET", &format!("/?code={launch_code}"), &[], b"");
    assert_eq!(opened.status, 303);
    let secret = cookie_secret(opened.header("set-cookie").unwrap());
    assert!(!argv.contains(&secret) && !page.contains(&secret));
    let cookie = format!("wit_ui={secret}");
    assert_eq!(
        http(port, "GET", "/", &[("Cookie", &cookie)], b"").status,
        200
    );
    let again = http(port, "GET", &format!("/?code={launch_code}"), &[], b"");
    assert_eq!(again.status, 401, "the launch code opened the page twice");
    assert!(
        eventually(Duration::from_secs(5), || !launch_file.exists()),
        "the launch file outlived its code"
    );
    // So does the printed one, and the next address is printed for another browser.
    let printed_use = http(port, "GET", &format!("/?code={printed_code}"), &[], b"");
    assert_eq!(printed_use.status, 303);
    assert_eq!(
        http(port, "GET", &format!("/?code={printed_code}"), &[], b"").status,
        401
    );
    let next = addresses.recv_timeout(Duration::from_secs(10)).unwrap();
    let (_, next_code) = parse_address(&next);
    assert_ne!(next_code, printed_code);
    assert_eq!(
        http(port, "GET", &format!("/?code={next_code}"), &[], b"").status,
        303
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// CPU time (user + system) of process `pid` so far, in clock ticks (`/proc/PID/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn out_of_descriptors_the_server_backs_off_instead_of_spinning() {
    let repo = Repo::new();
    let _daemon = Daemon::start(&repo);
    // 64 descriptors and hundreds of idle connections: most wait in the backlog while accept
    // fails.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(wit_bin())
        .args(["ui", "--no-open", "--port", "0", "--repo"])
        .arg(repo.path())
        .env("WIT_NO_AUTOSTART", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let addresses = follow_addresses(child.stdout.take().unwrap());
    let (port, _) = parse_address(&addresses.recv_timeout(Duration::from_secs(30)).unwrap());
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let open_files = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap();
    assert!(
        open_files.split_whitespace().nth(3) == Some("64"),
        "{open_files}"
    );
    // Past the listen backlog a connect would wait for SYN retries: those give up quickly.
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut idle = Vec::new();
    let mut refused = 0;
    while idle.len() < 400 && refused < 3 {
        match std::net::TcpStream::connect_timeout(&address, Duration::from_millis(100)) {
            Ok(stream) => idle.push(stream),
            Err(_) => refused += 1,
        }
    }
    assert!(idle.len() > 100, "only {} connections", idle.len());
    std::thread::sleep(Duration::from_millis(500));
    let ticks_per_second = 100.0; // USER_HZ, the unit of /proc/PID/stat on Linux
    let before = (cpu_ticks(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let used = (cpu_ticks(pid) - before.0) as f64 / ticks_per_second;
    let share = used / before.1.elapsed().as_secs_f64();
    assert!(
        share < 0.2,
        "wit ui used {:.0} % of a core with its descriptors exhausted",
        share * 100.0
    );
    // It still serves once connections go away.
    drop(idle);
    assert!(
        eventually(Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut stream| {
                use std::io::{Read, Write};
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let request = format!(
                    "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
                );
                let mut answer = String::new();
                stream.write_all(request.as_bytes()).is_ok()
                    && stream.read_to_string(&mut answer).is_ok()
                    && answer.starts_with("HTTP/1.1 401")
            })
        }),
        "wit ui stopped answering after its descriptors came back"
    );
    let _ = child.kill();
    let _ = child.wait();
}
