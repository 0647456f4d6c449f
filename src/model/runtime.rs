//! The agent runtimes loopx knows, in one table: for each, its name (as
//! hooks, the command line and the store spell it), whether and since which
//! format an agent's record may name it, the environment markers its shells
//! carry, the hook events it fires and what each means to the turn, the JSON
//! its hooks speak, how its hooks are installed (a settings file and its
//! template, loopx's plugin file, git's shims, what goes beside them, the
//! trust step a human takes), and what its hooks need besides (a usage
//! source, an environment file). Pure data: the hooks (hook/), `hooks
//! install|uninstall|doctor` and the caller rule (ctx.rs) read it, so that
//! a new runtime is one entry here plus its hook payload code.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A runtime whose agents loopx registers, or whose hooks call loopx
/// hook (git's own hooks among them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runtime {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
    /// An agent's runtime that has no hooks of its own (a custom loop).
    Custom,
    /// OpenCode, through the plugin in `hooks/opencode/` (Claude Code's
    /// wire format).
    OpenCode,
    /// Pi, through the extension in `hooks/pi/` (Claude Code's wire
    /// format, plus the usage Pi reports).
    Pi,
    /// git's pre-push and post-merge hooks: never an agent's runtime.
    Git,
}

/// What an event means to the turn, whatever the runtime calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The session starts, resumes, or was cleared or compacted: prime it.
    Start,
    /// Claude's and Codex's PreCompact: neither lets a hook add context
    /// here, so the brief is re-sent by the SessionStart that follows.
    PreCompact,
    /// A prompt is submitted: tell what changed since the last one.
    Prompt,
    /// A tool is about to run: the opt-in guard.
    Tool,
    /// The agent wants to stop: keep it going while it holds a claim.
    Stop,
    /// The session ends: record the end of the turn.
    End,
    /// The turn ended on an API error (Claude's and Codex's StopFailure):
    /// on a usage limit, park until it resets.
    LimitReached,
    /// git's pre-push and post-merge: say when the state differs from the
    /// remote's copy.
    PrePush,
    PostMerge,
}

/// The JSON a runtime's hooks read on stdin and answer in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Claude Code's (Codex adopted it, as loopx's OpenCode plugin and Pi
    /// extension do).
    Claude,
    Cursor,
    Gemini,
    /// No JSON: git's hooks pass arguments, and answer on stderr.
    None,
}

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
    const fn same(step: &'static str) -> Trust {
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

/// Where a runtime's hooks get a session's usage from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageFrom {
    /// Its hooks carry none (Codex's and Gemini's headless outputs do).
    Nothing,
    /// The session transcript the payload names (Claude Code).
    Transcript,
    /// The payload itself (Pi's extension adds up what Pi reported).
    Payload,
}

