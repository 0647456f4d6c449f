//! `loopx hooks doctor`: check the wiring the way the runtimes will see it,
//! and tell the human the trust step each runtime needs. Writes nothing, and
//! never another tool's trust settings.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::{
    GIT_HOOKS, GIT_MARKER, Scope, backup_path, base, git_hooks_dir, hook_file, owned, program_of,
    read_json, shown, timeout_limit,
};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::hook::Runtime;

/// Check the hooks: the loopx they run exists, files parse, known events, timeouts
///
/// Checks that the loopx each hook runs is there (its absolute path, or
/// loopx on PATH for hooks that run it by name), that every file parses,
/// that every event is one the runtime knows, that no matcher is empty and
/// that no timeout is longer than the runtime honours. Also says which trust step each runtime needs before its hooks run
/// (approving Codex hooks, trusting the Gemini folder, …); loopx never
/// writes another tool's trust settings. Exits 1 when something is wrong.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub target: super::Target,
}

#[derive(Serialize)]
struct Wire {
    loopx: Option<String>,
    ok: bool,
    checks: Vec<Check>,
}

#[derive(Serialize)]
struct Check {
    runtime: &'static str,
    file: String,
    /// wired, absent or broken.
    status: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    events: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<&'static str>,
    /// Whether a hook runs `loopx` by name (found on PATH at run time).
    #[serde(skip)]
    by_name: bool,
}

/// The step a human takes before a runtime runs project hooks.
fn trust(runtime: Runtime, scope: Scope) -> Option<&'static str> {
    match (runtime, scope) {
        (Runtime::ClaudeCode, _) => Some(
            "Claude Code reads hooks at session start: restart it or review them in /hooks, and accept the workspace trust prompt",
        ),
        (Runtime::Codex, Scope::Project) => Some(
            "Codex runs project hooks only in a trusted project, and each hook only once approved in /hooks (again after every change)",
        ),
        (Runtime::Codex, Scope::User) => {
            Some("approve the hooks in Codex's /hooks (again after every change)")
        }
        (Runtime::Cursor, _) => Some(
            "Cursor reloads hooks.json on save: check the Hooks tab of its settings for errors",
        ),
        (Runtime::Gemini, Scope::Project) => Some(
            "Gemini CLI ignores .gemini/settings.json in an untrusted folder: trust this folder when it asks; a headless run (gemini -p) needs GEMINI_CLI_TRUST_WORKSPACE=true in its environment (--skip-trust does not load the folder's hooks in 0.61)",
        ),
        (Runtime::Gemini, Scope::User) => {
            Some("Gemini CLI runs hooks since v0.27; check them with /hooks")
        }
        (Runtime::OpenCode, _) => Some(
            "OpenCode loads plugins when it starts: restart it after installing or changing the plugin",
        ),
        (Runtime::Pi, _) => Some(
            "Pi loads extensions when it starts: restart it (or /reload) after installing or changing the extension",
        ),
        (Runtime::Git | Runtime::Custom, _) => None,
    }
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let base = base(ctx, args.target.scope)?;
    let loopx = on_path(ctx.env.get("PATH").unwrap_or(""), "loopx");
    let mut checks = Vec::new();
    for runtime in args.target.runtime.runtimes() {
        if runtime == Runtime::OpenCode {
            let path = super::plugin_path(runtime, &base, args.target.scope)
                .expect("OpenCode has a plugin");
            let mut c = check_opencode(&path, &base);
            if c.status != "absent" {
                c.trust = trust(runtime, args.target.scope);
            }
            checks.push(c);
        } else if runtime == Runtime::Pi {
            let path =
                super::plugin_path(runtime, &base, args.target.scope).expect("Pi has a plugin");
            let mut c = check_pi(&path, &base);
            if c.status != "absent" {
                c.trust = trust(runtime, args.target.scope);
            }
            checks.push(c);
        } else if let Some(file) = hook_file(runtime, &base) {
            let mut c = check_json(runtime, &file.path, &base);
            if c.status != "absent" {
                c.trust = trust(runtime, args.target.scope);
                if let Some(hint) = super::codex_untrusted(ctx, runtime, args.target.scope, &base) {
                    c.problems.push(hint);
                    c.status = "broken";
                }
            }
            checks.push(c);
        } else if args.target.scope == Scope::Project {
            checks.push(check_git(ctx, &base));
        }
    }
    let wired = checks.iter().any(|c| c.by_name);
    let ok = checks.iter().all(|c| c.problems.is_empty()) && (loopx.is_some() || !wired);
    let wire = Wire {
        loopx: loopx.as_ref().map(|p| p.display().to_string()),
        ok,
        checks,
    };
    ctx.out.emit(&wire, || human(&wire, wired))?;
    Ok(if ok { Exit::Ok } else { Exit::Error })
}

