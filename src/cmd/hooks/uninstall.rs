//! `loopx hooks uninstall`: take out exactly what `hooks install` put in,
//! restoring a file's original bytes when nothing else changed since.

use std::path::Path;

use anyhow::{Context, Result};

use super::install::report;
use super::{
    Change, GIT_HOOKS, GIT_MARKER, HookFile, Scope, Shape, backup_path, base, git_hooks_dir,
    hollow, hook_file, is_loopx_server, pretty, prune_dirs, read_json, remove_owned, shown,
    write_atomic,
};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::hook::Runtime;

/// Take loopx's hooks out of the runtimes' settings and git's hooks directory
///
/// Removes only what loopx owns (hooks that run `loopx hook`, the `loopx`
/// MCP server, the Cursor rule, the git shims, whose chained hooks are put
/// back). A file whose only change was loopx's gets its original bytes back
/// from `<file>.loopx-backup`; a file loopx created is removed.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: super::Target,
    /// Accepted as install takes it: uninstall removes the tool guard in any case
    #[arg(long)]
    pub guard: bool,
    /// Accepted as install takes it: uninstall removes Codex's `loopx mcp` entry in any case
    #[arg(long)]
    pub mcp: bool,
    /// Say what would change, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    // Everything loopx owns goes, whichever install flags put it there.
    let _ = (args.guard, args.mcp);
    let base = base(ctx, args.target.scope)?;
    let mut changes = Vec::new();
    for runtime in args.target.runtime.runtimes() {
        if let Some(file) = hook_file(runtime, &base) {
            changes.push(uninstall_json(&file, &base, args.dry_run)?);
        }
        match runtime {
            Runtime::Codex => {
                let path = base.join(".codex/config.toml");
                if let Some(c) = uninstall_mcp(&path, &base, args.dry_run)? {
                    changes.push(c);
                }
            }
            Runtime::Cursor => {
                let path = base.join(".cursor/rules/loopx.mdc");
                if let Some(c) = uninstall_file(runtime, &path, &base, args.dry_run)? {
                    changes.push(c);
                }
            }
            Runtime::OpenCode => {
                let path = super::plugin_path(runtime, &base, args.target.scope)
                    .expect("OpenCode has a plugin");
                let ours = std::fs::read_to_string(&path)
                    .is_ok_and(|t| super::opencode_program(&t).is_some());
                if ours && let Some(c) = uninstall_file(runtime, &path, &base, args.dry_run)? {
                    changes.push(c);
                }
            }
            Runtime::Pi => {
                let path =
                    super::plugin_path(runtime, &base, args.target.scope).expect("Pi has a plugin");
                let ours =
                    std::fs::read_to_string(&path).is_ok_and(|t| super::pi_program(&t).is_some());
                if ours && let Some(c) = uninstall_file(runtime, &path, &base, args.dry_run)? {
                    changes.push(c);
                }
            }
            Runtime::Git if args.target.scope == Scope::Project => {
                changes.extend(uninstall_git(ctx, &base, args.dry_run)?);
            }
            _ => {}
        }
    }
    report(ctx, args.target.scope, args.dry_run, &changes)?;
    Ok(Exit::Ok)
}

/// Puts the file back as it was before loopx touched it: the backup's
/// bytes when `equal` says that only loopx's entries differ from them;
/// else `rest` (the file without loopx's entries); else, when nothing but
/// loopx's was in it (`empty`) and there is no backup, removes the file.
/// A backup that holds loopx's own entries (made by an older loopx on a
/// second install) is never put back: it is dropped.
fn put_back(
    path: &Path,
    base: &Path,
    equal: impl FnOnce(&[u8]) -> Option<bool>,
    rest: &[u8],
    empty: bool,
    dry_run: bool,
) -> Result<&'static str> {
    let backup = backup_path(path);
    let verdict = std::fs::read(&backup).ok().map(|original| {
        let same = equal(&original);
        (original, same)
    });
    let drop_backup = |dry_run: bool| -> Result<()> {
        if !dry_run && backup.exists() {
            std::fs::remove_file(&backup)
                .with_context(|| format!("removing {}", backup.display()))?;
        }
        Ok(())
    };
    match verdict {
        Some((original, Some(true))) => {
            if !dry_run {
                write_atomic(path, &original)?;
            }
            drop_backup(dry_run)?;
            Ok("restored")
        }
        Some((_, Some(false))) => {
            if !dry_run {
                write_atomic(path, rest)?;
            }
            Ok("updated")
        }
        // No backup, or one that holds loopx's own entries.
        stale => {
            if stale.is_some() {
                drop_backup(dry_run)?;
            }
            if empty {
                if !dry_run {
                    std::fs::remove_file(path)
                        .with_context(|| format!("removing {}", path.display()))?;
                    if let Some(dir) = path.parent() {
                        prune_dirs(dir, base);
                    }
                }
                Ok("removed")
            } else {
                if !dry_run {
                    write_atomic(path, rest)?;
                }
                Ok("updated")
            }
        }
    }
}

