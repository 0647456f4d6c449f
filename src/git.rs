//! The system `git`, for what gix does not do: packing, the network
//! (fetch and push, so the user's credentials, ssh config and `insteadOf`
//! rules just work), and the tree of the working tree for stall detection
//! (through a temporary index), and the linked worktrees claims own
//! (`worktree.rs`). Runs with the repository's own config; never touches
//! HEAD, the index or the worktree of a checkout loopx did not make.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

mod config;
pub mod keep;
mod protocol;
mod remote;
mod ssh;
mod url;
pub mod worktree;

pub use config::{
    PushConfig, config_matching, config_values, global_add, global_remove, global_values,
    push_config,
};
pub use remote::{
    Fetched, Local, NetworkError, Push, Pushed, fetch, fetch_refs, fetch_refs_from, fetch_url,
    kept_tips, push_expecting, push_lease, push_refs,
};
pub use url::{remote_url, strip_credentials};

/// Every git process loopx starts begins here: no stdin, and never a
/// password prompt on a terminal (`GIT_TERMINAL_PROMPT=0`), so a hub that
/// wants one fails instead of hanging an unattended agent. It reads
/// objects exactly as written, as the store does: never through
/// `refs/replace/*` (`GIT_NO_REPLACE_OBJECTS`) or `info/grafts` (a graft
/// file that cannot exist, which git skips without a word), so a planted
/// replacement cannot turn the history it walks into a cycle.
fn git() -> Command {
    let mut c = Command::new("git");
    c.stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_GRAFT_FILE", NO_GRAFTS);
    c
}

/// A path that can never be a file (`/dev/null` is not a directory).
const NO_GRAFTS: &str = "/dev/null/loopx-no-grafts";

/// Runs `git ARGS` with `--git-dir` and returns its stdout.
pub fn output(git_dir: &Path, args: &[&str]) -> Result<String> {
    let mut c = git();
    c.arg("--git-dir").arg(git_dir).args(args);
    stdout_of(c, args)
}

/// `git ARGS` in a working directory, for the caller to set up further
/// (the demo isolates it from the user's config) and run with [`stdout_of`].
pub fn command_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = git();
    c.args(args).current_dir(dir);
    c
}

/// Runs a git command and returns its stdout, or an error with its stderr.
pub fn stdout_of(mut c: Command, args: &[&str]) -> Result<String> {
    let out = c
        .output()
        .with_context(|| format!("running git {}: is git installed?", args.join(" ")))?;
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
    let _ = git()
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

/// git's default for `gc.pruneExpire`: unreachable objects younger than
/// this are kept, so an object a running writer has just written and not
/// yet referenced is never removed under it.
pub const PRUNE_EXPIRE: &str = "2.weeks.ago";

/// A prune expiry as git reads `gc.pruneExpire` (`2.weeks.ago`, a date,
/// `now`, `never`): the newest modification time, in seconds since the
/// epoch, of an unreachable object that goes. `None` for `never`; `now` is
/// `i64::MAX`. An error when git does not understand it.
pub fn expiry_date(git_dir: &Path, value: &str) -> Result<Option<i64>> {
    let key = "loopx.pruneexpirecheck";
    let text = output(
        git_dir,
        &[
            "-c",
            &format!("{key}={value}"),
            "config",
            "--type=expiry-date",
            key,
        ],
    )?;
    let secs: u64 = text
        .trim()
        .parse()
        .with_context(|| format!("git read {value:?} as {text:?}"))?;
    Ok((secs != 0).then(|| i64::try_from(secs).unwrap_or(i64::MAX)))
}

/// Every object in the repository, loose or packed, each counted once.
pub fn object_total(git_dir: &Path) -> Result<u64> {
    let mut c = git();
    let args = [
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objectsize)",
    ];
    c.arg("--git-dir").arg(git_dir).args(args);
    Ok(stdout_of(c, &args)?.lines().count() as u64)
}

