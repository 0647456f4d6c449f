//! Installing hooks, pure of the command line: the structural merge and
//! removal of loopx's entries in a runtime's settings file, loopx's plugin
//! files and the runtime's trust config, read through the runtime's `Spec`
//! (`model/runtime.rs`: which files, which templates in `hooks/`, compiled
//! in). JSON settings are parsed and rewritten with their key order kept;
//! what loopx owns is what runs `loopx hook …` (plus the `loopx` MCP
//! server, the Cursor rule, the plugin files and the git shims, each with
//! its marker). The commands (`cmd/hooks/`) decide which files and report.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use serde::Serialize;
use serde_json::{Map, Value};

use super::Runtime;
use crate::error::{Code, Refusal};

pub use crate::model::runtime::{Plugin, ProjectTrust, Shape};

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
        template: settings.template,
        guard_event: settings.guard_event,
    })
}

/// The line in a plugin file that names the loopx it runs, and the one
/// that says whether it guards the shell (see [`Plugin::template`]).
const PLUGIN_PROGRAM: &str = "const LOOPX = ";
const PLUGIN_GUARD: &str = "const GUARD = ";

/// loopx's plugin file, running `program`, with the shell guard when
/// `guard` (where the file has one).
pub fn plugin_text(plugin: &Plugin, program: &str, guard: bool) -> String {
    let quoted = serde_json::to_string(program).expect("a string serializes");
    plugin
        .template
        .replacen(
            &format!("{PLUGIN_PROGRAM}\"loopx\";"),
            &format!("{PLUGIN_PROGRAM}{quoted};"),
            1,
        )
        .replacen(
            &format!("{PLUGIN_GUARD}false;"),
            &format!("{PLUGIN_GUARD}{guard};"),
            1,
        )
}

/// The loopx an installed plugin file runs and whether it guards the
/// shell, if the file is loopx's.
pub fn plugin_program(plugin: &Plugin, text: &str) -> Option<(String, bool)> {
    if !text.starts_with(plugin.marker) {
        return None;
    }
    let value = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|v| v.trim_end_matches(';').to_owned())
    };
    let program = serde_json::from_str(&value(PLUGIN_PROGRAM)?).ok()?;
    Some((program, value(PLUGIN_GUARD).as_deref() == Some("true")))
}

/// The runtime's own config file, which says which projects it trusts:
/// `$<home_var>/<file>`, else `~/<home>/<file>`.
pub fn trust_config(
    trust: &ProjectTrust,
    config_home: Option<&str>,
    home: Option<&Path>,
) -> Option<PathBuf> {
    match config_home {
        Some(h) if !h.is_empty() => Some(Path::new(h).join(trust.file)),
        _ => home.map(|h| h.join(trust.home).join(trust.file)),
    }
}

/// Whether the runtime's config trusts `project` (or a folder above it):
/// it holds `[projects."<path>"] trust_level = "trusted"`. Codex 0.171
/// reads no project-local settings, hooks included, in a project it does
/// not trust.
pub fn trusts(config: &str, project: &Path) -> bool {
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

/// What to do so that the runtime runs the hooks in `project`.
pub fn trust_hint(trust: &ProjectTrust, project: &Path) -> String {
    trust
        .hint
        .replace("{project}", &project.display().to_string())
}

/// The line that marks a git hook as loopx's.
pub const GIT_MARKER: &str = "# loopx-managed hook";

/// Whether a Codex `mcp_servers` entry runs `loopx mcp`: a loopx by name
/// or path with `mcp` first, or any program with `mcp` alone (what `hooks
/// install --mcp --program WRAPPER` writes).
pub fn is_loopx_server(item: &toml_edit::Item) -> bool {
    let command = item.get("command").and_then(toml_edit::Item::as_str);
    let args: Vec<&str> = item
        .get("args")
        .and_then(toml_edit::Item::as_array)
        .map(|a| a.iter().filter_map(toml_edit::Value::as_str).collect())
        .unwrap_or_default();
    let Some(command) = command.filter(|c| !c.is_empty()) else {
        return false;
    };
    args == ["mcp"] || (command.rsplit('/').next() == Some("loopx") && args.first() == Some(&"mcp"))
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
/// answers whose hooks are settings entries, not git's shims (what `hooks
/// install --program WRAPPER` writes).
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
            .is_some_and(|r| r.spec().shims.is_empty())
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
    let settings = runtime.spec().settings?;
    settings
        .timeouts
        .iter()
        .find(|(e, _, _)| *e == event)
        .map(|&(_, max, why)| (max, why))
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

impl Change {
    /// `path` (shown relative to `base`) of `runtime`, unchanged so far.
    pub fn unchanged(runtime: Runtime, path: &Path, base: &Path) -> Change {
        Change {
            runtime: runtime.as_str(),
            file: shown(path, base),
            action: "unchanged",
            note: None,
        }
    }
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
        assert!(!trusts("", p));
        assert!(!trusts("not toml [", p));
        assert!(trusts(
            "[projects.\"/work/repo\"]\ntrust_level = \"trusted\"\n",
            p
        ));
        assert!(trusts(
            "projects = { \"/work\" = { trust_level = \"trusted\" } }\n",
            p
        ));
        assert!(!trusts(
            "[projects.\"/work/repo\"]\ntrust_level = \"untrusted\"\n",
            p
        ));
        assert!(!trusts(
            "[projects.\"/work/other\"]\ntrust_level = \"trusted\"\n",
            p
        ));
    }

    fn plugin(runtime: Runtime) -> &'static Plugin {
        runtime.spec().plugin.as_ref().unwrap()
    }

    #[test]
    fn the_opencode_plugin_names_its_program() {
        let opencode = plugin(Runtime::OpenCode);
        assert!(opencode.template.contains("const LOOPX = \"loopx\";"));
        let p = plugin_text(opencode, "/opt/my \"tools\"/loopx", true);
        assert_eq!(
            plugin_program(opencode, &p),
            Some(("/opt/my \"tools\"/loopx".to_owned(), false))
        );
        assert_eq!(
            plugin_program(opencode, opencode.template),
            Some(("loopx".to_owned(), false))
        );
        assert_eq!(plugin_program(opencode, "export const X = 1;"), None);
    }

    #[test]
    fn the_pi_extension_names_its_program_and_its_guard() {
        let pi = plugin(Runtime::Pi);
        assert!(pi.template.contains("const LOOPX = \"loopx\";"));
        assert!(pi.template.contains("const GUARD = false;"));
        let p = plugin_text(pi, "/opt/my \"tools\"/loopx", true);
        assert_eq!(
            plugin_program(pi, &p),
            Some(("/opt/my \"tools\"/loopx".to_owned(), true))
        );
        assert_eq!(
            plugin_program(pi, pi.template),
            Some(("loopx".to_owned(), false))
        );
        assert_eq!(plugin_program(pi, "export default function () {}"), None);
        // Neither is taken for the other's.
        assert_eq!(plugin_program(pi, plugin(Runtime::OpenCode).template), None);
        // Pi loads the default export; the file exports nothing else.
        let exports: Vec<&str> = pi
            .template
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
