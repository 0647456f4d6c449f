//! A claim's own linked worktree: when a claim takes one, making it (a
//! branch named after the todo, under the folder git config names),
//! finding it again, and removing it once its work is committed. Which
//! claim owns which worktree is this clone's business: each is recorded in
//! `<git common dir>/loopx/worktrees/<name>.json`, never on the state ref.
//! Nothing here deletes a file that is not committed, resets a branch or
//! merges one: a branch stays for review after its worktree goes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::config::WorktreeMode;
use crate::model::{AgentId, TodoId};
use crate::repo::Repo;
use crate::time::Timestamp;

/// Every branch loopx makes starts with this, then the todo's id (and a
/// suffix `-2`, `-3` … when that name is taken).
pub const BRANCH_PREFIX: &str = "loopx/";

/// One worktree a claim owns, as recorded on this clone.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    pub todo: TodoId,
    pub agent: AgentId,
    /// The worktree's folder (absolute).
    pub path: PathBuf,
    /// Its branch, without `refs/heads/`.
    pub branch: String,
    pub made: Timestamp,
    /// The runtimes' project-scope hook files loopx copied in from the
    /// main worktree (not committed there, so not checked out here):
    /// relative paths, taken out again before the worktree is removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub installed: Vec<String>,
}

impl Record {
    /// The record's file name: the branch's last part.
    fn name(&self) -> &str {
        self.branch
            .strip_prefix(BRANCH_PREFIX)
            .unwrap_or(&self.branch)
    }
}

/// The folder of the records.
fn dir(common: &Path) -> PathBuf {
    common.join("loopx").join("worktrees")
}

/// Every worktree claims own on this clone, oldest first.
pub fn records(common: &Path) -> Vec<Record> {
    let Ok(entries) = std::fs::read_dir(dir(common)) else {
        return Vec::new();
    };
    let mut out: Vec<Record> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| serde_json::from_slice(&std::fs::read(p).ok()?).ok())
        .collect();
    out.sort_by(|a, b| (a.made, &a.branch).cmp(&(b.made, &b.branch)));
    out
}

/// The worktree `agent`'s claim of `todo` owns on this clone, if any (the
/// newest, should there be several).
pub fn of(common: &Path, todo: &TodoId, agent: &AgentId) -> Option<Record> {
    records(common)
        .into_iter()
        .rev()
        .find(|r| &r.todo == todo && &r.agent == agent)
}

fn save(common: &Path, r: &Record) -> Result<()> {
    let d = dir(common);
    std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
    let file = d.join(format!("{}.json", r.name()));
    let tmp = d.join(format!(".{}.{}.tmp", r.name(), std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(r)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &file).with_context(|| format!("writing {}", file.display()))
}

fn forget(common: &Path, r: &Record) {
    let _ = std::fs::remove_file(dir(common).join(format!("{}.json", r.name())));
}

/// Whether a claim takes a worktree, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub take: bool,
    /// `loopx.worktree = auto` decided (not the flag or a fixed setting).
    pub auto: bool,
    /// Why, in a few words (`--worktree`, `loopx.worktree = always`, …).
    pub why: String,
}

/// Decides whether `agent`'s claim takes a worktree: `flag` (`--worktree`
/// or `--no-worktree`) first, then git config `loopx.worktree`; in `auto`,
/// only when a session of another agent on this clone is live (known only
/// where its process can be seen).
pub fn decide(repo: &Repo, flag: Option<bool>, agent: &AgentId) -> Decision {
    let d = |take: bool, why: &str| Decision {
        take,
        auto: false,
        why: why.to_owned(),
    };
    if let Some(f) = flag {
        return d(f, if f { "--worktree" } else { "--no-worktree" });
    }
    match repo.config().worktree {
        WorktreeMode::Always => d(true, "loopx.worktree = always"),
        WorktreeMode::Never => d(false, "loopx.worktree = never"),
        // Nothing to branch from yet: the checkout is the only place.
        WorktreeMode::Auto if repo.store().head().is_none() => {
            d(false, "the repository has no commit to branch from")
        }
        WorktreeMode::Auto => {
            let live = crate::hook::sessions::live_agents(repo.store().common_dir());
            match live.iter().find(|a| *a != agent) {
                Some(other) => Decision {
                    take: true,
                    auto: true,
                    why: format!("another session ({other}) is live on this clone"),
                },
                None => d(false, "no other live session on this clone"),
            }
        }
    }
}

