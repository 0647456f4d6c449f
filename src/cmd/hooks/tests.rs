//! Every runtime of the table, installed and taken out again through the
//! table alone: in a temporary project and a temporary home, into nothing
//! and over the user's own files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Place, Scope, Target, Which, doctor, install, uninstall};
use crate::ctx::Env;
use crate::hook::Runtime;

/// Every file below `dir`, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// Each file the table says the runtime's hooks live in at `place`, with
/// something of the user's in it: what install keeps and uninstall puts
/// back.
fn users_files(place: &Place, runtime: Runtime) -> Vec<(PathBuf, &'static str)> {
    let spec = runtime.spec();
    let base = &place.base;
    let mut out = Vec::new();
    if let Some(s) = spec.settings {
        out.push((base.join(s.path), "{\"model\": \"mine\"}\n"));
    }
    if let Some(m) = spec.mcp {
        out.push((base.join(m.path), "model = \"mine\"\n"));
    }
    if let Some(r) = spec.rule.filter(|_| place.scope == Scope::Project) {
        out.push((base.join(r.path), "my own rule\n"));
    }
    if let Some(p) = &spec.plugin {
        out.push((place.plugin(p), "// my own plugin\n"));
    }
    if let Some(dir) = &place.git_hooks {
        for (name, _) in spec.shims {
            out.push((dir.join(name), "#!/bin/sh\necho mine\n"));
        }
    }
    out
}

fn write_executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn every_runtime_in_the_table_installs_and_uninstalls_cleanly() {
    // No PATH (no npm run), no HOME, no runtime config folder.
    let env = Env::default();
    // An executable that is there, as doctor checks.
    let program = std::env::current_exe().unwrap().display().to_string();
    for runtime in Runtime::HOOKED {
        for scope in [Scope::Project, Scope::User] {
            for seeded in [false, true] {
                let what = format!("{runtime:?} in {scope:?} scope, seeded: {seeded}");
                let dir = tempfile::tempdir().unwrap();
                let place = Place {
                    scope,
                    base: dir.path().to_path_buf(),
                    git_hooks: (scope == Scope::Project).then(|| dir.path().join(".git/hooks")),
                    env: &env,
                };
                if seeded {
                    for (path, text) in users_files(&place, runtime) {
                        write_executable(&path, text);
                    }
                }
                let before = files(dir.path());
                let args = install::Args {
                    target: Target {
                        runtime: Which(Some(runtime)),
                        scope,
                    },
                    guard: true,
                    mcp: true,
                    program: None,
                    dry_run: false,
                };
                let changes = install::install(&place, &[runtime], &args, &program).unwrap();
                // git's hooks belong to a repository: skipped in user scope.
                let expected = !(runtime == Runtime::Git && scope == Scope::User);
                let wrote = changes
                    .iter()
                    .any(|c| ["created", "updated"].contains(&c.action));
                assert_eq!(wrote, expected, "{what}: {changes:?}");
                let installed = files(dir.path());
                assert_eq!(installed != before, expected, "{what}");
                // What the user had is kept beside loopx's entries.
                for (path, text) in users_files(&place, runtime).iter().filter(|_| seeded) {
                    let now = std::fs::read_to_string(path).unwrap();
                    let backup = std::fs::read_to_string(super::backup_path(path));
                    let kept = now.contains(text.trim())
                        || now.contains("mine")
                        || backup.is_ok_and(|b| b == *text);
                    assert!(kept, "{what}: {} lost the user's: {now}", path.display());
                }
                // Doctor sees it wired, and nothing wrong.
                for c in doctor::checks(&place, &[runtime]) {
                    assert!(c.problems.is_empty(), "{what}: {:?}", c.problems);
                    assert_eq!(
                        c.status,
                        if expected { "wired" } else { "absent" },
                        "{what}"
                    );
                }
                // Again: nothing changes.
                let again = install::install(&place, &[runtime], &args, &program).unwrap();
                assert!(
                    again
                        .iter()
                        .all(|c| ["unchanged", "skipped"].contains(&c.action)),
                    "{what}: {again:?}"
                );
                assert_eq!(files(dir.path()), installed, "{what}");
                // Out again: the folder is as it was, byte for byte.
                uninstall::uninstall(&place, &[runtime], false).unwrap();
                assert_eq!(files(dir.path()), before, "{what}");
                // (A file of the user's at the plugin's path is doctor's
                // problem: it is not loopx's.)
                for c in doctor::checks(&place, &[runtime]) {
                    assert_ne!(c.status, "wired", "{what}");
                }
                let twice = uninstall::uninstall(&place, &[runtime], false).unwrap();
                assert!(
                    twice
                        .iter()
                        .all(|c| ["absent", "unchanged"].contains(&c.action)),
                    "{what}: {twice:?}"
                );
            }
        }
    }
}
