//! A headless Chromium the test drives while it runs, over the DevTools
//! protocol: a page stays open while the test lands ticks, types into it,
//! scrolls it and reads it back. The protocol speaks JSON over a
//! WebSocket; this is the least of a WebSocket client that protocol needs
//! (one connection to 127.0.0.1, text frames, no extensions), on std alone.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A running Chromium with one page, and the socket to that page.
pub struct Browser {
    child: Child,
    ws: TcpStream,
    next: u64,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `cond`, failing (not hanging) after a minute.
pub fn wait_for<T>(what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "waited a minute for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Browser {
    /// Starts Chromium headless on `url` with a window of `width` by
    /// `height`, its profile under `home`.
    pub fn open(bin: &Path, home: &Path, url: &str, width: u32, height: u32) -> Browser {
        let profile = home.join("chromium-cdp");
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("a profile folder");
        let child = Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url)
            .env("HOME", home)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        // Chromium writes the port it listens on into the profile.
        let port: u16 = wait_for("Chromium's DevTools port", || {
            std::fs::read_to_string(profile.join("DevToolsActivePort"))
                .ok()?
                .lines()
                .next()?
                .trim()
                .parse()
                .ok()
        });
        let path = wait_for("the page's DevTools socket", || {
            let list = http_get(port, "/json/list")?;
            let pages: Value = serde_json::from_str(&list).ok()?;
            pages.as_array()?.iter().find_map(|p| {
                (p["type"] == "page" && p["url"].as_str()?.starts_with("file:")).then(|| {
                    let ws = p["webSocketDebuggerUrl"].as_str()?;
                    Some(ws[ws.find("/devtools/")?..].to_owned())
                })?
            })
        });
        let mut ws = TcpStream::connect(("127.0.0.1", port)).expect("connect to DevTools");
        write!(
            ws,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("the handshake");
        // The handshake's answer, up to its blank line, byte by byte so no
        // frame after it is read here.
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            ws.read_exact(&mut b).expect("the handshake's answer");
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        ws.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Browser { child, ws, next: 0 }
    }

    /// Calls a DevTools method and returns its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        send(&mut self.ws, msg.as_bytes());
        loop {
            let v: Value = serde_json::from_slice(&receive(&mut self.ws)).expect("a JSON message");
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    /// Evaluates a JavaScript expression in the page and returns its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// A PNG of what the window shows.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64(r["data"].as_str().expect("a screenshot"))
    }
}

/// A plain HTTP GET to Chromium's DevTools server; None until it answers.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    let mut length = None;
    loop {
        line.clear();
        r.read_line(&mut line).ok()?;
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    r.read_exact(&mut body).ok()?;
    String::from_utf8(body).ok()
}

/// One masked text frame (a client must mask; the key is fixed, which the
/// protocol allows).
fn send(ws: &mut TcpStream, payload: &[u8]) {
    let key = [0x12u8, 0x34, 0x56, 0x78];
    let mut f = vec![0x81u8];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n < 65536 => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(&key);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    ws.write_all(&f).expect("send a frame");
}

/// One message: its frames' payloads until the final one (a ping is
/// answered, a close fails the test).
fn receive(ws: &mut TcpStream) -> Vec<u8> {
    let mut msg = Vec::new();
    loop {
        let mut h = [0u8; 2];
        ws.read_exact(&mut h).expect("a frame");
        let (fin, op) = (h[0] & 0x80 != 0, h[0] & 0x0f);
        let len = match h[1] & 0x7f {
            126 => {
                let mut b = [0u8; 2];
                ws.read_exact(&mut b).unwrap();
                u16::from_be_bytes(b) as usize
            }
            127 => {
                let mut b = [0u8; 8];
                ws.read_exact(&mut b).unwrap();
                u64::from_be_bytes(b) as usize
            }
            n => n as usize,
        };
        let mut payload = vec![0; len];
        ws.read_exact(&mut payload).expect("a frame's payload");
        match op {
            0x8 => panic!("DevTools closed the socket"),
            0x9 => {
                // Pong with the same payload (masked, as a client must).
                let key = [0u8; 4];
                let mut f = vec![0x8a, 0x80 | payload.len() as u8];
                f.extend_from_slice(&key);
                f.extend_from_slice(&payload);
                ws.write_all(&f).unwrap();
                continue;
            }
            0xa => continue,
            _ => msg.extend_from_slice(&payload),
        }
        if fin {
            return msg;
        }
    }
}

/// Standard base64 (what DevTools sends a screenshot in).
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=' && c != b'\n').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= (val(c) as u32) << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}
