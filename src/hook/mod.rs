//! Agent-runtime hooks, pure: which runtimes and events `loopx hook` knows,
//! how each runtime's stdin JSON is normalised into one [`Input`], and how an
//! [`Answer`] is rendered in that runtime's own JSON. No I/O and no state:
//! `cmd/hook.rs` reads stdin, decides the answer from the state, and prints.
//!
//! One file per wire format: [`claude`] (Claude Code, and Codex, which
//! adopted Claude's format, as loopx's OpenCode plugin and Pi extension
//! do), [`cursor`], [`gemini`] and [`pi`] (what Pi's payloads add). [`guard`] matches
//! shell commands against open human-only gates; [`view`] is what the
//! prompt-submit delta compares between two prompts.

pub mod claude;
pub mod cursor;
pub mod decide;
pub mod gemini;
pub mod guard;
pub mod installer;
pub mod limit;
pub mod pi;
pub mod session;
pub mod sessions;
pub mod stdin;
pub mod transcript;
pub mod usage;
pub mod view;

use serde_json::Value;

/// The runtimes whose hooks call `loopx hook`, and git's own hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
    /// OpenCode, through the plugin in `hooks/opencode/` (Claude Code's
    /// wire format).
    OpenCode,
    /// Pi, through the extension in `hooks/pi/` (Claude Code's wire
    /// format, plus the usage Pi reports).
    Pi,
    Git,
}

impl Runtime {
    pub const ALL: [Runtime; 7] = [
        Runtime::ClaudeCode,
        Runtime::Codex,
        Runtime::Cursor,
        Runtime::Gemini,
        Runtime::OpenCode,
        Runtime::Pi,
        Runtime::Git,
    ];

    /// `claude-code` (also `claude`), `codex`, `cursor`, `gemini`,
    /// `opencode`, `pi`, `git`.
    pub fn parse(s: &str) -> Option<Runtime> {
        match s.to_ascii_lowercase().as_str() {
            "claude-code" | "claude" => Some(Runtime::ClaudeCode),
            "codex" => Some(Runtime::Codex),
            "cursor" => Some(Runtime::Cursor),
            "gemini" => Some(Runtime::Gemini),
            "opencode" => Some(Runtime::OpenCode),
            "pi" => Some(Runtime::Pi),
            "git" => Some(Runtime::Git),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::ClaudeCode => "claude-code",
            Runtime::Codex => "codex",
            Runtime::Cursor => "cursor",
            Runtime::Gemini => "gemini",
            Runtime::OpenCode => "opencode",
            Runtime::Pi => "pi",
            Runtime::Git => "git",
        }
    }

