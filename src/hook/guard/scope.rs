//! The write-scope check: an edit or write tool of an agent whose claim
//! owns a linked worktree must name a file in that worktree, not in the
//! main checkout or another claim's worktree, even by absolute path. Pure:
//! the caller reads the worktrees and the checkout.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute against `cwd` and with `.` and `..` folded, without
/// touching the filesystem (the file may not exist yet).
pub fn absolute(path: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    let p = Path::new(path);
    let joined = match (p.is_absolute(), cwd) {
        (true, _) => p.to_path_buf(),
        (false, Some(c)) => c.join(p),
        (false, None) => return None,
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Why the tool call must not run, or None: each of `paths` (as the tool
/// gives them, relative ones against `cwd`) lies in one of `own` (the
/// agent's worktrees), or in neither the main checkout `checkout` nor any
/// of `others` (other claims' worktrees). Says where to edit instead.
pub fn check(
    paths: &[String],
    cwd: Option<&Path>,
    own: &[PathBuf],
    others: &[PathBuf],
    checkout: &Path,
) -> Option<String> {
    let mine = own.first()?;
    for raw in paths {
        let Some(p) = absolute(raw, cwd) else {
            continue;
        };
        if own.iter().any(|w| p.starts_with(w)) {
            continue;
        }
        if let Some(w) = others.iter().find(|w| p.starts_with(w)) {
            return Some(format!(
                "loopx: {} is in another claim's worktree ({}); your claim works in {}: edit files only under it.",
                p.display(),
                w.display(),
                mine.display()
            ));
        }
        if let Ok(rel) = p.strip_prefix(checkout) {
            return Some(format!(
                "loopx: {} is in the main checkout, which other sessions share; your claim works in its worktree {}: edit {} instead.",
                p.display(),
                mine.display(),
                mine.join(rel).display()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_outside_the_claims_worktree_in_a_checkout_is_refused_by_absolute_path() {
        let own = [PathBuf::from("/r.trees/t-1")];
        let others = [PathBuf::from("/r.trees/t-2")];
        let main = Path::new("/r");
        let at = |p: &str| check(&[p.to_owned()], Some(Path::new("/r")), &own, &others, main);
        assert_eq!(at("/r.trees/t-1/src/a.rs"), None);
        assert_eq!(at("/tmp/notes.txt"), None, "outside every checkout");
        let denied = at("/r/src/a.rs").expect("the main checkout");
        assert!(
            denied.contains("edit /r.trees/t-1/src/a.rs instead"),
            "{denied}"
        );
        assert!(at("/r.trees/t-2/x").is_some(), "another claim's worktree");
        assert!(at("src/a.rs").is_some(), "relative to the main checkout");
        assert!(
            at("/r.trees/t-1/../../r/src/a.rs").is_some(),
            "dots are folded"
        );
        assert_eq!(
            check(&["/r/a".to_owned()], None, &[], &others, main),
            None,
            "no worktree of its own: nothing to check"
        );
    }
}
