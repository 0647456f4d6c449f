//! Runs a command loopx was asked to run (a todo's validation, later
//! `evidence run`): no shell, a working directory, a timeout, the output
//! captured whole for its hash and kept as a bounded, redacted tail.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::model::run::CommandRun;
use crate::time::Span;

/// How much of the output's end is kept.
pub const TAIL_BYTES: usize = 4096;

/// Runs `argv` in `dir`, killing it after `timeout`. Never fails: a command
/// that cannot start is recorded as such.
pub fn run(argv: &[String], dir: &Path, timeout: Span) -> CommandRun {
    let started = Instant::now();
    let Some((program, args)) = argv.split_first() else {
        return failed(argv, "the command is empty", started);
    };
    let mut child = match Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return failed(argv, &format!("{program}: {e}"), started),
    };
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let limit = Duration::from_secs(timeout.as_secs().max(1) as u64);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= limit => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let mut output = stdout.and_then(|h| h.join().ok()).unwrap_or_default();
    output.extend(stderr.and_then(|h| h.join().ok()).unwrap_or_default());
    CommandRun {
        argv: argv.to_vec(),
        exit: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        error: None,
        duration_ms: started.elapsed().as_millis() as u64,
        output_sha256: hex(&Sha256::digest(&output)),
        output_tail: redact(&tail(&output, TAIL_BYTES)),
    }
}

fn failed(argv: &[String], why: &str, started: Instant) -> CommandRun {
    CommandRun {
        argv: argv.to_vec(),
        exit: None,
        timed_out: false,
        error: Some(why.to_owned()),
        duration_ms: started.elapsed().as_millis() as u64,
        output_sha256: hex(&Sha256::digest(b"")),
        output_tail: String::new(),
    }
}

/// Reads a pipe to its end on a thread, so a chatty command never blocks on
/// a full pipe.
fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

use crate::model::id::hex;

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

/// Hides common secret shapes: `key=…`/`token: …` pairs, bearer tokens, and
/// well-known token prefixes (GitHub, GitLab, Slack, AWS, OpenAI-style).
pub fn redact(text: &str) -> String {
    text.lines().map(redact_line).collect::<Vec<_>>().join("\n")
}

fn redact_line(line: &str) -> String {
    const PREFIXES: [&str; 9] = [
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "sk-",
    ];
    const KEYS: [&str; 7] = [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "authorization",
    ];
    let mut out = Vec::new();
    let mut redact_next = false;
    let mut key_before = false;
    for word in line.split(' ') {
        // `password = hunter2`: a key, a lone `=` or `:`, then the value.
        if key_before && (word == "=" || word == ":") {
            out.push(word.to_owned());
            redact_next = true;
            key_before = false;
            continue;
        }
        key_before = {
            let w = word.to_ascii_lowercase();
            let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            !w.is_empty() && KEYS.iter().any(|k| w.ends_with(k))
        };
        if redact_next && !word.is_empty() {
            out.push("[REDACTED]".to_owned());
            // `Authorization: Bearer xyz`: the scheme and the credential.
            redact_next = matches!(
                word.to_ascii_lowercase().as_str(),
                "bearer" | "basic" | "token"
            );
            continue;
        }
        let lower = word.to_ascii_lowercase();
        if lower == "bearer" {
            redact_next = true;
            out.push(word.to_owned());
            continue;
        }
        if let Some(i) = word.find(['=', ':']) {
            let key = lower[..i].trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            if KEYS.iter().any(|k| key.ends_with(k)) {
                if word.len() > i + 1 {
                    out.push(format!("{}[REDACTED]", &word[..=i]));
                } else {
                    out.push(word.to_owned());
                    redact_next = true;
                }
                continue;
            }
        }
        let bare = word.trim_matches(|c: char| "\"'`,;:.()[]{}".contains(c));
        if PREFIXES
            .iter()
            .any(|p| bare.starts_with(p) && bare.len() >= p.len() + 12)
        {
            out.push(word.replace(bare, "[REDACTED]"));
            continue;
        }
        out.push(word.to_owned());
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(redact("token=abc123 ok"), "token=[REDACTED] ok");
        assert_eq!(
            redact("GITHUB_TOKEN: ghp_aaaaaaaaaaaaaaaaaaaa"),
            "GITHUB_TOKEN: [REDACTED]"
        );
        assert_eq!(
            redact("Authorization: Bearer abc.def"),
            "Authorization: [REDACTED] [REDACTED]"
        );
        assert_eq!(
            redact("using key \"sk-proj1234567890abcdef\"."),
            "using key \"[REDACTED]\"."
        );
        assert_eq!(redact("password = hunter2"), "password = [REDACTED]");
        assert_eq!(redact("all 12 tests passed"), "all 12 tests passed");
    }

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
