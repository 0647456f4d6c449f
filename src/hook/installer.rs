//! Installing hooks, pure of the command line: where each runtime keeps its
//! hook settings, the templates in `hooks/` (compiled in), and the
//! structural merge and removal of loopx's entries in those files. JSON
//! settings are parsed and rewritten with their key order kept; what loopx
//! owns is what runs `loopx hook …` (plus the `loopx` MCP server, the
//! Cursor rule and the git shims, marked `loopx-managed hook`). The
//! commands (`cmd/hooks/`) decide which files and report.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use serde::Serialize;
use serde_json::{Map, Value};

use super::Runtime;
use crate::error::{Code, Refusal};

pub use crate::model::runtime::Shape;

/// A runtime's hook settings file and its template.
pub struct HookFile {
    pub runtime: Runtime,
    pub path: PathBuf,
    pub shape: Shape,
    pub template: &'static str,
    /// The event that runs the tool guard: installed only with `--guard`.
    pub guard_event: &'static str,
}

/// The hook settings file of `runtime` in `scope`, with `base` the project
/// root or the home directory.
pub fn hook_file(runtime: Runtime, base: &Path) -> Option<HookFile> {
    let settings = runtime.spec().settings?;
    Some(HookFile {
        runtime,
        path: base.join(settings.path),
        shape: settings.shape,
        template: template(runtime)?,
        guard_event: settings.guard_event,
    })
}

/// The hooks loopx installs into a runtime's settings file.
fn template(runtime: Runtime) -> Option<&'static str> {
    Some(match runtime {
        Runtime::ClaudeCode => include_str!("../../hooks/claude/settings.fragment.json"),
        Runtime::Codex => include_str!("../../hooks/codex/hooks.json"),
        Runtime::Cursor => include_str!("../../hooks/cursor/hooks.json"),
        Runtime::Gemini => include_str!("../../hooks/gemini/settings.fragment.json"),
        _ => return None,
    })
}

pub const CODEX_MCP: &str = include_str!("../../hooks/codex/config.fragment.toml");
/// The OpenCode plugin; [`opencode_plugin`] points it at a loopx.
pub const OPENCODE_PLUGIN: &str = include_str!("../../hooks/opencode/loopx.js");
/// The line in the plugin that names the loopx it runs.
const OPENCODE_PROGRAM: &str = "const LOOPX = \"loopx\";";
/// The line that marks the plugin as loopx's.
pub const OPENCODE_MARKER: &str = "// loopx-managed plugin";

/// The OpenCode plugin, running `program`.
pub fn opencode_plugin(program: &str) -> String {
    let quoted = serde_json::to_string(program).expect("a string serializes");
    OPENCODE_PLUGIN.replacen(OPENCODE_PROGRAM, &format!("const LOOPX = {quoted};"), 1)
}

/// The loopx an installed OpenCode plugin runs, if the file is loopx's.
pub fn opencode_program(plugin: &str) -> Option<String> {
    if !plugin.starts_with(OPENCODE_MARKER) {
        return None;
    }
    let line = plugin.lines().find(|l| l.starts_with("const LOOPX = "))?;
    let value = line
        .trim_start_matches("const LOOPX = ")
        .trim_end_matches(';');
    serde_json::from_str(value).ok()
}

/// The Pi extension; [`pi_extension`] points it at a loopx and sets its
/// guard.
pub const PI_EXTENSION: &str = include_str!("../../hooks/pi/loopx.ts");
/// The lines in the extension that name the loopx it runs and say whether
/// it guards bash.
const PI_PROGRAM: &str = "const LOOPX = \"loopx\";";
const PI_GUARD: &str = "const GUARD = false;";
/// The line that marks the extension as loopx's.
pub const PI_MARKER: &str = "// loopx-managed extension";

/// The Pi extension, running `program`, with the bash guard when `guard`.
pub fn pi_extension(program: &str, guard: bool) -> String {
    let quoted = serde_json::to_string(program).expect("a string serializes");
    PI_EXTENSION
        .replacen(PI_PROGRAM, &format!("const LOOPX = {quoted};"), 1)
        .replacen(PI_GUARD, &format!("const GUARD = {guard};"), 1)
}

