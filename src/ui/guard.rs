//! Who may talk to `wit ui`: the per-run token (in the opened URL once, then in an HttpOnly
//! SameSite=Strict cookie) and the `Host` header (127.0.0.1 or localhost on our port only, so
//! a DNS-rebound name cannot reach the server from a web page).

use hyper::header::{COOKIE, HOST};
use hyper::HeaderMap;

/// Name of the cookie that carries the token.
pub const COOKIE_NAME: &str = "wit_ui";
/// Header that carries the token on actions (a custom header: no form can send it).
pub const TOKEN_HEADER: &str = "x-wit-token";

/// The secret of one `wit ui` run and the port it listens on.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    port: u16,
}

/// Why a request is refused before any route sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The `Host` header names neither `127.0.0.1:PORT` nor `localhost:PORT`.
    Host,
    /// No valid token in the cookie, the query or (for actions) the header.
    Token,
}

impl Guard {
    /// A guard with a fresh random token (256 bits from the OS's generator) for `port`.
    pub fn new(port: u16) -> Self {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        Self { token, port }
    }

    /// The token (for the URL `wit ui` opens and the page's action header).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Checks the `Host` header, then the token in the cookie or the `token` query parameter.
    /// Returns whether the token came from the query (the response then sets the cookie).
    pub fn admit(&self, headers: &HeaderMap, query: Option<&str>) -> Result<bool, Refusal> {
        if !self.host_allowed(headers) {
            return Err(Refusal::Host);
        }
        if cookie_token(headers).is_some_and(|token| self.matches(token)) {
            return Ok(false);
        }
        if query_token(query).is_some_and(|token| self.matches(token)) {
            return Ok(true);
        }
        Err(Refusal::Token)
    }

    /// Whether an action request carries the token in [`TOKEN_HEADER`] too.
    pub fn action_allowed(&self, headers: &HeaderMap) -> bool {
        headers
            .get(TOKEN_HEADER)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|token| self.matches(token))
    }

    /// The `Set-Cookie` value that keeps the token for later requests.
    pub fn cookie(&self) -> String {
        format!(
            "{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path=/",
            self.token
        )
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

    /// Compares in time independent of where the strings first differ.
    fn matches(&self, given: &str) -> bool {
        let (a, b) = (self.token.as_bytes(), given.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
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

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
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
        let token = format!("token={}", guard.token());
        for host in ["127.0.0.1:4242", "localhost:4242", "LOCALHOST:4242"] {
            assert_eq!(
                guard.admit(&headers(&[("host", host)]), Some(&token)),
                Ok(true),
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
                guard.admit(&headers(&[("host", host)]), Some(&token)),
                Err(Refusal::Host),
                "{host}"
            );
        }
        assert_eq!(guard.admit(&headers(&[]), Some(&token)), Err(Refusal::Host));
    }

    #[test]
    fn token_from_cookie_or_query_and_nothing_else() {
        let guard = Guard::new(1);
        let host = ("host", "127.0.0.1:1");
        let cookie = format!("a=b; {COOKIE_NAME}={}", guard.token());
        assert_eq!(
            guard.admit(&headers(&[host, ("cookie", &cookie)]), None),
            Ok(false)
        );
        assert_eq!(
            guard.admit(&headers(&[host, ("cookie", "wit_ui=nope")]), None),
            Err(Refusal::Token)
        );
        assert_eq!(
            guard.admit(&headers(&[host]), Some("token=short")),
            Err(Refusal::Token)
        );
        assert_eq!(guard.admit(&headers(&[host]), None), Err(Refusal::Token));
        assert!(!guard.action_allowed(&headers(&[host])));
        assert!(guard.action_allowed(&headers(&[(TOKEN_HEADER, guard.token())])));
        assert_ne!(Guard::new(1).token(), guard.token());
        assert_eq!(guard.token().len(), 64);
    }
}