/// Everything loopx knows about one runtime.
pub struct Spec {
    pub runtime: Runtime,
    /// As hooks, the command line and the store spell it.
    pub name: &'static str,
    /// As its makers spell it, for messages.
    pub title: &'static str,
    /// Other spellings the hook command and `agent register --runtime` take.
    pub aliases: &'static [&'static str],
    /// The format from which an agent's record may name it; None: never.
    pub stored_since: Option<u32>,
    /// The environment variables that say a shell runs under it (any one),
    /// and the one that holds its session id, from which the agent id
    /// derives (DESIGN §4 "Who is acting").
    pub identity: Option<(&'static [&'static str], &'static str)>,
    /// The events the hook command answers, spelled as the runtime names them.
    pub events: &'static [(&'static str, Event)],
    /// Every event the runtime itself defines, including those loopx does
    /// not answer: `hooks doctor` flags any other name as a likely typo.
    pub known_events: &'static [&'static str],
    pub wire: Wire,
    /// The tool names of its shell (the guard checks only those; Codex
    /// names its shell tool `shell` or `exec_command` in some builds);
    /// None: its tool event is about shell commands only.
    pub shell_tools: Option<&'static [&'static str]>,
    /// How `hooks install` wires it: a JSON settings file, loopx's own
    /// plugin file, or (git) shims in the repository's hooks directory,
    /// each (name, script); and what it adds beside them.
    pub settings: Option<Settings>,
    pub plugin: Option<Plugin>,
    pub shims: &'static [(&'static str, &'static str)],
    pub rule: Option<Rule>,
    pub mcp: Option<Mcp>,
    pub trust: Option<Trust>,
    pub project_trust: Option<ProjectTrust>,
    pub usage: UsageFrom,
    /// Its stop is also where the end of the turn is recorded: Gemini CLI
    /// does not wait for its SessionEnd hook, OpenCode has none, and Pi's
    /// session may stay open long after its turn.
    pub stop_ends_turn: bool,
    /// Its shells carry the session id, so the agent's own `loopx` knows
    /// who it is; else loopx's answers name the agent in every command
    /// (Gemini CLI gives the session id to hooks only).
    pub shell_has_session: bool,
    /// The variable naming a file of `export` lines later shell commands
    /// source (Claude Code's `CLAUDE_ENV_FILE`).
    pub env_file: Option<&'static str>,
    /// It runs the agent's commands in a login shell (`bash -lc`), whose
    /// profile may reset PATH (Debian's /etc/profile): loopx is named by
    /// its absolute path there.
    pub login_shell: bool,
}

const CLAUDE_EVENTS: &[(&str, Event)] = &[
    ("SessionStart", Event::Start),
    ("UserPromptSubmit", Event::Prompt),
    ("PreToolUse", Event::Tool),
    ("Stop", Event::Stop),
    ("SessionEnd", Event::End),
    ("PreCompact", Event::PreCompact),
    ("StopFailure", Event::LimitReached),
];

/// The events loopx's own OpenCode plugin and Pi extension send, in Claude
/// Code's names: the first five of [`CLAUDE_EVENTS`] (OpenCode's plugin sends
/// the first four; it has no session end).
const PLUGIN_EVENTS: &[(&str, Event)] = CLAUDE_EVENTS.split_at(5).0;

/// The names of [`PLUGIN_EVENTS`], in its order.
const PLUGIN_EVENT_NAMES: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "Stop",
    "SessionEnd",
];

/// Claude Code's shell tool, and Codex's under the same hook.
const CLAUDE_SHELL: &[&str] = &["Bash", "shell", "exec_command", "local_shell"];

const BASE: Spec = Spec {
    runtime: Runtime::Custom,
    name: "",
    title: "",
    aliases: &[],
    stored_since: Some(1),
    identity: None,
    events: &[],
    known_events: &[],
    wire: Wire::None,
    shell_tools: None,
    settings: None,
    plugin: None,
    shims: &[],
    rule: None,
    mcp: None,
    trust: None,
    project_trust: None,
    usage: UsageFrom::Nothing,
    stop_ends_turn: false,
    shell_has_session: true,
    env_file: None,
    login_shell: false,
};

