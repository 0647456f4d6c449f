//! A page that follows the state without reloading (`status --html F
//! --watch`): the page is written once, and a small script beside it,
//! `F.live.js`, carries the current frame (its key, title, header and
//! sections). The page loads that script again every second as a new
//! `<script src>` element (a `file:` page may not `fetch()` its own
//! folder) and, when the key changed, swaps the sections in place: what was
//! typed into the filter, the scroll position and which `<details>` are
//! open stay. No server, no network.
//!
//! One entry point, [`follow`], for any page built from a [`Frame`] (this
//! status page; a page over several repositories the same way).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};

/// One rendering of a page: what changes when the state moves.
pub struct Frame {
    /// What identifies the state shown (a tick number, or several): the
    /// page re-renders only when it changes.
    pub key: String,
    /// The document's title.
    pub title: String,
    /// The board's time (Unix seconds), which the page's clock counts on
    /// from.
    pub now: i64,
    /// The inner HTML of `<div id="live-head">`, in the header above the
    /// filter box.
    pub head: String,
    /// The inner HTML of `<main id="live-main">`.
    pub main: String,
}

/// The page's own part of the watch: loads the sidecar again every second
/// and swaps the frame in when its key changed, keeping the filter (the
/// box sits outside what is swapped), the scroll and open `<details>`.
/// `loopxRefresh` (the page's script) re-applies the filter and the clock.
pub const SCRIPT: &str = r#"
(function(){var b=document.body,src=b.getAttribute('data-live');if(!src)return;var n=0;
window.loopxLive=function(f){if(f.key===b.getAttribute('data-key'))return;
var x=window.scrollX,y=window.scrollY,open={};
document.querySelectorAll('details[id]').forEach(function(d){open[d.id]=d.open;});
document.title=f.title;document.getElementById('live-head').innerHTML=f.head;document.getElementById('live-main').innerHTML=f.main;
document.querySelectorAll('details[id]').forEach(function(d){if(d.id in open)d.open=open[d.id];});
b.setAttribute('data-key',f.key);b.setAttribute('data-now',f.now);b.setAttribute('data-written',f.written);
if(window.loopxRefresh)window.loopxRefresh();window.scrollTo(x,y);};
function poll(){var o=document.getElementById('live-src');if(o)o.remove();var s=document.createElement('script');
s.id='live-src';s.src=src+'?'+(++n);document.head.appendChild(s);}
setInterval(poll,1000);})();
"#;

/// The sidecar script of the page at `file`: `F.live.js` beside it.
pub fn sidecar(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".live.js");
    file.with_file_name(name)
}

/// The `<body>` attributes of a watched page: the sidecar's name (relative,
/// beside the page), the frame's key and the clock.
pub fn body_attrs(file: &Path, frame: &Frame, written: u128) -> String {
    let src = sidecar(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        " data-live=\"{}\" data-key=\"{}\" data-now=\"{}\" data-written=\"{written}\"",
        crate::cmd::wire::esc(&src),
        crate::cmd::wire::esc(&frame.key),
        frame.now
    )
}

/// The wall clock in milliseconds, which the page's clock counts from.
pub fn written_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// Writes `bytes` to `file` through a temporary file and a rename, so a
/// browser reading mid-write never reads half of it.
pub fn write_atomic(file: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = file.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}

/// The sidecar's text: one call of the page's `loopxLive` with the frame.
fn sidecar_text(frame: &Frame, written: u128) -> String {
    let s = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".to_owned());
    format!(
        "window.loopxLive&&window.loopxLive({{\"key\":{},\"title\":{},\"now\":{},\"written\":{written},\"head\":{},\"main\":{}}});\n",
        s(&frame.key),
        s(&frame.title),
        frame.now,
        s(&frame.head),
        s(&frame.main)
    )
}

/// Follows the state: asks `moved` every `poll` whether what the page
/// shows moved; when it did (and at the start), renders a frame, writes the
/// page once (the first time, through `page`, given the frame and the
/// wall clock) and the sidecar every time, and tells `wrote`. Stops after
/// `max` frames when given.
pub fn follow(
    file: &Path,
    poll: Duration,
    max: Option<u64>,
    mut moved: impl FnMut() -> Result<bool>,
    mut frame: impl FnMut() -> Result<Frame>,
    page: impl Fn(&Frame, u128) -> String,
    mut wrote: impl FnMut(&Frame),
) -> Result<()> {
    let mut written = 0u64;
    let mut first = true;
    loop {
        if moved()? || first {
            let f = frame()?;
            let at = written_ms();
            // The sidecar first: the page, once there, loads it at once.
            write_atomic(&sidecar(file), sidecar_text(&f, at).as_bytes())?;
            if first {
                write_atomic(file, page(&f, at).as_bytes())?;
                first = false;
            }
            wrote(&f);
            written += 1;
            if max.is_some_and(|n| written >= n) {
                return Ok(());
            }
        }
        std::thread::sleep(poll);
    }
}
