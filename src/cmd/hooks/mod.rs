//! `loopx hooks install|uninstall|doctor`: wire agent runtimes and git to
//! `loopx hook`, take it out again, and check the wiring.
//!
//! The templates in `hooks/` are compiled in and merged structurally: JSON
//! settings are parsed and rewritten with their key order kept, Codex's
//! config.toml through toml_edit (comments kept). What loopx owns is what
//! runs `loopx hook …` (plus the `loopx` MCP server, the Cursor rule and
//! the git shims, marked `loopx-managed hook`); nothing else is touched. A
//! file is backed up as `<file>.loopx-backup` the first time loopx changes
//! it, and uninstall puts those bytes back when nothing else changed since.

pub mod doctor;
pub mod install;
pub mod uninstall;

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::hook::Runtime;
pub use crate::hook::installer::*;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    Install(install::Args),
    Uninstall(uninstall::Args),
    Doctor(doctor::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Install(a) => install::run(ctx, a),
        Command::Uninstall(a) => uninstall::run(ctx, a),
        Command::Doctor(a) => doctor::run(ctx, a),
    }
}

/// `--runtime`: one runtime, or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    #[value(alias = "claude")]
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
    #[value(name = "opencode")]
    OpenCode,
    Pi,
    Git,
    All,
}

impl Which {
    pub fn runtimes(self) -> Vec<Runtime> {
        match self {
            Which::ClaudeCode => vec![Runtime::ClaudeCode],
            Which::Codex => vec![Runtime::Codex],
            Which::Cursor => vec![Runtime::Cursor],
            Which::Gemini => vec![Runtime::Gemini],
            Which::OpenCode => vec![Runtime::OpenCode],
            Which::Pi => vec![Runtime::Pi],
            Which::Git => vec![Runtime::Git],
            Which::All => Runtime::HOOKED.to_vec(),
        }
    }
}

/// The `--runtime` and `--scope` every hooks command takes.
#[derive(clap::Args, Debug)]
pub struct Target {
    /// claude-code, codex, cursor, gemini, opencode, pi, git, or all of them
    #[arg(long, value_enum, value_name = "RUNTIME", default_value = "all")]
    pub runtime: Which,
    /// project (this repository) or user (the home directory)
    #[arg(long, value_enum, value_name = "SCOPE", default_value = "project")]
    pub scope: Scope,
}

/// `--scope`: the project's files, or the user's under the home directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    Project,
    User,
}

/// Where loopx's plugin file of `runtime` (OpenCode's plugin, Pi's
/// extension: the runtime's `Spec::plugin`) goes in `scope`, with `base`
/// the project root or the home directory.
pub fn plugin_path(runtime: Runtime, base: &std::path::Path, scope: Scope) -> Option<PathBuf> {
    let plugin = runtime.spec().plugin?;
    Some(base.join(match scope {
        Scope::Project => plugin.project,
        Scope::User => plugin.user,
    }))
}

/// Where a scope's files live: the repository's worktree root, or `HOME`.
pub fn base(ctx: &Ctx, scope: Scope) -> Result<PathBuf> {
    match scope {
        Scope::User => ctx.home().ok_or_else(|| {
            Refusal::error(Code::NoHome, "HOME is not set, so there is no user scope")
                .with_hint("set HOME, or use --scope project")
                .into()
        }),
        Scope::Project => {
            let store = ctx.store()?;
            Ok(store
                .workdir()
                .map_or_else(|| store.root().to_path_buf(), std::path::Path::to_path_buf))
        }
    }
}

/// The git hooks directory: `core.hooksPath` (relative to the worktree
/// root), else `hooks` in the common git dir.
pub fn git_hooks_dir(ctx: &Ctx) -> Result<PathBuf> {
    let store = ctx.store()?;
    Ok(match store.config("core.hooksPath") {
        Some(p) if !p.trim().is_empty() => {
            let p = p.trim();
            let path = match (p.strip_prefix("~/"), ctx.home()) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(p),
            };
            if path.is_absolute() {
                path
            } else {
                store.root().join(path)
            }
        }
        _ => store.common_dir().join("hooks"),
    })
}

/// When `runtime` is Codex in project scope and Codex does not trust the
/// project: what to run so that it does (see [`codex_trust_hint`]).
pub fn codex_untrusted(
    ctx: &Ctx,
    runtime: Runtime,
    scope: Scope,
    base: &std::path::Path,
) -> Option<String> {
    if runtime != Runtime::Codex || scope != Scope::Project {
        return None;
    }
    let home = ctx.home();
    let config = codex_config(ctx.env.get("CODEX_HOME"), home.as_deref())?;
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let project = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    (!codex_trusts(&text, &project) && !codex_trusts(&text, base))
        .then(|| codex_trust_hint(&project))
}
