//! How a runtime's hooks are installed: the parts of its [`super::Spec`]
//! that `hooks install|uninstall|doctor` read.

/// How a settings file lists its hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `hooks.<Event>: [{matcher?, hooks: [{command, …}]}]` (Claude Code,
    /// Codex, Gemini CLI).
    Grouped,
    /// `version: 1, hooks.<event>: [{command, …}]` (Cursor).
    Flat,
}

/// A runtime's JSON hook settings file, relative to the project root or
/// the home directory.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub path: &'static str,
    pub shape: Shape,
    /// The hooks loopx merges in (a template in `hooks/`, compiled in),
    /// running the hook command.
    pub template: &'static str,
    /// The event that runs the tool guard: installed only with `--guard`.
    pub guard_event: &'static str,
    /// (event, the longest timeout the runtime honours for it in the unit
    /// of its settings, why): `hooks doctor` flags a longer one.
    pub timeouts: &'static [(&'static str, f64, &'static str)],
}

/// A runtime whose hooks are loopx's own plugin file (it has no JSON
/// hooks): where the file goes, relative to the project root and to the
/// home directory, and what is in it.
#[derive(Clone, Copy, Debug)]
pub struct Plugin {
    pub project: &'static str,
    pub user: &'static str,
    /// What the runtime calls such a file (plugin, extension).
    pub kind: &'static str,
    /// The file (in `hooks/`, compiled in). Its line `const LOOPX =
    /// "loopx";` names the loopx it runs, and its line `const GUARD =
    /// false;`, if any, whether it guards the shell.
    pub template: &'static str,
    /// Its first line, which marks the file as loopx's.
    pub marker: &'static str,
    /// The runtime's events the file hooks, as `hooks doctor` lists them;
    /// true: only with the guard.
    pub wires: &'static [(&'static str, bool)],
    /// The one of [`Plugin::wires`] that runs the tool guard.
    pub guard_wire: &'static str,
    /// An npm package the runtime installs into the plugin's folder at
    /// every start unless it is there (OpenCode's `@opencode-ai/plugin`):
    /// install puts it there once, with the runtime's own version.
    pub dependency: Option<&'static str>,
}

/// A whole file loopx adds beside a runtime's hooks, in project scope
/// only (Cursor's always-applied rule).
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub path: &'static str,
    pub text: &'static str,
    /// How the file starts when it is loopx's (any version of it).
    pub marker: &'static str,
}

/// Where `hooks install --mcp` registers loopx as an MCP server (Codex's
/// config.toml): the TOML file, relative to the project root or the home
/// directory, and the fragment holding the `mcp_servers.loopx` table.
#[derive(Clone, Copy, Debug)]
pub struct Mcp {
    pub path: &'static str,
    pub fragment: &'static str,
}

/// What a human does before the runtime runs the hooks, in project and in
/// user scope: `hooks doctor` says it.
#[derive(Clone, Copy, Debug)]
pub struct Trust {
    pub project: &'static str,
    pub user: &'static str,
}

impl Trust {
    /// The same step in both scopes.
    pub(super) const fn same(step: &'static str) -> Trust {
        Trust {
            project: step,
            user: step,
        }
    }
}

/// A runtime that reads no project settings (hooks included) in a project
/// its own config does not trust (Codex: `[projects."<path>"] trust_level
/// = "trusted"` in its config.toml). Install and doctor check it.
#[derive(Clone, Copy, Debug)]
pub struct ProjectTrust {
    /// The variable naming the runtime's config folder, and the folder
    /// under the home directory without it.
    pub home_var: &'static str,
    pub home: &'static str,
    /// The config file in that folder.
    pub file: &'static str,
    /// What to do, with `{project}` standing for the project's path.
    pub hint: &'static str,
}
