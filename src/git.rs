//! The system `git`, for what gix does not do: packing, the network
//! (fetch and push, so the user's credentials, ssh config and `insteadOf`
//! rules just work), and the tree of the working tree for stall detection
//! (through a temporary index). Runs with the repository's own config;
//! never touches HEAD, the index or the worktree.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

mod ssh;

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

/// Set in the environment of sync's own git calls, so loopx's hook shims
/// stay quiet while loopx itself fetches and pushes.
pub const IN_SYNC: &str = "LOOPX_IN_SYNC";

/// Runs `git ARGS` for sync (with [`IN_SYNC`] set) and returns whatever it
/// did, successful or not, for the caller to classify. A step that takes
/// longer than `limit` is stopped (with what it started, such as ssh) and
/// is a [`NetworkError`].
fn network(
    git_dir: &Path,
    url: &str,
    args: &[&str],
    limit: Duration,
) -> Result<std::process::Output> {
    let mut c = git();
    if let Some(ssh) = ssh::shared(git_dir, url) {
        c.env("GIT_SSH_COMMAND", ssh);
    }
    let mut child = c
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .env(IN_SYNC, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for git")? {
            break status;
        }
        if started.elapsed() >= limit {
            // The group this git leads, and only it.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
            return Err(NetworkError {
                stderr: format!(
                    "git {} did not finish within {}s (git config loopx.syncTimeout sets the limit)",
                    args.iter().find(|a| !a.starts_with("-") && !a.contains('=')).copied().unwrap_or_default(),
                    limit.as_secs()
                ),
                answered: false,
            }
            .into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// What fetching a remote's state ref found.
#[derive(Debug, PartialEq, Eq)]
pub enum Fetched {
    /// The tracking ref now holds the remote's state.
    State,
    /// The remote answered, and it has no such ref.
    NoState,
    /// The remote answered and has the ref, yet the fetch failed here:
    /// another fetch into the same tracking ref won its lock (two syncs on
    /// one machine). Holds git's words; worth another try.
    Busy(String),
}

/// A network call that failed: git's own words, trimmed.
#[derive(Debug)]
pub struct NetworkError {
    pub stderr: String,
    /// The remote answered about the ref (a push it refused, its hook
    /// declining); false when it was never reached (no connection, no such
    /// repository, a failed login, the time limit).
    pub answered: bool,
}

impl std::fmt::Display for NetworkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.stderr)
    }
}

impl std::error::Error for NetworkError {}

/// git's complaint in one line: its first paragraph (the boilerplate after
/// the blank line is dropped), without `fatal:`/`error:` prefixes and hints.
fn network_error(out: &std::process::Output) -> NetworkError {
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with("hint:"))
        .map(|l| {
            let l = l
                .strip_prefix("fatal: ")
                .or_else(|| l.strip_prefix("error: "))
                .unwrap_or(l);
            l.trim_end_matches(['.', ':'])
        })
        .collect();
    let stderr = if lines.is_empty() {
        format!("git exited with {}", out.status)
    } else {
        lines.join("; ")
    };
    NetworkError {
        stderr,
        answered: false,
    }
}

/// Fetches `remote`'s ref `src` into the local ref `dst`, forced: `dst` is a
/// remote-tracking ref, a mirror of the remote, never the state itself.
/// Leaves FETCH_HEAD and tags alone. A failed fetch is asked again with
/// `ls-remote`, so that the answer does not depend on git's translated
/// messages: a remote without the ref is [`Fetched::NoState`], one that has
/// it is [`Fetched::Busy`], and an unreachable remote or a failed login is a
/// [`NetworkError`].
pub fn fetch(
    git_dir: &Path,
    remote: &str,
    src: &str,
    dst: &str,
    limit: Duration,
) -> Result<Fetched> {
    let refspec = format!("+{src}:{dst}");
    // Where `remote` points, with git's `insteadOf` rules applied (no
    // network): what decides whether ssh shares a connection.
    let url = output(git_dir, &["ls-remote", "--get-url", remote])
        .map(|u| u.trim().to_owned())
        .unwrap_or_default();
    let out = network(
        git_dir,
        &url,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            // Only the refspec given here: a configured one that maps
            // refs/loopx/* onto itself (a mirror) would overwrite the
            // local state and drop unsynced ticks.
            "--refmap=",
            remote,
            &refspec,
        ],
        limit,
    )?;
    if out.status.success() {
        return Ok(Fetched::State);
    }
    let failed = network_error(&out);
    let probe = network(git_dir, &url, &["ls-remote", remote, src], limit)?;
    if !probe.status.success() {
        return Err(failed.into());
    }
    let listed = String::from_utf8_lossy(&probe.stdout);
    if listed
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(src))
    {
        Ok(Fetched::Busy(failed.stderr))
    } else {
        Ok(Fetched::NoState)
    }
}

/// What the remote said to a push.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The ref moved (or was created) to the pushed commit.
    Accepted,
    /// The remote already had exactly that commit.
    UpToDate,
    /// Someone pushed first: fetch and try again. Holds git's summary.
    Behind(String),
}

/// Whether a refused push lost a race: `[rejected] (fetch first)` or
/// `(non-fast-forward)` when git saw the newer tip before sending; or, when
/// two pushes crossed on the server, `[remote rejected] (failed to update
/// ref)` ("cannot lock ref …: is at X but expected Y"). These are protocol
/// strings, not translated messages.
fn lost_race(summary: &str) -> bool {
    summary.starts_with("[rejected]")
        || (summary.starts_with("[remote rejected]")
            && [
                "failed to update ref",
                "cannot lock ref",
                "failed to lock",
                // Two pushes moving the same objects into the hub at once
                // (`.keep` files that differ): transient.
                "unable to migrate objects",
            ]
            .iter()
            .any(|s| summary.contains(s)))
}