/// Repacks everything reachable into one pack and drops the unreachable
/// objects whose modification time is older than `expire` (git's own
/// `gc` without its reflog, ref-packing and worktree steps): reachability
/// is git's, from every ref, every reflog entry and every worktree's index
/// and HEAD. Younger unreachable objects are kept in a cruft pack with
/// their times, so a later run still knows their age.
pub fn prune(git_dir: &Path, expire: &str) -> Result<()> {
    let cruft = format!("--cruft-expiration={expire}");
    output(git_dir, &["repack", "-d", "-l", "-q", "--cruft", &cruft])?;
    // Loose objects the repack did not pack (written meanwhile) are dated
    // by their files.
    output(git_dir, &["prune", &format!("--expire={expire}")])?;
    Ok(())
}

/// Whether the worktree has uncommitted changes or untracked files (ignored
/// files do not count). A repository without a worktree is never dirty.
pub fn is_dirty(workdir: Option<&Path>) -> bool {
    let Some(dir) = workdir else { return false };
    git()
        .arg("-C")
        .arg(dir)
        .args(["status", "--porcelain", "--ignore-submodules"])
        .stdin(Stdio::null())
        .output()
        .map(|o| o.status.success() && !o.stdout.is_empty())
        .unwrap_or(false)
}

/// The tree `git add -A` would make of the working tree at `workdir`
/// (untracked files included, ignored ones not), for a turn's progress
/// fingerprint. It is built in a temporary index, a copy of the real one
/// beside it in the git dir (so git's stat cache still saves rehashing
/// unchanged files), removed afterwards: the user's index is never
/// written. Like `git add`, it writes the blobs and trees it hashes into
/// the object store; `git gc` prunes those nothing refers to.
pub fn worktree_tree(workdir: &Path) -> Result<String> {
    let args = ["rev-parse", "--path-format=absolute", "--git-path", "index"];
    let index = std::path::PathBuf::from(stdout_of(command_in(workdir, &args), &args)?.trim());
    let dir = index.parent().context("the index has no directory")?;
    let tmp = dir.join(format!("loopx-progress-{}.index", std::process::id()));
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
            let mut lock = self.0.clone().into_os_string();
            lock.push(".lock");
            let _ = std::fs::remove_file(lock);
        }
    }
    let _remove = Remove(tmp.clone());
    match std::fs::copy(&index, &tmp) {
        Ok(_) => {}
        // No index yet (nothing was ever added): start from an empty one.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("copying {}", index.display())),
    }
    let run = |args: &[&str]| {
        let mut c = command_in(workdir, args);
        c.env("GIT_INDEX_FILE", &tmp);
        stdout_of(c, args)
    };
    run(&["add", "-A", "--", ":/"])?;
    Ok(run(&["write-tree"])?.trim().to_owned())
}

/// The blobs of `tree` (as `git ls-tree -r`: one `mode type oid\tpath`
/// line each) whose path `keep` keeps, in tree order: a stall
/// fingerprint of a todo's own files.
pub fn tree_lines(workdir: &Path, tree: &str, keep: &dyn Fn(&str) -> bool) -> Result<Vec<String>> {
    let args = ["ls-tree", "-r", "--full-tree", tree];
    let out = stdout_of(command_in(workdir, &args), &args)?;
    Ok(out
        .lines()
        .filter(|l| l.split_once('\t').is_some_and(|(_, p)| keep(p)))
        .map(str::to_owned)
        .collect())
}

/// The commit HEAD of the working tree at `workdir` names (None on an
/// unborn branch).
pub fn head_of(workdir: &Path) -> Option<String> {
    let args = ["rev-parse", "--verify", "-q", "HEAD"];
    stdout_of(command_in(workdir, &args), &args)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Set in the environment of sync's own git calls, so loopx's hook shims
/// stay quiet while loopx itself fetches and pushes.
pub const IN_SYNC: &str = "LOOPX_IN_SYNC";
