//! The HTTP layer that does wit's envelope work around jsonrpsee (PROTOCOL-NOTES section 1).
//!
//! jsonrpsee knows JSON-RPC 2.0 but not wit's envelope: `witVersion` on every request and
//! response, ids echoed exactly as written (negative and fractional numbers too), `POST /rpc`
//! only, a body limit answered with 413, HTTP 400 for envelope errors, and a fixed key order in
//! every response. This layer owns all of that. It validates each request (batch elements one
//! by one), hands jsonrpsee a rewritten body whose ids are batch positions, and rebuilds the
//! answer from jsonrpsee's response with the original ids put back.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use jsonrpsee::server::{HttpBody, HttpResponse};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tower::{Layer, Service};

/// The one protocol version this daemon speaks.
pub const WIT_VERSION: &str = "1";
/// The only path that serves JSON-RPC.
pub const RPC_PATH: &str = "/rpc";

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const METHOD_NOT_FOUND: i32 = -32601;
const VERSION_MISMATCH: i32 = -32001;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Settings of the envelope layer.
#[derive(Debug, Clone)]
pub struct EnvelopeConfig {
    /// Largest accepted request body in bytes; larger bodies answer HTTP 413.
    pub max_body_bytes: usize,
    /// How long a client may take to send its whole body once the headers arrived.
    pub body_timeout: Duration,
    /// The method names the RPC module serves; anything else is METHOD_NOT_FOUND.
    pub methods: Arc<HashSet<String>>,
}

/// Tower layer that wraps jsonrpsee's HTTP service with the wit envelope.
#[derive(Debug, Clone)]
pub struct EnvelopeLayer {
    config: Arc<EnvelopeConfig>,
}

impl EnvelopeLayer {
    /// Creates the layer.
    pub fn new(config: EnvelopeConfig) -> Self {
        Self {
            config: Arc::new(config),
        }
    }
}

impl<S> Layer<S> for EnvelopeLayer {
    type Service = EnvelopeService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        EnvelopeService {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service produced by [`EnvelopeLayer`].
#[derive(Debug, Clone)]
pub struct EnvelopeService<S> {
    inner: S,
    config: Arc<EnvelopeConfig>,
}

impl<S, B> Service<Request<B>> for EnvelopeService<S>
where
    S: Service<Request<Full<Bytes>>, Response = HttpResponse, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // Take the service that was driven to readiness and leave a fresh clone behind.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(handle(inner, config, request))
    }
}

async fn handle<S, B>(
    mut inner: S,
    config: Arc<EnvelopeConfig>,
    request: Request<B>,
) -> Result<HttpResponse, BoxError>
where
    S: Service<Request<Full<Bytes>>, Response = HttpResponse, Error = BoxError>,
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    if request.uri().path() != RPC_PATH {
        return Ok(envelope_failure(
            StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            "INVALID_REQUEST",
            Some(
                json!({"reason": format!("no such path {}; use POST /rpc", request.uri().path())}),
            ),
        ));
    }
    if request.method() != Method::POST {
        let mut response = envelope_failure(
            StatusCode::METHOD_NOT_ALLOWED,
            INVALID_REQUEST,
            "INVALID_REQUEST",
            Some(
                json!({"reason": format!("HTTP method {} is not allowed; use POST", request.method())}),
            ),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Ok(response);
    }
    let declared_length = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared_length.is_some_and(|len| len > config.max_body_bytes as u64) {
        return Ok(too_large(config.max_body_bytes));
    }

    let limited = Limited::new(request.into_body(), config.max_body_bytes);
    let body = match tokio::time::timeout(config.body_timeout, limited.collect()).await {
        Err(_elapsed) => {
            return Ok(envelope_failure(
                StatusCode::REQUEST_TIMEOUT,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": "the request body did not arrive in time"})),
            ))
        }
        Ok(Err(error)) => {
            if error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Ok(too_large(config.max_body_bytes));
            }
            return Ok(envelope_failure(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": format!("could not read the request body: {error}")})),
            ));
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };

    let plan = match plan_request(&body, &config.methods) {
        Ok(plan) => plan,
        Err(failure) => return Ok(*failure),
    };
    let inner_output = match plan.forwarded_body() {
        None => None,
        Some(forward) => {
            let mut forwarded = Request::new(Full::new(Bytes::from(forward)));
            *forwarded.method_mut() = Method::POST;
            *forwarded.uri_mut() = http::Uri::from_static(RPC_PATH);
            forwarded.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            let response = inner.call(forwarded).await?;
            let status = response.status();
            let bytes = response.into_body().collect().await?.to_bytes();
            if !status.is_success() {
                // Not a JSON-RPC answer (jsonrpsee's own HTTP-level refusals): pass it on as is.
                let mut passthrough = Response::new(HttpBody::from(bytes.to_vec()));
                *passthrough.status_mut() = status;
                set_json_content_type(&mut passthrough);
                return Ok(passthrough);
            }
            Some(bytes)
        }
    };
    Ok(plan.assemble(inner_output.as_deref()))
}

