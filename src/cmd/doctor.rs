//! `loopx doctor`: check the state and its surroundings, name what is wrong
//! and how to fix it. `--fix` removes stale lock files and the goal refs of
//! a `goal split` that did not land, and puts back the newest readable tip
//! from the state ref's reflog when the tip's commit is gone (a prune under
//! a running tick); nothing else. Its ref moves go through the store's
//! repair writer (`Store::repair_writer`), built nowhere else.

use std::collections::BTreeMap;
use std::time::SystemTime;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::tx::STALE_LOCK;
use crate::ctx::Ctx;
use crate::error::{Code, Exit};
use crate::model::{AgentStatus, State, Todo, TodoId, TodoStatus, files};
use crate::op::message;

/// Check the state: every file parses, references resolve, no stale locks
///
/// Exits 0 when healthy and 1 naming each file (and line) at fault. --fix
/// removes lock files older than 10 seconds, left by a writer that died,
/// and goal refs left by a `goal split` that did not land, puts back the
/// last good tip from the state ref's reflog when the tip's
/// commit is missing, and changes nothing else.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Remove stale lock files and goal refs of a split that did not land,
    /// and put back a missing tip from the reflog
    #[arg(long)]
    fix: bool,
}

#[derive(Serialize, Debug)]
struct Problem {
    /// `error` makes doctor fail; `warning` does not.
    severity: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Serialize)]
struct Wire {
    healthy: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tick: Option<u64>,
    files: usize,
    problems: Vec<Problem>,
    fixed: Vec<String>,
    /// `--fix` put back the last good tip.
    #[serde(skip_serializing_if = "Option::is_none")]
    restored: Option<Restored>,
}

/// A tip put back from the reflog.
#[derive(Serialize)]
struct Restored {
    #[serde(rename = "ref")]
    r#ref: String,
    /// The commit the ref named, which cannot be read.
    missing: String,
    /// The last good tip it names now.
    to: String,
    tick: u64,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let mut problems = Vec::new();
    let mut fixed = Vec::new();
    let mut restored = None;
    check_locks(ctx, args.fix, &mut problems, &mut fixed);
    check_refspecs(ctx, &mut problems);
    check_queue(ctx, &mut problems);
    check_orphan_goal_refs(ctx, args.fix, &mut problems, &mut fixed);
    check_notify(ctx, &mut problems);
    let mut files_seen = 0;
    let (tip, lost) = match tx::tip(ctx) {
        Ok(tip) => (tip, false),
        Err(e) => {
            let tip = restore_tip(ctx, args.fix, e, &mut problems, &mut restored)?;
            let lost = tip.is_none();
            (tip, lost)
        }
    };
    match &tip {
        // The problem is named already.
        None if lost => {}
        None => problems.push(Problem {
            severity: "error",
            path: None,
            message: format!(
                "there is no loopx state ({} does not exist)",
                ctx.state_ref()
            ),
            fix: Some("create it with `loopx init`".to_owned()),
        }),
        Some(tip) => {
            let msg = tx::message_of(ctx, tip.commit)?;
            if let Err(why) = message::parse(&msg) {
                problems.push(Problem {
                    severity: "warning",
                    path: None,
                    message: format!("the tip {} is not a loopx tick: {why}", tip.commit.short(12)),
                    fix: Some("someone committed onto the ref by hand; `git log refs/loopx/state` shows who".to_owned()),
                });
            }
            let all = tx::raw_files(ctx, tip)?;
            files_seen = all.len();
            check_files(&all, &mut problems);
        }
    }
    let healthy = !problems.iter().any(|p| p.severity == "error");
    let wire = Wire {
        healthy,
        tick: tip.as_ref().map(|t| t.tick),
        files: files_seen,
        problems,
        fixed,
        restored,
    };
    ctx.out.emit(&wire, || human(&wire))?;
    Ok(if healthy { Exit::Ok } else { Exit::Error })
}

