//! What a hook remembers about one session between its calls: the
//! per-session file `<git common dir>/loopx/hooks/<runtime>-<session>.json`
//! (never on the state ref). [`sessions`](super::sessions) reads the same
//! files to tell which agent a session acts as.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Runtime, view};
use crate::model::usage::Usage;
use crate::model::{AgentId, LastTurn, State};
use crate::time::Timestamp;

/// One session's record.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Session {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Timestamp>,
    /// Stop continuations since the last prompt.
    #[serde(default)]
    pub continuations: u32,
    /// The last prompt or continuation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudged: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<view::View>,
    /// How far the transcript's usage has been recorded, in bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage_offset: u64,
    /// When the current stretch of recorded usage began, and its total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_since: Option<Timestamp>,
    #[serde(default)]
    pub usage_total: Usage,
    /// The agent the session acts as (hook::sessions): recorded at its
    /// start, maybe taken over from an earlier session that is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The runtime's process and its start time (/proc), to tell whether
    /// the session still runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
    /// Its end event was seen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
    /// What the agent had recorded when the session started, and when it
    /// was last prompted or nudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_start: Option<Seen>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_nudge: Option<Seen>,
    /// The goal of the last turn token the hooks gave the session (the
    /// brief's, a stop's): the usage its Stop and SessionEnd record goes
    /// there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_goal: Option<crate::model::GoalId>,
}

impl Session {
    /// The agent was prompted or nudged now: what it has recorded so far
    /// is what a later stop or end compares with.
    pub fn nudge(&mut self, state: &State, agent: &AgentId, now: Timestamp) {
        self.nudged = Some(now);
        self.at_nudge = Some(Seen::of(state, agent));
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An agent's last turn and write-back as a hook saw them. Timestamps have
/// whole seconds, so a record in the same second as a session's start or
/// nudge is new only if it differs from what was there then (an earlier
/// session's end, a second before, looked new to the next session).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Seen {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<LastTurn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback: Option<Timestamp>,
}

impl Seen {
    pub fn of(state: &State, agent: &AgentId) -> Self {
        let a = state.agents.get(agent);
        Seen {
            turn: a.and_then(|a| a.last_turn.clone()),
            writeback: a.and_then(|a| a.last_writeback),
        }
    }

    /// `turn` was recorded after `from` (with `base`, what was seen then).
    pub fn newer_turn(turn: &LastTurn, from: Option<Timestamp>, base: Option<&Self>) -> bool {
        from.is_some_and(|f| {
            turn.at > f || (turn.at == f && base.is_none_or(|b| b.turn.as_ref() != Some(turn)))
        })
    }

    /// The write-back at `at` happened after `from` (with `base`, what was
    /// seen then).
    pub fn newer_writeback(at: Timestamp, from: Option<Timestamp>, base: Option<&Self>) -> bool {
        from.is_some_and(|f| at > f || (at == f && base.is_none_or(|b| b.writeback != Some(at))))
    }
}

/// A session's file; without a session id (or a repository), nothing is
/// remembered: loads are empty and saves do nothing.
pub struct SessionFile {
    pub path: Option<PathBuf>,
}

impl SessionFile {
    /// The file of `runtime`'s `session` in the clone whose git common
    /// directory is `common`.
    pub fn new(common: Option<&Path>, runtime: Runtime, session: Option<&str>) -> Self {
        let path = common
            .zip(session)
            .and_then(|(c, s)| super::sessions::path(c, runtime, s));
        SessionFile { path }
    }

    /// The session ended: kept (its agent may be continued by a later
    /// session), marked as such, without what only a running one needs.
    pub fn finish(&self) {
        let mut s = self.load();
        s.ended = true;
        s.view = None;
        self.save(&s);
    }

    /// Drops the earlier session's file a takeover moved aside.
    pub fn release(&self) {
        if let Some(p) = &self.path {
            super::sessions::release(p);
        }
    }