/// The loopx an installed Pi extension runs and whether it guards bash, if
/// the file is loopx's.
pub fn pi_program(extension: &str) -> Option<(String, bool)> {
    if !extension.starts_with(PI_MARKER) {
        return None;
    }
    let value = |prefix: &str| {
        extension
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| v.trim_end_matches(';').to_owned())
    };
    let program = serde_json::from_str(&value("const LOOPX = ")?).ok()?;
    Some((program, value("const GUARD = ")?.as_str() == "true"))
}

/// Codex's config file: `$CODEX_HOME/config.toml`, else
/// `~/.codex/config.toml`.
pub fn codex_config(codex_home: Option<&str>, home: Option<&Path>) -> Option<PathBuf> {
    match codex_home {
        Some(h) if !h.is_empty() => Some(Path::new(h).join("config.toml")),
        _ => home.map(|h| h.join(".codex/config.toml")),
    }
}

/// Whether Codex trusts `project` (or a folder above it): its config holds
/// `[projects."<path>"] trust_level = "trusted"`. Codex 0.171 reads no
/// project-local settings, hooks included, in a project it does not trust.
pub fn codex_trusts(config: &str, project: &Path) -> bool {
    let Ok(doc) = config.parse::<toml_edit::DocumentMut>() else {
        return false;
    };
    let Some(projects) = doc.get("projects").and_then(toml_edit::Item::as_table_like) else {
        return false;
    };
    project.ancestors().any(|dir| {
        let Some(key) = dir.to_str() else {
            return false;
        };
        projects
            .get(key)
            .and_then(|p| p.get("trust_level"))
            .and_then(toml_edit::Item::as_str)
            == Some("trusted")
    })
}

/// What to run so that Codex runs the hooks in `project`.
pub fn codex_trust_hint(project: &Path) -> String {
    format!(
        "Codex runs no hooks in a project it does not trust, and it does not trust {p}: start `codex` there once and accept the trust prompt; for unattended runs use `codex exec --trust …` (or add `[projects.\"{p}\"]` with `trust_level = \"trusted\"` to Codex's config.toml)",
        p = project.display()
    )
}

pub const CURSOR_RULE: &str = include_str!("../../hooks/cursor/rules/loopx.mdc");
pub const GIT_HOOKS: [(&str, &str); 2] = [
    ("pre-push", include_str!("../../hooks/git/pre-push")),
    ("post-merge", include_str!("../../hooks/git/post-merge")),
];
/// The line that marks a git hook as loopx's.
pub const GIT_MARKER: &str = "# loopx-managed hook";

/// Whether a Codex `mcp_servers` entry runs `loopx mcp`.
pub fn is_loopx_server(item: &toml_edit::Item) -> bool {
    let command = item.get("command").and_then(toml_edit::Item::as_str);
    let first_arg = item
        .get("args")
        .and_then(toml_edit::Item::as_array)
        .and_then(|a| a.get(0))
        .and_then(toml_edit::Value::as_str);
    command.is_some_and(|c| c.rsplit('/').next() == Some("loopx")) && first_arg == Some("mcp")
}

/// The program of a shell command line (its first word, with single or
/// double quotes taken off) and the rest of the line.
pub fn program_of(command: &str) -> (String, &str) {
    let command = command.trim_start();
    if let Some(q @ ('\'' | '"')) = command.chars().next()
        && let Some(end) = command[1..].find(q)
    {
        return (command[1..=end].to_owned(), &command[end + 2..]);
    }
    let end = command.find(char::is_whitespace).unwrap_or(command.len());
    (command[..end].to_owned(), &command[end..])
}

/// Whether a hook command is loopx's: it runs `loopx hook …` (by name or
/// by path), or any program as `PROGRAM hook RUNTIME …` with a runtime loopx
/// answers (what `hooks install --program WRAPPER` writes).
pub fn owned(command: &str) -> bool {
    let (program, rest) = program_of(command);
    let name = program.rsplit('/').next().unwrap_or(&program);
    let mut words = rest.split_whitespace();
    if words.next() != Some("hook") {
        return false;
    }
    name == "loopx"
        || words
            .next()
            .and_then(Runtime::parse)
            .is_some_and(|r| r != Runtime::Git)
}