/// The table, in the order `Runtime::ALL` lists them (and the caller rule
/// tries their markers).
pub const SPECS: [Spec; 8] = [
    Spec {
        runtime: Runtime::ClaudeCode,
        name: "claude-code",
        title: "Claude Code",
        aliases: &["claude"],
        identity: Some((
            &[
                "CLAUDECODE",
                "CLAUDE_CODE_ENTRYPOINT",
                "CLAUDE_CODE_SESSION_ID",
            ],
            "CLAUDE_CODE_SESSION_ID",
        )),
        events: CLAUDE_EVENTS,
        known_events: &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "PostToolUseFailure",
            "Notification",
            "Stop",
            "StopFailure",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "SessionEnd",
        ],
        wire: Wire::Claude,
        shell_tools: Some(CLAUDE_SHELL),
        settings: Some(Settings {
            path: ".claude/settings.json",
            shape: Shape::Grouped,
            template: include_str!("../../hooks/claude/settings.fragment.json"),
            guard_event: "PreToolUse",
            timeouts: &[],
        }),
        trust: Some(Trust::same(
            "Claude Code reads hooks at session start: restart it or review them in /hooks, and accept the workspace trust prompt",
        )),
        usage: UsageFrom::Transcript,
        env_file: Some("CLAUDE_ENV_FILE"),
        ..BASE
    },
    Spec {
        runtime: Runtime::Codex,
        name: "codex",
        title: "Codex",
        identity: Some((&["CODEX_THREAD_ID", "CODEX_SANDBOX"], "CODEX_THREAD_ID")),
        events: CLAUDE_EVENTS,
        known_events: &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
            "StopFailure",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "SessionEnd",
        ],
        wire: Wire::Claude,
        shell_tools: Some(CLAUDE_SHELL),
        settings: Some(Settings {
            path: ".codex/hooks.json",
            shape: Shape::Grouped,
            template: include_str!("../../hooks/codex/hooks.json"),
            guard_event: "PreToolUse",
            timeouts: &[(
                "SessionEnd",
                3.0,
                "Codex cuts a SessionEnd hook to 3 s and warns on every run",
            )],
        }),
        mcp: Some(Mcp {
            path: ".codex/config.toml",
            fragment: include_str!("../../hooks/codex/config.fragment.toml"),
        }),
        trust: Some(Trust {
            project: "Codex runs project hooks only in a trusted project, and each hook only once approved in /hooks (again after every change)",
            user: "approve the hooks in Codex's /hooks (again after every change)",
        }),
        project_trust: Some(ProjectTrust {
            home_var: "CODEX_HOME",
            home: ".codex",
            file: "config.toml",
            hint: "Codex runs no hooks in a project it does not trust, and it does not trust {project}: start `codex` there once and accept the trust prompt; for unattended runs use `codex exec --trust …` (or add `[projects.\"{project}\"]` with `trust_level = \"trusted\"` to Codex's config.toml)",
        }),
        login_shell: true,
        ..BASE
    },
    Spec {
        runtime: Runtime::Cursor,
        name: "cursor",
        title: "Cursor",
        identity: Some((
            &["CURSOR_AGENT", "CURSOR_CONVERSATION_ID"],
            "CURSOR_CONVERSATION_ID",
        )),
        events: &[
            ("sessionStart", Event::Start),
            ("beforeSubmitPrompt", Event::Prompt),
            ("beforeShellExecution", Event::Tool),
            ("stop", Event::Stop),
            ("sessionEnd", Event::End),
        ],
        known_events: &[
            "sessionStart",
            "sessionEnd",
            "beforeSubmitPrompt",
            "beforeShellExecution",
            "afterShellExecution",
            "beforeMCPExecution",
            "afterMCPExecution",
            "beforeReadFile",
            "afterFileEdit",
            "preToolUse",
            "postToolUse",
            "subagentStart",
            "subagentStop",
            "preCompact",
            "afterAgentResponse",
            "afterAgentThought",
            "stop",
        ],
        wire: Wire::Cursor,
        settings: Some(Settings {
            path: ".cursor/hooks.json",
            shape: Shape::Flat,
            template: include_str!("../../hooks/cursor/hooks.json"),
            guard_event: "beforeShellExecution",
            timeouts: &[],
        }),
        rule: Some(Rule {
            path: ".cursor/rules/loopx.mdc",
            text: include_str!("../../hooks/cursor/rules/loopx.mdc"),
            marker: "---\ndescription: Work in bounded loopx turns",
        }),
        trust: Some(Trust::same(
            "Cursor reloads hooks.json on save: check the Hooks tab of its settings for errors",
        )),
        ..BASE
    },
    Spec {
        runtime: Runtime::Gemini,
        name: "gemini",
        title: "Gemini CLI",
        identity: Some((&["GEMINI_CLI", "GEMINI_SESSION_ID"], "GEMINI_SESSION_ID")),
        events: &[
            ("SessionStart", Event::Start),
            ("BeforeAgent", Event::Prompt),
            ("BeforeTool", Event::Tool),
            ("AfterAgent", Event::Stop),
            ("SessionEnd", Event::End),
        ],
        known_events: &[
            "SessionStart",
            "SessionEnd",
            "BeforeAgent",
            "AfterAgent",
            "BeforeModel",
            "AfterModel",
            "BeforeToolSelection",
            "BeforeTool",
            "AfterTool",
            "PreCompress",
            "Notification",
        ],
        wire: Wire::Gemini,
        shell_tools: Some(&["run_shell_command"]),
        settings: Some(Settings {
            path: ".gemini/settings.json",
            shape: Shape::Grouped,
            template: include_str!("../../hooks/gemini/settings.fragment.json"),
            guard_event: "BeforeTool",
            timeouts: &[],
        }),
        trust: Some(Trust {
            project: "Gemini CLI ignores .gemini/settings.json in an untrusted folder: trust this folder when it asks; a headless run (gemini -p) needs GEMINI_CLI_TRUST_WORKSPACE=true in its environment (--skip-trust does not load the folder's hooks in 0.61)",
            user: "Gemini CLI runs hooks since v0.27; check them with /hooks",
        }),
        stop_ends_turn: true,
        shell_has_session: false,
        ..BASE
    },
    Spec {
        runtime: Runtime::Custom,
        name: "custom",
        title: "custom",
        ..BASE
    },
    Spec {
        runtime: Runtime::OpenCode,
        name: "opencode",
        title: "OpenCode",
        stored_since: Some(4),
        // Set by loopx's plugin (`shell.env`).
        identity: Some((&["OPENCODE_SESSION_ID"], "OPENCODE_SESSION_ID")),
        // The plugin's names for chat.message (a first one, then every
        // one), tool.execute.before and session.idle.
        events: PLUGIN_EVENTS.split_at(4).0,
        known_events: PLUGIN_EVENT_NAMES.split_at(4).0,
        wire: Wire::Claude,
        shell_tools: Some(CLAUDE_SHELL),
        plugin: Some(Plugin {
            project: ".opencode/plugins/loopx.js",
            user: ".config/opencode/plugins/loopx.js",
            kind: "plugin",
            template: include_str!("../../hooks/opencode/loopx.js"),
            marker: "// loopx-managed plugin",
            wires: &[
                ("chat.message", false),
                ("experimental.chat.system.transform", false),
                ("tool.execute.before", false),
                ("session.idle", false),
            ],
            dependency: Some("@opencode-ai/plugin"),
        }),
        trust: Some(Trust::same(
            "OpenCode loads plugins when it starts: restart it after installing or changing the plugin",
        )),
        stop_ends_turn: true,
        ..BASE
    },
    Spec {
        runtime: Runtime::Pi,
        name: "pi",
        title: "Pi",
        stored_since: Some(4),
        // Set by loopx's extension for the agent's bash commands.
        identity: Some((&["PI_SESSION_ID"], "PI_SESSION_ID")),
        // The extension's names for session_start, before_agent_start,
        // tool_call, agent_end and session_shutdown.
        events: PLUGIN_EVENTS,
        known_events: PLUGIN_EVENT_NAMES,
        wire: Wire::Claude,
        shell_tools: Some(&["bash"]),
        // Pi's default agent directory for a user; one moved with
        // PI_CODING_AGENT_DIR is not followed.
        plugin: Some(Plugin {
            project: ".pi/extensions/loopx.ts",
            user: ".pi/agent/extensions/loopx.ts",
            kind: "extension",
            template: include_str!("../../hooks/pi/loopx.ts"),
            marker: "// loopx-managed extension",
            wires: &[
                ("session_start", false),
                ("before_agent_start", false),
                ("tool_call", true),
                ("agent_end", false),
                ("session_shutdown", false),
                ("session_compact", false),
            ],
            dependency: None,
        }),
        trust: Some(Trust::same(
            "Pi loads extensions when it starts: restart it (or /reload) after installing or changing the extension",
        )),
        usage: UsageFrom::Payload,
        stop_ends_turn: true,
        ..BASE
    },
    Spec {
        runtime: Runtime::Git,
        name: "git",
        title: "git",
        stored_since: None,
        events: &[
            ("pre-push", Event::PrePush),
            ("post-merge", Event::PostMerge),
        ],
        known_events: &["pre-push", "post-merge"],
        shims: &[
            ("pre-push", include_str!("../../hooks/git/pre-push")),
            ("post-merge", include_str!("../../hooks/git/post-merge")),
        ],
        ..BASE
    },
];

