//! `loopx hooks install`: merge loopx's hooks into each runtime's settings
//! and git's hooks directory, idempotently, backing files up on first touch.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::{
    Change, GIT_MARKER, HookFile, Place, Scope, backup_path, hook_file, merge, plugin_text, pretty,
    read_json, shown, write_atomic,
};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::hook::Runtime;
use crate::model::runtime::Mcp;

/// Wire agent runtimes (and git) to loopx: merge its hooks into their settings
///
/// Merges structurally (JSON and TOML are parsed, never appended to), keeps
/// everything that is not loopx's, backs a file up as `<file>.loopx-backup`
/// the first time it changes it, and prints what it changed. Running it
/// again changes nothing. Project scope writes .claude/settings.json,
/// .codex/hooks.json, .cursor/hooks.json (and an always-applied rule),
/// .gemini/settings.json, OpenCode's plugin, Pi's extension
/// (.pi/extensions/loopx.ts) and the git hooks (respecting core.hooksPath,
/// and chaining a hook already there); user scope the same files under
/// $HOME.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx hooks install                          every runtime, this project
  loopx hooks install --runtime claude-code --guard
  loopx hooks install --scope user --dry-run")]
pub struct Args {
    #[command(flatten)]
    pub target: super::Target,
    /// Also install the tool guard: deny shell commands an open human-only gate covers
    #[arg(long)]
    pub guard: bool,
    /// Also register `loopx mcp` as Codex's MCP server (config.toml)
    #[arg(long)]
    pub mcp: bool,
    /// The loopx the hooks run [default: this loopx's absolute path, so that
    /// a login shell's PATH cannot lose it]; `--program loopx` looks it up on
    /// PATH instead, for settings shared in the repository
    #[arg(long, value_name = "PATH")]
    pub program: Option<String>,
    /// Say what would change, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Serialize)]
struct Wire<'a> {
    scope: Scope,
    dry_run: bool,
    changes: &'a [Change],
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let place = Place::of(ctx, args.target.scope)?;
    let program = match &args.program {
        Some(p) => p.clone(),
        None => this_program(ctx)?,
    };
    let changes = install(&place, &args.target.runtime.runtimes(), args, &program)?;
    report(ctx, args.target.scope, args.dry_run, &changes)?;
    Ok(Exit::Ok)
}

/// Installs the hooks of `runtimes` at `place`, running `program`; what
/// changed, file by file.
pub fn install(
    place: &Place,
    runtimes: &[Runtime],
    args: &Args,
    program: &str,
) -> Result<Vec<Change>> {
    let (base, dry_run) = (&place.base, args.dry_run);
    let mut changes = Vec::new();
    for &runtime in runtimes {
        let spec = runtime.spec();
        if let Some(file) = hook_file(runtime, base) {
            let mut change = install_json(&file, base, args, program)?;
            if let Some(hint) = place.untrusted(runtime) {
                change.note = Some(match change.note {
                    Some(n) => format!("{n}; {hint}"),
                    None => hint,
                });
            }
            changes.push(change);
        }
        if let Some(mcp) = spec.mcp.filter(|_| args.mcp) {
            let path = base.join(mcp.path);
            changes.push(install_mcp(runtime, &mcp, &path, base, program, dry_run)?);
        }
        if let Some(rule) = spec.rule.filter(|_| place.scope == Scope::Project) {
            let path = base.join(rule.path);
            let marker = rule.marker;
            changes.push(install_file(
                runtime, marker, &path, base, rule.text, dry_run,
            )?);
        }
        if let Some(plugin) = &spec.plugin {
            let path = place.plugin(plugin);
            let text = plugin_text(plugin, program, args.guard);
            let marker = plugin.marker;
            changes.push(install_file(runtime, marker, &path, base, &text, dry_run)?);
            if let (Some(package), Some(folder), Some(bin)) = (
                plugin.dependency,
                path.parent().and_then(Path::parent),
                place.on_path(runtime.as_str()),
            ) {
                changes.push(dependency(runtime, package, &bin, folder, base, dry_run));
            }
        }
        if !spec.shims.is_empty() {
            changes.extend(install_git(place, runtime, dry_run)?);
        }
    }
    Ok(changes)
}

/// This loopx's absolute path: the `loopx` on PATH when it is this very
/// file (keeping a package manager's stable link), else the running binary.
fn this_program(ctx: &Ctx) -> Result<String> {
    let exe = std::env::current_exe().context("finding the loopx binary")?;
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    let on_path = std::env::split_paths(ctx.env.get("PATH").unwrap_or(""))
        .map(|d| d.join("loopx"))
        .find(|p| p.is_absolute() && std::fs::canonicalize(p).is_ok_and(|c| c == real));
    let path = on_path.unwrap_or(real);
    path.to_str().map(str::to_owned).ok_or_else(|| {
        Refusal::usage(
            Code::BadPath,
            format!("loopx's path {} is not valid UTF-8", path.display()),
        )
        .with_hint("pass --program with a path hooks can run")
        .into()
    })
}

