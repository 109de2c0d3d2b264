//! Raw HTTP/1.1 for tests: the bytes of a request, and the one reader of responses (status,
//! headers, a body framed by `content-length`, by chunks or by the end of the connection) over
//! any byte stream: the daemon's Unix socket, `wit ui`'s and chromedriver's TCP ports.
//!
//! One file, included with `#[path]` by each test crate that speaks raw HTTP: the integration
//! tests (through `tests/wit/harness.rs`) and the envelope unit tests of the daemon
//! (`src/daemon/envelope_tests.rs`, which read asynchronously and frame with
//! [`parse_response`]).
#![allow(
    dead_code,
    reason = "each test crate that includes this file uses a part of it"
)]

use std::fmt::Write as _;
use std::io::Read;

/// One HTTP/1.1 response: status, headers (names in lower case) and body (de-chunked).
#[derive(Debug)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The header fields in order, names in lower case, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, without chunk framing.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The value of the first header field named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The bytes of one HTTP/1.1 request: the request line, `headers` in order, `content-length`
/// and `body`.
pub fn request_bytes(method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("{method} {target} HTTP/1.1\r\n");
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let _ = write!(head, "content-length: {}\r\n\r\n", body.len());
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// The response at the start of `buffer` and how many bytes of `buffer` it takes; `None`
/// while it has not all arrived. A body is framed by `transfer-encoding: chunked` or
/// `content-length`; without either it runs to the end of the connection, so it is complete
/// only once `closed`. 1xx, 204 and 304 answers have no body.
pub fn parse_response(buffer: &[u8], closed: bool) -> Option<(HttpResponse, usize)> {
    let split = find(buffer, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buffer[..split]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut response = HttpResponse {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &buffer[split + 4..];
    let taken = if status < 200 || status == 204 || status == 304 {
        0
    } else if response
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        let (body, taken) = dechunk(rest)?;
        response.body = body;
        taken
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length
            .parse()
            .unwrap_or_else(|_| panic!("bad content-length {length:?}"));
        response.body = rest.get(..length)?.to_vec();
        length
    } else if closed {
        response.body = rest.to_vec();
        rest.len()
    } else {
        return None;
    };
    Some((response, split + 4 + taken))
}

/// The body of a chunked message at the start of `data` and how many bytes it takes (trailer
/// fields included); `None` while it has not all arrived.
fn dechunk(data: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let line_end = at + find(&data[at..], b"\r\n")?;
        let line = String::from_utf8_lossy(&data[at..line_end]);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
        at = line_end + 2;
        if size == 0 {
            // Trailer fields, up to an empty line.
            loop {
                let end = at + find(&data[at..], b"\r\n")?;
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Some((body, at));
                }
            }
        }
        body.extend_from_slice(data.get(at..at + size)?);
        at += size;
        assert_eq!(data.get(at..at + 2)?, b"\r\n", "a chunk ends with CRLF");
        at += 2;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One `read`, again when a signal interrupted it (EINTR): the test process has children
/// whose exits are signalled, and an interrupted read is no answer from the peer.
pub fn read_retrying(reader: &mut impl Read, chunk: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(chunk) {
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Reads HTTP responses one after the other from one connection, keeping what arrives early
/// (the next of several pipelined answers).
pub struct ResponseReader<S> {
    stream: S,
    buffer: Vec<u8>,
}

impl<S: Read> ResponseReader<S> {
    /// A reader of the responses arriving on `stream`.
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    /// The connection, to write to or to set options on.
    pub fn stream(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Reads at most `most` bytes (at least one) into the buffer; the end of the connection
    /// is an `UnexpectedEof` error.
    pub fn read_some(&mut self, most: usize) -> std::io::Result<()> {
        let mut chunk = vec![0u8; most];
        let n = read_retrying(&mut self.stream, &mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed before a full response ({} bytes read)",
                    self.buffer.len()
                ),
            ));
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// The next whole response. When the peer closes (or resets) the connection, a response
    /// that runs to its end is complete; anything less is the error.
    pub fn next_response(&mut self) -> std::io::Result<HttpResponse> {
        loop {
            if let Some((response, end)) = parse_response(&self.buffer, false) {
                self.buffer.drain(..end);
                return Ok(response);
            }
            match self.read_some(1 << 16) {
                Ok(()) => {}
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                    ) =>
                {
                    let (response, end) = parse_response(&self.buffer, true).ok_or(error)?;
                    self.buffer.drain(..end);
                    return Ok(response);
                }
                Err(error) => return Err(error),
            }
        }
    }
}