    /// The record, or an empty one (no file, or one that does not parse).
    pub fn load(&self) -> Session {
        self.path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes the record (through a rename, so a reader never sees half a
    /// file), unless the file already holds these bytes. Best effort: a
    /// session file that cannot be written is a session remembered less.
    pub fn save(&self, s: &Session) {
        let Some(path) = &self.path else { return };
        let Ok(bytes) = serde_json::to_vec(s) else {
            return;
        };
        if std::fs::read(path).is_ok_and(|old| old == bytes) {
            return;
        }
        let tmp = path.with_extension("json.tmp");
        let _ = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&tmp, &bytes))
            .and_then(|()| std::fs::rename(&tmp, path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Outcome;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix(1_800_000_000 + s)
    }

    fn turn(s: i64, outcome: Outcome) -> LastTurn {
        LastTurn {
            at: at(s),
            goal: crate::model::GoalId::new("main").unwrap(),
            outcome,
            turn: None,
            todo: None,
            next_action: None,
            digest: String::new(),
        }
    }

    #[test]
    fn a_turn_is_newer_after_its_mark_or_in_its_second_when_it_differs() {
        let t = turn(10, Outcome::Unchanged);
        assert!(!Seen::newer_turn(&t, None, None));
        assert!(Seen::newer_turn(&t, Some(at(9)), None));
        assert!(!Seen::newer_turn(&t, Some(at(11)), None));
        // The same second: new unless it is what was seen then.
        assert!(Seen::newer_turn(&t, Some(at(10)), None));
        let seen = Seen {
            turn: Some(t.clone()),
            writeback: None,
        };
        assert!(!Seen::newer_turn(&t, Some(at(10)), Some(&seen)));
        let other = turn(10, Outcome::Blocked);
        assert!(Seen::newer_turn(&other, Some(at(10)), Some(&seen)));
    }

    #[test]
    fn a_writeback_is_newer_by_the_same_rule() {
        let seen = Seen {
            turn: None,
            writeback: Some(at(5)),
        };
        assert!(Seen::newer_writeback(at(6), Some(at(5)), Some(&seen)));
        assert!(!Seen::newer_writeback(at(5), Some(at(5)), Some(&seen)));
        assert!(Seen::newer_writeback(at(5), Some(at(5)), None));
        assert!(!Seen::newer_writeback(at(4), Some(at(5)), None));
        assert!(!Seen::newer_writeback(at(6), None, None));
    }

    #[test]
    fn a_session_file_round_trips_and_ends_kept() {
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(Some(dir.path()), Runtime::Codex, Some("s/1 ✓"));
        let path = f.path.clone().unwrap();
        assert_eq!(path, dir.path().join("loopx/hooks/codex-s1.json"));
        assert_eq!(f.load(), Session::default());
        let s = Session {
            started: Some(at(1)),
            continuations: 2,
            agent: Some("codex-1a2b3c4d".to_owned()),
            usage_offset: 7,
            ..Session::default()
        };
        f.save(&s);
        assert_eq!(f.load(), s);
        // The same bytes are not written again.
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        f.save(&s);
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            before
        );
        f.finish();
        let ended = f.load();
        assert!(ended.ended);
        assert_eq!(ended.agent, s.agent);
        // What the takeover reads agrees.
        let owner: super::super::sessions::Owner =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(owner.gone());
    }

    #[test]
    fn without_a_session_id_nothing_is_remembered() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            SessionFile::new(Some(dir.path()), Runtime::Pi, None),
            SessionFile::new(None, Runtime::Pi, Some("abc")),
            SessionFile::new(Some(dir.path()), Runtime::Pi, Some("///")),
        ] {
            assert!(f.path.is_none());
            f.save(&Session {
                continuations: 1,
                ..Session::default()
            });
            assert_eq!(f.load(), Session::default());
        }
        assert!(!dir.path().join("loopx").exists());
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_empty_record() {
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(Some(dir.path()), Runtime::Codex, Some("x"));
        let path = f.path.clone().unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(f.load(), Session::default());
    }
}
