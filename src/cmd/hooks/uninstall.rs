//! `loopx hooks uninstall`: take out exactly what `hooks install` put in,
//! restoring a file's original bytes when nothing else changed since.

use std::path::Path;

use anyhow::{Context, Result};

use super::install::report;
use super::{
    Change, GIT_MARKER, HookFile, Place, Scope, Shape, backup_path, hollow, hook_file,
    is_loopx_server, pretty, prune_dirs, read_json, remove_owned, write_atomic,
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
    let place = Place::of(ctx, args.target.scope)?;
    let changes = uninstall(&place, &args.target.runtime.runtimes(), args.dry_run)?;
    report(ctx, args.target.scope, args.dry_run, &changes)?;
    Ok(Exit::Ok)
}

/// Takes the hooks of `runtimes` out at `place`; what changed, file by
/// file.
pub fn uninstall(place: &Place, runtimes: &[Runtime], dry_run: bool) -> Result<Vec<Change>> {
    let base = &place.base;
    let mut changes = Vec::new();
    for &runtime in runtimes {
        let spec = runtime.spec();
        if let Some(file) = hook_file(runtime, base) {
            changes.push(uninstall_json(&file, base, dry_run)?);
        }
        if let Some(mcp) = spec.mcp {
            let path = base.join(mcp.path);
            changes.extend(uninstall_mcp(runtime, &path, base, dry_run)?);
        }
        if let Some(rule) = spec.rule.filter(|_| place.scope == Scope::Project) {
            let path = base.join(rule.path);
            changes.extend(uninstall_file(runtime, rule.marker, &path, base, dry_run)?);
        }
        if let Some(plugin) = &spec.plugin {
            let path = place.plugin(plugin);
            changes.extend(uninstall_file(
                runtime,
                plugin.marker,
                &path,
                base,
                dry_run,
            )?);
        }
        if let Some(dir) = place
            .git_hooks
            .as_deref()
            .filter(|_| !spec.shims.is_empty())
        {
            changes.extend(uninstall_git(dir, runtime, base, dry_run)?);
        }
    }
    Ok(changes)
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
    let mut change = Change::unchanged(file.runtime, &file.path, base);
    let Some((_, mut doc)) = read_json(&file.path)? else {
        change.action = "absent";
        return Ok(change);
    };
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

/// Takes `loopx mcp` out of the runtime's TOML config (Codex's
/// `mcp_servers.loopx`).
fn uninstall_mcp(
    runtime: Runtime,
    path: &Path,
    base: &Path,
    dry_run: bool,
) -> Result<Option<Change>> {
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
        action,
        ..Change::unchanged(runtime, path, base)
    }))
}

/// A whole file loopx owns (the Cursor rule, OpenCode's plugin, Pi's
/// extension), when it is loopx's: it starts with `marker`.
fn uninstall_file(
    runtime: Runtime,
    marker: &str,
    path: &Path,
    base: &Path,
    dry_run: bool,
) -> Result<Option<Change>> {
    let ours = std::fs::read(path).is_ok_and(|b| b.starts_with(marker.as_bytes()));
    if !ours {
        return Ok(None);
    }
    let action = put_back(path, base, |_| Some(true), b"", true, dry_run)?;
    Ok(Some(Change {
        action,
        ..Change::unchanged(runtime, path, base)
    }))
}

fn uninstall_git(dir: &Path, runtime: Runtime, base: &Path, dry_run: bool) -> Result<Vec<Change>> {
    let mut changes = Vec::new();
    for (name, _) in runtime.spec().shims {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut change = Change::unchanged(runtime, &path, base);
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