/// One element of the incoming request as the layer judged it.
enum Slot {
    /// An envelope failure answered by the layer itself: a finished response object.
    Answered(String),
    /// A method-level error answered by the layer itself (HTTP 200 when alone).
    MethodError(String),
    /// Forwarded to jsonrpsee under position `index`; `id` is the original raw id text.
    Forwarded { index: usize, id: String },
    /// A valid notification: forwarded, and never answered.
    Notification,
}

struct Plan {
    batch: bool,
    slots: Vec<Slot>,
    forwarded: Vec<String>,
}

impl Plan {
    fn forwarded_body(&self) -> Option<String> {
        if self.forwarded.is_empty() {
            return None;
        }
        if self.batch {
            Some(format!("[{}]", self.forwarded.join(",")))
        } else {
            self.forwarded.first().cloned()
        }
    }

    fn assemble(self, inner: Option<&[u8]>) -> HttpResponse {
        let answers = inner.map(index_inner_responses).unwrap_or_default();
        let mut entries = Vec::with_capacity(self.slots.len());
        let mut single_status = StatusCode::OK;
        for slot in self.slots {
            match slot {
                Slot::Answered(text) => {
                    single_status = StatusCode::BAD_REQUEST;
                    entries.push(text);
                }
                Slot::Forwarded { index, id } => match answers.get(&index) {
                    Some(InnerAnswer { result, error }) => {
                        entries.push(response_object(&id, result.as_deref(), error.as_deref()))
                    }
                    None => entries.push(error_object(
                        &id,
                        -32603,
                        "INTERNAL_ERROR",
                        Some(&json!({"reason": "the request produced no response"})),
                    )),
                },
                Slot::MethodError(text) => entries.push(text),
                Slot::Notification => {}
            }
        }
        if entries.is_empty() {
            let mut response = Response::new(HttpBody::empty());
            *response.status_mut() = StatusCode::NO_CONTENT;
            return response;
        }
        let (status, body) = if self.batch {
            (StatusCode::OK, format!("[{}]", entries.join(",")))
        } else {
            (single_status, entries.concat())
        };
        json_response(status, body)
    }
}

#[derive(Deserialize)]
struct InnerAnswerWire {
    id: Option<u64>,
    result: Option<Box<RawValue>>,
    error: Option<Box<RawValue>>,
}

struct InnerAnswer {
    result: Option<String>,
    error: Option<String>,
}

fn index_inner_responses(bytes: &[u8]) -> HashMap<usize, InnerAnswer> {
    let mut out = HashMap::new();
    let wires: Vec<InnerAnswerWire> = match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => serde_json::from_slice(bytes).unwrap_or_default(),
        _ => serde_json::from_slice::<InnerAnswerWire>(bytes)
            .map(|one| vec![one])
            .unwrap_or_default(),
    };
    for wire in wires {
        if let Some(id) = wire.id.and_then(|id| usize::try_from(id).ok()) {
            out.insert(
                id,
                InnerAnswer {
                    result: wire.result.map(|r| r.get().to_owned()),
                    error: wire.error.map(|e| e.get().to_owned()),
                },
            );
        }
    }
    out
}

/// Judges the whole body: parse, shape, witVersion and method of each element.
/// The whole-body rejection is boxed: an HTTP response is large and the plan is the hot path.
fn plan_request(body: &[u8], methods: &HashSet<String>) -> Result<Plan, Box<HttpResponse>> {
    let top: &RawValue = match serde_json::from_slice(body) {
        Ok(top) => top,
        Err(error) => {
            return Err(Box::new(envelope_failure(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                "PARSE_ERROR",
                Some(json!({"reason": error.to_string()})),
            )))
        }
    };
    let text = top.get();
    if text.starts_with('[') {
        let elements: Vec<&RawValue> = match serde_json::from_str(text) {
            Ok(elements) => elements,
            Err(error) => {
                return Err(Box::new(envelope_failure(
                    StatusCode::BAD_REQUEST,
                    PARSE_ERROR,
                    "PARSE_ERROR",
                    Some(json!({"reason": error.to_string()})),
                )))
            }
        };
        if elements.is_empty() {
            return Err(Box::new(envelope_failure(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": "empty batch"})),
            )));
        }
        let mut plan = Plan {
            batch: true,
            slots: Vec::with_capacity(elements.len()),
            forwarded: Vec::new(),
        };
        for element in elements {
            plan_element(element, methods, &mut plan);
        }
        Ok(plan)
    } else {
        let mut plan = Plan {
            batch: false,
            slots: Vec::with_capacity(1),
            forwarded: Vec::new(),
        };
        plan_element(top, methods, &mut plan);
        Ok(plan)
    }
}

#[derive(Deserialize)]
struct RequestFields<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    /// `Some` whenever the key is present, `null` included (a plain `Option` would read
    /// `"id": null` as absent and turn the request into a notification).
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "witVersion")]
    wit_version: Option<&'a RawValue>,
}

