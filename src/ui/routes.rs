//! The HTTP side of `wit ui`: a handful of fixed routes on hyper, behind the [`Guard`].
//!
//! | route                | what                                                  |
//! |----------------------|-------------------------------------------------------|
//! | `GET /?code=C`       | a one-time code: sets the cookie, redirects to `/`    |
//! | `GET /`              | the page                                              |
//! | `GET /app.js`, `/app.css` | its script and style (embedded in the binary)    |
//! | `GET /api/stream`    | Server-Sent Events: sections, events, gaps, status     |
//! | `GET /api/state`     | every section at once, as one JSON object             |
//! | `GET /api/owners?file=F` | `work.owners` of one file (the work map's owners) |
//! | `POST /api/action`   | one [`Action`], with the token in `x-wit-token` too   |
//!
//! Every response carries no CORS header, `no-store`, `nosniff`, no referrer and a strict
//! content security policy; a refused request gets an empty body.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use super::actions::{self, Action, ActionError};
use super::assets;
use super::feed::Hub;
use super::guard::{Admission, Guard, Refusal};
use super::handoff::Handoff;
use super::stream;
use crate::doorway::{Doorway, Failure};

/// The largest action body accepted.
const MAX_ACTION_BODY: usize = 16 * 1024;

/// The longest file path `/api/owners` passes on (the daemon bounds it again).
const MAX_OWNERS_FILE: usize = 4096;

/// JSON-RPC's "method not found": a daemon older than `work.owners`.
const METHOD_NOT_FOUND: i32 = -32601;

/// The body of every response.
pub type UiBody = BoxBody<Bytes, Infallible>;

/// What every request needs.
#[derive(Debug)]
pub struct Ui {
    /// The secret, code and port check.
    pub guard: Guard,
    /// The printed address and the launch file.
    pub handoff: Handoff,
    /// The live state shared by the pages.
    pub hub: Arc<Hub>,
    /// Actions go through this (auto-starting) daemon handle.
    pub daemon: Doorway,
    /// Reads on request (`/api/owners`) go through this one, which never starts a daemon.
    pub watching: Doorway,
    /// The person's own session: the author of contract responses.
    pub person: String,
    /// The repository's name, shown in the page's title.
    pub title: String,
}

impl Ui {
    /// Answers one request.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<UiBody> {
        let admission = match self.guard.admit(request.headers(), request.uri().query()) {
            Ok(admission) => admission,
            Err(Refusal::Host) => return refuse(request, StatusCode::FORBIDDEN).await,
            Err(Refusal::Token) => return refuse(request, StatusCode::UNAUTHORIZED).await,
        };
        let path = request.uri().path().to_owned();
        if let Admission::Code(kind) = admission {
            // The code is used up; the address bar (and history) keeps nothing that works.
            self.handoff.redeemed(&self.guard, kind);
            let mut response = empty(StatusCode::SEE_OTHER);
            set(&mut response, header::LOCATION, &path);
            set(&mut response, header::SET_COOKIE, &self.guard.cookie());
            return response;
        }
        match (request.method(), path.as_str()) {
            (&Method::GET, "/") => {
                let page = assets::page(&self.title, self.guard.secret(), &self.person);
                body(StatusCode::OK, "text/html; charset=utf-8", page)
            }
            (&Method::GET, "/app.js") => body(
                StatusCode::OK,
                "text/javascript; charset=utf-8",
                assets::SCRIPT.to_owned(),
            ),
            (&Method::GET, "/app.css") => body(
                StatusCode::OK,
                "text/css; charset=utf-8",
                assets::STYLE.to_owned(),
            ),
            (&Method::GET, "/api/stream") => {
                let mut response = Response::new(stream::open(Arc::clone(&self.hub)).boxed());
                set(
                    &mut response,
                    header::CONTENT_TYPE,
                    "text/event-stream; charset=utf-8",
                );
                harden(&mut response);
                response
            }
            (&Method::GET, "/api/state") => {
                let sections = Arc::clone(&self.hub.sections().borrow());
                let mut text = String::from("{");
                for (index, (name, section)) in sections.iter().enumerate() {
                    if index > 0 {
                        text.push(',');
                    }
                    text.push_str(&format!("\"{name}\":{section}"));
                }
                text.push('}');
                body(StatusCode::OK, "application/json", text)
            }
            (&Method::GET, "/api/owners") => self.owners(request.uri().query()).await,
            (&Method::POST, "/api/action") => {
                if !self.guard.action_allowed(request.headers()) {
                    return refuse(request, StatusCode::UNAUTHORIZED).await;
                }
                self.action(request).await
            }
            (
                _,
                "/" | "/app.js" | "/app.css" | "/api/stream" | "/api/state" | "/api/owners"
                | "/api/action",
            ) => empty(StatusCode::METHOD_NOT_ALLOWED),
            _ => empty(StatusCode::NOT_FOUND),
        }
    }

    /// The owners of one file's uncommitted lines (`work.owners`, docs/protocol.md 15.7), what
    /// the work map shows of a file the person opens: `{"result": {file, binary, lines}}`,
    /// `{"result": null}` from a daemon that does not offer the method.
    async fn owners(&self, query: Option<&str>) -> Response<UiBody> {
        let file = match query_param(query, "file") {
            Some(file) if !file.is_empty() && file.len() <= MAX_OWNERS_FILE => file,
            _ => {
                return answer(
                    StatusCode::BAD_REQUEST,
                    json!({"error": {"message": "which file? /api/owners?file=PATH (percent-encoded)"}}),
                )
            }
        };
        match self
            .watching
            .call_raw("work.owners", json!({"file": file}))
            .await
        {
            Ok(result) => answer(StatusCode::OK, json!({"result": result})),
            Err(Failure::Rpc(error)) if error.code == METHOD_NOT_FOUND => {
                answer(StatusCode::OK, json!({"result": null}))
            }
            Err(Failure::Rpc(error)) => answer(
                StatusCode::BAD_REQUEST,
                json!({"error": {"code": error.code, "message": error.message}}),
            ),
            Err(error) => answer(
                StatusCode::BAD_GATEWAY,
                json!({"error": {"message": error.to_string()}}),
            ),
        }
    }

    async fn action(&self, request: Request<Incoming>) -> Response<UiBody> {
        let bytes = match Limited::new(request.into_body(), MAX_ACTION_BODY)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return answer(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    json!({"error": {"message": "the action is too large or cut off"}}),
                )
            }
        };
        let action: Action = match serde_json::from_slice(&bytes) {
            Ok(action) => action,
            Err(error) => {
                return answer(
                    StatusCode::BAD_REQUEST,
                    json!({"error": {"message": format!("not an action: {error}")}}),
                )
            }
        };
        let outcome = actions::run(&self.daemon, &self.person, action).await;
        self.hub.refresh_soon();
        match outcome {
            Ok(result) => answer(StatusCode::OK, json!({"result": result})),
            Err(ActionError::NotAllowed(message)) => answer(
                StatusCode::FORBIDDEN,
                json!({"error": {"message": message}}),
            ),
            Err(ActionError::Call(Failure::Rpc(error))) => answer(
                StatusCode::CONFLICT,
                json!({"error": {"code": error.code, "message": error.message, "data": error.data}}),
            ),
            Err(ActionError::Call(error)) => answer(
                StatusCode::BAD_GATEWAY,
                json!({"error": {"message": error.to_string()}}),
            ),
        }
    }
}