/// Puts `remote`'s ref `dst` back to `commit`, which need not be a
/// fast-forward, only while the remote still holds `expected` (a lease,
/// never `+`: another push meanwhile makes it fail). For
/// `sync --repair-remote`, a human act.
pub fn push_lease(
    git_dir: &Path,
    remote: &str,
    commit: &str,
    dst: &str,
    expected: &str,
    limit: Duration,
) -> Result<Pushed> {
    push_with(git_dir, remote, commit, dst, Some(expected), limit)
}

/// Pushes `commit` to `remote`'s ref `dst` naming the tip the remote is
/// expected to hold (None: no ref yet). Only for a `commit` that descends
/// from `expected` by construction (DESIGN §5): a compare-and-swap on the
/// remote, not a force, which spares git's client-side ancestry walk (and
/// its "could not parse commit" while a concurrent fetch here is still
/// unpacking objects).
pub fn push_expecting(
    git_dir: &Path,
    remote: &str,
    commit: &str,
    dst: &str,
    expected: Option<&str>,
    limit: Duration,
) -> Result<Pushed> {
    push_with(
        git_dir,
        remote,
        commit,
        dst,
        Some(expected.unwrap_or("")),
        limit,
    )
}

fn push_with(
    git_dir: &Path,
    remote: &str,
    commit: &str,
    dst: &str,
    lease: Option<&str>,
    limit: Duration,
) -> Result<Pushed> {
    let refspec = format!("{commit}:{dst}");
    debug_assert!(!refspec.starts_with('+'), "sync never force-pushes");
    let lease = lease.map(|old| format!("--force-with-lease={dst}:{old}"));
    // To the remote's push URL rather than its name: a push to a named
    // remote also moves the local refs its fetch refspecs map the pushed
    // ref to, and a mirror clone's (+refs/*:refs/*) is the local state ref
    // itself, which would drop a tick made here meanwhile. (A mirror's
    // remote also refuses a refspec.)
    let url = output(git_dir, &["remote", "get-url", "--push", remote])
        .map(|u| u.trim().to_owned())
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| remote.to_owned());
    let mut args = vec!["push", "--porcelain", "--no-verify"];
    args.extend(lease.as_deref());
    args.extend([url.as_str(), refspec.as_str()]);
    let out = network(git_dir, &url, &args, limit)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Porcelain lines: <flag> TAB <from>:<to> TAB <summary>
    let line = stdout
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let flag = parts.next()?;
            let refs = parts.next()?;
            let summary = parts.next().unwrap_or("");
            refs.ends_with(&format!(":{dst}"))
                .then_some((flag.to_owned(), summary.to_owned()))
        })
        .next();
    match line {
        Some((flag, _)) if out.status.success() && flag == "=" => Ok(Pushed::UpToDate),
        Some((flag, _)) if out.status.success() && matches!(flag.as_str(), " " | "*" | "+") => {
            Ok(Pushed::Accepted)
        }
        Some((flag, summary))
            if flag == "!"
                && (lost_race(&summary)
                    || String::from_utf8_lossy(&out.stderr)
                        .contains("unable to migrate objects")) =>
        {
            Ok(Pushed::Behind(summary))
        }
        Some((_, summary)) if !summary.is_empty() => Err(NetworkError {
            stderr: format!("{summary}; {}", network_error(&out)),
            answered: true,
        }
        .into()),
        _ => Err(network_error(&out).into()),
    }
}

/// Every `(key, value)` of the git config whose key matches `pattern` (a
/// regular expression, as `git config --get-regexp` takes it).
pub fn config_matching(git_dir: &Path, pattern: &str) -> Result<Vec<(String, String)>> {
    let out = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(["config", "--get-regexp", pattern])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git config --get-regexp {pattern}"))?;
    match out.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()),
        Some(1) => Ok(Vec::new()),
        _ => bail!(
            "git config --get-regexp {pattern} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// Every value of a multi-valued git config key (none when it is unset).
pub fn config_values(git_dir: &Path, key: &str) -> Result<Vec<String>> {
    let out = git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(["config", "--get-all", key])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running git config --get-all {key}"))?;
    match out.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()),
        // 1: the key is not set.
        Some(1) => Ok(Vec::new()),
        _ => bail!(
            "git config --get-all {key} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// What git reads to decide where a `git push` without a refspec goes:
/// the current branch (None: detached HEAD) and the whole config, as
/// `(key, value)` pairs in git's order (section and key lowercased,
/// subsection as written).
#[derive(Debug, Default, Clone)]
pub struct PushConfig {
    pub branch: Option<String>,
    pub config: Vec<(String, String)>,
}

impl PushConfig {
    /// The last value of `key`, as git reads a single-valued key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.config
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a multi-valued key, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.config
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// Reads [`PushConfig`] in `dir` (None: the current directory), read-only,
/// for the tool guard.
pub fn push_config(dir: Option<&Path>) -> Result<PushConfig> {
    let here = |args: &[&str]| {
        let mut c = git();
        if let Some(d) = dir {
            c.current_dir(d);
        }
        c.args(args);
        c
    };
    let args = ["config", "--list", "-z"];
    let listed = stdout_of(here(&args), &args)?;
    let config = listed
        .split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('\n') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            // A key without `=` is a boolean true.
            None => (e.to_owned(), "true".to_owned()),
        })
        .collect();
    let out = here(&["symbolic-ref", "-q", "HEAD"])
        .output()
        .context("running git symbolic-ref HEAD")?;
    let branch = String::from_utf8_lossy(&out.stdout)
        .trim()
        .strip_prefix("refs/heads/")
        .map(str::to_owned)
        .filter(|_| out.status.success());
    Ok(PushConfig { branch, config })
}