/// `path` as one shell word: as it is when it holds only safe characters,
/// else single-quoted.
pub fn shell_word(path: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._+-,:@%".contains(c);
    if !path.is_empty() && path.chars().all(safe) {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// Points every loopx hook command in `v` (a template's entries) at
/// `program`: `loopx hook …` becomes `/abs/path/loopx hook …`.
fn point_at(v: &mut Value, program: &str) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match x {
                    Value::String(c) if k == "command" && owned(c) => {
                        let (_, rest) = program_of(c);
                        *c = format!("{}{rest}", shell_word(program));
                    }
                    _ => point_at(x, program),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| point_at(x, program)),
        _ => {}
    }
}

/// The longest timeout a runtime honours for an event, in the unit of its
/// settings, and why: `hooks doctor` flags a longer one.
pub fn timeout_limit(runtime: Runtime, event: &str) -> Option<(f64, &'static str)> {
    match (runtime, event) {
        (Runtime::Codex, "SessionEnd") => Some((
            3.0,
            "Codex cuts a SessionEnd hook to 3 s and warns on every run",
        )),
        _ => None,
    }
}

fn command_of(handler: &Value) -> &str {
    handler.get("command").and_then(Value::as_str).unwrap_or("")
}

/// The events of a settings document's `hooks` object.
fn events(doc: &Value) -> Vec<String> {
    doc.get("hooks")
        .and_then(Value::as_object)
        .map(|h| h.keys().cloned().collect())
        .unwrap_or_default()
}

/// loopx's entries under one event, as units to compare: groups reduced to
/// their loopx handlers (grouped), or the loopx entries (flat).
fn owned_units(doc: &Value, event: &str, shape: Shape) -> Vec<Value> {
    let Some(list) = doc
        .pointer(&format!("/hooks/{event}"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    match shape {
        Shape::Flat => list
            .iter()
            .filter(|e| owned(command_of(e)))
            .cloned()
            .collect(),
        Shape::Grouped => list
            .iter()
            .filter_map(|g| {
                let handlers: Vec<Value> = g
                    .get("hooks")?
                    .as_array()?
                    .iter()
                    .filter(|h| owned(command_of(h)))
                    .cloned()
                    .collect();
                if handlers.is_empty() {
                    return None;
                }
                let mut unit = g.clone();
                unit["hooks"] = Value::Array(handlers);
                Some(unit)
            })
            .collect(),
    }
}

/// Whether the document holds any of loopx's entries.
pub fn holds_owned(doc: &Value, shape: Shape) -> bool {
    events(doc)
        .iter()
        .any(|e| !owned_units(doc, e, shape).is_empty())
}

/// Removes loopx's entries (and the groups, events and `hooks` object they
/// leave empty); returns whether anything was removed.
pub fn remove_owned(doc: &mut Value, shape: Shape, only: Option<&str>) -> bool {
    let Some(hooks) = doc.get_mut("hooks").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    let mut emptied = Vec::new();
    for (event, list) in hooks.iter_mut() {
        if only.is_some_and(|o| o != event) {
            continue;
        }
        let Some(list) = list.as_array_mut() else {
            continue;
        };
        let before = list.len();
        let mut touched = false;
        match shape {
            Shape::Flat => list.retain(|e| !owned(command_of(e))),
            Shape::Grouped => {
                list.retain_mut(|g| {
                    let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
                        return true;
                    };
                    let n = hs.len();
                    hs.retain(|h| !owned(command_of(h)));
                    if hs.len() != n {
                        touched = true;
                        return !hs.is_empty();
                    }
                    true
                });
            }
        }
        if list.len() != before || touched {
            changed = true;
            if list.is_empty() {
                emptied.push(event.clone());
            }
        }
    }
    for e in emptied {
        hooks.remove(&e);
    }
    if changed
        && hooks.is_empty()
        && let Some(obj) = doc.as_object_mut()
    {
        obj.remove("hooks");
    }
    changed
}

/// Merges the template's entries into `doc` (tool guard only with `guard`),
/// their commands running `program`:
/// events already holding exactly the template's entries are left alone;
/// others have loopx's entries replaced.
pub fn merge(doc: &mut Value, file: &HookFile, guard: bool, program: &str) -> Result<()> {
    let mut template: Value = serde_json::from_str(file.template)
        .with_context(|| format!("the built-in {} template", file.runtime.as_str()))?;
    point_at(&mut template, program);
    let mut wanted: Vec<(String, Vec<Value>)> = Vec::new();
    if let Some(h) = template.get("hooks").and_then(Value::as_object) {
        for (event, list) in h {
            if event == file.guard_event && !guard {
                continue;
            }
            wanted.push((event.clone(), list.as_array().cloned().unwrap_or_default()));
        }
    }
    if !doc.is_object() {
        return Err(anyhow!("{} is not a JSON object", file.path.display()));
    }
    for event in events(doc) {
        if !wanted.iter().any(|(e, _)| *e == event) {
            remove_owned(doc, file.shape, Some(&event));
        }
    }
    for (event, units) in wanted {
        if owned_units(doc, &event, file.shape) == units {
            continue;
        }
        remove_owned(doc, file.shape, Some(&event));
        let obj = doc.as_object_mut().expect("checked an object above");
        if file.shape == Shape::Flat && !obj.contains_key("version") {
            obj.insert("version".into(), Value::from(1));
        }
        let hooks = obj
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        let hooks = hooks
            .as_object_mut()
            .ok_or_else(|| anyhow!("\"hooks\" in {} is not an object", file.path.display()))?;
        let list = hooks
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        let list = list
            .as_array_mut()
            .ok_or_else(|| anyhow!("\"hooks.{event}\" in {} is not a list", file.path.display()))?;
        list.extend(units);
    }
    Ok(())
}

/// Drops empty objects and lists, recursively (and a lone Cursor
/// `version`), so "nothing but what loopx added" compares equal to "nothing".
pub fn hollow(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let x = hollow(x);
                let empty = matches!(&x, Value::Object(o) if o.is_empty())
                    || matches!(&x, Value::Array(a) if a.is_empty());
                if !empty {
                    out.insert(k.clone(), x);
                }
            }
            if out.len() == 1 && out.get("version") == Some(&Value::from(1)) {
                out.clear();
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(hollow).collect()),
        x => x.clone(),
    }
}