impl Runtime {
    /// Every runtime, in the table's order.
    pub const ALL: [Runtime; 8] = [
        Runtime::ClaudeCode,
        Runtime::Codex,
        Runtime::Cursor,
        Runtime::Gemini,
        Runtime::Custom,
        Runtime::OpenCode,
        Runtime::Pi,
        Runtime::Git,
    ];

    /// Those whose hooks call the hook command (all but custom).
    pub const HOOKED: [Runtime; 7] = [
        Runtime::ClaudeCode,
        Runtime::Codex,
        Runtime::Cursor,
        Runtime::Gemini,
        Runtime::OpenCode,
        Runtime::Pi,
        Runtime::Git,
    ];

    pub fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    fn named(name: &str) -> impl Iterator<Item = &'static Spec> + '_ {
        SPECS
            .iter()
            .filter(move |s| s.name == name || s.aliases.contains(&name))
    }

    /// A runtime whose hooks call the hook command, by any of its spellings in
    /// any case: `claude-code` (also `claude`), `codex`, `cursor`, `gemini`,
    /// `opencode`, `pi`, `git`.
    pub fn parse(s: &str) -> Option<Runtime> {
        let lower = s.to_ascii_lowercase();
        Runtime::named(&lower)
            .find(|s| !s.events.is_empty())
            .map(|s| s.runtime)
    }