/// Goal refs no reader counts (`tx::goalref::orphans`: left by a `goal
/// split` that did not land), named, and with `fix` removed (each only
/// while it still names the tip seen).
fn check_orphan_goal_refs(
    ctx: &Ctx,
    fix: bool,
    problems: &mut Vec<Problem>,
    fixed: &mut Vec<String>,
) {
    let Ok(store) = ctx.store() else {
        return;
    };
    let Ok(orphans) = tx::goalref::orphans(store) else {
        return;
    };
    for (name, tip) in orphans {
        let what = format!(
            "{name} ({}) is left from a `goal split` that did not land: no reader counts it",
            tip.short(12)
        );
        if fix {
            match store.repair_writer().delete_ref(&name, Some(tip)) {
                Ok(()) => fixed.push(format!("{name}, left from a split that did not land")),
                Err(e) => problems.push(Problem {
                    severity: "error",
                    path: None,
                    message: format!("{what}; removing it failed: {e:#}"),
                    fix: Some(format!("`git update-ref -d {name}`")),
                }),
            }
            continue;
        }
        problems.push(Problem {
            severity: "warning",
            path: None,
            message: what,
            fix: Some(
                "`loopx doctor --fix` removes it (then `loopx goal split` can run again)"
                    .to_owned(),
            ),
        });
    }
}

/// The state ref names a commit that cannot be read (its objects were
/// pruned under a running tick). The newest commit of the ref's reflog
/// whose whole tree reads is the last good tip: named, and with `fix` put
/// back (by compare-and-swap from the missing id). Without such a commit
/// the read error stands.
fn restore_tip(
    ctx: &Ctx,
    fix: bool,
    err: anyhow::Error,
    problems: &mut Vec<Problem>,
    restored: &mut Option<Restored>,
) -> Result<Option<crate::store::Tip>> {
    let store = ctx.store()?;
    let Some(missing) = store.tip_id().ok().flatten() else {
        return Err(err);
    };
    // Its whole history must read: a tick written onto the missing commit
    // has a tree but no parent.
    let good = store.state_reflog().into_iter().find_map(|id| {
        let tip = store.tip_at(id).ok()?;
        let whole = ["rev-list", "--objects", "--quiet", &id.to_string()];
        crate::git::output(store.common_dir(), &whole).ok()?;
        Some(tip)
    });
    let Some(good) = good else {
        return Err(err.context(format!(
            "{} names {missing}, which cannot be read, and its reflog holds no readable tick",
            ctx.state_ref()
        )));
    };
    let what = format!(
        "{} names {}, which cannot be read ({:#}); the last good tip in its reflog is {} (tick {})",
        ctx.state_ref(),
        missing.short(12),
        err,
        good.commit.short(12),
        good.tick
    );
    if !fix {
        problems.push(Problem {
            severity: "error",
            path: None,
            message: what,
            fix: Some(format!(
                "`loopx doctor --fix` moves {} back to {} (ticks after it that are gone cannot come back; a clone or hub that has them can sync them in)",
                ctx.state_ref(),
                good.commit.short(12)
            )),
        });
        return Ok(None);
    }
    let moved = store.repair_writer().cas(
        good.commit,
        Some(missing),
        "loopx: doctor --fix put back the last good tip",
        &ctx.committer(),
    );
    match moved {
        Ok(()) => {
            *restored = Some(Restored {
                r#ref: ctx.state_ref().to_owned(),
                missing: missing.to_string(),
                to: good.commit.to_string(),
                tick: good.tick,
            });
            Ok(Some(good))
        }
        Err(e) => Err(err.context(format!("{what}; putting it back failed: {e:?}"))),
    }
}

fn human(w: &Wire) -> String {
    let mut s = String::new();
    for f in &w.fixed {
        s.push_str(&format!("fixed: removed {f}\n"));
    }
    if let Some(r) = &w.restored {
        s.push_str(&format!(
            "fixed: {} moved from the missing {} back to {} (tick {})\n",
            r.r#ref,
            &r.missing[..12],
            &r.to[..12],
            r.tick
        ));
    }
    for p in &w.problems {
        let at = p
            .path
            .as_deref()
            .map(|p| format!("{p}: "))
            .unwrap_or_default();
        s.push_str(&format!("{}: {at}{}\n", p.severity, p.message));
        if let Some(fix) = &p.fix {
            s.push_str(&format!("  fix: {fix}\n"));
        }
    }
    if w.healthy {
        s.push_str(&format!(
            "Healthy: {} files at tick {}.\n",
            w.files,
            w.tick.unwrap_or(0)
        ));
    }
    s
}

/// Gates whose `loopx.notify` command failed on this clone (a warning
/// each, with the command's own last words on stderr): a notification
/// nobody received is easy to miss in `status` alone.
fn check_notify(ctx: &Ctx, problems: &mut Vec<Problem>) {
    let (Ok(repo), Ok(snap)) = (ctx.repo(), tx::load(ctx)) else {
        return;
    };
    for (gate, why) in crate::notify::failed(repo, &snap.state) {
        problems.push(Problem {
            severity: "warning",
            path: None,
            message: format!("the loopx.notify command failed for gate {gate}: {why}"),
            fix: Some(
                "fix the command (`git config loopx.notify`); it is retried after the next tick or sync"
                    .to_owned(),
            ),
        });
    }
}