/// Prints the changes, one line each.
pub fn report(ctx: &Ctx, scope: Scope, dry_run: bool, changes: &[Change]) -> Result<()> {
    let wire = Wire {
        scope,
        dry_run,
        changes,
    };
    ctx.out.emit(&wire, || {
        let mut s = String::new();
        for c in changes {
            let action = match c.action {
                "absent" => "nothing to remove".to_owned(),
                "unchanged" | "skipped" => c.action.to_owned(),
                a if dry_run => format!("would be {a}"),
                a => a.to_owned(),
            };
            s.push_str(&format!("{:<12} {}: {action}", c.runtime, c.file));
            if let Some(n) = &c.note {
                s.push_str(&format!(" ({n})"));
            }
            s.push('\n');
        }
        s
    })?;
    Ok(())
}

/// Backs `path` up unless a backup exists (the first touch's is the one
/// uninstall restores).
fn backup_once(path: &Path, bytes: &[u8]) -> Result<bool> {
    let backup = backup_path(path);
    if backup.exists() {
        return Ok(false);
    }
    std::fs::write(&backup, bytes).with_context(|| format!("writing {}", backup.display()))?;
    Ok(true)
}

fn install_json(file: &HookFile, base: &Path, args: &Args, program: &str) -> Result<Change> {
    let existing = read_json(&file.path)?;
    let mut doc = existing
        .as_ref()
        .map_or_else(|| serde_json::json!({}), |(_, v)| v.clone());
    merge(&mut doc, file, args.guard, program)?;
    let mut change = Change::unchanged(file.runtime, &file.path, base);
    if existing.as_ref().is_some_and(|(_, v)| *v == doc) {
        return Ok(change);
    }
    change.action = if existing.is_some() {
        "updated"
    } else {
        "created"
    };
    if args.dry_run {
        return Ok(change);
    }
    // Only the user's own file is backed up: one that already holds
    // loopx's entries (a second install) is not what uninstall restores.
    if let Some((bytes, v)) = &existing
        && !super::holds_owned(v, file.shape)
        && backup_once(&file.path, bytes)?
    {
        change.note = Some(format!("backup {}", shown(&backup_path(&file.path), base)));
    }
    write_atomic(&file.path, &pretty(&doc)?)?;
    Ok(change)
}

/// Registers `loopx mcp` in the runtime's TOML config (Codex's
/// `mcp_servers.loopx`).
fn install_mcp(
    runtime: Runtime,
    mcp: &Mcp,
    path: &Path,
    base: &Path,
    program: &str,
    dry_run: bool,
) -> Result<Change> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = old.as_deref().unwrap_or("").parse().map_err(|e| {
        Refusal::error(
            Code::BadSettings,
            format!("{} is not valid TOML: {e}", path.display()),
        )
        .with_hint("fix it and run the command again; nothing was changed")
    })?;
    let fragment: toml_edit::DocumentMut =
        mcp.fragment.parse().context("the built-in MCP fragment")?;
    let mut wanted = fragment["mcp_servers"]["loopx"].clone();
    // The template's comment is for people reading hooks/, not for the
    // user's file.
    if let Some(t) = wanted.as_table_mut() {
        t.decor_mut().clear();
        t.insert("command", toml_edit::value(program));
    }
    let mut change = Change::unchanged(runtime, path, base);
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| anyhow::anyhow!("mcp_servers in {} is not a table", path.display()))?;
    let same =
        |i: &toml_edit::Item| i.get("command").and_then(toml_edit::Item::as_str) == Some(program);
    if servers
        .get("loopx")
        .is_some_and(|i| super::is_loopx_server(i) && same(i))
    {
        return Ok(change);
    }
    let ours_already = servers.get("loopx").is_some_and(super::is_loopx_server);
    servers.insert("loopx", wanted);
    change.action = if old.is_some() { "updated" } else { "created" };
    if dry_run {
        return Ok(change);
    }
    if let Some(old) = &old
        && !ours_already
        && backup_once(path, old.as_bytes())?
    {
        change.note = Some(format!("backup {}", shown(&backup_path(path), base)));
    }
    write_atomic(path, doc.to_string().as_bytes())?;
    Ok(change)
}

