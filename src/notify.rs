//! One notification per gate: `git config loopx.notify "CMD ARG…"` runs
//! once for each open gate that waits on a human (a human-only kind), with
//! the gate as JSON on stdin, after any command that moved the state ref
//! (a tick, or a sync that brought ticks in). A success is recorded as a
//! `gate.notified` tick, so clones that sync it later stay quiet; a
//! failure is remembered under `.git/loopx/notify-failed/` (shown by
//! `status`) and retried next time. The command runs with a time limit
//! after the tick has landed, so it never blocks or fails the tick.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::ctx::Ctx;
use crate::model::{Gate, GateId};
use crate::op::Change;
use crate::tx;

/// A word for a POSIX shell: as is when it is plain, else single-quoted.
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:/=@+%".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that answers `gate` with `option`, ready to paste.
pub fn answer_command(gate: &Gate, option: &str) -> String {
    format!(
        "loopx gate answer {} --choice {}",
        gate.id,
        shell_word(option)
    )
}

/// What the command reads on stdin.
#[derive(Serialize)]
struct Payload<'a> {
    id: &'a GateId,
    goal: &'a str,
    kind: &'static str,
    blocks: String,
    question: &'a str,
    options: &'a [String],
    opened_by: String,
    opened_at: String,
    /// One command per option, ready to paste.
    answer_commands: Vec<String>,
}

/// The tip before a command, when notifications are configured: the
/// argument [`after`] compares against.
pub fn before(ctx: &Ctx) -> Option<Option<crate::store::Oid>> {
    ctx.config().ok()?.notify.as_ref()?;
    Some(tx::tip(ctx).ok()?.map(|t| t.commit))
}

/// After a command: if the ref moved since `before`, notify every gate
/// that waits on a human and has not been notified. Never fails: problems
/// become warnings.
pub fn after(ctx: &Ctx, before: Option<Option<crate::store::Oid>>) {
    let Some(before) = before else { return };
    let Ok(Some(tip)) = tx::tip(ctx) else { return };
    if Some(tip.commit) == before {
        return;
    }
    let Some((argv, limit)) = ctx
        .config()
        .ok()
        .and_then(|c| Some((c.notify.clone()?, c.notify_timeout)))
    else {
        return;
    };
    let limit = Duration::from_secs(limit.as_secs().unsigned_abs());
    let Ok(snap) = tx::load(ctx) else { return };
    let mut due: Vec<&Gate> = snap
        .state
        .gates
        .values()
        .filter(|g| g.is_open() && g.kind.human_only() && g.notified.is_none())
        .collect();
    due.sort_by_key(|g| (g.opened_at, g.id.clone()));
    for g in due {
        match notify(&argv, g, limit) {
            Ok(()) => {
                let _ = std::fs::remove_file(failed_marker(ctx, &g.id).unwrap_or_default());
                let id = g.id.clone();
                if let Err(e) = tx::commit(ctx, |_| {
                    Ok(tx::op(ctx, Change::GateNotified { gate: id.clone() })?)
                }) {
                    ctx.out
                        .warn(&format!("notified {id}, but could not record it: {e:#}"));
                }
            }
            Err(why) => {
                ctx.out.warn(&format!(
                    "loopx.notify failed for {}: {why}; it is retried after the next tick or sync",
                    g.id
                ));
                if let Some(m) = failed_marker(ctx, &g.id) {
                    let _ = std::fs::create_dir_all(m.parent().expect("has a parent"))
                        .and_then(|()| std::fs::write(&m, format!("{why}\n")));
                }
            }
        }
    }
}

/// Gates whose last notification failed on this clone, with the reason;
/// those since notified or closed are left out.
pub fn failed(ctx: &Ctx, state: &crate::model::State) -> Vec<(GateId, String)> {
    let Some(dir) = failed_dir(ctx) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(GateId, String)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            let g = state.gates.values().find(|g| g.id.as_str() == name)?;
            (g.is_open() && g.notified.is_none()).then(|| {
                let why = std::fs::read_to_string(e.path()).unwrap_or_default();
                (g.id.clone(), why.trim().to_owned())
            })
        })
        .collect();
    out.sort();
    out
}

fn failed_dir(ctx: &Ctx) -> Option<PathBuf> {
    Some(
        ctx.store()
            .ok()?
            .common_dir()
            .join("loopx")
            .join("notify-failed"),
    )
}

fn failed_marker(ctx: &Ctx, gate: &GateId) -> Option<PathBuf> {
    Some(failed_dir(ctx)?.join(gate.as_str()))
}

/// Runs the command once with the gate on stdin, within `limit`.
fn notify(argv: &[String], g: &Gate, limit: Duration) -> Result<(), String> {
    let payload = Payload {
        id: &g.id,
        goal: g.goal.as_str(),
        kind: g.kind.as_str(),
        blocks: g.blocks.to_string(),
        question: &g.question,
        options: &g.options,
        opened_by: g.opened_by.to_string(),
        opened_at: g.opened_at.to_string(),
        answer_commands: g.options.iter().map(|o| answer_command(g, o)).collect(),
    };
    let json = serde_json::to_vec(&payload).map_err(|e| e.to_string())?;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read stdin is not an error.
        let _ = stdin.write_all(&json).and_then(|()| stdin.write_all(b"\n"));
    }
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => return Err(format!("`{}` exited with {s}", argv.join(" "))),
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{}` ran longer than {}s and was stopped",
                    argv.join(" "),
                    limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_survive_a_shell() {
        assert_eq!(shell_word("approve"), "approve");
        assert_eq!(shell_word("it's ok"), r"'it'\''s ok'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
