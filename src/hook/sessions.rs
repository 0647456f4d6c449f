//! Which agent a runtime's session acts as, kept per clone in the hooks'
//! session files (`<git common dir>/loopx/hooks/<runtime>-<session>.json`,
//! never on the state ref).
//!
//! A session's agent derives from its session id (`codex-1a2b3c4d`), unless
//! its session start took over the agent of an earlier session of the same
//! runtime in the same clone. That happens only when loopx can tell the
//! earlier session is gone: its end event was seen, or the process that ran
//! it no longer exists on this machine (its pid and start time, from /proc,
//! are in the file). A timeout alone is never enough: two live sessions
//! never become one agent. The takeover renames the earlier session's file,
//! so of two sessions starting at once only one gets it.
//!
//! The agent's own `loopx` commands find the agent the same way: the
//! runtime's session id in their environment names the file
//! ([`agent_of`], read by [`crate::ctx`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Runtime;
use crate::model::AgentId;

/// Where hooks keep their per-session files.
pub fn dir(common: &Path) -> PathBuf {
    common.join("loopx").join("hooks")
}

/// The session file of `runtime`'s `session`, or None for a session id
/// with no usable characters.
pub fn path(common: &Path, runtime: Runtime, session: &str) -> Option<PathBuf> {
    let key: String = session
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect();
    (!key.is_empty()).then(|| dir(common).join(format!("{}-{key}.json", runtime.as_str())))
}

/// The part of a session file that says whose it is and whether it is gone.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct Owner {
    pub agent: Option<String>,
    pub pid: Option<u32>,
    pub pid_start: Option<u64>,
    pub ended: bool,
}

impl Owner {
    fn read(path: &Path) -> Option<Owner> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Whether the session is known to be over: its end was seen, or the
    /// process that ran it is gone (or its pid now belongs to another
    /// process). Without a recorded process, only an end counts.
    pub fn gone(&self) -> bool {
        if self.ended {
            return true;
        }
        match (self.pid, self.pid_start) {
            (Some(pid), Some(start)) => start_time(pid) != Some(start),
            _ => false,
        }
    }
}

/// The agent a session acts as, when its session start recorded one.
pub fn agent_of(common: &Path, runtime: Runtime, session: &str) -> Option<AgentId> {
    let owner = Owner::read(&path(common, runtime, session)?)?;
    AgentId::new(owner.agent.as_deref()?).ok()
}

/// An earlier session of the same runtime whose agent may be taken over.
#[derive(Debug)]
pub struct Gone {
    pub path: PathBuf,
    pub agent: AgentId,
    /// When its file last changed: the most recent is preferred.
    pub modified: std::time::SystemTime,
}

/// The earlier sessions of `runtime` in this clone that are gone, other
/// than `me` (the starting session's file).
pub fn gone(common: &Path, runtime: Runtime, me: &Path) -> Vec<Gone> {
    let Ok(entries) = std::fs::read_dir(dir(common)) else {
        return Vec::new();
    };
    let prefix = format!("{}-", runtime.as_str());
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p != me
                && p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter_map(|p| {
            let owner = Owner::read(&p)?;
            if !owner.gone() {
                return None;
            }
            let agent = AgentId::new(owner.agent.as_deref()?).ok()?;
            let modified = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some(Gone {
                path: p,
                agent,
                modified,
            })
        })
        .collect()
}