    /// The environment variables that say a shell runs under this runtime
    /// (any one of them), and the one that holds its session id, from which
    /// the agent id derives (DESIGN §4 "Who is acting"). None for git.
    pub fn identity(self) -> Option<(&'static [&'static str], &'static str)> {
        Some(match self {
            Runtime::ClaudeCode => (
                &[
                    "CLAUDECODE",
                    "CLAUDE_CODE_ENTRYPOINT",
                    "CLAUDE_CODE_SESSION_ID",
                ],
                "CLAUDE_CODE_SESSION_ID",
            ),
            Runtime::Codex => (&["CODEX_THREAD_ID", "CODEX_SANDBOX"], "CODEX_THREAD_ID"),
            Runtime::Gemini => (&["GEMINI_CLI", "GEMINI_SESSION_ID"], "GEMINI_SESSION_ID"),
            Runtime::Cursor => (
                &["CURSOR_AGENT", "CURSOR_CONVERSATION_ID"],
                "CURSOR_CONVERSATION_ID",
            ),
            // Set by loopx's plugin (`shell.env`).
            Runtime::OpenCode => (&["OPENCODE_SESSION_ID"], "OPENCODE_SESSION_ID"),
            // Set by loopx's extension for the agent's bash commands.
            Runtime::Pi => (&["PI_SESSION_ID"], "PI_SESSION_ID"),
            Runtime::Git => return None,
        })
    }

    /// The runtime as an agent's registered runtime.
    pub fn model(self) -> crate::model::Runtime {
        match self {
            Runtime::ClaudeCode => crate::model::Runtime::ClaudeCode,
            Runtime::Codex => crate::model::Runtime::Codex,
            Runtime::Cursor => crate::model::Runtime::Cursor,
            Runtime::Gemini => crate::model::Runtime::Gemini,
            // Stored as themselves since format 4.
            Runtime::OpenCode => crate::model::Runtime::Opencode,
            Runtime::Pi => crate::model::Runtime::Pi,
            Runtime::Git => crate::model::Runtime::Custom,
        }
    }

    /// The events `loopx hook` answers, spelled as the runtime names them,
    /// with what each means to the turn.
    pub fn events(self) -> &'static [(&'static str, Event)] {
        match self {
            Runtime::ClaudeCode | Runtime::Codex => &[
                ("SessionStart", Event::Start),
                ("UserPromptSubmit", Event::Prompt),
                ("PreToolUse", Event::Tool),
                ("Stop", Event::Stop),
                ("SessionEnd", Event::End),
                ("PreCompact", Event::PreCompact),
                ("StopFailure", Event::LimitReached),
            ],
            Runtime::Cursor => &[
                ("sessionStart", Event::Start),
                ("beforeSubmitPrompt", Event::Prompt),
                ("beforeShellExecution", Event::Tool),
                ("stop", Event::Stop),
                ("sessionEnd", Event::End),
            ],
            Runtime::Gemini => &[
                ("SessionStart", Event::Start),
                ("BeforeAgent", Event::Prompt),
                ("BeforeTool", Event::Tool),
                ("AfterAgent", Event::Stop),
                ("SessionEnd", Event::End),
            ],
            // The plugin's names for chat.message (a first one, then every one),
            // tool.execute.before and session.idle.
            Runtime::OpenCode => &[
                ("SessionStart", Event::Start),
                ("UserPromptSubmit", Event::Prompt),
                ("PreToolUse", Event::Tool),
                ("Stop", Event::Stop),
            ],
            // The extension's names for session_start, before_agent_start,
            // tool_call, agent_end and session_shutdown.
            Runtime::Pi => &[
                ("SessionStart", Event::Start),
                ("UserPromptSubmit", Event::Prompt),
                ("PreToolUse", Event::Tool),
                ("Stop", Event::Stop),
                ("SessionEnd", Event::End),
            ],
            Runtime::Git => &[
                ("pre-push", Event::PrePush),
                ("post-merge", Event::PostMerge),
            ],
        }
    }

    /// The event named `name` (case-insensitive), if the runtime has it.
    pub fn event(self, name: &str) -> Option<(&'static str, Event)> {
        self.events()
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .copied()
    }

    /// Every event the runtime itself defines, including those loopx does
    /// not answer: `hooks doctor` flags any other name as a likely typo.
    pub fn known_events(self) -> &'static [&'static str] {
        match self {
            Runtime::ClaudeCode => &[
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
            Runtime::Codex => &[
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
            Runtime::Cursor => &[
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
            Runtime::Gemini => &[
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
            Runtime::OpenCode => &["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"],
            Runtime::Pi => &[
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "Stop",
                "SessionEnd",
            ],
            Runtime::Git => &["pre-push", "post-merge"],
        }
    }
}

/// How an agent's own shell calls loopx under `runtime`, as the brief and
/// the hooks' answers name it: `loopx` where the runtime's shells keep the
/// PATH and the `loopx` on it is `exe` (this binary); else `exe`'s absolute
/// path, as one shell word, the way the hooks call it. Codex always gets
/// the path: it runs commands under `bash -lc`, and a login shell's
/// profile (Debian's /etc/profile) resets PATH.
pub fn loopx_command(runtime: Runtime, path: Option<&str>, exe: &std::path::Path) -> String {
    let same = |p: std::path::PathBuf| std::fs::canonicalize(p).is_ok_and(|c| c == exe);
    let found = std::env::split_paths(path.unwrap_or(""))
        .filter(|d| d.is_absolute())
        .map(|d| d.join("loopx"))
        .find(|p| p.is_file());
    if runtime != Runtime::Codex && found.is_some_and(same) {
        return "loopx".to_owned();
    }
    exe.to_str()
        .map_or_else(|| "loopx".to_owned(), installer::shell_word)
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

/// A hook's stdin, normalised across runtimes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Input {
    pub session: Option<String>,
    pub cwd: Option<String>,
    pub prompt: Option<String>,
    /// The tool's name as the runtime calls it (`Bash`, `run_shell_command`;
    /// `shell` for Cursor's beforeShellExecution).
    pub tool: Option<String>,
    /// The shell command about to run, when the tool is a shell.
    pub command: Option<String>,
    /// The runtime's stop-loop guard: Claude's and Codex's and Gemini's
    /// `stop_hook_active`.
    pub stop_active: bool,
    /// Cursor's stop `status` when it is not `completed` (the user aborted,
    /// or an error ended the loop): never continue then.
    pub stop_aborted: bool,
    /// SessionStart's `source` (`startup`, `resume`, `clear`, `compact`).
    pub source: Option<String>,
    /// SessionEnd's `reason`.
    pub reason: Option<String>,
    /// The session's transcript file (Claude Code's `transcript_path`),
    /// read at Stop for the usage of each message.
    pub transcript: Option<String>,
    /// StopFailure's `error_type` (`rate_limit`, `billing_error`, …).
    pub error_type: Option<String>,
    /// StopFailure's words for people: `error_message`, `error_details`,
    /// `error` and `last_assistant_message`, joined.
    pub error_text: Option<String>,
    /// The runtime's own process id, where it says (loopx's OpenCode
    /// plugin sends `pid`): whether the session still runs.
    pub pid: Option<u32>,
}

/// Parses a hook's stdin for `runtime`. An empty stdin is an empty input
/// (some runtimes send nothing for some events); anything but a JSON object
/// is an error, and the hook then fails open.
pub fn parse_input(runtime: Runtime, event: Event, bytes: &[u8]) -> Result<Input, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Input::default());
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("stdin is not JSON ({e})"))?;
    if !v.is_object() {
        return Err("stdin is not a JSON object".to_owned());
    }
    Ok(match runtime {
        Runtime::ClaudeCode
        | Runtime::Codex
        | Runtime::Gemini
        | Runtime::OpenCode
        | Runtime::Pi => common_input(&v),
        Runtime::Cursor => cursor::input(event, &v),
        Runtime::Git => Input::default(),
    })
}