fn uninstall_json(file: &HookFile, base: &Path, dry_run: bool) -> Result<Change> {
    let mut change = Change {
        runtime: file.runtime.as_str(),
        file: shown(&file.path, base),
        action: "absent",
        note: None,
    };
    let Some((_, mut doc)) = read_json(&file.path)? else {
        return Ok(change);
    };
    change.action = "unchanged";
    if !remove_owned(&mut doc, file.shape, None) {
        return Ok(change);
    }
    // Cursor's `version` is added by install when missing: not the user's.
    let comparable = |v: &serde_json::Value| {
        let mut h = hollow(v);
        if file.shape == Shape::Flat
            && let Some(m) = h.as_object_mut()
        {
            m.remove("version");
        }
        h
    };
    let now = comparable(&doc);
    let empty = now == serde_json::json!({});
    change.action = put_back(
        &file.path,
        base,
        |original| {
            if original.iter().all(u8::is_ascii_whitespace) {
                return Some(empty);
            }
            let mut o = serde_json::from_slice::<serde_json::Value>(original).ok()?;
            if remove_owned(&mut o, file.shape, None) {
                return None;
            }
            Some(comparable(&o) == now)
        },
        &pretty(&doc)?,
        empty,
        dry_run,
    )?;
    Ok(change)
}

fn uninstall_mcp(path: &Path, base: &Path, dry_run: bool) -> Result<Option<Change>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    let Ok(mut doc) = text.parse::<toml_edit::DocumentMut>() else {
        return Ok(None);
    };
    let Some(servers) = doc.get_mut("mcp_servers").and_then(|i| i.as_table_mut()) else {
        return Ok(None);
    };
    if !servers.get("loopx").is_some_and(is_loopx_server) {
        return Ok(None);
    }
    servers.remove("loopx");
    if servers.is_empty() {
        doc.remove("mcp_servers");
    }
    let now: Option<toml::Table> = doc.to_string().parse().ok();
    let action = put_back(
        path,
        base,
        |original| {
            let original = std::str::from_utf8(original).ok()?;
            let edit = original.parse::<toml_edit::DocumentMut>().ok()?;
            if edit
                .get("mcp_servers")
                .and_then(|m| m.get("loopx"))
                .is_some_and(is_loopx_server)
            {
                return None;
            }
            Some(original.parse::<toml::Table>().ok() == now)
        },
        doc.to_string().as_bytes(),
        doc.is_empty(),
        dry_run,
    )?;
    Ok(Some(Change {
        runtime: "codex",
        file: shown(path, base),
        action,
        note: None,
    }))
}

fn uninstall_file(
    runtime: Runtime,
    path: &Path,
    base: &Path,
    dry_run: bool,
) -> Result<Option<Change>> {
    if !path.exists() {
        return Ok(None);
    }
    let action = put_back(path, base, |_| Some(true), b"", true, dry_run)?;
    Ok(Some(Change {
        runtime: runtime.as_str(),
        file: shown(path, base),
        action,
        note: None,
    }))
}

fn uninstall_git(ctx: &Ctx, base: &Path, dry_run: bool) -> Result<Vec<Change>> {
    let dir = git_hooks_dir(ctx)?;
    let mut changes = Vec::new();
    for (name, _) in GIT_HOOKS {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut change = Change {
            runtime: "git",
            file: shown(&path, base),
            action: "unchanged",
            note: None,
        };
        if !String::from_utf8_lossy(&bytes).contains(GIT_MARKER) {
            change.note = Some("not loopx's; left alone".to_owned());
            changes.push(change);
            continue;
        }
        let backup = backup_path(&path);
        change.action = if backup.exists() {
            "restored"
        } else {
            "removed"
        };
        if !dry_run {
            if backup.exists() {
                std::fs::rename(&backup, &path)
                    .with_context(|| format!("putting {} back", backup.display()))?;
            } else {
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
            }
        }
        changes.push(change);
    }
    Ok(changes)
}
