//! Linked worktrees a claim owns (`git worktree`): adding one on a new
//! branch, listing the files not yet committed in it, removing it once it
//! is clean, pruning those deleted by hand. loopx runs these only on its
//! own worktrees and their branches (docs/format.md says which).

use super::*;

/// The main worktree of the repository whose working tree (main or
/// linked) is `dir`: the first one `git worktree list` names.
pub fn main_worktree(dir: &Path) -> Result<std::path::PathBuf> {
    let args = ["worktree", "list", "--porcelain", "-z"];
    let listed = stdout_of(command_in(dir, &args), &args)?;
    listed
        .split('\0')
        .find_map(|l| l.strip_prefix("worktree "))
        .map(std::path::PathBuf::from)
        .context("git worktree list named no worktree")
}

/// Whether the branch `refs/heads/NAME` exists.
pub fn branch_exists(dir: &Path, name: &str) -> bool {
    let refname = format!("refs/heads/{name}");
    command_in(dir, &["rev-parse", "--verify", "--quiet", &refname])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Adds a linked worktree at `path` on a new branch `branch` that starts
/// at the commit `dir`'s HEAD names. git refuses when the branch exists or
/// the path is not empty: nothing is reset or overwritten.
pub fn add(dir: &Path, path: &Path, branch: &str) -> Result<()> {
    let path = path.to_string_lossy();
    let args = ["worktree", "add", "--quiet", "-b", branch, &path, "HEAD"];
    stdout_of(command_in(dir, &args), &args).map(drop)
}

/// The files of the worktree at `path` that are not committed: modified,
/// staged, deleted or untracked (ignored files do not count), as `git
/// status` names them.
pub fn uncommitted(path: &Path) -> Result<Vec<String>> {
    let args = [
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignore-submodules=none",
    ];
    let out = stdout_of(command_in(path, &args), &args)?;
    let mut files = Vec::new();
    let mut entries = out.split('\0').filter(|e| !e.is_empty());
    while let Some(e) = entries.next() {
        let (code, name) = e.split_at(e.len().min(3));
        files.push(name.to_owned());
        // A rename or copy names its source next.
        if code.starts_with('R') || code.starts_with('C') {
            entries.next();
        }
    }
    Ok(files)
}

/// Removes the linked worktree at `path` (its branch stays). git itself
/// refuses a worktree with uncommitted or untracked files: there is no
/// `--force` here.
pub fn remove(dir: &Path, path: &Path) -> Result<()> {
    let path = path.to_string_lossy();
    let args = ["worktree", "remove", &path];
    stdout_of(command_in(dir, &args), &args).map(drop)
}

/// Forgets the worktrees whose folders were deleted by hand (`git worktree
/// prune`); their branches stay.
pub fn prune(dir: &Path) -> Result<()> {
    let args = ["worktree", "prune"];
    stdout_of(command_in(dir, &args), &args).map(drop)
}
