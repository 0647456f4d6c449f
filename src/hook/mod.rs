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

pub use crate::model::runtime::{Event, Runtime, Wire};

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
    if !runtime.spec().login_shell && found.is_some_and(same) {
        return "loopx".to_owned();
    }
    exe.to_str()
        .map_or_else(|| "loopx".to_owned(), installer::shell_word)
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
    /// The shell command about to run, when the tool is a shell: its
    /// `command`, a string or (some builds) an argv array, joined as shell
    /// words.
    pub command: Option<String>,
    /// Why the tool's input holds a command loopx cannot read (a number,
    /// an object, a `tool_input` string that is not JSON): the guard
    /// denies a shell tool's call then.
    pub command_error: Option<String>,
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
    /// The files an edit or write tool names (`file_path`, `notebook_path`,
    /// `path`), as given: what the write-scope check compares with the
    /// claim's worktree.
    pub paths: Vec<String>,
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
    Ok(match runtime.spec().wire {
        Wire::Claude | Wire::Gemini => common_input(&v),
        Wire::Cursor => cursor::input(event, &v),
        Wire::None => Input::default(),
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
            .map_err(|_| "its tool_input is a string that is not JSON".to_owned())
            .and_then(|o| command(o.get("command"))),
        Value::Object(o) => command(o.get("command")),
        Value::Null => Ok(None),
        _ => Err("its tool_input is not an object".to_owned()),
    };
    let (command, command_error) = split(command);
    let fields = match &i.tool_input {
        Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or_default(),
        v => v.clone(),
    };
    let paths = ["file_path", "notebook_path", "path"]
        .iter()
        .filter_map(|k| fields.get(k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    Input {
        session: i.session_id,
        cwd: i.cwd,
        prompt: i.prompt,
        tool: i.tool_name,
        command,
        command_error,
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
        paths,
    }
}

/// A tool's `command` field: absent, a string (empty included), or an argv
/// array of strings, joined as shell words (`["bash", "-lc", "cargo
/// publish"]` reads `bash -lc 'cargo publish'`); anything else cannot be
/// read.
fn command(field: Option<&Value>) -> Result<Option<String>, String> {
    match field {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(words)) => words
            .iter()
            .map(|w| w.as_str().map(installer::shell_word))
            .collect::<Option<Vec<_>>>()
            .map(|w| Some(w.join(" ")))
            .ok_or_else(|| "its command is a list of more than words".to_owned()),
        Some(_) => Err("its command is not text".to_owned()),
    }
}

/// A command read by [`command`] as the two fields of [`Input`].
fn split(command: Result<Option<String>, String>) -> (Option<String>, Option<String>) {
    match command {
        Ok(c) => (c, None),
        Err(why) => (None, Some(why)),
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
    match runtime.spec().wire {
        Wire::Claude => claude::answer(event, answer),
        Wire::Cursor => cursor::answer(event, answer),
        Wire::Gemini => gemini::answer(event, answer),
        Wire::None => None,
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
        assert_eq!(
            Runtime::Cursor.event("beforeSubmitPrompt"),
            Some(("beforeSubmitPrompt", Event::Prompt))
        );
        assert_eq!(
            Runtime::Gemini.event("afteragent"),
            Some(("AfterAgent", Event::Stop))
        );
        assert_eq!(Runtime::Gemini.event("Stop"), None);
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
