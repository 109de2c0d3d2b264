//! The HTTP service of the daemon: wit's envelope (docs/protocol.md section 1) around jsonrpsee's
//! method table.
//!
//! jsonrpsee knows JSON-RPC 2.0 but not wit's envelope: `witVersion` on every request and
//! response, ids echoed exactly as written (negative and fractional numbers too), `POST /rpc`
//! only, a body limit answered with 413, HTTP 400 for envelope errors, and a fixed key order in
//! every response. This module owns all of that. It parses each request once (batch elements
//! one by one), calls each valid element's jsonrpsee callback directly with the raw params
//! (the callback parses them into the generated types and maps errors), and writes the answer
//! with the original id put back. jsonrpsee's own HTTP server is not in the path: it would
//! parse every body a second time.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Extensions, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use jsonrpsee::core::server::{ConnectionId, MethodCallback, Methods};
use jsonrpsee::types::{Id, Params};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::protocol::{
    INTERNAL_ERROR_CODE as INTERNAL_ERROR, INVALID_REQUEST_CODE as INVALID_REQUEST,
    METHOD_NOT_FOUND_CODE as METHOD_NOT_FOUND, PARSE_ERROR_CODE as PARSE_ERROR,
    VERSION_MISMATCH_CODE as VERSION_MISMATCH, WIT_VERSION,
};

/// The only path that serves JSON-RPC.
pub const RPC_PATH: &str = "/rpc";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Settings of the envelope.
#[derive(Debug, Clone)]
pub struct EnvelopeConfig {
    /// Largest accepted request body in bytes; larger bodies answer HTTP 413.
    pub max_body_bytes: usize,
    /// How long a client may take to send its whole body once the headers arrived.
    pub body_timeout: Duration,
}

/// An HTTP response with a complete body, as every answer of the daemon is.
pub type HttpResponse = Response<Full<Bytes>>;

/// The HTTP service of the daemon: checks the envelope and dispatches each call straight to
/// the jsonrpsee method table (no second parse, no rewritten body). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Envelope {
    config: Arc<EnvelopeConfig>,
    methods: Methods,
}

impl Envelope {
    /// The envelope around `methods`.
    pub fn new(config: EnvelopeConfig, methods: Methods) -> Self {
        Self {
            config: Arc::new(config),
            methods,
        }
    }

    /// Answers one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> HttpResponse
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let body = match self.read_body(request).await {
            Ok(body) => body,
            Err(refusal) => return *refusal,
        };
        let mut plan = match plan_request(&body, &self.methods) {
            Ok(plan) => plan,
            Err(failure) => return *failure,
        };
        // The plan owns what it needs: give the request's buffer back before dispatching.
        drop(body);
        let mut answers = Vec::with_capacity(plan.calls.len());
        for call in &mut plan.calls {
            answers.push(dispatch(call).await);
        }
        plan.assemble(answers)
    }

    /// Reads and drops the body of a request refused before its body mattered, within the
    /// body limit and timeout: answering with the body unread would close the connection
    /// with bytes still unread, which the client sees as a reset instead of the answer (and
    /// a client still writing its body as a broken pipe). Past the limit or the timeout the
    /// connection closes after the answer, as it must.
    async fn discard_body<B>(&self, body: B)
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let mut limited = std::pin::pin!(Limited::new(body, self.config.max_body_bytes));
        let drain = async { while let Some(Ok(_)) = limited.frame().await {} };
        let _ = tokio::time::timeout(self.config.body_timeout, drain).await;
    }

    /// Checks path, method and size, and collects the body within the body timeout.
    async fn read_body<B>(&self, request: Request<B>) -> Result<Bytes, Box<HttpResponse>>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        if request.uri().path() != RPC_PATH {
            let path = request.uri().path().to_owned();
            self.discard_body(request.into_body()).await;
            return Err(Box::new(envelope_failure(
                StatusCode::NOT_FOUND,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": format!("no such path {path}; use POST /rpc")})),
            )));
        }
        if request.method() != Method::POST {
            let method = request.method().clone();
            self.discard_body(request.into_body()).await;
            let mut response = envelope_failure(
                StatusCode::METHOD_NOT_ALLOWED,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": format!("HTTP method {method} is not allowed; use POST")})),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return Err(Box::new(response));
        }
        let max = self.config.max_body_bytes;
        let declared_length = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared_length.is_some_and(|len| len > max as u64) {
            return Err(Box::new(too_large(max)));
        }
        let limited = Limited::new(request.into_body(), max);
        match tokio::time::timeout(self.config.body_timeout, limited.collect()).await {
            Err(_elapsed) => Err(Box::new(envelope_failure(
                StatusCode::REQUEST_TIMEOUT,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": "the request body did not arrive in time"})),
            ))),
            Ok(Err(error)) => {
                if error
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    return Err(Box::new(too_large(max)));
                }
                Err(Box::new(envelope_failure(
                    StatusCode::BAD_REQUEST,
                    INVALID_REQUEST,
                    "INVALID_REQUEST",
                    Some(json!({"reason": format!("could not read the request body: {error}")})),
                )))
            }
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
        }
    }
}