/// Deserialises a present field as `Some`, whatever its JSON value.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as Deserialize>::deserialize(deserializer).map(Some)
}

fn plan_element(element: &RawValue, methods: &HashSet<String>, plan: &mut Plan) {
    let invalid = |reason: &str| {
        Slot::Answered(error_object(
            "null",
            INVALID_REQUEST,
            "INVALID_REQUEST",
            Some(&json!({ "reason": reason })),
        ))
    };
    if !element.get().starts_with('{') {
        plan.slots.push(invalid("a request must be a JSON object"));
        return;
    }
    let fields: RequestFields<'_> = match serde_json::from_str(element.get()) {
        Ok(fields) => fields,
        Err(error) => {
            plan.slots
                .push(invalid(&format!("malformed request object: {error}")));
            return;
        }
    };
    if fields.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        plan.slots.push(invalid("\"jsonrpc\" must be \"2.0\""));
        return;
    }
    let method = match fields
        .method
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
    {
        Some(method) => method,
        None => {
            plan.slots.push(invalid("\"method\" must be a string"));
            return;
        }
    };
    let id = match fields.id {
        None => None,
        Some(raw) if is_valid_id(raw.get()) => Some(raw.get().to_owned()),
        Some(_) => {
            plan.slots
                .push(invalid("\"id\" must be a string, a number or null"));
            return;
        }
    };
    let echo_id = id.as_deref().unwrap_or("null");
    match fields.wit_version {
        Some(raw) if raw.get() == "\"1\"" => {}
        other => {
            let mut data = serde_json::Map::new();
            data.insert("expected".into(), Value::String(WIT_VERSION.into()));
            if let Some(raw) = other {
                let received = serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null);
                data.insert("received".into(), received);
            }
            plan.slots.push(Slot::Answered(error_object(
                echo_id,
                VERSION_MISMATCH,
                "VERSION_MISMATCH",
                Some(&Value::Object(data)),
            )));
            return;
        }
    }
    if !methods.contains(&method) {
        // An unknown method is a method-level error: answered with HTTP 200, unlike the
        // envelope failures above. Notifications to unknown methods get no answer.
        if let Some(id) = id {
            plan.slots.push(Slot::MethodError(error_object(
                &id,
                METHOD_NOT_FOUND,
                "METHOD_NOT_FOUND",
                Some(&json!({ "method": method })),
            )));
        }
        return;
    }
    let index = plan.forwarded.len();
    let params = fields
        .params
        .map(|p| format!(",\"params\":{}", p.get()))
        .unwrap_or_default();
    let method_json = fields.method.map(RawValue::get).unwrap_or("\"\"");
    match id {
        Some(id) => {
            plan.forwarded.push(format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{index},\"method\":{method_json}{params}}}"
            ));
            plan.slots.push(Slot::Forwarded { index, id });
        }
        None => {
            plan.forwarded.push(format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":{method_json}{params}}}"
            ));
            plan.slots.push(Slot::Notification);
        }
    }
}

/// An id is valid when it is a JSON string, number or null.
fn is_valid_id(raw: &str) -> bool {
    matches!(raw.as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9')) || raw == "null"
}

fn error_payload(code: i32, message: &str, data: Option<&Value>) -> String {
    let message = Value::String(message.to_owned());
    match data {
        Some(data) => format!("{{\"code\":{code},\"message\":{message},\"data\":{data}}}"),
        None => format!("{{\"code\":{code},\"message\":{message}}}"),
    }
}

/// A response object with wit's key order: jsonrpc, witVersion, id, result|error.
fn response_object(id: &str, result: Option<&str>, error: Option<&str>) -> String {
    match (result, error) {
        (_, Some(error)) => format!(
            "{{\"jsonrpc\":\"2.0\",\"witVersion\":\"{WIT_VERSION}\",\"id\":{id},\"error\":{error}}}"
        ),
        (Some(result), None) => format!(
            "{{\"jsonrpc\":\"2.0\",\"witVersion\":\"{WIT_VERSION}\",\"id\":{id},\"result\":{result}}}"
        ),
        (None, None) => format!(
            "{{\"jsonrpc\":\"2.0\",\"witVersion\":\"{WIT_VERSION}\",\"id\":{id},\"result\":null}}"
        ),
    }
}

fn error_object(id: &str, code: i32, message: &str, data: Option<&Value>) -> String {
    response_object(id, None, Some(&error_payload(code, message, data)))
}

fn json_response(status: StatusCode, body: String) -> HttpResponse {
    let mut response = Response::new(HttpBody::from(body));
    *response.status_mut() = status;
    set_json_content_type(&mut response);
    response
}

fn set_json_content_type(response: &mut HttpResponse) {
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
}

fn envelope_failure(
    status: StatusCode,
    code: i32,
    message: &str,
    data: Option<Value>,
) -> HttpResponse {
    json_response(status, error_object("null", code, message, data.as_ref()))
}

fn too_large(limit: usize) -> HttpResponse {
    envelope_failure(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        "INVALID_REQUEST",
        Some(json!({ "limit": limit })),
    )
}
