//! `loopx doctor`: check the state and its surroundings, name what is wrong
//! and how to fix it. `--fix` removes stale lock files and nothing else.

use std::collections::BTreeMap;
use std::time::SystemTime;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit};
use crate::model::{AgentStatus, FORMAT, State, Todo, TodoId, TodoStatus, files};
use crate::op::message;
use crate::tx;
use crate::tx::STALE_LOCK;

/// Check the state: every file parses, references resolve, no stale locks
///
/// Exits 0 when healthy and 1 naming each file (and line) at fault. --fix
/// removes lock files older than 10 seconds, left by a writer that died, and
/// changes nothing else.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Remove stale lock files
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
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let mut problems = Vec::new();
    let mut fixed = Vec::new();
    check_locks(ctx, args.fix, &mut problems, &mut fixed);
    check_refspecs(ctx, &mut problems);
    let mut files_seen = 0;
    let tip = tx::tip(ctx)?;
    match &tip {
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
    };
    ctx.out.emit(&wire, || human(&wire))?;
    Ok(if healthy { Exit::Ok } else { Exit::Error })
}

fn human(w: &Wire) -> String {
    let mut s = String::new();
    for f in &w.fixed {
        s.push_str(&format!("fixed: removed {f}\n"));
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
    if state.meta.format < FORMAT {
        problems.push(Problem {
            severity: "warning",
            path: Some(files::META.to_owned()),
            message: format!(
                "format {} is older than this loopx's {FORMAT}",
                state.meta.format
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
