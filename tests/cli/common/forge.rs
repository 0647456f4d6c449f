//! Forging commits onto a machine's state ref with git plumbing only
//! (`hash-object`, `read-tree`/`update-index`/`write-tree`, `commit-tree`,
//! `update-ref`), as someone bypassing loopx would.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{Machine, isolate};

/// A commit's parts, as read back or to be written.
#[derive(Clone, Debug)]
pub struct Parts {
    pub tree: String,
    pub parent: Option<String>,
    pub message: String,
    pub author: (String, String),
    /// git's raw date: `<unix seconds> +0000`.
    pub date: String,
}

/// Runs git in `m`'s repository with extra environment and stdin; returns
/// stdout bytes, panicking on failure.
pub fn git_raw(m: &Machine, args: &[&str], envs: &[(&str, &str)], stdin: &[u8]) -> Vec<u8> {
    let mut c = Command::new("git");
    isolate(
        &mut c,
        m.repo.parent().expect("machines live in the temp dir"),
    );
    c.args(args)
        .current_dir(&m.repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("git runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let out = child.wait_with_output().expect("git finishes");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn git(m: &Machine, args: &[&str]) -> String {
    String::from_utf8_lossy(&git_raw(m, args, &[], b""))
        .trim()
        .to_owned()
}

/// Reads a commit's parts.
pub fn read(m: &Machine, rev: &str) -> Parts {
    let field = |f: &str| git(m, &["log", "-1", &format!("--format={f}"), rev]);
    let parent = field("%P");
    let message = String::from_utf8_lossy(&git_raw(m, &["cat-file", "commit", rev], &[], b""))
        .split_once("\n\n")
        .map(|(_, msg)| msg.to_owned())
        .unwrap_or_default();
    Parts {
        tree: field("%T"),
        parent: (!parent.is_empty()).then_some(parent),
        message,
        author: (field("%an"), field("%ae")),
        date: git(m, &["log", "-1", "--date=raw", "--format=%ad", rev]),
    }
}

/// Writes a commit from its parts; returns its id.
pub fn write(m: &Machine, p: &Parts) -> String {
    let mut args = vec!["commit-tree", p.tree.as_str()];
    if let Some(parent) = &p.parent {
        args.extend(["-p", parent.as_str()]);
    }
    let envs = [
        ("GIT_AUTHOR_NAME", p.author.0.as_str()),
        ("GIT_AUTHOR_EMAIL", p.author.1.as_str()),
        ("GIT_AUTHOR_DATE", p.date.as_str()),
        ("GIT_COMMITTER_NAME", "Forger"),
        ("GIT_COMMITTER_EMAIL", "forger@example.com"),
        ("GIT_COMMITTER_DATE", p.date.as_str()),
    ];
    // commit-tree reads the message from stdin verbatim.
    String::from_utf8_lossy(&git_raw(m, &args, &envs, p.message.as_bytes()))
        .trim()
        .to_owned()
}

/// The tree `base` with files written (`Some`) or removed (`None`).
pub fn tree_with(m: &Machine, base: &str, edits: &[(&str, Option<&[u8]>)]) -> String {
    let index = m.repo.join(".git").join("forge-index");
    let index = index.to_str().expect("utf-8 path").to_owned();
    let envs = [("GIT_INDEX_FILE", index.as_str())];
    git_raw(m, &["read-tree", base], &envs, b"");
    for (path, bytes) in edits {
        match bytes {
            Some(bytes) => {
                let blob = String::from_utf8_lossy(&git_raw(
                    m,
                    &["hash-object", "-w", "--stdin"],
                    &[],
                    bytes,
                ))
                .trim()
                .to_owned();
                git_raw(
                    m,
                    &[
                        "update-index",
                        "--add",
                        "--cacheinfo",
                        &format!("100644,{blob},{path}"),
                    ],
                    &envs,
                    b"",
                );
            }
            None => {
                git_raw(m, &["update-index", "--force-remove", path], &envs, b"");
            }
        }
    }
    String::from_utf8_lossy(&git_raw(m, &["write-tree"], &envs, b""))
        .trim()
        .to_owned()
}

/// Replaces the machine's tip (an honest tick) by a forgery of it: the same
/// parent, author and date, with `edit` applied to its parts. Returns the
/// forged commit, now the tip of the machine's state ref.
pub fn amend_tip(m: &Machine, edit: impl FnOnce(&Machine, &mut Parts)) -> String {
    let mut parts = read(m, "refs/loopx/state");
    edit(m, &mut parts);
    let forged = write(m, &parts);
    git(m, &["update-ref", "refs/loopx/state", &forged]);
    forged
}

/// The raw bytes of a file at `rev`.
pub fn file(m: &Machine, rev: &str, path: &str) -> Vec<u8> {
    git_raw(m, &["cat-file", "blob", &format!("{rev}:{path}")], &[], b"")
}

/// The path of the first file under `dir` at `rev`.
pub fn path_under(m: &Machine, rev: &str, dir: &str) -> String {
    git(m, &["ls-tree", "-r", "--name-only", rev, dir])
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no file under {dir} at {rev}"))
        .to_owned()
}

/// A tree with the same entries as `tree` in reverse order, written as it
/// is (`git fsck` flags it: entries out of order).
pub fn reversed_tree(m: &Machine, tree: &str) -> String {
    let raw = git_raw(m, &["cat-file", "tree", tree], &[], b"");
    // Entries: "<mode> <name>\0<20 bytes>".
    let mut entries = Vec::new();
    let mut rest = raw.as_slice();
    while !rest.is_empty() {
        let nul = rest.iter().position(|b| *b == 0).expect("an entry name");
        let len = nul + 1 + 20;
        entries.push(rest[..len].to_vec());
        rest = &rest[len..];
    }
    entries.reverse();
    let bytes: Vec<u8> = entries.concat();
    String::from_utf8_lossy(&git_raw(
        m,
        &["hash-object", "-t", "tree", "--literally", "-w", "--stdin"],
        &[],
        &bytes,
    ))
    .trim()
    .to_owned()
}

/// Runs `git push` and returns whether it was accepted, with its stderr.
/// (A guarded hub's hook drops the pusher's `LOOPX_NOW` and judges by the
/// system clock: the tests' ticks are in its past.)
pub fn push(m: &Machine, remote: &str, refspec: &str) -> (bool, String) {
    push_all(m, remote, &[refspec])
}

/// [`push`] of several refspecs in one `git push`.
pub fn push_all(m: &Machine, remote: &str, refspecs: &[&str]) -> (bool, String) {
    let mut c = Command::new("git");
    isolate(
        &mut c,
        m.repo.parent().expect("machines live in the temp dir"),
    );
    let out = c
        .args(["push", remote])
        .args(refspecs)
        .current_dir(&m.repo)
        .output()
        .expect("git runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Moves a ref of a bare repository (a hub) with plain git.
pub fn set_hub_ref(hub: &Path, name: &str, commit: &str) {
    super::git_in(hub, &["update-ref", name, commit]);
}

/// The tick number in a message, replaced by `tick`.
pub fn renumber(message: &str, tick: usize) -> String {
    message
        .lines()
        .map(|l| {
            if l.starts_with("Loopx-Tick: ") {
                format!("Loopx-Tick: {tick}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The next tick on top of `onto`, forged with plumbing: `template`'s
/// message (renumbered as the tick after `onto`), author and date, and
/// `onto`'s files with `edits` written or removed. Returns its id; no ref
/// moves.
pub fn tick_on(
    m: &Machine,
    onto: &str,
    template: &Parts,
    edits: &[(&str, Option<&[u8]>)],
) -> String {
    let base = read(m, onto);
    let ticks: usize = git(m, &["rev-list", "--count", onto]).parse().unwrap();
    write(
        m,
        &Parts {
            tree: tree_with(m, &base.tree, edits),
            parent: Some(onto.to_owned()),
            message: renumber(&template.message, ticks + 1) + "\n",
            author: template.author.clone(),
            date: template.date.clone(),
        },
    )
}

/// The tick `forged` (written on another base) moved onto `onto` with
/// plumbing: the same files it changed, the same message with the next tick
/// number, the same author and date. A signature binds the op, the files'
/// prior contents and the state, not the parent, so it survives the move.
pub fn replant(m: &Machine, forged: &str, onto: &str) -> String {
    let parts = read(m, forged);
    let changed = m.git(&[
        "diff-tree",
        "--no-commit-id",
        "--name-status",
        "-r",
        &format!("{forged}^"),
        forged,
    ]);
    let mut edits: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    for line in changed.lines() {
        let (status, path) = line.split_once('\t').expect("status and path");
        let bytes = (status != "D").then(|| file(m, forged, path));
        edits.push((path.to_owned(), bytes));
    }
    let refs: Vec<(&str, Option<&[u8]>)> = edits
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_deref()))
        .collect();
    tick_on(m, onto, &parts, &refs)
}

/// The tip amended with plumbing to say it was made at `secs` (its op's
/// `at` and its commit dates): a tick from the future, which LOOPX_NOW can
/// no longer make.
pub fn redate_tip(m: &Machine, secs: i64) {
    amend_tip(m, |_, p| {
        let at = p
            .message
            .lines()
            .find(|l| l.starts_with("at = \""))
            .expect("the op's time")
            .to_owned();
        p.message = p
            .message
            .replace(&at, &format!("at = \"{}\"", super::rfc3339(secs)));
        p.date = format!("{secs} +0000");
    });
}
