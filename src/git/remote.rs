//! The network: fetch and push through the system git (with [`super::IN_SYNC`]
//! set, ssh connections shared, the wire protocol [`super::protocol`]
//! chooses), and how their failures are told apart.

use std::io::Write;

use super::*;

/// A repository as the network git processes of a sync run for it: its
/// git dir (`--git-dir`) and the directory git itself runs in for it (the
/// worktree's top, or the git dir of a bare repository), against which a
/// relative remote URL (`../hub.git`) is resolved, as `git -C DIR fetch`
/// resolves it, wherever loopx was started (`loopx -C DIR sync`).
#[derive(Clone, Copy, Debug)]
pub struct Local<'a> {
    pub git_dir: &'a Path,
    pub work_dir: &'a Path,
}

/// Runs `git ARGS` for sync (with [`IN_SYNC`] set) and returns whatever it
/// did, successful or not, for the caller to classify. A step that takes
/// longer than `limit` is stopped (with what it started, such as ssh) and
/// is a [`NetworkError`]. With `echo`, git's stderr is also copied to
/// loopx's own as it comes (its progress meters, for a person watching).
fn network(
    local: Local<'_>,
    url: &str,
    args: &[&str],
    limit: Duration,
    echo: bool,
) -> Result<std::process::Output> {
    let git_dir = local.git_dir;
    let mut c = git();
    if let Some(ssh) = ssh::shared(git_dir, url) {
        c.env("GIT_SSH_COMMAND", ssh);
    }
    if let Some(v) = protocol::version(git_dir, url) {
        c.arg("-c").arg(format!("protocol.version={v}"));
    }
    let mut child = c
        .arg("--git-dir")
        .arg(git_dir)
        .current_dir(local.work_dir)
        .args(args)
        .env(IN_SYNC, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    let read = |pipe: Option<Box<dyn Read + Send>>, echo: bool| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let Some(mut p) = pipe else {
                return buf;
            };
            if !echo {
                let _ = p.read_to_end(&mut buf);
                return buf;
            }
            let mut chunk = [0u8; 4096];
            while let Ok(n) = p.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(&chunk[..n]);
                let _ = err.flush();
            }
            buf
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        false,
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        echo,
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
/// the blank line is dropped), without `fatal:`/`error:` prefixes, hints
/// and progress meters (a fetch run with `--progress`).
fn network_error(out: &std::process::Output) -> NetworkError {
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !is_progress(l))
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

/// Whether a line of git's stderr is a progress meter: one redrawn in place
/// (`\r`), or its last state (`Receiving objects: 100% (5/5), done.`,
/// `remote: Total 5 (delta 0), …`).
fn is_progress(line: &str) -> bool {
    let l = line.trim();
    line.contains('\r')
        || l.ends_with(", done.")
        || l.starts_with("remote: Total ")
        || l.starts_with("Total ")
}

/// Fetches `remote`'s ref `src` into the local ref `dst`, forced: `dst` is a
/// remote-tracking ref, a mirror of the remote, never the state itself.
/// Leaves FETCH_HEAD and tags alone. A failed fetch is asked again with
/// `ls-remote`, so that the answer does not depend on git's translated
/// messages: a remote without the ref is [`Fetched::NoState`], one that has
/// it is [`Fetched::Busy`], and an unreachable remote or a failed login is a
/// [`NetworkError`].
///
/// With `progress`, git's own progress meters are shown on loopx's stderr
/// as the fetch goes (`--progress`; for a person at a terminal), else the
/// fetch is quiet.
pub fn fetch(
    local: Local<'_>,
    remote: &str,
    src: &str,
    dst: &str,
    limit: Duration,
    progress: bool,
) -> Result<Fetched> {
    let mut found = fetch_refs(local, remote, &[(src, dst)], limit, progress)?;
    Ok(found.pop().expect("one answer per ref"))
}

/// [`fetch`] of several refs in one `git fetch` (one connection, one
/// negotiation): each `(src, dst)` pair is a refspec `+src:dst`, and the
/// answers come in the same order. When the fetch fails, one `ls-remote`
/// of every `src` tells the refs the remote lacks ([`Fetched::NoState`])
/// from the others; those others are fetched again in one more call when
/// some were missing (a remote without a ref fails the whole fetch), else
/// they are [`Fetched::Busy`].
pub fn fetch_refs(
    local: Local<'_>,
    remote: &str,
    refs: &[(&str, &str)],
    limit: Duration,
    progress: bool,
) -> Result<Vec<Fetched>> {
    let url = fetch_url(local.git_dir, remote);
    fetch_refs_from(local, &url, remote, refs, limit, progress)
}

/// Where `remote` fetches from, with git's `insteadOf` rules applied (no
/// network; empty when git cannot tell): what decides whether ssh shares
/// a connection and which kept session answers for it.
pub fn fetch_url(git_dir: &Path, remote: &str) -> String {
    output(git_dir, &["ls-remote", "--get-url", remote])
        .map(|u| u.trim().to_owned())
        .unwrap_or_default()
}

/// [`fetch_refs`] with `remote`'s [`fetch_url`] already known.
pub fn fetch_refs_from(
    local: Local<'_>,
    url: &str,
    remote: &str,
    refs: &[(&str, &str)],
    limit: Duration,
    progress: bool,
) -> Result<Vec<Fetched>> {
    let out = fetch_once(local, url, remote, refs, limit, progress)?;
    if out.status.success() {
        // Over ssh, a session kept for the next sync's question
        // ([`kept_tips`]), beside the connection this fetch left open.
        keep::ensure(local.git_dir, url);
        return Ok(refs.iter().map(|_| Fetched::State).collect());
    }
    let failed = network_error(&out);
    let mut args = vec!["ls-remote", remote];
    args.extend(refs.iter().map(|(src, _)| *src));
    let probe = network(local, url, &args, limit, false)?;
    if !probe.status.success() {
        return Err(failed.into());
    }
    let listed = String::from_utf8_lossy(&probe.stdout);
    let has = |src: &str| {
        listed
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(src))
    };
    let present: Vec<(&str, &str)> = refs.iter().copied().filter(|(s, _)| has(s)).collect();
    let again = if present.is_empty() || present.len() == refs.len() {
        None
    } else {
        Some(fetch_once(local, url, remote, &present, limit, progress)?)
    };
    Ok(refs
        .iter()
        .map(|(src, _)| match &again {
            _ if !has(src) => Fetched::NoState,
            Some(o) if o.status.success() => Fetched::State,
            Some(o) => Fetched::Busy(network_error(o).stderr),
            None => Fetched::Busy(failed.stderr.clone()),
        })
        .collect())
}