/// Reads a JSON settings file: None when absent; an error naming the file
/// when it does not parse.
pub fn read_json(path: &Path) -> Result<Option<(Vec<u8>, Value)>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let v: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        serde_json::from_slice(&bytes).map_err(|e| {
            Refusal::error(
                Code::BadSettings,
                format!("{} is not valid JSON: {e}", path.display()),
            )
            .with_hint("fix it (or move it away) and run the command again; nothing was changed")
        })?
    };
    Ok(Some((bytes, v)))
}

/// The backup of `path` made the first time loopx changed it.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".loopx-backup");
    path.with_file_name(name)
}

/// Writes `bytes` to `path` atomically (a temp file in the same folder,
/// then a rename), creating the folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent folder", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("writing into {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| anyhow!("writing {}: {}", path.display(), e.error))?;
    Ok(())
}

/// JSON as loopx writes settings: two-space indent, a final newline.
pub fn pretty(v: &Value) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(v)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Removes `dir` and its parents up to `stop` while they are empty.
pub fn prune_dirs(dir: &Path, stop: &Path) {
    let mut d = Some(dir);
    while let Some(x) = d {
        if x == stop || !x.starts_with(stop) || std::fs::remove_dir(x).is_err() {
            break;
        }
        d = x.parent();
    }
}

/// One change to one file, as install and uninstall report it.
#[derive(Serialize, Debug)]
pub struct Change {
    pub runtime: &'static str,
    pub file: String,
    /// created, updated, unchanged, skipped; for uninstall also restored,
    /// removed, and absent (no such file: nothing to remove).
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Shows a path relative to `base` when it is inside it.
pub fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claude(path: &str) -> HookFile {
        hook_file(Runtime::ClaudeCode, Path::new(path)).unwrap()
    }

    #[test]
    fn ownership_is_the_loopx_hook_command() {
        assert!(owned("loopx hook claude-code Stop"));
        assert!(owned("/usr/local/bin/loopx hook codex Stop"));
        assert!(!owned("loopx status"));
        assert!(!owned("my-loopx hook"));
        assert!(!owned("my-tool hook something"));
        // `hooks install --program WRAPPER`.
        assert!(owned("/opt/bin/loopx-logged hook codex Stop"));
        assert!(owned("'/opt/my tools/loopx' hook gemini BeforeTool"));
        assert!(owned("\"/opt/x/loopx\" hook cursor stop"));
    }