/// Runs one call through its jsonrpsee callback (which parses the params and maps errors) and
/// returns the finished response object with the caller's id, or `None` for a notification
/// (which runs all the same). The result is copied once, from jsonrpsee's answer into ours.
async fn dispatch(call: &mut Call<'_>) -> Option<String> {
    // jsonrpsee's own id is never shown: the answer is rebuilt with the caller's.
    let params = call
        .params
        .take()
        .unwrap_or_else(|| Params::new(None).into_owned());
    let response = match call.callback {
        MethodCallback::Async(callback) => {
            callback(
                Id::Number(0),
                params,
                ConnectionId(0),
                usize::MAX,
                Extensions::new(),
            )
            .await
        }
        MethodCallback::Sync(callback) => {
            callback(Id::Number(0), params, usize::MAX, Extensions::new())
        }
        MethodCallback::Subscription(_) | MethodCallback::Unsubscription(_) => {
            return call
                .id
                .as_deref()
                .map(|id| internal_error(id, "the method cannot be called over HTTP"));
        }
    };
    let id = call.id.as_deref()?;
    Some(
        match serde_json::from_str::<InnerAnswerWire<'_>>(response.as_json().get()) {
            Ok(wire) => response_object(
                id,
                wire.result.map(RawValue::get),
                wire.error.map(RawValue::get),
            ),
            Err(_) => internal_error(id, "the method produced a malformed response"),
        },
    )
}

/// One element of the incoming request as the envelope judged it.
enum Slot {
    /// An envelope failure answered by the envelope itself: a finished response object.
    Answered(String),
    /// A method-level error answered by the envelope itself (HTTP 200 when alone).
    MethodError(String),
    /// Dispatched as call `index` of the plan (answered unless it is a notification).
    Dispatched(usize),
}

/// A call to dispatch, borrowing the method table but not the request body: the params are
/// copied out of it (jsonrpsee wants them owned anyway), so the body's buffer can go back to
/// hyper before a long call (a lock wait) instead of pinning it and making hyper take a fresh
/// read buffer per waiting connection.
struct Call<'a> {
    /// The method's jsonrpsee callback, looked up once while planning.
    callback: &'a MethodCallback,
    /// The params, owned.
    params: Option<Params<'static>>,
    /// The caller's raw id text; `None` for a notification.
    id: Option<String>,
}

struct Plan<'a> {
    batch: bool,
    slots: Vec<Slot>,
    calls: Vec<Call<'a>>,
}