fn human(w: &Wire, wired: bool) -> String {
    let mut s = match &w.loopx {
        Some(p) => format!("loopx on PATH: {p}\n"),
        None if wired => {
            "problem: loopx is not on PATH, so every hook fails (silently in most runtimes); install it or put it on the PATH the runtimes start with\n".to_owned()
        }
        None => "loopx is not on PATH (the hooks run it by its absolute path, so they do not need it)\n".to_owned(),
    };
    for c in &w.checks {
        let events = if c.events.is_empty() {
            String::new()
        } else {
            format!(" ({})", c.events.join(", "))
        };
        s.push_str(&format!(
            "{:<12} {}: {}{events}\n",
            c.runtime, c.file, c.status
        ));
        for p in &c.problems {
            s.push_str(&format!("  problem: {p}\n"));
        }
        if let Some(t) = c.trust {
            s.push_str(&format!("  trust: {t}\n"));
        }
    }
    s
}

/// The first executable `name` on `path`.
fn on_path(path: &str, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
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

fn check_json(runtime: Runtime, path: &Path, base: &Path) -> Check {
    let mut c = Check {
        runtime: runtime.as_str(),
        file: shown(path, base),
        status: "absent",
        events: Vec::new(),
        problems: Vec::new(),
        trust: None,
        by_name: false,
    };
    let doc = match read_json(path) {
        Ok(Some((_, v))) => v,
        Ok(None) => return c,
        Err(e) => {
            c.status = "broken";
            c.problems.push(format!("{e:#}"));
            return c;
        }
    };
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return c;
    };
    for (event, list) in hooks {
        if !runtime.known_events().contains(&event.as_str()) {
            c.problems.push(format!(
                "{event} is not a {} event (a typo is silently ignored)",
                runtime.as_str()
            ));
        }
        let Some(list) = list.as_array() else {
            c.problems.push(format!("hooks.{event} is not a list"));
            continue;
        };
        for entry in list {
            if entry.get("matcher").and_then(Value::as_str) == Some("") {
                c.problems.push(format!(
                    "hooks.{event} has an empty matcher; leave the key out to match everything"
                ));
            }
            let handlers: Vec<&Value> = match entry.get("hooks").and_then(Value::as_array) {
                Some(hs) => hs.iter().collect(),
                None => vec![entry],
            };
            for h in handlers {
                let cmd = h.get("command").and_then(Value::as_str).unwrap_or("");
                if !owned(cmd) {
                    continue;
                }
                let (program, rest) = program_of(cmd);
                if program.contains('/') {
                    if !is_executable(Path::new(&program)) {
                        c.problems.push(format!(
                            "hooks.{event} runs {program}, which is not there or not executable (loopx moved?): run `loopx hooks install` again"
                        ));
                    }
                } else {
                    c.by_name = true;
                }
                if let (Some((max, why)), Some(t)) = (
                    timeout_limit(runtime, event),
                    h.get("timeout").and_then(Value::as_f64),
                ) && t > max
                {
                    c.problems.push(format!(
                        "hooks.{event} asks for a {t} s timeout: {why}; set it to {max} or less"
                    ));
                }
                let mut words = rest.split_whitespace().skip(1);
                let (r, e) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let answers = Runtime::parse(r).and_then(|r| r.event(e)).is_some();
                if !answers || !e.eq_ignore_ascii_case(event) {
                    c.problems.push(format!(
                        "hooks.{event} runs `{cmd}`, which loopx does not answer there"
                    ));
                }
                if !c.events.contains(event) {
                    c.events.push(event.clone());
                }
            }
        }
    }
    c.status = if !c.problems.is_empty() {
        "broken"
    } else if c.events.is_empty() {
        "absent"
    } else {
        "wired"
    };
    c
}