/// The tips the remote at `url` (its [`fetch_url`]) holds for `srcs`
/// (full ref names, each None when it has no such ref), asked without a
/// git process through the ssh session a keeper holds open for it
/// ([`keep`]); None when there is none to ask (not ssh, none started yet,
/// `loopx.sshKeep false`) or it did not answer within `limit` (or
/// [`keep::ASK_LIMIT`]): then fetch with git.
pub fn kept_tips(
    git_dir: &Path,
    url: &str,
    srcs: &[&str],
    limit: Duration,
) -> Option<Vec<Option<String>>> {
    keep::tips(git_dir, url, srcs, limit)
}

/// One `git fetch` of `refs` (`+src:dst` each).
fn fetch_once(
    local: Local<'_>,
    url: &str,
    remote: &str,
    refs: &[(&str, &str)],
    limit: Duration,
    progress: bool,
) -> Result<std::process::Output> {
    let refspecs: Vec<String> = refs
        .iter()
        .map(|(src, dst)| format!("+{src}:{dst}"))
        .collect();
    let mut args = vec![
        "fetch",
        // Without the summary of updated refs (this sync's own
        // scratch refs), with git's meters when asked.
        "--quiet",
        if progress {
            "--progress"
        } else {
            "--no-progress"
        },
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        // Only the refspecs given here: a configured one that maps
        // refs/loopx/* onto itself (a mirror) would overwrite the
        // local state and drop unsynced ticks.
        "--refmap=",
        remote,
    ];
    args.extend(refspecs.iter().map(String::as_str));
    network(local, url, &args, limit, progress)
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
                // git ≥ 2.51's receive-pack (batched ref updates): the
                // old id was not the ref's, or a ref expected absent exists.
                "incorrect old value provided",
                "reference already exists",
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
    local: Local<'_>,
    remote: &str,
    commit: &str,
    dst: &str,
    expected: &str,
    limit: Duration,
) -> Result<Pushed> {
    push_with(local, remote, commit, dst, Some(expected), limit)
}