/// Fetch refspecs that would write a remote's refs/loopx/* straight into
/// this clone's (`git clone --mirror`, `+refs/*:refs/*`): a plain `git
/// fetch` then overwrites the local state and drops unsynced ticks. loopx's
/// own sync is immune (it fetches with `--refmap=`); people's fetches are
/// not.
fn check_refspecs(ctx: &Ctx, problems: &mut Vec<Problem>) {
    let Ok(store) = ctx.store() else { return };
    let Ok(specs) = crate::git::config_matching(store.common_dir(), r"^remote\..*\.fetch$") else {
        return;
    };
    let state = ctx.state_ref();
    for (key, spec) in specs {
        let Some(dst) = mapped(spec.trim(), state) else {
            continue;
        };
        // Into loopx's refs, except the remote-tracking namespace that
        // `sync --setup` maps them to.
        if dst.starts_with("refs/loopx/") && !dst.starts_with("refs/loopx/remotes/") {
            problems.push(Problem {
                severity: "warning",
                path: None,
                message: format!(
                    "git config {key} = {spec} makes a plain `git fetch` write the remote's {state} into {dst}, over this clone's state: unsynced ticks would be lost"
                ),
                fix: Some(format!(
                    "map it elsewhere, e.g. `git config --unset {key} '{}'` and `loopx sync --setup` (loopx sync itself is not affected)",
                    regex_escape(spec.trim())
                )),
            });
        }
    }
}

/// Where a fetch refspec maps the remote ref `name`, if it maps it.
fn mapped(spec: &str, name: &str) -> Option<String> {
    let spec = spec.strip_prefix('+').unwrap_or(spec);
    let (src, dst) = spec.split_once(':')?;
    match src.split_once('*') {
        Some((pre, post)) => {
            let middle = name.strip_prefix(pre)?.strip_suffix(post)?;
            Some(dst.replacen('*', middle, 1))
        }
        None => (src == name).then(|| dst.to_owned()),
    }
}

/// `git config --unset` takes a value pattern: escape what is special.
fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if "\\.*+?()[]{}^$|".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The writers' queue: a holder that is stuck now, and ticks that went on
/// without their turn in the last hour (src/queue.rs). Warnings: the
/// compare-and-swap keeps the state right, ticks only lose their turn.
fn check_queue(ctx: &Ctx, problems: &mut Vec<Problem>) {
    let Ok(store) = ctx.store() else {
        return;
    };
    let dir = store.common_dir();
    if let Some(why) = crate::queue::stuck(dir) {
        problems.push(Problem {
            severity: "warning",
            path: Some(crate::queue::LOCK_FILE.to_owned()),
            message: format!("the writers' queue is stuck: {why}; every tick goes on without it"),
            fix: Some("continue the process (`kill -CONT PID`) or end it; `fuser .git/loopx/writers.lock` names a holder that is not loopx".to_owned()),
        });
    }
    let hour_ago = crate::time::Timestamp::system_now().unix() - 3600;
    let recent: Vec<(i64, String)> = crate::queue::passes(dir)
        .into_iter()
        .filter(|(at, _)| *at >= hour_ago)
        .collect();
    if let Some((_, last)) = recent.last() {
        problems.push(Problem {
            severity: "warning",
            path: Some(crate::queue::PASSED_FILE.to_owned()),
            message: format!(
                "{} tick{} went on without the writers' queue in the last hour (the last: {last})",
                recent.len(),
                if recent.len() == 1 { "" } else { "s" }
            ),
            fix: None,
        });
    }
}

/// Lock files on the state ref and on packed-refs: a young one is a writer
/// at work; an old one was left by a writer that died.
fn check_locks(ctx: &Ctx, fix: bool, problems: &mut Vec<Problem>, fixed: &mut Vec<String>) {
    let Ok(store) = ctx.store() else {
        return;
    };
    let locks = [
        store.lock_path(),
        store.common_dir().join("packed-refs.lock"),
    ];
    for lock in locks {
        let Ok(meta) = std::fs::metadata(&lock) else {
            continue;
        };
        let age = meta
            .modified()
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or_default();
        let shown = lock.display().to_string();
        if age < STALE_LOCK {
            problems.push(Problem {
                severity: "warning",
                path: None,
                message: format!(
                    "{shown} is held ({}s old): a writer is at work",
                    age.as_secs()
                ),
                fix: None,
            });
        } else if fix && std::fs::remove_file(&lock).is_ok() {
            fixed.push(shown);
        } else {
            problems.push(Problem {
                severity: "error",
                path: None,
                message: format!(
                    "stale lock {shown} ({}s old): a writer died holding it, and every tick waits on it",
                    age.as_secs()
                ),
                fix: Some("`loopx doctor --fix` removes it (only if no loopx or git process is running)".to_owned()),
            });
        }
    }
}