/// The agents whose sessions in this clone are all over, of any runtime:
/// each with how its latest session ended ([`Gone::Ended`] when its end
/// was seen, else [`Gone::Died`]). An agent with a session that may still
/// run here (or whose end loopx cannot tell) is not among them. What
/// `status`, its page and `digest` show as stuck on the holder's clone
/// (`op::stuck`).
///
/// [`Gone::Ended`]: crate::op::stuck::Gone::Ended
/// [`Gone::Died`]: crate::op::stuck::Gone::Died
pub fn gone_agents(common: &Path) -> BTreeMap<AgentId, crate::op::stuck::Gone> {
    use crate::op::stuck::Gone as How;
    let Ok(entries) = std::fs::read_dir(dir(common)) else {
        return BTreeMap::new();
    };
    // Per agent: whether a session may still run, and the latest gone one.
    let mut seen: BTreeMap<AgentId, (bool, Option<(std::time::SystemTime, How)>)> = BTreeMap::new();
    for p in entries.filter_map(Result::ok).map(|e| e.path()) {
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some(owner) = Owner::read(&p) else {
            continue;
        };
        let Some(agent) = owner.agent.as_deref().and_then(|a| AgentId::new(a).ok()) else {
            continue;
        };
        let entry = seen.entry(agent).or_default();
        if !owner.gone() {
            entry.0 = true;
            continue;
        }
        let how = if owner.ended { How::Ended } else { How::Died };
        let modified = std::fs::metadata(&p)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if entry.1.is_none_or(|(at, _)| modified >= at) {
            entry.1 = Some((modified, how));
        }
    }
    seen.into_iter()
        .filter_map(|(agent, (live, gone))| match (live, gone) {
            (false, Some((_, how))) => Some((agent, how)),
            _ => None,
        })
        .collect()
}

/// The agents of the sessions in this clone known to run now: a process
/// is recorded for them (`/proc`, or the pid the runtime sent) and it still
/// runs. A session whose process loopx cannot see is not counted, live or
/// gone. What `todo claim` asks in `loopx.worktree = auto`.
pub fn live_agents(common: &Path) -> std::collections::BTreeSet<AgentId> {
    let Ok(entries) = std::fs::read_dir(dir(common)) else {
        return Default::default();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| Owner::read(&p))
        .filter(|o| o.pid.is_some() && o.pid_start.is_some() && !o.gone())
        .filter_map(|o| AgentId::new(o.agent.as_deref()?).ok())
        .collect()
}

/// Whether this machine can tell a live session's process from a dead
/// one without the runtime's help (Linux `/proc`).
pub fn can_see_processes() -> bool {
    start_time(std::process::id()).is_some()
}

/// Takes `gone`'s session over for the session whose file is `me`: moves
/// its file aside, which only one of several sessions starting at once can
/// do. Returns whether this one did; the caller then writes `me` and drops
/// the file moved aside ([`release`]).
pub fn take(gone: &Gone, me: &Path) -> bool {
    std::fs::rename(&gone.path, taking(me)).is_ok()
}

/// Drops the file [`take`] moved aside.
pub fn release(me: &Path) {
    let _ = std::fs::remove_file(taking(me));
}

fn taking(me: &Path) -> PathBuf {
    me.with_extension("json.taking")
}

/// The process that runs the session: `pid` when the runtime says (the
/// OpenCode plugin does), else the nearest ancestor of this hook that is
/// not a shell or a wrapper around it; with its start time, so that a
/// reused pid is told apart. None where /proc cannot tell.
pub fn runtime_process(pid: Option<u32>) -> Option<(u32, u64)> {
    if let Some(pid) = pid {
        return start_time(pid).map(|s| (pid, s));
    }
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..8 {
        let stat = stat(pid)?;
        if !WRAPPERS.contains(&stat.comm.as_str()) {
            return Some((pid, stat.start));
        }
        if stat.ppid <= 1 {
            return None;
        }
        pid = stat.ppid;
    }
    None
}

/// Processes between a runtime and its hook: shells and wrappers.
const WRAPPERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "fish", "busybox", "env", "timeout", "nice", "nohup",
    "loopx",
];

struct Stat {
    comm: String,
    ppid: u32,
    start: u64,
}

