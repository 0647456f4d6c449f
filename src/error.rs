//! Exit statuses and the few errors a caller branches on.
//!
//! Everything else travels as `anyhow::Error` with context. A [`Refusal`] is
//! an error that a rule or another writer caused (DESIGN §6): it carries the
//! exit status, a stable machine-readable code for `--format json`, and a hint
//! that says what to do.

use std::fmt;

pub use crate::next::{Hint, N, Next};

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

/// Declares [`Code`]: each variant and the kebab-case string it is written
/// as in `--format json` output and in `sync-rejected` records.
macro_rules! codes {
    ($($variant:ident => $text:literal,)*) => {
        /// The stable, machine-readable code of a [`Refusal`]. Callers branch
        /// on these variants, never on message text; JSON carries the string.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            /// Every code, for documentation and tests.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code as written in JSON: kebab-case.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }

            /// The code written as `text`, if this binary knows it (the
            /// round-trip test's inverse of [`Code::as_str`]).
            #[cfg(test)]
            pub fn parse(text: &str) -> Option<Code> {
                match text {
                    $($text => Some(Code::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

codes! {
    AfterCycle => "after-cycle",
    AgentRetired => "agent-retired",
    AgentUnknown => "agent-unknown",
    AgentsOnly => "agents-only",
    AlreadyAnnounced => "already-announced",
    AlreadyInitialized => "already-initialized",
    AlreadySplit => "already-split",
    AlreadyVoided => "already-voided",
    AmbiguousCommit => "ambiguous-commit",
    AmbiguousGoal => "ambiguous-goal",
    AmbiguousId => "ambiguous-id",
    BadArtifact => "bad-artifact",
    BadBudget => "bad-budget",
    BadChoice => "bad-choice",
    BadConfig => "bad-config",
    BadDate => "bad-date",
    BadEnv => "bad-env",
    BadId => "bad-id",
    BadKey => "bad-key",
    BadPath => "bad-path",
    BadPattern => "bad-pattern",
    BadPrice => "bad-price",
    BadQuota => "bad-quota",
    BadRange => "bad-range",
    BadRemote => "bad-remote",
    BadScope => "bad-scope",
    BadSettings => "bad-settings",
    BadSignature => "bad-signature",
    BadStatus => "bad-status",
    BadTime => "bad-time",
    BadToken => "bad-token",
    BadTtl => "bad-ttl",
    BadUsage => "bad-usage",
    BareRepository => "bare-repository",
    BadValidation => "bad-validation",
    BeforeHistory => "before-history",
    Claimed => "claimed",
    ClockBehind => "clock-behind",
    ConfirmFingerprint => "confirm-fingerprint",
    ConfirmRepair => "confirm-repair",
    CorruptState => "corrupt-state",
    DirNotEmpty => "dir-not-empty",
    DiskFull => "disk-full",
    EmptyOption => "empty-option",
    EmptySettle => "empty-settle",
    EmptyText => "empty-text",
    FingerprintMismatch => "fingerprint-mismatch",
    FormatTooNew => "format-too-new",
    FutureTick => "future-tick",
    GateClosed => "gate-closed",
    GateOpen => "gate-open",
    GoalDone => "goal-done",
    GoalExists => "goal-exists",
    GoalNeedsObjective => "goal-needs-objective",
    GoalNotActive => "goal-not-active",
    HandoffToSelf => "handoff-to-self",
    HookExists => "hook-exists",
    HubDelete => "hub-delete",
    HubGoalRef => "hub-goal-ref",
    HubNonFastForward => "hub-non-fast-forward",
    HubReplaceRef => "hub-replace-ref",
    HumansOnly => "humans-only",
    IdTaken => "id-taken",
    InvalidTick => "invalid-tick",
    MachineNotAllowed => "machine-not-allowed",
    MachineTaken => "machine-taken",
    MachineUnadmitted => "machine-unadmitted",
    MachinesMissing => "machines-missing",
    MissingCapability => "missing-capability",
    MissingSubcommand => "missing-subcommand",
    MultiLine => "multi-line",
    NestedSettle => "nested-settle",
    NoActiveGoal => "no-active-goal",
    NoGoal => "no-goal",
    NoHome => "no-home",
    NoIdentity => "no-identity",
    NoMachineKey => "no-machine-key",
    NoRemote => "no-remote",
    NoState => "no-state",
    NoTrustRoot => "no-trust-root",
    NoValidation => "no-validation",
    NoWriteback => "no-writeback",
    NotAHub => "not-a-hub",
    NotARepository => "not-a-repository",
    NotAnnounced => "not-announced",
    NotClaimed => "not-claimed",
    NotClosed => "not-closed",
    NotConfirmed => "not-confirmed",
    NotSplit => "not-split",
    NotOpen => "not-open",
    NotOwnKey => "not-own-key",
    NotParked => "not-parked",
    NotRegistered => "not-registered",
    NotYourTurn => "not-your-turn",
    NothingReady => "nothing-ready",
    ParkSelfOnly => "park-self-only",
    Parked => "parked",
    NothingToArchive => "nothing-to-archive",
    NothingToEdit => "nothing-to-edit",
    NothingPending => "nothing-pending",
    NothingToSet => "nothing-to-set",
    NothingToUpdate => "nothing-to-update",
    NothingValid => "nothing-valid",
    OpIdReused => "op-id-reused",
    OutputFailed => "output-failed",
    PushFailed => "push-failed",
    RegisterSelfOnly => "register-self-only",
    RemoteMoved => "remote-moved",
    RemoteRewritten => "remote-rewritten",
    RemoteUnreachable => "remote-unreachable",
    RetireSelfOnly => "retire-self-only",
    RetriesExhausted => "retries-exhausted",
    ScopeBusy => "scope-busy",
    SecretInOption => "secret-in-option",
    SecretInValidation => "secret-in-validation",
    SettleRejected => "settle-rejected",
    SignerTaken => "signer-taken",
    SigningFailed => "signing-failed",
    StaleEpoch => "stale-epoch",
    StaleLock => "stale-lock",
    Stalled => "stalled",
    SyncRetriesExhausted => "sync-retries-exhausted",
    TodoDone => "todo-done",
    TokenExpired => "token-expired",
    TooFewOptions => "too-few-options",
    TooLarge => "too-large",
    TooLong => "too-long",
    UncommittedWork => "uncommitted-work",
    UnknownAfter => "unknown-after",
    UnknownAgent => "unknown-agent",
    UnknownCommit => "unknown-commit",
    UnknownGate => "unknown-gate",
    UnknownGoal => "unknown-goal",
    UnknownId => "unknown-id",
    UnknownMachine => "unknown-machine",
    UnknownOp => "unknown-op",
    UnknownRef => "unknown-ref",
    UnknownSigner => "unknown-signer",
    UnknownSignerName => "unknown-signer-name",
    UnknownSpend => "unknown-spend",
    UnknownTick => "unknown-tick",
    UnknownTodo => "unknown-todo",
    UnrelatedStates => "unrelated-states",
    UnsafeRepository => "unsafe-repository",
    Unsigned => "unsigned",
    UntrustedValidation => "untrusted-validation",
    UnverifiedTip => "unverified-tip",
    ValidationChanged => "validation-changed",
    ValidationFailed => "validation-failed",
    ValidationMissing => "validation-missing",
    Waiting => "waiting",
    WrongGoal => "wrong-goal",
    WrongRef => "wrong-ref",
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// An error with a definite exit status, a stable code and a hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub exit: Exit,
    /// Stable, kebab-case in JSON, for machines (`claimed`, `not-registered`, …).
    pub code: Code,
    pub message: String,
    pub hint: Option<Hint>,
}

impl Refusal {
    pub fn new(exit: Exit, code: Code, message: impl Into<String>) -> Self {
        Refusal {
            exit,
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// Refused by a rule (exit 3).
    pub fn rule(code: Code, message: impl Into<String>) -> Self {
        Self::new(Exit::Refused, code, message)
    }

    /// Conflict with another writer (exit 4).
    pub fn conflict(code: Code, message: impl Into<String>) -> Self {
        Self::new(Exit::Conflict, code, message)
    }

    /// Bad input that is not a flag error: a malformed id or value (exit 2).
    pub fn usage(code: Code, message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, code, message)
    }

    /// An error that is neither a rule nor a conflict (exit 1).
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::new(Exit::Error, code, message)
    }

    pub fn with_hint(mut self, hint: impl Into<Hint>) -> Self {
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

/// Whether an error comes from a full disk (or an exhausted quota)
/// anywhere in its chain. gix reports some of these only as text (its path
/// errors print the `io::Error` they hold), so the text counts too.
pub fn is_disk_full(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        let io = e.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) || matches!(io.raw_os_error(), Some(28 | 122))
        });
        let text = e.to_string();
        io || [
            "No space left on device",
            "(StorageFull)",
            "Disk quota exceeded",
        ]
        .iter()
        .any(|t| text.contains(t))
    })
}

/// A full disk, said plainly: what is full (the disk holding `where_`)
/// and what was written (`written`, which the caller knows).
pub fn disk_full(where_: &std::path::Path, written: &str) -> Refusal {
    Refusal::error(
        Code::DiskFull,
        format!(
            "the disk holding {} is full (no space left on device): {written}",
            where_.display()
        ),
    )
    .with_hint("free some space on that disk (`df -h` shows it), then run the command again")
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
    fn codes_are_kebab_case_and_round_trip() {
        for c in Code::ALL {
            let s = c.as_str();
            assert!(
                s.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-'),
                "{s}"
            );
            assert_eq!(Code::parse(s), Some(*c));
            assert_eq!(serde_json::to_string(c).unwrap(), format!("\"{s}\""));
        }
    }

    #[test]
    fn a_refusal_deep_in_the_chain_decides_the_exit() {
        let err = anyhow::Error::new(Refusal::conflict(Code::Claimed, "taken"))
            .context("while claiming")
            .context("outer");
        assert_eq!(exit_of(&err), Exit::Conflict);
        assert_eq!(exit_of(&anyhow::anyhow!("io")), Exit::Error);
    }
}
