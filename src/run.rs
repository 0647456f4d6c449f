//! Runs a command loopx was asked to run (a todo's validation, `evidence
//! run`, `settle`'s check): no shell, a working directory, a deadline that
//! holds, and the output streamed through its hash while only a bounded,
//! redacted tail is kept.
//!
//! The command gets a process group of its own. At the deadline the whole
//! group gets SIGTERM, then SIGKILL after a short grace, and the pipes stop
//! being read: a grandchild that keeps them open, a child that ignores TERM
//! or closes its output and keeps running cannot hold loopx past the
//! deadline. When the command exits on its own, whatever it left running in
//! its group is ended the same way, so no process of it outlives the run.
//!
//! A descendant can leave the group (`setsid`, `setpgid`). On Linux loopx
//! is a child subreaper for the length of the run
//! (`prctl(PR_SET_CHILD_SUBREAPER)`), so such a process is handed to loopx
//! instead of init when its parent ends; once the group is gone, loopx
//! kills and reaps every process handed to it and everything below them,
//! whatever session or group they moved to (`Reaper`).

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use sha2::{Digest, Sha256};

use crate::model::id::hex;
use crate::model::run::{CommandRun, argv_digest};
use crate::redact;
use crate::time::Span;

/// How much of the output's end is kept.
pub const TAIL_BYTES: usize = 4096;
/// How long a group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// How long the pipe may stay open once the command's group is gone (a
/// process that left the group can hold it forever).
const DRAIN: Duration = Duration::from_millis(500);
/// A longer line is cut into pieces of this size, so memory stays bounded.
const MAX_LINE: u64 = 64 * 1024;

/// Runs `argv` in `dir`, ending it after `timeout`. Never fails: a command
/// that cannot start is recorded as such. The recorded argv, tail and
/// digest are redacted (see [`crate::redact`]).
pub fn run(argv: &[String], dir: &Path, timeout: Span) -> CommandRun {
    let started = Instant::now();
    let limit = Duration::from_secs(timeout.as_secs().max(1) as u64);
    let Some((program, args)) = argv.split_first() else {
        return failed(argv, "the command is empty", started);
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return failed(argv, &format!("no pipe for its output: {e}"), started),
    };
    // The watcher comes first and leads the group, so the command never
    // runs without it (a loopx killed a moment after the spawn).
    let watcher = Watcher::start();
    // From here on, whatever the command leaves behind comes back to loopx.
    let reaper = Reaper::start();
    let spawn = |group: i32| {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .process_group(group);
        let w = writer.try_clone()?;
        let w2 = writer.try_clone()?;
        cmd.stdout(w).stderr(w2);
        // `cmd` holds the pipe's write ends: it is dropped on return, so
        // the reader sees the end of the output when the command's end.
        cmd.spawn()
    };
    let (child, led_by_watcher) = match &watcher {
        Some(w) => match spawn(w.child.id() as i32) {
            Ok(c) => (Ok(c), true),
            Err(_) => (spawn(0), false),
        },
        None => (spawn(0), false),
    };
    drop(writer);
    // A watcher outside the command's group could not end it.
    let watcher = if led_by_watcher {
        watcher
    } else {
        watcher.and_then(|w| {
            w.stop();
            None
        })
    };
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(argv, &format!("{program}: {e}"), started),
    };
    // The group: the watcher's, or the command's own.
    let group_id = watcher.as_ref().map_or(child.id(), |w| w.child.id());
    let capture = Arc::new(Mutex::new(Capture::default()));
    let (done_tx, done_rx) = mpsc::channel();
    {
        let capture = Arc::clone(&capture);
        std::thread::spawn(move || {
            read_all(reader, &capture);
            let _ = done_tx.send(());
        });
    }
    let group = Pid::from_raw(group_id as i32).expect("a pid is positive");
    let deadline = started + limit;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    if let Some(w) = watcher {
        w.stop();
    }
    let status = end_group(group, &mut child, status);
    // Descendants that left the group are ended too, before the pipe they
    // may hold is waited for.
    reaper.end_escaped();
    // The group is gone, so the pipe ends unless a process left the group;
    // never wait past the deadline for that.
    let wait = if timed_out {
        DRAIN
    } else {
        deadline
            .saturating_duration_since(Instant::now())
            .min(DRAIN)
    };
    let _ = done_rx.recv_timeout(wait);
    let capture = capture
        .lock()
        .map_or_else(|p| p.into_inner().clone(), |c| c.clone());
    CommandRun {
        argv_sha256: (redact::argv(argv) != argv).then(|| argv_digest(argv)),
        argv: redact::argv(argv),
        exit: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        error: None,
        duration_ms: started.elapsed().as_millis() as u64,
        output_sha256: hex(&capture.hash.finalize()),
        output_redacted: capture.redacted,
        output_tail: tail(&capture.tail, TAIL_BYTES),
    }
}

