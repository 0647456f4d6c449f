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

mod install;
mod table;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use install::{Mcp, Plugin, ProjectTrust, Rule, Settings, Shape, Trust};
pub use table::SPECS;

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
    use super::table::{PLUGIN_EVENT_NAMES, PLUGIN_EVENTS};
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
        for p in SPECS.iter().filter_map(|s| s.plugin) {
            assert!(p.wires.iter().any(|(w, _)| *w == p.guard_wire), "{p:?}");
        }
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