    /// The format that introduced this runtime as an agent's runtime.
    pub fn since(self) -> u32 {
        self.spec().stored_since.unwrap_or(u32::MAX)
    }

    /// The runtime an agent registered by this runtime's hooks records:
    /// itself, or custom for one an agent's record never names (git).
    pub fn stored(self) -> Runtime {
        match self.spec().stored_since {
            Some(_) => self,
            None => Runtime::Custom,
        }
    }

    /// See [`Spec::identity`]. None for git and custom.
    pub fn identity(self) -> Option<(&'static [&'static str], &'static str)> {
        self.spec().identity
    }

    /// See [`Spec::events`].
    pub fn events(self) -> &'static [(&'static str, Event)] {
        self.spec().events
    }

    /// The event named `name` (case-insensitive), if the runtime has it.
    pub fn event(self, name: &str) -> Option<(&'static str, Event)> {
        self.events()
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .copied()
    }

    /// See [`Spec::known_events`].
    pub fn known_events(self) -> &'static [&'static str] {
        self.spec().known_events
    }

    /// Whether `tool` is the runtime's shell, for the guard.
    pub fn is_shell(self, tool: &str) -> bool {
        self.spec().shell_tools.is_none_or(|t| t.contains(&tool))
    }
}

/// `agent register --runtime`: a runtime an agent's record may name.
impl std::str::FromStr for Runtime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Runtime::named(s)
            .find(|s| s.stored_since.is_some())
            .map(|s| s.runtime)
            .ok_or_else(|| {
                format!("{s:?} is not a runtime: use claude-code, codex, cursor, gemini, opencode, pi or custom")
            })
    }
}