/// `/proc/PID/stat`: the command name, the parent, and the start time in
/// clock ticks since boot (field 22).
fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    Some(Stat {
        comm,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_is_not_gone_and_an_ended_or_dead_one_is() {
        let me = std::process::id();
        let start = start_time(me).expect("/proc has this process");
        let live = Owner {
            agent: Some("codex-1".into()),
            pid: Some(me),
            pid_start: Some(start),
            ended: false,
        };
        assert!(!live.gone());
        // The same pid with another start time: the pid was reused.
        assert!(
            Owner {
                pid_start: Some(start + 1),
                ..live.clone()
            }
            .gone()
        );
        assert!(
            Owner {
                ended: true,
                ..live.clone()
            }
            .gone()
        );
        // Nothing recorded: loopx cannot tell, so it is not gone.
        assert!(!Owner::default().gone());
        // A process that exited.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        child.wait().unwrap();
        if let Some(start) = start {
            assert!(
                Owner {
                    pid: Some(pid),
                    pid_start: Some(start),
                    ..Owner::default()
                }
                .gone()
            );
        }
    }

    #[test]
    fn only_one_of_two_sessions_takes_a_gone_session_over() {
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path();
        std::fs::create_dir_all(dir(common)).unwrap();
        let old = path(common, Runtime::Codex, "old").unwrap();
        std::fs::write(&old, r#"{"agent":"codex-0ld0ld00","ended":true}"#).unwrap();
        // Another runtime's and a live session's files are not candidates.
        std::fs::write(
            path(common, Runtime::ClaudeCode, "x").unwrap(),
            r#"{"agent":"claude-code-1","ended":true}"#,
        )
        .unwrap();
        std::fs::write(
            path(common, Runtime::Codex, "live").unwrap(),
            r#"{"agent":"codex-11111111"}"#,
        )
        .unwrap();
        let a = path(common, Runtime::Codex, "a").unwrap();
        let b = path(common, Runtime::Codex, "b").unwrap();
        let for_a = gone(common, Runtime::Codex, &a);
        let for_b = gone(common, Runtime::Codex, &b);
        assert_eq!(for_a.len(), 1);
        assert_eq!(for_a[0].agent.as_str(), "codex-0ld0ld00");
        assert!(take(&for_a[0], &a));
        assert!(!take(&for_b[0], &b));
        release(&a);
        assert!(gone(common, Runtime::Codex, &b).is_empty());
    }

    #[test]
    fn an_agent_is_gone_here_only_when_every_session_of_it_is() {
        use crate::op::stuck::Gone as How;
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path();
        std::fs::create_dir_all(dir(common)).unwrap();
        let write = |runtime, session: &str, body: &str| {
            std::fs::write(path(common, runtime, session).unwrap(), body).unwrap();
        };
        let me = std::process::id();
        let live = start_time(me).unwrap();
        write(
            Runtime::Codex,
            "a",
            r#"{"agent":"codex-aaaaaaaa","ended":true}"#,
        );
        write(
            Runtime::ClaudeCode,
            "b",
            &format!(
                r#"{{"agent":"claude-code-bbbbbbbb","pid":{me},"pid_start":{}}}"#,
                live + 1
            ),
        );
        // Two sessions of one agent: one ended, one still running.
        write(
            Runtime::Codex,
            "c1",
            r#"{"agent":"codex-cccccccc","ended":true}"#,
        );
        write(
            Runtime::Codex,
            "c2",
            &format!(r#"{{"agent":"codex-cccccccc","pid":{me},"pid_start":{live}}}"#),
        );
        // No process recorded and no end seen: loopx cannot tell.
        write(Runtime::Pi, "d", r#"{"agent":"pi-dddddddd"}"#);
        let gone = gone_agents(common);
        let got: Vec<(&str, How)> = gone.iter().map(|(a, h)| (a.as_str(), *h)).collect();
        assert_eq!(
            got,
            vec![
                ("claude-code-bbbbbbbb", How::Died),
                ("codex-aaaaaaaa", How::Ended)
            ]
        );
        assert!(gone_agents(&common.join("nowhere")).is_empty());
    }

    #[test]
    fn the_runtime_process_is_an_ancestor_that_is_not_a_shell() {
        let (pid, _) = runtime_process(None).expect("this test has a parent");
        assert_ne!(pid, std::process::id());
        let me = std::process::id();
        assert_eq!(runtime_process(Some(me)).map(|p| p.0), Some(me));
    }
}