/// The stdin of Claude Code, Codex, Gemini CLI, OpenCode's plugin and Pi's
/// extension: one shape, read leniently (a field of the wrong type counts as
/// absent, so a runtime's change of a field it does not need cannot break a
/// hook).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct CommonInput {
    #[serde(deserialize_with = "loose")]
    session_id: Option<String>,
    #[serde(deserialize_with = "loose")]
    cwd: Option<String>,
    #[serde(deserialize_with = "loose")]
    prompt: Option<String>,
    #[serde(deserialize_with = "loose")]
    tool_name: Option<String>,
    /// An object, or (some builds) a JSON string of one.
    tool_input: Value,
    #[serde(deserialize_with = "loose_bool")]
    stop_hook_active: bool,
    /// SessionStart's `source`.
    #[serde(deserialize_with = "loose")]
    source: Option<String>,
    /// SessionEnd's `reason`.
    #[serde(deserialize_with = "loose")]
    reason: Option<String>,
    #[serde(deserialize_with = "loose")]
    transcript_path: Option<String>,
    error_type: Option<String>,
    #[serde(deserialize_with = "loose")]
    error_message: Option<String>,
    #[serde(deserialize_with = "loose")]
    error_details: Option<String>,
    #[serde(deserialize_with = "loose")]
    error: Option<String>,
    #[serde(deserialize_with = "loose")]
    last_assistant_message: Option<String>,
    #[serde(deserialize_with = "loose_u32")]
    pid: Option<u32>,
}

fn loose<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match <Value as serde::Deserialize>::deserialize(d)? {
        Value::String(s) if !s.is_empty() => Some(s),
        _ => None,
    })
}

fn loose_u32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Ok(<Value as serde::Deserialize>::deserialize(d)?
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 1))
}

fn loose_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(<Value as serde::Deserialize>::deserialize(d)?.as_bool() == Some(true))
}