/// The main worktree: where branches start and git's worktree commands run.
fn main_dir(repo: &Repo) -> Result<PathBuf> {
    let here = repo
        .store()
        .workdir()
        .context("a bare repository has no worktree to branch from")?;
    crate::git::worktree::main_worktree(here)
}

/// The folder worktrees are made in: `loopx.worktrees` (relative to the
/// main worktree), else `<main worktree>.loopx-worktrees` beside it.
pub fn folder(repo: &Repo) -> Result<PathBuf> {
    let main = main_dir(repo)?;
    Ok(match &repo.config().worktrees {
        Some(f) => main.join(f),
        None => {
            let name = main
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "repo".to_owned());
            main.with_file_name(format!("{name}.loopx-worktrees"))
        }
    })
}

/// What [`open`] did.
#[derive(Clone, Debug, Serialize)]
pub struct Opened {
    #[serde(flatten)]
    pub record: Record,
    /// The worktree was made now (else found again).
    pub created: bool,
    /// An earlier worktree of this claim, deleted by hand, was pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<PathBuf>,
}

/// The worktree of `agent`'s claim of `todo`: the one it owns when its
/// folder is there, else a new one on a new branch `loopx/<todo>` (with a
/// suffix when that branch or folder exists: nothing is reset). A recorded
/// worktree whose folder was deleted by hand is pruned first and said.
pub fn open(repo: &Repo, todo: &TodoId, agent: &AgentId, now: Timestamp) -> Result<Opened> {
    let common = repo.store().common_dir();
    let main = main_dir(repo)?;
    let mut pruned = None;
    if let Some(r) = of(common, todo, agent) {
        if r.path.is_dir() {
            return Ok(Opened {
                record: r,
                created: false,
                pruned: None,
            });
        }
        crate::git::worktree::prune(&main)?;
        forget(common, &r);
        pruned = Some(r.path);
    }
    let folder = folder(repo)?;
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let taken: Vec<String> = records(common).into_iter().map(|r| r.branch).collect();
    for n in 1..1000u32 {
        let name = match n {
            1 => todo.to_string(),
            n => format!("{todo}-{n}"),
        };
        let branch = format!("{BRANCH_PREFIX}{name}");
        let path = folder.join(&name);
        if taken.contains(&branch)
            || path.exists()
            || crate::git::worktree::branch_exists(&main, &branch)
        {
            continue;
        }
        // Another claim on this clone may take the same name at the same
        // moment: git refuses the second branch, and the next name is tried.
        if let Err(e) = crate::git::worktree::add(&main, &path, &branch) {
            if crate::git::worktree::branch_exists(&main, &branch) || path.exists() {
                continue;
            }
            return Err(e);
        }
        let installed = install_hooks(&main, &path);
        let record = Record {
            todo: todo.clone(),
            agent: agent.clone(),
            path,
            branch,
            made: now,
            installed,
        };
        save(common, &record)?;
        return Ok(Opened {
            record,
            created: true,
            pruned,
        });
    }
    anyhow::bail!("no free branch name for {todo} under {BRANCH_PREFIX}")
}

/// Every project-scope hook file a runtime reads (settings and plugins),
/// relative to a worktree's root.
fn hook_files() -> impl Iterator<Item = &'static str> {
    crate::model::runtime::SPECS.iter().flat_map(|spec| {
        spec.settings
            .map(|s| s.path)
            .into_iter()
            .chain(spec.plugin.map(|p| p.project))
    })
}

