//! Who may talk to `wit ui`: the `Host` header (127.0.0.1 or localhost on our port only, so a
//! DNS-rebound name cannot reach the server from a web page), then the run's secret in an
//! HttpOnly SameSite=Strict cookie, which a browser gets once by redeeming a one-time code.
//!
//! The secret itself is never in a URL or an argv: `wit ui` prints an address with a
//! one-time code (it opens the page once), and the browser it launches reads a code of its own,
//! valid for [`LAUNCH_CODE_TTL`], from a file only the user can read ([`super::handoff`]).
//! A code that was used or has expired is refused like any wrong one.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use hyper::header::{COOKIE, HOST};
use hyper::HeaderMap;

/// Name of the cookie that carries the secret.
pub const COOKIE_NAME: &str = "wit_ui";
/// Header that carries the secret on actions (a custom header: no form can send it).
pub const TOKEN_HEADER: &str = "x-wit-token";
/// The query parameter that carries a one-time code.
pub const CODE_PARAM: &str = "code";
/// How long the code handed to the launched browser stays valid if it is never used.
pub const LAUNCH_CODE_TTL: Duration = Duration::from_secs(60);

/// Where a one-time code was handed over, which says what to do once it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKind {
    /// Printed on `wit ui`'s standard output for the person to open.
    Printed,
    /// Written to the launch file the browser opens.
    Launch,
}

/// How a request was admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// By the secret in its cookie.
    Cookie,
    /// By redeeming a one-time code (the response then sets the cookie).
    Code(CodeKind),
}

/// Why a request is refused before any route sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The `Host` header names neither `127.0.0.1:PORT` nor `localhost:PORT`.
    Host,
    /// No valid secret in the cookie and no live one-time code in the query.
    Token,
}

#[derive(Debug)]
struct Code {
    value: String,
    kind: CodeKind,
    expires: Option<Instant>,
}

/// The secret of one `wit ui` run, its live one-time codes and the port it listens on.
#[derive(Debug)]
pub struct Guard {
    secret: String,
    port: u16,
    codes: Mutex<Vec<Code>>,
}

/// 256 bits from the OS's generator, as 64 hex digits.
fn random_hex() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

impl Guard {
    /// A guard with a fresh random secret for `port` and no codes yet.
    pub fn new(port: u16) -> Self {
        Self {
            secret: random_hex(),
            port,
            codes: Mutex::new(Vec::new()),
        }
    }

    /// The secret (the cookie's value and the page's action header); never put in a URL.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// A new one-time code of `kind`, valid until it is used or `ttl` (if any) has passed.
    pub fn mint(&self, kind: CodeKind, ttl: Option<Duration>) -> String {
        let value = random_hex();
        let expires = ttl.map(|ttl| Instant::now() + ttl);
        self.lock_codes().push(Code {
            value: value.clone(),
            kind,
            expires,
        });
        value
    }

    /// Whether any code of `kind` is still live (not used, not expired).
    pub fn has_live(&self, kind: CodeKind) -> bool {
        let now = Instant::now();
        let mut codes = self.lock_codes();
        codes.retain(|code| code.expires.is_none_or(|at| now < at));
        codes.iter().any(|code| code.kind == kind)
    }

    /// Checks the `Host` header, then the secret in the cookie, then a one-time code in the
    /// query (used up by this call if it is valid).
    pub fn admit(&self, headers: &HeaderMap, query: Option<&str>) -> Result<Admission, Refusal> {
        self.admit_at(headers, query, Instant::now())
    }

    fn admit_at(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
        now: Instant,
    ) -> Result<Admission, Refusal> {
        if !self.host_allowed(headers) {
            return Err(Refusal::Host);
        }
        if cookie_token(headers).is_some_and(|token| same(&self.secret, token)) {
            return Ok(Admission::Cookie);
        }
        let Some(given) = query_code(query) else {
            return Err(Refusal::Token);
        };
        let mut codes = self.lock_codes();
        codes.retain(|code| code.expires.is_none_or(|at| now < at));
        let found = codes.iter().position(|code| same(&code.value, given));
        match found {
            Some(index) => Ok(Admission::Code(codes.swap_remove(index).kind)),
            None => Err(Refusal::Token),
        }
    }

    /// Whether an action request carries the secret in [`TOKEN_HEADER`] too.
    pub fn action_allowed(&self, headers: &HeaderMap) -> bool {
        headers
            .get(TOKEN_HEADER)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|token| same(&self.secret, token))
    }

    /// The `Set-Cookie` value that keeps the secret for later requests.
    pub fn cookie(&self) -> String {
        format!(
            "{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path=/",
            self.secret
        )
    }

    fn lock_codes(&self) -> std::sync::MutexGuard<'_, Vec<Code>> {
        // A panic elsewhere while holding it leaves a list that is still a list.
        self.codes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(HOST).and_then(|value| value.to_str().ok()) else {
            return false;
        };
        let port = self.port.to_string();
        host.rsplit_once(':').is_some_and(|(name, given)| {
            given == port && (name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost"))
        })
    }
}