/// The common hook input (Claude Code's shape), normalised.
pub fn common_input(v: &Value) -> Input {
    let i: CommonInput = serde_json::from_value(v.clone()).unwrap_or_default();
    let command = match &i.tool_input {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .and_then(|o| text(&o, "command")),
        other => text(other, "command"),
    };
    Input {
        session: i.session_id,
        cwd: i.cwd,
        prompt: i.prompt,
        tool: i.tool_name,
        command,
        stop_active: i.stop_hook_active,
        stop_aborted: false,
        source: i.source,
        reason: i.reason,
        transcript: i.transcript_path,
        error_type: i.error_type,
        error_text: {
            let parts: Vec<String> = [
                i.error_message,
                i.error_details,
                i.error,
                i.last_assistant_message,
            ]
            .into_iter()
            .flatten()
            .collect();
            (!parts.is_empty()).then(|| parts.join(" "))
        },
        pid: i.pid,
    }
}

/// What loopx has to say to the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Nothing: empty stdout.
    Nothing,
    /// Context for the model: the brief at start, the delta on a prompt.
    /// `agent` is the acting agent, for runtimes whose start answer can set
    /// the environment of later shell commands.
    Context { text: String, agent: Option<String> },
    /// Refuse the tool call, with the reason.
    Deny(String),
    /// Do not stop: keep working, with this as the next instruction.
    Continue(String),
    /// A line for a person (git hooks write it to stderr).
    Note(String),
}

/// The answer as the runtime's own JSON document, or None for an empty
/// stdout. [`Answer::Note`] is never JSON.
pub fn render(runtime: Runtime, event: Event, answer: &Answer) -> Option<Value> {
    if matches!(answer, Answer::Nothing | Answer::Note(_)) {
        return None;
    }
    match runtime {
        Runtime::ClaudeCode | Runtime::Codex | Runtime::OpenCode | Runtime::Pi => {
            claude::answer(event, answer)
        }
        Runtime::Cursor => cursor::answer(event, answer),
        Runtime::Gemini => gemini::answer(event, answer),
        Runtime::Git => None,
    }
}

/// A string field of a JSON object, if present and not empty.
fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The `hookSpecificOutput` answer that Claude Code and Gemini CLI both read
/// to add context for the model at an event.
fn specific_context(event: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": text,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_and_events_parse_as_each_runtime_spells_them() {
        assert_eq!(Runtime::parse("claude"), Some(Runtime::ClaudeCode));
        assert_eq!(Runtime::parse("Claude-Code"), Some(Runtime::ClaudeCode));
        assert_eq!(Runtime::parse("vim"), None);
        assert_eq!(
            Runtime::Cursor.event("beforeSubmitPrompt"),
            Some(("beforeSubmitPrompt", Event::Prompt))
        );
        assert_eq!(
            Runtime::Gemini.event("afteragent"),
            Some(("AfterAgent", Event::Stop))
        );
        assert_eq!(Runtime::Gemini.event("Stop"), None);
        for r in Runtime::ALL {
            for (name, _) in r.events() {
                assert!(r.known_events().contains(name), "{name}");
            }
        }
    }

    #[test]
    fn the_brief_names_loopx_by_path_under_codex_and_where_path_lacks_it() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("loopx");
        std::fs::write(&exe, "").unwrap();
        let exe = std::fs::canonicalize(&exe).unwrap();
        let path = exe.parent().unwrap().display().to_string();
        let abs = exe.display().to_string();
        assert_eq!(
            loopx_command(Runtime::ClaudeCode, Some(&path), &exe),
            "loopx"
        );
        assert_eq!(loopx_command(Runtime::Codex, Some(&path), &exe), abs);
        assert_eq!(
            loopx_command(Runtime::OpenCode, Some("/nowhere"), &exe),
            abs
        );
        assert_eq!(loopx_command(Runtime::OpenCode, None, &exe), abs);
        let other = dir.path().join("other/loopx");
        assert_eq!(
            loopx_command(Runtime::Gemini, Some(&path), &other),
            other.display().to_string()
        );
    }

    #[test]
    fn garbage_and_empty_stdin() {
        let e = Event::Start;
        assert_eq!(
            parse_input(Runtime::Codex, e, b"  \n"),
            Ok(Input::default())
        );
        assert!(parse_input(Runtime::Codex, e, b"{not json").is_err());
        assert!(parse_input(Runtime::Codex, e, b"[1,2]").is_err());
    }

    #[test]
    fn nothing_renders_as_an_empty_stdout() {
        for r in Runtime::ALL {
            for (_, e) in r.events() {
                assert_eq!(render(r, *e, &Answer::Nothing), None);
            }
        }
    }
}