/// The OpenCode plugin: loopx's, and the loopx it runs is there.
fn check_opencode(path: &Path, base: &Path) -> Check {
    let mut c = Check {
        runtime: Runtime::OpenCode.as_str(),
        file: shown(path, base),
        status: "absent",
        events: Vec::new(),
        problems: Vec::new(),
        trust: None,
        by_name: false,
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return c;
    };
    let Some(program) = super::opencode_program(&text) else {
        c.problems.push(
            "not loopx's plugin (no loopx-managed marker); move it away and install again"
                .to_owned(),
        );
        c.status = "broken";
        return c;
    };
    if program.contains('/') {
        if !is_executable(Path::new(&program)) {
            c.problems.push(format!(
                "the plugin runs {program}, which is not there or not executable (loopx moved?): run `loopx hooks install --runtime opencode` again"
            ));
        }
    } else {
        c.by_name = true;
    }
    c.events = [
        "chat.message",
        "experimental.chat.system.transform",
        "tool.execute.before",
        "session.idle",
    ]
    .map(str::to_owned)
    .to_vec();
    c.status = if c.problems.is_empty() {
        "wired"
    } else {
        "broken"
    };
    c
}

/// The Pi extension: loopx's, and the loopx it runs is there.
fn check_pi(path: &Path, base: &Path) -> Check {
    let mut c = Check {
        runtime: Runtime::Pi.as_str(),
        file: shown(path, base),
        status: "absent",
        events: Vec::new(),
        problems: Vec::new(),
        trust: None,
        by_name: false,
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return c;
    };
    let Some((program, guard)) = super::pi_program(&text) else {
        c.problems.push(
            "not loopx's extension (no loopx-managed marker); move it away and install again"
                .to_owned(),
        );
        c.status = "broken";
        return c;
    };
    if program.contains('/') {
        if !is_executable(Path::new(&program)) {
            c.problems.push(format!(
                "the extension runs {program}, which is not there or not executable (loopx moved?): run `loopx hooks install --runtime pi` again"
            ));
        }
    } else {
        c.by_name = true;
    }
    c.events = ["session_start", "before_agent_start"]
        .into_iter()
        .chain(guard.then_some("tool_call"))
        .chain(["agent_end", "session_shutdown", "session_compact"])
        .map(str::to_owned)
        .collect();
    c.status = if c.problems.is_empty() {
        "wired"
    } else {
        "broken"
    };
    c
}

fn check_git(ctx: &Ctx, base: &Path) -> Check {
    let mut c = Check {
        runtime: "git",
        file: "-".to_owned(),
        status: "absent",
        events: Vec::new(),
        problems: Vec::new(),
        trust: None,
        by_name: false,
    };
    let dir = match git_hooks_dir(ctx) {
        Ok(d) => d,
        Err(e) => {
            c.problems.push(format!("{e:#}"));
            c.status = "broken";
            return c;
        }
    };
    c.file = shown(&dir, base);
    for (name, _) in GIT_HOOKS {
        let path = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !text.contains(GIT_MARKER) {
            continue;
        }
        c.events.push(name.to_owned());
        // The shims run `loopx` by name (and do nothing without it).
        c.by_name = true;
        if !is_executable(&path) {
            c.problems.push(format!(
                "{} is not executable (chmod +x)",
                shown(&path, base)
            ));
        }
        let chained = backup_path(&path);
        if chained.exists() && !is_executable(&chained) {
            c.problems.push(format!(
                "{} (the chained hook) is not executable",
                shown(&chained, base)
            ));
        }
    }
    c.status = if !c.problems.is_empty() {
        "broken"
    } else if c.events.is_empty() {
        "absent"
    } else {
        "wired"
    };
    c
}
