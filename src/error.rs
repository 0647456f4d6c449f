//! Exit statuses and the few errors a caller branches on.
//!
//! Everything else travels as `anyhow::Error` with context. A [`Refusal`] is
//! an error that a rule or another writer caused (DESIGN §6): it carries the
//! exit status, a stable machine-readable code for `--format json`, and a hint
//! that says what to do.

use std::fmt;

/// The process exit statuses of DESIGN §6, in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exit {
    /// Success, or `should-run` says run.
    Ok,
    /// I/O, corrupt state, a stale lock, a failing `doctor`, an unknown id.
    Error,
    /// Bad flags or a malformed argument.
    Usage,
    /// Refused by a rule: permission, gate, quota, validation, a done todo.
    Refused,
    /// Conflict with another writer: a claim held by another agent, a stale
    /// epoch, retries exhausted.
    Conflict,
}

impl Exit {
    /// The numeric status the process exits with.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Error => 1,
            Exit::Usage => 2,
            Exit::Refused => 3,
            Exit::Conflict => 4,
        }
    }
}

/// An error with a definite exit status, a stable code and a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub exit: Exit,
    /// Stable, kebab-case, for machines (`claimed`, `not-registered`, …).
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl Refusal {
    pub fn new(exit: Exit, code: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            exit,
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// Refused by a rule (exit 3).
    pub fn rule(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Exit::Refused, code, message)
    }

    /// Conflict with another writer (exit 4).
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Exit::Conflict, code, message)
    }

    /// Bad input that is not a flag error: a malformed id or value (exit 2).
    pub fn usage(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, code, message)
    }

    /// An error that is neither a rule nor a conflict (exit 1).
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Exit::Error, code, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// Finds the exit status an error asks for: a [`Refusal`] anywhere in the
/// chain decides, anything else is a plain error (exit 1).
pub fn exit_of(err: &anyhow::Error) -> Exit {
    refusal_of(err).map_or(Exit::Error, |r| r.exit)
}

/// The first [`Refusal`] in an error's chain, if any.
pub fn refusal_of(err: &anyhow::Error) -> Option<&Refusal> {
    err.chain().find_map(|e| e.downcast_ref::<Refusal>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_match_the_design() {
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Error.code(), 1);
        assert_eq!(Exit::Usage.code(), 2);
        assert_eq!(Exit::Refused.code(), 3);
        assert_eq!(Exit::Conflict.code(), 4);
    }

    #[test]
    fn a_refusal_deep_in_the_chain_decides_the_exit() {
        let err = anyhow::Error::new(Refusal::conflict("claimed", "taken"))
            .context("while claiming")
            .context("outer");
        assert_eq!(exit_of(&err), Exit::Conflict);
        assert_eq!(exit_of(&anyhow::anyhow!("io")), Exit::Error);
    }
}