impl<'a> Plan<'a> {
    /// An empty plan with room for `elements` requests.
    fn new(batch: bool, elements: usize) -> Plan<'a> {
        Plan {
            batch,
            slots: Vec::with_capacity(elements),
            calls: Vec::with_capacity(elements),
        }
    }

    /// The HTTP response: every answer in request order; 204 when there is none.
    /// `answers[i]` is what call `i` answered.
    fn assemble(self, mut answers: Vec<Option<String>>) -> HttpResponse {
        let mut entries = Vec::with_capacity(self.slots.len());
        let mut single_status = StatusCode::OK;
        for slot in self.slots {
            match slot {
                Slot::Answered(text) => {
                    single_status = StatusCode::BAD_REQUEST;
                    entries.push(text);
                }
                Slot::MethodError(text) => entries.push(text),
                Slot::Dispatched(index) => {
                    if let Some(text) = answers.get_mut(index).and_then(Option::take) {
                        entries.push(text);
                    }
                }
            }
        }
        if entries.is_empty() {
            let mut response = Response::new(Full::new(Bytes::new()));
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

/// The parts of jsonrpsee's response object the envelope keeps.
#[derive(Deserialize)]
struct InnerAnswerWire<'a> {
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Judges the whole body: parse, shape, witVersion and method of each element.
/// The whole-body rejection is boxed: an HTTP response is large and the plan is the hot path.
fn plan_request<'b, 'm>(
    body: &'b [u8],
    methods: &'m Methods,
) -> Result<Plan<'m>, Box<HttpResponse>> {
    // The common case, one well-formed request object: its fields in one pass over the body
    // (a large `check-contracts` body is otherwise scanned once more). Anything else takes the
    // general path below, which tells the errors apart.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        if let Ok(fields) = serde_json::from_slice::<RequestFields<'b>>(body) {
            let mut plan = Plan::new(false, 1);
            plan_fields(fields, methods, &mut plan);
            return Ok(plan);
        }
    }
    let top: &RawValue = match serde_json::from_slice(body) {
        Ok(top) => top,
        Err(error) => return Err(parse_error(&error)),
    };
    let text = top.get();
    if text.starts_with('[') {
        let elements: Vec<&RawValue> = match serde_json::from_str(text) {
            Ok(elements) => elements,
            Err(error) => return Err(parse_error(&error)),
        };
        if elements.is_empty() {
            return Err(Box::new(envelope_failure(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "INVALID_REQUEST",
                Some(json!({"reason": "empty batch"})),
            )));
        }
        let mut plan = Plan::new(true, elements.len());
        for element in elements {
            plan_element(element, methods, &mut plan);
        }
        Ok(plan)
    } else {
        let mut plan = Plan::new(false, 1);
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

/// An INVALID_REQUEST answer (id `null`) saying `reason`.
fn invalid(reason: &str) -> Slot {
    Slot::Answered(error_object(
        "null",
        INVALID_REQUEST,
        "INVALID_REQUEST",
        Some(&json!({ "reason": reason })),
    ))
}

fn plan_element<'m>(element: &RawValue, methods: &'m Methods, plan: &mut Plan<'m>) {
    if !element.get().starts_with('{') {
        plan.slots.push(invalid("a request must be a JSON object"));
        return;
    }
    match serde_json::from_str(element.get()) {
        Ok(fields) => plan_fields(fields, methods, plan),
        Err(error) => plan
            .slots
            .push(invalid(&format!("malformed request object: {error}"))),
    }
}

/// Judges one request object's fields: version, method, id, witVersion.
fn plan_fields<'m>(fields: RequestFields<'_>, methods: &'m Methods, plan: &mut Plan<'m>) {
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
    let Some((_, callback)) = methods.method_with_name(&method) else {
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
    };
    plan.slots.push(Slot::Dispatched(plan.calls.len()));
    plan.calls.push(Call {
        callback,
        params: Some(Params::new(fields.params.map(RawValue::get)).into_owned()),
        id,
    });
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
    let mut response = Response::new(Full::new(Bytes::from(body)));
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

/// The whole body is not JSON: HTTP 400 with PARSE_ERROR.
fn parse_error(error: &serde_json::Error) -> Box<HttpResponse> {
    Box::new(envelope_failure(
        StatusCode::BAD_REQUEST,
        PARSE_ERROR,
        "PARSE_ERROR",
        Some(json!({"reason": error.to_string()})),
    ))
}

/// An INTERNAL_ERROR response object for `id`, saying `reason`.
fn internal_error(id: &str, reason: &str) -> String {
    error_object(
        id,
        INTERNAL_ERROR,
        "INTERNAL_ERROR",
        Some(&json!({ "reason": reason })),
    )
}

fn too_large(limit: usize) -> HttpResponse {
    envelope_failure(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        "INVALID_REQUEST",
        Some(json!({ "limit": limit })),
    )
}
