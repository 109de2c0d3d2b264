//! `wit-bench-ping SOCKET`: the floor of a hook process for `wit-bench` — a minimal program
//! that connects to a daemon's socket, sends one `ping`, reads the answer and exits (0 when
//! it was a `pong`). Standard library only: nothing starts but the one request.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

const PING: &str = r#"{"jsonrpc":"2.0","witVersion":"1","id":1,"method":"ping","params":{}}"#;

fn main() -> ExitCode {
    let Some(socket) = std::env::args_os().nth(1) else {
        eprintln!("usage: wit-bench-ping SOCKET");
        return ExitCode::from(2);
    };
    match ping(socket.as_ref()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("wit-bench-ping: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One ping on a fresh connection; whether the answer is a `pong`.
fn ping(socket: &std::path::Path) -> std::io::Result<bool> {
    let mut stream = UnixStream::connect(socket)?;
    let request = format!(
        "POST /rpc HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{PING}",
        PING.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(false);
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(body) = complete_body(&answer) {
            return Ok(body.windows(6).any(|w| w == b"\"pong\""));
        }
    }
}

/// The body of a complete HTTP response in `bytes` (by its content-length), if all of it
/// arrived.
fn complete_body(bytes: &[u8]) -> Option<&[u8]> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    let length: usize = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })?;
    bytes.get(end + 4..end + 4 + length)
}