/// Copies into the new worktree `wt` each runtime's project-scope hook
/// file the main worktree has and `wt` lacks (it was not committed): a
/// runtime started in the worktree then runs the same hooks and guard.
/// Returns the files copied. Best effort: a file that cannot be copied is
/// skipped.
fn install_hooks(main: &Path, wt: &Path) -> Vec<String> {
    hook_files()
        .filter(|rel| {
            let (from, to) = (main.join(rel), wt.join(rel));
            from.is_file()
                && !to.exists()
                && to
                    .parent()
                    .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
                && std::fs::copy(&from, &to).is_ok()
        })
        .map(str::to_owned)
        .collect()
}

/// Whether the copied hook file `rel` in the worktree `r` is still what
/// the main worktree has (so removing it loses nothing).
fn unchanged_copy(main: &Path, r: &Record, rel: &str) -> bool {
    match (
        std::fs::read(main.join(rel)),
        std::fs::read(r.path.join(rel)),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The files not committed in the worktree `r` (none when its folder is
/// gone), but for the hook files loopx copied in and nobody changed.
pub fn uncommitted(repo: &Repo, r: &Record) -> Result<Vec<String>> {
    if !r.path.is_dir() {
        return Ok(Vec::new());
    }
    let main = main_dir(repo)?;
    let mut files = crate::git::worktree::uncommitted(&r.path)?;
    files.retain(|f| !(r.installed.contains(f) && unchanged_copy(&main, r, f)));
    Ok(files)
}

/// What [`close`] did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "kebab-case", tag = "closed")]
pub enum Closed {
    /// The worktree was removed; its branch stays.
    Removed { path: PathBuf, branch: String },
    /// Its folder had been deleted by hand: git's record of it was pruned.
    Pruned { path: PathBuf, branch: String },
}

/// Removes the worktree `r` now that its claim is over, keeping its branch
/// for review. git refuses to remove a worktree with files that are not
/// committed (there is no force here); the caller checks
/// [`uncommitted`] first and refuses itself.
pub fn close(repo: &Repo, r: &Record) -> Result<Closed> {
    let common = repo.store().common_dir();
    let main = main_dir(repo)?;
    let (path, branch) = (r.path.clone(), r.branch.clone());
    if !r.path.is_dir() {
        crate::git::worktree::prune(&main)?;
        forget(common, r);
        return Ok(Closed::Pruned { path, branch });
    }
    // loopx's own copies of the hook files go first: those still not
    // committed and unchanged (git refuses to remove a worktree with any
    // other file left; a copy the agent committed is the branch's now).
    let loose = crate::git::worktree::uncommitted(&r.path)?;
    let copies = r
        .installed
        .iter()
        .filter(|f| loose.contains(f) && unchanged_copy(&main, r, f));
    for rel in copies {
        let file = r.path.join(rel);
        let _ = std::fs::remove_file(&file);
        let mut dir = file.parent();
        while let Some(d) = dir.filter(|d| *d != r.path.as_path()) {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    crate::git::worktree::remove(&main, &r.path)?;
    forget(common, r);
    Ok(Closed::Removed { path, branch })
}

/// A worktree left behind: its claim is over or moved to another agent,
/// or its folder is gone.
#[derive(Clone, Debug, Serialize)]
pub struct Left {
    #[serde(flatten)]
    pub record: Record,
    /// Its folder was deleted by hand (the next claim or `done` prunes it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
}

/// The worktrees on this clone whose claim `holds` says is no longer held
/// by their agent (a steal, a release, a done that could not remove it).
pub fn left(common: &Path, holds: impl Fn(&TodoId, &AgentId) -> bool) -> Vec<Left> {
    records(common)
        .into_iter()
        .filter(|r| !holds(&r.todo, &r.agent) || !r.path.is_dir())
        .map(|r| Left {
            missing: !r.path.is_dir(),
            record: r,
        })
        .collect()
}
