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

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::ctx::{Ctx, Env};
use crate::error::{Code, Exit, Refusal};
use crate::hook::Runtime;
pub use crate::hook::installer::*;

#[derive(clap::Subcommand, Debug)]
#[command(defer = true)]
pub enum Command {
    /// Wire agent runtimes (and git) to loopx: merge its hooks into their settings
    Install(install::Args),
    /// Take loopx's hooks out of the runtimes' settings and git's hooks directory
    Uninstall(uninstall::Args),
    /// Check the hooks: the loopx they run exists, files parse, known events, timeouts
    Doctor(doctor::Args),
}

pub fn run(ctx: &Ctx, c: &Command) -> Result<Exit> {
    match c {
        Command::Install(a) => install::run(ctx, a),
        Command::Uninstall(a) => uninstall::run(ctx, a),
        Command::Doctor(a) => doctor::run(ctx, a),
    }
}

/// `--runtime`: one runtime whose hooks call `loopx hook` (by its name or
/// an alias in the runtime table), or all of them (None).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Which(Option<Runtime>);

/// Each runtime of [`Runtime::HOOKED`], then all.
const WHICH: [Which; Runtime::HOOKED.len() + 1] = {
    let mut all = [Which(None); Runtime::HOOKED.len() + 1];
    let mut i = 0;
    while i < Runtime::HOOKED.len() {
        all[i] = Which(Some(Runtime::HOOKED[i]));
        i += 1;
    }
    all
};

impl clap::ValueEnum for Which {
    fn value_variants<'a>() -> &'a [Self] {
        &WHICH
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(match self.0 {
            Some(r) => clap::builder::PossibleValue::new(r.as_str())
                .aliases(r.spec().aliases.iter().copied()),
            None => clap::builder::PossibleValue::new("all"),
        })
    }
}

impl Which {
    pub fn runtimes(self) -> Vec<Runtime> {
        match self.0 {
            Some(r) => vec![r],
            None => Runtime::HOOKED.to_vec(),
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

impl Scope {
    /// Of a `(project, user)` pair, this scope's.
    pub fn pick<T>(self, project: T, user: T) -> T {
        match self {
            Scope::Project => project,
            Scope::User => user,
        }
    }
}

/// Where a scope's files live: the repository's worktree root, or `HOME`.
fn base(ctx: &Ctx, scope: Scope) -> Result<PathBuf> {
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
fn git_hooks_dir(ctx: &Ctx) -> Result<PathBuf> {
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

/// Where a hooks command works, read from the context once: the scope,
/// its folder, git's hooks directory, and the environment (PATH, HOME, the
/// runtimes' config folders). What is below it reads no context, so that
/// it runs in a test on any folder.
pub struct Place<'a> {
    pub scope: Scope,
    /// The project root or the home directory.
    pub base: PathBuf,
    /// git's hooks directory; None in user scope (git hooks belong to a
    /// repository).
    pub git_hooks: Option<PathBuf>,
    pub env: &'a Env,
}

impl<'a> Place<'a> {
    pub fn of(ctx: &'a Ctx, scope: Scope) -> Result<Place<'a>> {
        Ok(Place {
            scope,
            base: base(ctx, scope)?,
            git_hooks: match scope {
                Scope::Project => Some(git_hooks_dir(ctx)?),
                Scope::User => None,
            },
            env: &ctx.env,
        })
    }

    /// Where loopx's plugin file of a runtime goes here.
    pub fn plugin(&self, plugin: &Plugin) -> PathBuf {
        self.base.join(self.scope.pick(plugin.project, plugin.user))
    }

    /// The first executable `name` on PATH.
    pub fn on_path(&self, name: &str) -> Option<PathBuf> {
        std::env::split_paths(self.env.get("PATH").unwrap_or(""))
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    }

    /// When `runtime` reads project hooks only in a project its own config
    /// trusts (Codex), in project scope, and it does not trust this one:
    /// what to do so that it does (see [`trust_hint`]).
    pub fn untrusted(&self, runtime: Runtime) -> Option<String> {
        let trust = runtime
            .spec()
            .project_trust
            .filter(|_| self.scope == Scope::Project)?;
        let home = self.env.get("HOME").map(Path::new);
        let config = trust_config(&trust, self.env.get(trust.home_var), home)?;
        let text = std::fs::read_to_string(config).unwrap_or_default();
        let base = &self.base;
        let project = std::fs::canonicalize(base).unwrap_or_else(|_| base.clone());
        (!trusts(&text, &project) && !trusts(&text, base)).then(|| trust_hint(&trust, &project))
    }
}

/// Whether `p` is a file its owner, group or others may run.
pub fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}