/// Compares in time independent of where the strings first differ.
fn same(ours: &str, given: &str) -> bool {
    let (a, b) = (ours.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE_NAME).then_some(value)
        })
}

fn query_code(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(CODE_PARAM)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn host_must_be_loopback_on_our_port() {
        let guard = Guard::new(4242);
        let cookie = format!("{COOKIE_NAME}={}", guard.secret());
        for host in ["127.0.0.1:4242", "localhost:4242", "LOCALHOST:4242"] {
            assert_eq!(
                guard.admit(&headers(&[("host", host), ("cookie", &cookie)]), None),
                Ok(Admission::Cookie),
                "{host}"
            );
        }
        for host in [
            "evil.example:4242",
            "127.0.0.1:80",
            "127.0.0.1",
            "localhost.evil:4242",
        ] {
            assert_eq!(
                guard.admit(&headers(&[("host", host), ("cookie", &cookie)]), None),
                Err(Refusal::Host),
                "{host}"
            );
        }
        assert_eq!(
            guard.admit(&headers(&[("cookie", &cookie)]), None),
            Err(Refusal::Host)
        );
    }

    #[test]
    fn the_secret_from_the_cookie_and_nothing_else() {
        let guard = Guard::new(1);
        let host = ("host", "127.0.0.1:1");
        let cookie = format!("a=b; {COOKIE_NAME}={}", guard.secret());
        assert_eq!(
            guard.admit(&headers(&[host, ("cookie", &cookie)]), None),
            Ok(Admission::Cookie)
        );
        assert_eq!(
            guard.admit(&headers(&[host, ("cookie", "wit_ui=nope")]), None),
            Err(Refusal::Token)
        );
        // The secret is no code: it never opens the page from a URL.
        let as_code = format!("code={}", guard.secret());
        assert_eq!(
            guard.admit(&headers(&[host]), Some(&as_code)),
            Err(Refusal::Token)
        );
        let as_token = format!("token={}", guard.secret());
        assert_eq!(
            guard.admit(&headers(&[host]), Some(&as_token)),
            Err(Refusal::Token)
        );
        assert_eq!(guard.admit(&headers(&[host]), None), Err(Refusal::Token));
        assert!(!guard.action_allowed(&headers(&[host])));
        assert!(guard.action_allowed(&headers(&[(TOKEN_HEADER, guard.secret())])));
        assert_ne!(Guard::new(1).secret(), guard.secret());
        assert_eq!(guard.secret().len(), 64);
    }

    #[test]
    fn a_code_opens_the_page_once() {
        let guard = Guard::new(1);
        let host = headers(&[("host", "127.0.0.1:1")]);
        let printed = format!("x=1&code={}", guard.mint(CodeKind::Printed, None));
        let launch = format!(
            "code={}",
            guard.mint(CodeKind::Launch, Some(LAUNCH_CODE_TTL))
        );
        assert!(guard.has_live(CodeKind::Printed) && guard.has_live(CodeKind::Launch));
        assert_eq!(
            guard.admit(&host, Some(&printed)),
            Ok(Admission::Code(CodeKind::Printed))
        );
        assert_eq!(guard.admit(&host, Some(&printed)), Err(Refusal::Token));
        assert!(!guard.has_live(CodeKind::Printed));
        assert_eq!(
            guard.admit(&host, Some(&launch)),
            Ok(Admission::Code(CodeKind::Launch))
        );
        assert_eq!(guard.admit(&host, Some(&launch)), Err(Refusal::Token));
        assert_eq!(guard.admit(&host, Some("code=")), Err(Refusal::Token));
    }

    #[test]
    fn a_launch_code_expires_unused() {
        let guard = Guard::new(1);
        let host = headers(&[("host", "127.0.0.1:1")]);
        let code = format!(
            "code={}",
            guard.mint(CodeKind::Launch, Some(LAUNCH_CODE_TTL))
        );
        let later = Instant::now() + LAUNCH_CODE_TTL + Duration::from_secs(1);
        assert_eq!(
            guard.admit_at(&host, Some(&code), later),
            Err(Refusal::Token)
        );
        assert_eq!(guard.admit(&host, Some(&code)), Err(Refusal::Token));
        assert!(!guard.has_live(CodeKind::Launch));
    }
}