/// Pushes `commit` to `remote`'s ref `dst` naming the tip the remote is
/// expected to hold (None: no ref yet). Only for a `commit` that descends
/// from `expected` by construction (DESIGN §5): a compare-and-swap on the
/// remote, not a force, which spares git's client-side ancestry walk (and
/// its "could not parse commit" while a concurrent fetch here is still
/// unpacking objects).
pub fn push_expecting(
    local: Local<'_>,
    remote: &str,
    commit: &str,
    dst: &str,
    expected: Option<&str>,
    limit: Duration,
) -> Result<Pushed> {
    push_with(
        local,
        remote,
        commit,
        dst,
        Some(expected.unwrap_or("")),
        limit,
    )
}

fn push_with(
    local: Local<'_>,
    remote: &str,
    commit: &str,
    dst: &str,
    lease: Option<&str>,
    limit: Duration,
) -> Result<Pushed> {
    let one = Push {
        commit: commit.to_owned(),
        dst: dst.to_owned(),
        expected: lease.map(str::to_owned),
    };
    let mut answers = push_refs(local, remote, std::slice::from_ref(&one), limit)?;
    answers.pop().expect("one answer per ref")
}

/// One ref update of [`push_refs`]: `commit` to the remote's `dst`,
/// expecting it at `expected` (`Some("")`: no such ref yet; None: no
/// lease, never used by sync).
#[derive(Clone, Debug)]
pub struct Push {
    pub commit: String,
    pub dst: String,
    pub expected: Option<String>,
}