/// The value of the query parameter `name`, percent-decoded (`+` is a space); `None` when it
/// is absent, badly escaped or not UTF-8.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    let raw = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    let mut bytes = raw.bytes();
    let mut out = Vec::with_capacity(raw.len());
    while let Some(byte) = bytes.next() {
        match byte {
            b'+' => out.push(b' '),
            b'%' => {
                let high = char::from(bytes.next()?).to_digit(16)?;
                let low = char::from(bytes.next()?).to_digit(16)?;
                out.push(u8::try_from(high * 16 + low).ok()?);
            }
            other => out.push(other),
        }
    }
    String::from_utf8(out).ok()
}

fn answer(status: StatusCode, value: Value) -> Response<UiBody> {
    body(status, "application/json", value.to_string())
}

fn body(status: StatusCode, content_type: &str, text: String) -> Response<UiBody> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    set(&mut response, header::CONTENT_TYPE, content_type);
    harden(&mut response);
    response
}

/// A refusal: the body (up to the action limit) is read and dropped first, so that closing
/// the connection does not reset it under the client before it reads the answer.
async fn refuse(request: Request<Incoming>, status: StatusCode) -> Response<UiBody> {
    let _ = Limited::new(request.into_body(), MAX_ACTION_BODY)
        .collect()
        .await;
    empty(status)
}

/// A bare status: no body, nothing learnt.
fn empty(status: StatusCode) -> Response<UiBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    harden(&mut response);
    response
}

fn harden(response: &mut Response<UiBody>) {
    set(response, header::CACHE_CONTROL, "no-store");
    set(response, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(response, header::REFERRER_POLICY, "no-referrer");
    set(response, header::X_FRAME_OPTIONS, "DENY");
    set(
        response,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
}

fn set(response: &mut Response<UiBody>, name: header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::query_param;

    #[test]
    fn a_query_parameter_is_found_by_name_and_percent_decoded() {
        let query = Some("token=t&file=src%2Fa%20b.ts&x=1");
        assert_eq!(query_param(query, "file").as_deref(), Some("src/a b.ts"));
        assert_eq!(
            query_param(Some("file=a+b%C3%A9"), "file").as_deref(),
            Some("a bé")
        );
        assert_eq!(query_param(Some("files=a"), "file"), None);
        assert_eq!(query_param(Some("file=%2"), "file"), None);
        assert_eq!(query_param(Some("file=%zz"), "file"), None);
        assert_eq!(query_param(Some("file=%ff"), "file"), None);
        assert_eq!(query_param(None, "file"), None);
    }
}