    #[test]
    fn codex_trust_is_read_from_its_projects_table() {
        let p = Path::new("/work/repo");
        assert!(!codex_trusts("", p));
        assert!(!codex_trusts("not toml [", p));
        assert!(codex_trusts(
            "[projects.\"/work/repo\"]\ntrust_level = \"trusted\"\n",
            p
        ));
        assert!(codex_trusts(
            "projects = { \"/work\" = { trust_level = \"trusted\" } }\n",
            p
        ));
        assert!(!codex_trusts(
            "[projects.\"/work/repo\"]\ntrust_level = \"untrusted\"\n",
            p
        ));
        assert!(!codex_trusts(
            "[projects.\"/work/other\"]\ntrust_level = \"trusted\"\n",
            p
        ));
    }

    #[test]
    fn the_opencode_plugin_names_its_program() {
        assert!(OPENCODE_PLUGIN.contains(OPENCODE_PROGRAM));
        let p = opencode_plugin("/opt/my \"tools\"/loopx");
        assert_eq!(
            opencode_program(&p).as_deref(),
            Some("/opt/my \"tools\"/loopx")
        );
        assert_eq!(opencode_program(OPENCODE_PLUGIN).as_deref(), Some("loopx"));
        assert_eq!(opencode_program("export const X = 1;"), None);
    }

    #[test]
    fn the_pi_extension_names_its_program_and_its_guard() {
        assert!(PI_EXTENSION.contains(PI_PROGRAM));
        assert!(PI_EXTENSION.contains(PI_GUARD));
        let p = pi_extension("/opt/my \"tools\"/loopx", true);
        assert_eq!(
            pi_program(&p),
            Some(("/opt/my \"tools\"/loopx".to_owned(), true))
        );
        assert_eq!(pi_program(PI_EXTENSION), Some(("loopx".to_owned(), false)));
        assert_eq!(pi_program("export default function () {}"), None);
        // Pi loads the default export; the file exports nothing else.
        let exports: Vec<&str> = PI_EXTENSION
            .lines()
            .filter(|l| l.starts_with("export "))
            .collect();
        assert_eq!(exports, ["export default function loopx(pi) {"]);
    }

    #[test]
    fn a_template_points_at_the_program_as_one_shell_word() {
        let file = claude("/p");
        let mut doc = json!({});
        merge(&mut doc, &file, false, "/opt/my tools/loopx").unwrap();
        assert_eq!(
            doc["hooks"]["Stop"][0]["hooks"][0]["command"],
            "'/opt/my tools/loopx' hook claude-code Stop"
        );
        // Installing at another path replaces the entries, not adds to them.
        merge(&mut doc, &file, false, "/usr/bin/loopx").unwrap();
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 1);
        assert_eq!(
            doc["hooks"]["Stop"][0]["hooks"][0]["command"],
            "/usr/bin/loopx hook claude-code Stop"
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn merge_keeps_other_entries_and_is_idempotent() {
        let file = claude("/p");
        let mut doc = json!({
            "model": "opus",
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
        });
        let before = doc.clone();
        merge(&mut doc, &file, false, "loopx").unwrap();
        let once = doc.clone();
        merge(&mut doc, &file, false, "loopx").unwrap();
        assert_eq!(doc, once);
        assert_eq!(doc["model"], "opus");
        assert_eq!(doc["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert!(doc["hooks"].get("PreToolUse").is_none());
        merge(&mut doc, &file, true, "loopx").unwrap();
        assert!(doc["hooks"].get("PreToolUse").is_some());
        remove_owned(&mut doc, Shape::Grouped, None);
        assert_eq!(doc, before);
    }

    #[test]
    fn an_empty_skeleton_is_hollow() {
        assert_eq!(hollow(&json!({"version": 1, "hooks": {}})), json!({}));
        assert_eq!(hollow(&json!({"a": [], "b": 1})), json!({"b": 1}));
    }
}