/// Pushes several refs in one `git push` (one connection, one pack), each
/// a compare-and-swap as in [`push_expecting`], each taken or refused on
/// its own. The answers come in the order of `refs`. The whole call fails
/// (a [`NetworkError`]) when the remote was not reached.
pub fn push_refs(
    local: Local<'_>,
    remote: &str,
    refs: &[Push],
    limit: Duration,
) -> Result<Vec<Result<Pushed>>> {
    let git_dir = local.git_dir;
    let refspecs: Vec<String> = refs
        .iter()
        .map(|p| format!("{}:{}", p.commit, p.dst))
        .collect();
    debug_assert!(
        refspecs.iter().all(|r| !r.starts_with('+')),
        "sync never force-pushes"
    );
    let leases: Vec<String> = refs
        .iter()
        .filter_map(|p| {
            p.expected
                .as_ref()
                .map(|old| format!("--force-with-lease={}:{old}", p.dst))
        })
        .collect();
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
    // Over ssh, through the kept session's receive-pack when one is
    // ready (one exchange instead of git's three; the same lines come
    // back); else git's own push.
    let out = match keep::push(git_dir, &url, refs, limit) {
        Some(out) => out?,
        None => {
            let mut args = vec!["push", "--porcelain", "--no-verify"];
            args.extend(leases.iter().map(String::as_str));
            args.push(url.as_str());
            args.extend(refspecs.iter().map(String::as_str));
            let out = network(local, &url, &args, limit, false)?;
            if out.status.success()
                && ssh::Target::of(&url).is_some()
                && let Ok(fetch_url) = output(git_dir, &["ls-remote", "--get-url", remote])
            {
                // A push-first claim syncs without fetching: the keeper for
                // the next sync's question (and push) starts here too.
                keep::ensure(git_dir, fetch_url.trim());
            }
            out
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Porcelain lines: <flag> TAB <from>:<to> TAB <summary>
    let lines: Vec<(String, String, String)> = stdout
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, '\t');
            let flag = parts.next()?;
            let refs = parts.next()?;
            let summary = parts.next().unwrap_or("");
            Some((flag.to_owned(), refs.to_owned(), summary.to_owned()))
        })
        .collect();
    if !refs.iter().any(|p| {
        lines
            .iter()
            .any(|(_, r, _)| r.ends_with(&format!(":{}", p.dst)))
    }) {
        return Err(network_error(&out).into());
    }
    Ok(refs
        .iter()
        .map(|p| {
            let line = lines
                .iter()
                .find(|(_, r, _)| r.ends_with(&format!(":{}", p.dst)));
            // A ref git marked taken in a push that failed elsewhere was
            // still taken.
            match line {
                Some((flag, _, _)) if flag == "=" => Ok(Pushed::UpToDate),
                Some((flag, _, _)) if matches!(flag.as_str(), " " | "*" | "+") => {
                    Ok(Pushed::Accepted)
                }
                Some((flag, _, summary))
                    if flag == "!"
                        && (lost_race(summary) || stderr.contains("unable to migrate objects")) =>
                {
                    Ok(Pushed::Behind(summary.clone()))
                }
                Some((_, _, summary)) if !summary.is_empty() => Err(NetworkError {
                    stderr: format!("{summary}; {}", network_error(&out)),
                    answered: true,
                }
                .into()),
                _ => Err(network_error(&out).into()),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn a_compare_and_swap_the_hub_refused_is_a_lost_race_in_every_git_s_words() {
        for lost in [
            "[rejected] (stale info)",
            "[rejected] (fetch first)",
            "[remote rejected] (failed to update ref)",
            "[remote rejected] (cannot lock ref 'refs/loopx/state': is at 1 but expected 2)",
            // git 2.51's receive-pack, through the kept session.
            "[remote rejected] (incorrect old value provided)",
            "[remote rejected] (reference already exists)",
        ] {
            assert!(lost_race(lost), "{lost}");
        }
        for not in [
            "[remote rejected] (hook declined)",
            "[remote rejected] (pre-receive hook declined)",
            "[remote failure] (remote failed to report status)",
        ] {
            assert!(!lost_race(not), "{not}");
        }
    }

    #[test]
    fn a_failed_fetch_with_progress_reads_as_its_error_without_the_meters() {
        let out = std::process::Output {
            status: std::process::ExitStatus::from_raw(128 << 8),
            stdout: Vec::new(),
            stderr: b"remote: Enumerating objects: 5, done.        \n\
remote: Counting objects:  40% (2/5)        \rremote: Counting objects: 100% (5/5), done.        \n\
remote: Total 5 (delta 0), reused 0 (delta 0), pack-reused 0        \n\
Receiving objects:  60% (3/5)\rReceiving objects: 100% (5/5), done.\n\
error: cannot lock ref 'refs/loopx/fetching/x': is at 1 but expected 2\n"
                .to_vec(),
        };
        assert_eq!(
            network_error(&out).stderr,
            "cannot lock ref 'refs/loopx/fetching/x': is at 1 but expected 2"
        );
        // Without meters, as before.
        let out = std::process::Output {
            stderr: b"fatal: 'x' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure\n".to_vec(),
            ..out
        };
        assert_eq!(
            network_error(&out).stderr,
            "'x' does not appear to be a git repository; Could not read from remote repository"
        );
    }
}