/// A whole file loopx owns (the Cursor rule, OpenCode's plugin, Pi's
/// extension), a loopx's version of which starts with `marker`.
fn install_file(
    runtime: Runtime,
    marker: &str,
    path: &Path,
    base: &Path,
    text: &str,
    dry_run: bool,
) -> Result<Change> {
    let old = std::fs::read(path).ok();
    let mut change = Change::unchanged(runtime, path, base);
    if old.as_deref() == Some(text.as_bytes()) {
        return Ok(change);
    }
    change.action = if old.is_some() { "updated" } else { "created" };
    if dry_run {
        return Ok(change);
    }
    // Only the user's own file is backed up, not one of loopx's (a second
    // install), which uninstall would otherwise put back.
    let ours = |b: &[u8]| b.starts_with(marker.as_bytes());
    if let Some(old) = &old
        && !ours(old)
        && backup_once(path, old)?
    {
        change.note = Some(format!("backup {}", shown(&backup_path(path), base)));
    }
    write_atomic(path, text.as_bytes())?;
    Ok(change)
}

/// The git shims, chaining a hook that is already there; they belong to a
/// repository, so none in user scope.
fn install_git(place: &Place, runtime: Runtime, dry_run: bool) -> Result<Vec<Change>> {
    let (Some(dir), base) = (&place.git_hooks, &place.base) else {
        return Ok(vec![Change {
            runtime: runtime.as_str(),
            file: "-".to_owned(),
            action: "skipped",
            note: Some("git hooks belong to a repository: use --scope project".to_owned()),
        }]);
    };
    let mut changes = Vec::new();
    for (name, shim) in runtime.spec().shims {
        let path = dir.join(name);
        let backup = backup_path(&path);
        let old = std::fs::read(&path).ok();
        let mut change = Change::unchanged(runtime, &path, base);
        let ours = old
            .as_deref()
            .is_some_and(|b| String::from_utf8_lossy(b).contains(GIT_MARKER));
        match &old {
            Some(b) if b.as_slice() == shim.as_bytes() => {}
            Some(_) if !ours && backup.exists() => {
                change.action = "skipped";
                change.note = Some(format!(
                    "{} is not loopx's and {} already exists: move one of them away",
                    shown(&path, base),
                    shown(&backup, base)
                ));
            }
            Some(_) => {
                change.action = "updated";
                if !ours {
                    change.note = Some(format!(
                        "chains the hook that was there, kept as {}",
                        shown(&backup, base)
                    ));
                }
                if !dry_run {
                    if !ours {
                        std::fs::rename(&path, &backup)
                            .with_context(|| format!("moving {} aside", path.display()))?;
                    }
                    write_shim(&path, shim)?;
                }
            }
            None => {
                change.action = "created";
                if !dry_run {
                    write_shim(&path, shim)?;
                }
            }
        }
        changes.push(change);
    }
    Ok(changes)
}

fn write_shim(path: &Path, shim: &str) -> Result<()> {
    write_atomic(path, shim.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

/// OpenCode installs `@opencode-ai/plugin` (the plugin's `dependency`)
/// into each of its config folders (`.opencode`, `~/.config/opencode`) at
/// every start until a `node_modules` there lists it; offline that wait is
/// about 70 s. loopx's plugin does not import it, so installing it here
/// (where the runtime's `bin` is on PATH, with npm, from its cache first,
/// bounded) only spares the runtime the wait. Failing is a note that says
/// what to run, never an error.
fn dependency(
    runtime: Runtime,
    package: &str,
    bin: &Path,
    folder: &Path,
    base: &Path,
    dry_run: bool,
) -> Change {
    let installed = folder.join("node_modules").join(package);
    let mut change = Change::unchanged(runtime, &installed, base);
    if installed.is_dir() {
        return change;
    }
    let title = runtime.spec().title;
    let package = versioned(package, bin);
    let argv: Vec<String> = [
        "npm",
        "install",
        "--prefix",
        &folder.display().to_string(),
        "--no-audit",
        "--no-fund",
        "--silent",
        "--prefer-offline",
        &package,
    ]
    .map(str::to_owned)
    .to_vec();
    let command = crate::trust::validation::shell_words(&argv);
    if dry_run {
        change.action = "created";
        change.note = Some(format!("would run `{command}`"));
        return change;
    }
    let ran = crate::run::run(&argv, base, crate::time::Span::seconds(120));
    if ran.exit == Some(0) && installed.is_dir() {
        change.action = "created";
        change.note = Some(format!(
            "ran `{command}`, so {title} does not install it at every start"
        ));
    } else {
        change.action = "skipped";
        change.note = Some(format!(
            "{title} installs {package} here at start and waits about 70 s when offline; run `{command}` once (it failed here: {})",
            ran.error.clone().unwrap_or_else(|| match ran.exit {
                Some(c) => format!("exit {c}"),
                None => "timed out".to_owned(),
            })
        ));
    }
    change
}

/// `PACKAGE@VERSION` for the runtime `bin` (`bin --version`), else the
/// latest.
fn versioned(package: &str, bin: &Path) -> String {
    let version = std::process::Command::new(bin)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|v| {
            !v.is_empty()
                && v.len() < 40
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
        });
    match version {
        Some(v) => format!("{package}@{v}"),
        None => package.to_owned(),
    }
}
