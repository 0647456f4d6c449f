//! Evidence: append-only records of what was tried, for a todo or a goal.
//! Stored at `evidence/<yyyy-mm>/<xx>/<id>.toml` and never rewritten. The
//! records are not loaded with the state (they only grow); commands that
//! need them read the month folders they need.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{
    actor::Actor,
    id::{EvidenceId, GoalId, TodoId},
    run::CommandRun,
};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub id: EvidenceId,
    pub goal: GoalId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todo: Option<TodoId>,
    pub kind: EvidenceKind,
    pub summary: String,
    pub by: Actor,
    pub at: Timestamp,
    /// The project's code when the record was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    /// The command that was run, for `evidence run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<CommandRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
}

impl Evidence {
    /// Whether it counts as passed: a command that exited 0, or a record
    /// without a command. A `sync-rejected` record, the trace of an op that
    /// lost, never does.
    pub fn passed(&self) -> bool {
        self.kind != EvidenceKind::SyncRejected && self.run.as_ref().is_none_or(CommandRun::passed)
    }
}

/// The code commit a record was made at: HEAD, and whether the worktree had
/// uncommitted changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Code {
    /// HEAD's commit id; absent on an unborn branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    pub dirty: bool,
}

/// A file the record points at, with its hash at the time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceKind {
    Test,
    Build,
    Bench,
    Review,
    Note,
    Artifact,
    /// Written by sync for an op that lost to another machine's.
    SyncRejected,
}

impl EvidenceKind {
    pub const ALL: [EvidenceKind; 7] = [
        EvidenceKind::Test,
        EvidenceKind::Build,
        EvidenceKind::Bench,
        EvidenceKind::Review,
        EvidenceKind::Note,
        EvidenceKind::Artifact,
        EvidenceKind::SyncRejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceKind::Test => "test",
            EvidenceKind::Build => "build",
            EvidenceKind::Bench => "bench",
            EvidenceKind::Review => "review",
            EvidenceKind::Note => "note",
            EvidenceKind::Artifact => "artifact",
            EvidenceKind::SyncRejected => "sync-rejected",
        }
    }
}

impl fmt::Display for EvidenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EvidenceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EvidenceKind::ALL
            .into_iter()
            .filter(|k| *k != EvidenceKind::SyncRejected)
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!("{s:?} is not an evidence kind: use test, build, bench, review, note or artifact")
            })
    }
}
