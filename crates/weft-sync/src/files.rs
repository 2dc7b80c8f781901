//! Static files on the sync port: with [`crate::ServerOptions::static_dir`]
//! set, a plain HTTP `GET` (one without `Upgrade: websocket`) gets a file
//! of that folder, so one `weft-server` serves a web editor and its sync.
//!
//! Deliberately small: `GET` and `HEAD` only, one request per connection
//! (`Connection: close`), no ranges, no directory listings; a path that
//! leaves the folder (`..`, a link pointing out) is 404.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The largest request head read (a browser's is about 1 KiB).
const MAX_HEAD: usize = 16 << 10;

/// The request head waiting on `stream`, read without taking it off the
/// socket (the WebSocket handshake reads it again); `None` when the
/// client sends no complete head within 10 s or within [`MAX_HEAD`].
pub(crate) async fn peek_head(stream: &TcpStream) -> Option<String> {
    let mut buf = vec![0u8; MAX_HEAD];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut seen = 0;
    loop {
        let n = tokio::time::timeout_at(deadline, stream.peek(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = buf[..n].windows(4).position(|w| w == b"\r\n\r\n") {
            return String::from_utf8(buf[..end].to_vec()).ok();
        }
        if n == MAX_HEAD {
            return None;
        }
        if n == seen {
            // Nothing new yet: wait a little for the rest of the head.
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        seen = n;
    }
}

/// Whether a request head asks for a WebSocket.
pub(crate) fn is_websocket(head: &str) -> bool {
    head.lines().skip(1).any(|line| {
        let mut parts = line.splitn(2, ':');
        let name = parts.next().unwrap_or("").trim();
        let value = parts.next().unwrap_or("").trim();
        name.eq_ignore_ascii_case("upgrade") && value.eq_ignore_ascii_case("websocket")
    })
}

/// Answers the plain HTTP request `head` (already peeked) from `dir`.
pub(crate) async fn serve(mut stream: TcpStream, dir: &Path, head: &str) {
    // Take the head off the socket; a body (none for GET) is ignored.
    let mut sink = vec![0u8; head.len() + 4];
    let _ = tokio::io::AsyncReadExt::read_exact(&mut stream, &mut sink).await;
    let mut words = head.lines().next().unwrap_or("").split_whitespace();
    let method = words.next().unwrap_or("");
    let target = words.next().unwrap_or("");
    let response = match method {
        "GET" | "HEAD" => match resolve(dir, target) {
            Some(path) => match tokio::fs::read(&path).await {
                Ok(body) => reply(200, "OK", content_type(&path), body, method == "HEAD"),
                Err(_) => not_found(),
            },
            None => not_found(),
        },
        _ => reply(
            405,
            "Method Not Allowed",
            "text/plain",
            b"GET only\n".to_vec(),
            false,
        ),
    };
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

fn not_found() -> Vec<u8> {
    reply(
        404,
        "Not Found",
        "text/plain",
        b"not found\n".to_vec(),
        false,
    )
}

fn reply(code: u16, reason: &str, kind: &str, body: Vec<u8>, head_only: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
         cache-control: no-cache\r\nx-content-type-options: nosniff\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(&body);
    }
    out
}

/// The file `target` names inside `dir` (`/` is `index.html`), or `None`
/// when it is not a file inside `dir`.
fn resolve(dir: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let path = path.strip_prefix('/')?;
    let mut out = dir.to_path_buf();
    for part in path.split('/') {
        if part.is_empty() {
            continue;
        }
        let plain = part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !plain || part == "." || part == ".." {
            return None;
        }
        out.push(part);
    }
    if path.is_empty() || path.ends_with('/') {
        out.push("index.html");
    }
    let real = out.canonicalize().ok()?;
    let root = dir.canonicalize().ok()?;
    (real.starts_with(&root) && real.is_file()).then_some(real)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_folder() {
        let dir = std::env::temp_dir().join(format!("weft-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("index.html"), "hi").unwrap();
        std::fs::write(dir.join("sub/a.js"), "x").unwrap();
        let root = dir.canonicalize().unwrap();
        assert_eq!(resolve(&dir, "/"), Some(root.join("index.html")));
        assert_eq!(resolve(&dir, "/sub/a.js?v=1"), Some(root.join("sub/a.js")));
        for bad in [
            "/../etc/passwd",
            "/sub/../../x",
            "/%2e%2e/x",
            "x",
            "/sub",
            "/nope.js",
            "/a\\b",
        ] {
            assert_eq!(resolve(&dir, bad), None, "{bad}");
        }
        assert!(is_websocket(
            "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket"
        ));
        assert!(!is_websocket("GET / HTTP/1.1\r\nHost: x"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