/// Parses every file, then checks what they refer to.
fn check_files(all: &[(String, Vec<u8>)], problems: &mut Vec<Problem>) {
    let mut parsed_ok = true;
    for (path, bytes) in all {
        if files::kind_of(path) == files::Kind::Unknown {
            problems.push(Problem {
                severity: "warning",
                path: Some(path.clone()),
                message: "not part of the loopx layout; loopx ignores it".to_owned(),
                fix: None,
            });
            continue;
        }
        if let Err(r) = files::check_file(path, bytes) {
            parsed_ok = false;
            let message = r
                .message
                .strip_prefix(&format!("the state file {path} is corrupt: "))
                .unwrap_or(&r.message)
                .to_owned();
            let fix = if r.code == Code::FormatTooNew {
                "upgrade loopx".to_owned()
            } else {
                format!(
                    "restore it from the previous tick: `git show refs/loopx/state~1:{path}`, then commit the fix with loopx or plain git"
                )
            };
            problems.push(Problem {
                severity: "error",
                path: Some(path.clone()),
                message,
                fix: Some(fix),
            });
        }
    }
    if !all.iter().any(|(p, _)| p == files::META) {
        parsed_ok = false;
        problems.push(Problem {
            severity: "error",
            path: Some(files::META.to_owned()),
            message: "the file is missing".to_owned(),
            fix: Some(format!(
                "the state needs it; `git show refs/loopx/state~1:{}` shows the last one",
                files::META
            )),
        });
    }
    if !parsed_ok {
        return;
    }
    let state = match files::decode(all.iter().map(|(p, b)| (p.as_str(), b.as_slice()))) {
        Ok(s) => s,
        Err(r) => {
            problems.push(Problem {
                severity: "error",
                path: None,
                message: r.message,
                fix: None,
            });
            return;
        }
    };
    let archive = files::decode_archive(all.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
        .unwrap_or_default();
    check_references(&state, &archive, problems);
}

fn check_references(state: &State, archive: &BTreeMap<TodoId, Todo>, problems: &mut Vec<Problem>) {
    // A state on one ref is written in format 5 (`model::WRITES`); only a
    // split into a ref per goal makes it 6.
    if state.meta.format < crate::model::WRITES {
        problems.push(Problem {
            severity: "warning",
            path: Some(files::META.to_owned()),
            message: format!(
                "format {} is older than this loopx's {}",
                state.meta.format,
                crate::model::WRITES
            ),
            fix: None,
        });
    }
    for t in state.todos.values() {
        let path = Some(files::todo_path(&t.id));
        let mut err = |message: String, fix: Option<String>| {
            problems.push(Problem {
                severity: "error",
                path: path.clone(),
                message,
                fix,
            });
        };
        if !state.goals.contains_key(&t.goal) {
            err(
                format!("its goal {} does not exist", t.goal),
                Some(format!("add it with `loopx goal add {}`", t.goal)),
            );
        }
        for a in &t.after {
            if !state.todos.contains_key(a) && !archive.contains_key(a) {
                err(
                    format!("after names {a}, which does not exist"),
                    Some(format!(
                        "drop it with `loopx todo edit {} --after …` or --no-after",
                        t.id
                    )),
                );
            }
        }
        match (&t.claim, t.status) {
            (Some(c), TodoStatus::Claimed) => match state.agents.get(&c.owner) {
                None => err(
                    format!(
                        "it is claimed by {}, which is not a registered agent",
                        c.owner
                    ),
                    Some(format!(
                        "free it with `loopx todo release {} --force`",
                        t.id
                    )),
                ),
                Some(a) if a.status == AgentStatus::Retired => err(
                    format!("it is claimed by {}, which is retired", c.owner),
                    Some(format!(
                        "free it with `loopx todo release {} --force`",
                        t.id
                    )),
                ),
                Some(_) => {}
            },
            (None, TodoStatus::Claimed) => {
                err("its status is claimed but it has no claim".to_owned(), None)
            }
            (Some(_), s) => err(format!("it has a claim but its status is {s}"), None),
            (None, _) => {}
        }
    }
}
