//! The record of a command loopx ran (a validation, later `evidence run`):
//! what ran, how it ended, how long it took, and a bounded tail of its
//! output. Part of the op, so retries and replays reuse it and never run the
//! command again.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    /// The command as run, with secret-looking values redacted.
    pub argv: Vec<String>,
    /// SHA-256 of the argv as written (each argument, then a NUL), present
    /// only when `argv` had to be redacted: `apply` compares it with the
    /// todo's validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv_sha256: Option<String>,
    /// The exit status; absent when the command was killed (timeout, signal)
    /// or could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Why it could not start, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
    /// SHA-256 of the whole output (stdout and stderr as one stream, in the
    /// order written), hex; of the redacted output when `output_redacted`.
    pub output_sha256: String,
    /// Whether any of the output was redacted (then `output_sha256` is the
    /// digest of the redacted text, so it confirms no guess at a secret).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_redacted: bool,
    /// The last few KiB of the output, secrets redacted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
}

impl CommandRun {
    /// A stand-in for a run that passed, to check every other rule of an op
    /// before running the real command.
    pub fn assumed_passing(argv: &[String]) -> Self {
        CommandRun {
            argv: argv.to_vec(),
            argv_sha256: None,
            exit: Some(0),
            timed_out: false,
            error: None,
            duration_ms: 0,
            output_sha256: String::new(),
            output_redacted: false,
            output_tail: String::new(),
        }
    }

    /// The last `n` lines of the output tail, oldest first.
    pub fn last_lines(&self, n: usize) -> Vec<&str> {
        let mut lines: Vec<&str> = self.output_tail.lines().rev().take(n).collect();
        lines.reverse();
        lines
    }

    /// Whether this is a run of `argv` as written: the recorded argv
    /// itself, or (when it was redacted) its digest.
    pub fn ran(&self, argv: &[String]) -> bool {
        match &self.argv_sha256 {
            None => self.argv == argv,
            Some(d) => *d == argv_digest(argv),
        }
    }

    pub fn passed(&self) -> bool {
        self.exit == Some(0)
    }

    /// How it ended, in a few words: `exit 0`, `exit 1`, `timed out after
    /// 5m`, `could not start: …`.
    pub fn outcome(&self) -> String {
        match (&self.error, self.exit, self.timed_out) {
            (Some(e), _, _) => format!("could not start: {e}"),
            (None, _, true) if self.duration_ms >= 1000 => {
                format!("timed out after {}s", self.duration_ms / 1000)
            }
            (None, _, true) => "timed out".to_owned(),
            (None, Some(code), false) => format!("exit {code}"),
            (None, None, false) => "killed by a signal".to_owned(),
        }
    }
}

/// The digest of an argv as written, recorded when the argv itself had to
/// be redacted: SHA-256 over each argument followed by a NUL, hex.
pub fn argv_digest(argv: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for a in argv {
        h.update(a.as_bytes());
        h.update([0u8]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redacted_argv_is_matched_by_its_digest_exactly() {
        let written: Vec<String> = ["deploy", "--token", "abc"].map(str::to_owned).to_vec();
        let mut run = CommandRun::assumed_passing(&written);
        assert!(run.ran(&written));
        run.argv = crate::redact::argv(&written);
        run.argv_sha256 = Some(argv_digest(&written));
        assert_eq!(run.argv[2], "[REDACTED]");
        assert!(run.ran(&written));
        // Another secret redacts the same way, but is not the same command.
        let other: Vec<String> = ["deploy", "--token", "xyz"].map(str::to_owned).to_vec();
        assert_eq!(crate::redact::argv(&other), run.argv);
        assert!(!run.ran(&other));
        // Without a digest, the argv must match as written.
        run.argv_sha256 = None;
        assert!(!run.ran(&written));
    }
}