/// Stored as its name (format 4 added opencode and pi); git never is.
impl Serialize for Runtime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.spec().stored_since.is_none() {
            return Err(serde::ser::Error::custom(format!(
                "{} is not an agent's runtime",
                self.as_str()
            )));
        }
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Runtime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        SPECS
            .iter()
            .find(|s| s.name == name && s.stored_since.is_some())
            .map(|s| s.runtime)
            .ok_or_else(|| {
                let stored: Vec<String> = SPECS
                    .iter()
                    .filter(|s| s.stored_since.is_some())
                    .map(|s| format!("`{}`", s.name))
                    .collect();
                serde::de::Error::custom(format!(
                    "unknown variant `{name}`, expected one of {}",
                    stored.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_enum() {
        for (i, r) in Runtime::ALL.into_iter().enumerate() {
            assert_eq!(SPECS[i].runtime, r);
            assert_eq!(r.spec().runtime, r);
        }
        for r in Runtime::HOOKED {
            assert!(!r.events().is_empty(), "{r:?}");
            for (name, _) in r.events() {
                assert!(r.known_events().contains(name), "{name}");
            }
        }
        assert!(Runtime::Custom.events().is_empty());
        let plugin: Vec<&str> = PLUGIN_EVENTS.iter().map(|(name, _)| *name).collect();
        assert_eq!(plugin, PLUGIN_EVENT_NAMES);
    }

    #[test]
    fn stored_names_are_those_of_format_1_and_4() {
        // The stored format (docs/format.md): these exact strings.
        let stored: Vec<(String, u32)> = Runtime::ALL
            .into_iter()
            .filter_map(|r| {
                let json = serde_json::to_string(&r).ok()?;
                Some((json, r.since()))
            })
            .collect();
        assert_eq!(
            stored,
            [
                ("\"claude-code\"".to_owned(), 1),
                ("\"codex\"".to_owned(), 1),
                ("\"cursor\"".to_owned(), 1),
                ("\"gemini\"".to_owned(), 1),
                ("\"custom\"".to_owned(), 1),
                ("\"opencode\"".to_owned(), 4),
                ("\"pi\"".to_owned(), 4),
            ]
        );
        for r in Runtime::ALL {
            if let Ok(json) = serde_json::to_string(&r) {
                assert_eq!(serde_json::from_str::<Runtime>(&json).unwrap(), r);
            }
        }
        assert!(serde_json::from_str::<Runtime>("\"git\"").is_err());
        assert!(serde_json::from_str::<Runtime>("\"claude\"").is_err());
        assert_eq!(Runtime::Git.stored(), Runtime::Custom);
        assert_eq!(Runtime::Pi.stored(), Runtime::Pi);
    }

    #[test]
    fn each_spelling_parses_where_it_belongs() {
        assert_eq!(Runtime::parse("claude"), Some(Runtime::ClaudeCode));
        assert_eq!(Runtime::parse("Claude-Code"), Some(Runtime::ClaudeCode));
        assert_eq!(Runtime::parse("git"), Some(Runtime::Git));
        assert_eq!(Runtime::parse("custom"), None);
        assert_eq!(Runtime::parse("vim"), None);
        assert_eq!("claude".parse(), Ok(Runtime::ClaudeCode));
        assert_eq!("custom".parse(), Ok(Runtime::Custom));
        assert!("git".parse::<Runtime>().is_err());
        assert!("Codex".parse::<Runtime>().is_err());
    }

    #[test]
    fn the_guard_knows_each_runtimes_shell() {
        assert!(Runtime::ClaudeCode.is_shell("Bash"));
        assert!(Runtime::Codex.is_shell("exec_command"));
        assert!(!Runtime::Gemini.is_shell("Bash"));
        assert!(Runtime::Gemini.is_shell("run_shell_command"));
        assert!(Runtime::Pi.is_shell("bash"));
        assert!(!Runtime::Pi.is_shell("Bash"));
        assert!(Runtime::Cursor.is_shell("anything"));
    }
}
