//! `loopx hooks uninstall`: take out exactly what `hooks install` put in,
//! restoring a file's original bytes when nothing else changed since.

use std::path::Path;

use anyhow::{Context, Result};

use super::install::report;
use super::{
    Change, GIT_HOOKS, GIT_MARKER, HookFile, Scope, Which, backup_path, base, git_hooks_dir,
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
    /// Which runtime to unwire
    #[arg(long, value_enum, value_name = "RUNTIME", default_value = "all")]
    pub runtime: Which,
    /// project (this repository) or user (the home directory)
    #[arg(long, value_enum, value_name = "SCOPE", default_value = "project")]
    pub scope: Scope,
    /// Say what would change, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let base = base(ctx, args.scope)?;
    let mut changes = Vec::new();
    for runtime in args.runtime.runtimes() {
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
            Runtime::Git if args.scope == Scope::Project => {
                changes.extend(uninstall_git(ctx, &base, args.dry_run)?);
            }
            _ => {}
        }
    }
    report(ctx, args.scope, args.dry_run, &changes)?;
    Ok(Exit::Ok)
}

/// Puts the backup's bytes back when `equal` says only loopx's change
/// differs, else writes `rest`; removes a file loopx created when nothing
/// else is in it.
fn put_back(
    path: &Path,
    base: &Path,
    equal: impl FnOnce(&[u8]) -> bool,
    rest: Option<Vec<u8>>,
    dry_run: bool,
) -> Result<&'static str> {
    let backup = backup_path(path);
    match std::fs::read(&backup) {
        Ok(original) if equal(&original) => {
            if !dry_run {
                write_atomic(path, &original)?;
                std::fs::remove_file(&backup)
                    .with_context(|| format!("removing {}", backup.display()))?;
            }
            Ok("restored")
        }
        Ok(_) => {
            if !dry_run && let Some(bytes) = rest {
                write_atomic(path, &bytes)?;
            }
            Ok("updated")
        }
        Err(_) => match rest {
            Some(bytes) => {
                if !dry_run {
                    write_atomic(path, &bytes)?;
                }
                Ok("updated")
            }
            None => {
                if !dry_run {
                    std::fs::remove_file(path)
                        .with_context(|| format!("removing {}", path.display()))?;
                    if let Some(dir) = path.parent() {
                        prune_dirs(dir, base);
                    }
                }
                Ok("removed")
            }
        },
    }
}

fn uninstall_json(file: &HookFile, base: &Path, dry_run: bool) -> Result<Change> {
    let mut change = Change {
        runtime: file.runtime.as_str(),
        file: shown(&file.path, base),
        action: "unchanged",
        note: None,
    };
    let Some((_, mut doc)) = read_json(&file.path)? else {
        return Ok(change);
    };
    if !remove_owned(&mut doc, file.shape, None) {
        return Ok(change);
    }
    let now = hollow(&doc);
    let rest = (now != serde_json::json!({}))
        .then(|| pretty(&doc))
        .transpose()?;
    change.action = put_back(
        &file.path,
        base,
        |original| {
            serde_json::from_slice::<serde_json::Value>(original).is_ok_and(|o| hollow(&o) == now)
                || (original.iter().all(u8::is_ascii_whitespace) && now == serde_json::json!({}))
        },
        rest,
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
    let rest = (!doc.is_empty()).then(|| doc.to_string().into_bytes());
    let action = put_back(
        path,
        base,
        |original| {
            std::str::from_utf8(original)
                .ok()
                .and_then(|s| s.parse::<toml::Table>().ok())
                == now
        },
        rest,
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
    let action = put_back(path, base, |_| true, None, dry_run)?;
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