/// A watcher in the command's process group that ends the group if loopx
/// itself dies first (Ctrl-C in a terminal, an agent runtime killing its
/// tool call): the group is not the terminal's or the runtime's, so their
/// signals no longer reach the command. It blocks reading a pipe that only
/// loopx can write to; at its end (loopx is gone) it sends the group TERM,
/// then KILL.
struct Watcher {
    child: Child,
    /// Held open for as long as loopx wants the command to live.
    _alive: std::io::PipeWriter,
}

impl Watcher {
    /// Best effort: without `sh` there is no watcher, and the run goes on.
    fn start() -> Option<Watcher> {
        let (read, write) = std::io::pipe().ok()?;
        let child = Command::new("/bin/sh")
            .args([
                "-c",
                "trap '' TERM INT HUP; read -r _; kill -TERM 0; sleep 2; kill -KILL 0",
            ])
            .stdin(read)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()?;
        Some(Watcher {
            child,
            _alive: write,
        })
    }

    /// loopx ends the group itself: the watcher goes first, so it neither
    /// counts as a member left behind nor signals anything.
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ends what is left of the command's process group: SIGTERM, a grace for
/// it to exit, then SIGKILL. Reaps the command itself and returns how it
/// ended (`status` if it had already exited).
fn end_group(group: Pid, child: &mut Child, status: Option<ExitStatus>) -> Option<ExitStatus> {
    let mut status = status;
    if test_kill_process_group(group).is_ok() {
        let _ = kill_process_group(group, Signal::TERM);
        let until = Instant::now() + GRACE;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            // Only once the command is reaped can an empty group be told
            // from a group holding its zombie. Members handed to loopx (the
            // subreaper) are reaped here, or their zombies would keep the
            // group alive.
            #[cfg(target_os = "linux")]
            if status.is_some() {
                use rustix::process::{WaitOptions, waitpgid};
                while let Ok(Some(_)) = waitpgid(group, WaitOptions::NOHANG) {}
            }
            if status.is_some() && test_kill_process_group(group).is_err() {
                break;
            }
            if Instant::now() >= until {
                let _ = kill_process_group(group, Signal::KILL);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    if status.is_none() {
        status = child.wait().ok();
    }
    status
}

/// Ends the descendants of a run that left its process group. On Linux,
/// loopx is a child subreaper while it lives; elsewhere it does nothing.
struct Reaper {
    /// loopx's children before the run (not the run's: never touched).
    before: Vec<i32>,
    /// Whether loopx was made a subreaper (and must stop being one).
    on: bool,
}

impl Reaper {
    fn start() -> Reaper {
        #[cfg(target_os = "linux")]
        {
            let me = rustix::process::getpid();
            Reaper {
                before: children_of(me.as_raw_nonzero().get()),
                on: rustix::process::set_child_subreaper(Some(me)).is_ok(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        Reaper {
            before: Vec::new(),
            on: false,
        }
    }

    /// Kills and reaps every process handed to loopx during the run (the
    /// command's group already ended), and all their descendants, until
    /// none is left; then loopx stops being a subreaper.
    fn end_escaped(self) {
        #[cfg(target_os = "linux")]
        if self.on {
            use rustix::process::{WaitOptions, kill_process, waitpid};
            let me = rustix::process::getpid().as_raw_nonzero().get();
            let until = Instant::now() + GRACE;
            loop {
                let escaped: Vec<i32> = children_of(me)
                    .into_iter()
                    .filter(|p| !self.before.contains(p))
                    .collect();
                if escaped.is_empty() || Instant::now() >= until {
                    break;
                }
                // The whole tree at once, so none of it gets to fork away.
                let mut tree = escaped.clone();
                let mut i = 0;
                while i < tree.len() {
                    for p in children_of(tree[i]) {
                        if !tree.contains(&p) {
                            tree.push(p);
                        }
                    }
                    i += 1;
                }
                for pid in &tree {
                    if let Some(pid) = Pid::from_raw(*pid) {
                        let _ = kill_process(pid, Signal::KILL);
                    }
                }
                // Reaps ours; their children come to loopx on the next round.
                for pid in escaped {
                    if let Some(pid) = Pid::from_raw(pid) {
                        let _ = waitpid(Some(pid), WaitOptions::empty());
                    }
                }
            }
            let _ = rustix::process::set_child_subreaper(None);
        }
    }
}

/// The processes whose parent is `parent`, from /proc.
#[cfg(target_os = "linux")]
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        (crate::queue::process(pid)?.ppid == parent).then_some(pid as i32)
    })
    .collect()
}

/// The output as it streams by: its digest and its last bytes.
#[derive(Clone, Default)]
struct Capture {
    hash: Sha256,
    /// The last bytes seen (redacted), at most twice [`TAIL_BYTES`].
    tail: Vec<u8>,
    /// Whether a line was redacted, so the digest is of the redacted text.
    redacted: bool,
}

/// Reads the output to its end a line at a time (long lines in pieces),
/// redacting each line before it reaches the digest and the tail.
fn read_all(reader: impl Read, capture: &Mutex<Capture>) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut lines = redact::Lines::new();
    let mut buf = Vec::with_capacity(1024);
    loop {
        buf.clear();
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let (body, newline) = match buf.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (buf.as_slice(), false),
        };
        let text = String::from_utf8_lossy(body);
        let Ok(mut c) = capture.lock() else { return };
        match lines.line(&text) {
            redact::Line::Same => c.push(&buf),
            redact::Line::Changed(s) => {
                c.redacted = true;
                c.push(s.as_bytes());
                if newline {
                    c.push(b"\n");
                }
            }
            redact::Line::Dropped => c.redacted = true,
        }
    }
}

impl Capture {
    fn push(&mut self, bytes: &[u8]) {
        self.hash.update(bytes);
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * TAIL_BYTES {
            let cut = self.tail.len() - TAIL_BYTES - 1024;
            self.tail.drain(..cut);
        }
    }
}

fn failed(argv: &[String], why: &str, started: Instant) -> CommandRun {
    CommandRun {
        argv_sha256: (redact::argv(argv) != argv).then(|| argv_digest(argv)),
        argv: redact::argv(argv),
        exit: None,
        timed_out: false,
        error: Some(redact::text(why).into_owned()),
        duration_ms: started.elapsed().as_millis() as u64,
        output_sha256: hex(&Sha256::digest(b"")),
        output_redacted: false,
        output_tail: String::new(),
    }
}

/// The last `max` bytes as text, starting at a line boundary when one is
/// near.
fn tail(output: &[u8], max: usize) -> String {
    let start = output.len().saturating_sub(max);
    let text = String::from_utf8_lossy(&output[start..]);
    let text = if start > 0 {
        text.split_once('\n')
            .map_or(text.as_ref(), |(_, rest)| rest)
            .to_owned()
    } else {
        text.into_owned()
    };
    text.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_without_a_shell_and_records_the_end() {
        let dir = std::env::temp_dir();
        let ok = run(&["true".into()], &dir, Span::seconds(10));
        assert!(ok.passed(), "{ok:?}");
        let fail = run(
            &[
                "sh".into(),
                "-c".into(),
                "echo out; echo err >&2; exit 3".into(),
            ],
            &dir,
            Span::seconds(10),
        );
        assert_eq!(fail.exit, Some(3));
        assert_eq!(fail.output_tail, "out\nerr");
        let slow = run(&["sleep".into(), "5".into()], &dir, Span::seconds(1));
        assert!(slow.timed_out && !slow.passed(), "{slow:?}");
        let missing = run(&["no-such-program-x".into()], &dir, Span::seconds(1));
        assert!(missing.error.is_some() && !missing.passed());
        // No shell: metacharacters are plain arguments.
        let echo = run(&["echo".into(), "$HOME;".into()], &dir, Span::seconds(5));
        assert_eq!(echo.output_tail, "$HOME;");
    }
}
