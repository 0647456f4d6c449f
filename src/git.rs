//! The system `git`, for what gix does not do cheaply: packing (and, later,
//! fetch and push). Runs with the repository's own config; never touches
//! HEAD, the index or the worktree.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Runs `git ARGS` with `--git-dir` and returns its stdout.
pub fn output(git_dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts `git ARGS` in the background and does not wait: the caller's tick
/// is not stalled, and the process outlives loopx. Errors are ignored (no
/// git on PATH means no packing, nothing worse).
pub fn spawn_detached(git_dir: &Path, args: &[&str]) {
    let _ = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// Loose objects and packs, from `git count-objects -v`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ObjectCount {
    pub loose: u64,
    pub packs: u64,
    pub in_pack: u64,
}

pub fn count_objects(git_dir: &Path) -> Result<ObjectCount> {
    let text = output(git_dir, &["count-objects", "-v"])?;
    let mut c = ObjectCount::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(": ") else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k {
            "count" => c.loose = v,
            "packs" => c.packs = v,
            "in-pack" => c.in_pack = v,
            _ => {}
        }
    }
    Ok(c)
}

/// The packing `loopx gc` runs and ticks start in the background: folds
/// loose objects and small packs into geometrically sized packs, so the
/// work per run stays small however long the history grows.
pub const REPACK: [&str; 4] = ["repack", "-d", "--geometric=2", "-q"];

/// Whether the worktree has uncommitted changes or untracked files (ignored
/// files do not count). A repository without a worktree is never dirty.
pub fn is_dirty(workdir: Option<&Path>) -> bool {
    let Some(dir) = workdir else { return false };
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["status", "--porcelain", "--ignore-submodules"])
        .stdin(Stdio::null())
        .output()
        .map(|o| o.status.success() && !o.stdout.is_empty())
        .unwrap_or(false)
}
