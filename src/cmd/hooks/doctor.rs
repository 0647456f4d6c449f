//! `loopx hooks doctor`: check the wiring the way the runtimes will see it,
//! and tell the human the trust step each runtime needs. Writes nothing, and
//! never another tool's trust settings.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::{
    GIT_MARKER, Place, Plugin, backup_path, hook_file, is_executable, owned, plugin_program,
    program_of, read_json, shown, timeout_limit,
};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::hook::{Runtime, guard};

/// Check the hooks: the loopx they run exists, files parse, known events, timeouts
///
/// Checks that the loopx each hook runs is there (its absolute path, or
/// loopx on PATH for hooks that run it by name), that every file parses,
/// that every event is one the runtime knows, that no matcher is empty and
/// that no timeout is longer than the runtime honours. Also says which trust step each runtime needs before its hooks run
/// (approving Codex hooks, trusting the Gemini folder, …); loopx never
/// writes another tool's trust settings. Says where the tool guard is
/// wired, and when `LOOPX_GUARD=off` in this environment switches it off.
/// Exits 1 when something is wrong.
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
    /// When a claim on this clone takes a worktree of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<WorktreeRule>,
}

/// Which rule decides whether a claim takes a worktree here.
#[derive(Serialize)]
struct WorktreeRule {
    /// git config `loopx.worktree`: auto, always or never.
    mode: &'static str,
    /// Whether this machine sees a session's process (Linux `/proc`), so
    /// `auto` can tell another live session without the runtime's pid.
    sees_processes: bool,
    /// What applies, in words.
    applies: String,
}

impl WorktreeRule {
    fn of(ctx: &Ctx) -> Option<WorktreeRule> {
        use crate::config::WorktreeMode;
        let mode = ctx.repo().ok()?.config().worktree;
        let sees = crate::hook::sessions::can_see_processes();
        let applies = match (mode, sees) {
            (WorktreeMode::Always, _) => "every claim takes a worktree of its own (git config loopx.worktree = always)".to_owned(),
            (WorktreeMode::Never, _) => "no claim takes a worktree unless `todo claim --worktree` (git config loopx.worktree = never)".to_owned(),
            (WorktreeMode::Auto, true) => "a claim takes a worktree of its own when another agent's session on this clone is live (seen through /proc); set git config loopx.worktree to always or never to decide instead".to_owned(),
            (WorktreeMode::Auto, false) => "this machine cannot see sessions' processes (no /proc): only runtimes that send their pid (OpenCode) count as live, so git config decides: set loopx.worktree = always when several sessions share this clone".to_owned(),
        };
        Some(WorktreeRule {
            mode: mode.as_str(),
            sees_processes: sees,
            applies,
        })
    }
}

#[derive(Serialize)]
pub(super) struct Check {
    runtime: &'static str,
    file: String,
    /// wired, absent or broken.
    pub(super) status: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    events: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) problems: Vec<String>,
    /// What doctor cannot judge from here and says instead of failing:
    /// trust a runtime may be given on its command line (`codex exec
    /// --trust`) where its config does not give it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<&'static str>,
    /// Whether a hook runs `loopx` by name (found on PATH at run time).
    #[serde(skip)]
    by_name: bool,
    /// Whether the tool guard's event is wired.
    #[serde(skip)]
    guarded: bool,
}

impl Check {
    fn new(runtime: Runtime, file: String) -> Check {
        Check {
            runtime: runtime.as_str(),
            file,
            status: "absent",
            events: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            trust: None,
            by_name: false,
            guarded: false,
        }
    }

    /// wired when it hooks an event and nothing is wrong, broken when
    /// something is, else absent.
    fn settle(mut self) -> Check {
        self.status = if !self.problems.is_empty() {
            "broken"
        } else if self.events.is_empty() {
            "absent"
        } else {
            "wired"
        };
        self
    }

    /// Checks the loopx a hook runs (`what`, in a problem's words): one
    /// named by path is there and executable (else `fix` says what to
    /// run), one named alone is looked up on PATH.
    fn program(&mut self, program: &str, what: &str, fix: &str) {
        if !program.contains('/') {
            self.by_name = true;
        } else if !is_executable(Path::new(program)) {
            self.problems.push(format!(
                "{what} runs {program}, which is not there or not executable (loopx moved?): run `{fix}` again"
            ));
        }
    }
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let place = Place::of(ctx, args.target.scope)?;
    let loopx = place.on_path("loopx");
    let checks = checks(&place, &args.target.runtime.runtimes());
    let wired = checks.iter().any(|c| c.by_name);
    let ok = checks.iter().all(|c| c.problems.is_empty()) && (loopx.is_some() || !wired);
    let wire = Wire {
        loopx: loopx.as_ref().map(|p| p.display().to_string()),
        ok,
        checks,
        worktree: WorktreeRule::of(ctx),
    };
    let guard_off = guard::is_off(ctx.env.get(guard::SWITCH));
    ctx.out.emit(&wire, || human(&wire, wired, guard_off))?;
    Ok(if ok { Exit::Ok } else { Exit::Error })
}

/// Checks the hooks of `runtimes` at `place`, one check each (git's in
/// project scope only).
pub(super) fn checks(place: &Place, runtimes: &[Runtime]) -> Vec<Check> {
    let base = &place.base;
    let mut checks = Vec::new();
    for &runtime in runtimes {
        let spec = runtime.spec();
        let mut c = if let Some(plugin) = &spec.plugin {
            check_plugin(runtime, plugin, &place.plugin(plugin), base)
        } else if let Some(file) = hook_file(runtime, base) {
            check_json(runtime, &file.path, base)
        } else if let Some(dir) = place
            .git_hooks
            .as_deref()
            .filter(|_| !spec.shims.is_empty())
        {
            check_git(dir, runtime, base)
        } else {
            continue;
        };
        if c.status != "absent" {
            c.trust = spec.trust.map(|t| place.scope.pick(t.project, t.user));
            // The config does not trust the project; a run may still be
            // trusted on its command line, which doctor cannot see: said,
            // not failed.
            if let Some(hint) = place.untrusted(runtime) {
                c.notes.push(format!(
                    "{hint} (doctor reads only the config: trust given on the command line cannot be seen from here)"
                ));
            }
        }
        checks.push(c);
    }
    checks
}

/// The checks in words, and a line on the tool guard where it is wired
/// or switched off here (`guard_off`: `LOOPX_GUARD=off` in this
/// environment).
fn human(w: &Wire, wired: bool, guard_off: bool) -> String {
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
        for n in &c.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        if let Some(t) = c.trust {
            s.push_str(&format!("  trust: {t}\n"));
        }
    }
    let guarded: Vec<&str> = w
        .checks
        .iter()
        .filter(|c| c.guarded)
        .map(|c| c.runtime)
        .collect();
    if let Some(w) = &w.worktree {
        s.push_str(&format!("worktrees: {}\n", w.applies));
    }
    let switch = format!("{}={}", guard::SWITCH, guard::OFF);
    match (guarded.is_empty(), guard_off) {
        (true, false) => {}
        (true, true) => s.push_str(&format!(
            "tool guard: OFF ({switch} here): a runtime started from this environment checks no shell command\n"
        )),
        (false, false) => s.push_str(&format!(
            "tool guard: on for {}; {switch} in a runtime's launch environment switches it off (for a broken loopx)\n",
            guarded.join(", ")
        )),
        (false, true) => s.push_str(&format!(
            "tool guard: OFF for {} ({switch} here): a runtime started from this environment checks no shell command; unset it to guard again\n",
            guarded.join(", ")
        )),
    }
    s
}

fn check_json(runtime: Runtime, path: &Path, base: &Path) -> Check {
    let mut c = Check::new(runtime, shown(path, base));
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
                c.program(&program, &format!("hooks.{event}"), "loopx hooks install");
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
                c.guarded |= runtime
                    .spec()
                    .settings
                    .is_some_and(|s| s.guard_event == event);
            }
        }
    }
    c.settle()
}

/// loopx's plugin file (OpenCode's plugin, Pi's extension): loopx's, and
/// the loopx it runs is there.
fn check_plugin(runtime: Runtime, plugin: &Plugin, path: &Path, base: &Path) -> Check {
    let mut c = Check::new(runtime, shown(path, base));
    let Ok(text) = std::fs::read_to_string(path) else {
        return c;
    };
    let kind = plugin.kind;
    let Some((program, guard)) = plugin_program(plugin, &text) else {
        c.problems.push(format!(
            "not loopx's {kind} (no loopx-managed marker); move it away and install again"
        ));
        return c.settle();
    };
    let fix = format!("loopx hooks install --runtime {}", runtime.as_str());
    c.program(&program, &format!("the {kind}"), &fix);
    c.events = plugin
        .wires
        .iter()
        .filter(|(_, guarded)| guard || !guarded)
        .map(|(event, _)| (*event).to_owned())
        .collect();
    c.guarded = c.events.iter().any(|e| e == plugin.guard_wire);
    c.settle()
}

fn check_git(dir: &Path, runtime: Runtime, base: &Path) -> Check {
    let mut c = Check::new(runtime, shown(dir, base));
    for (name, _) in runtime.spec().shims {
        let path = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !text.contains(GIT_MARKER) {
            continue;
        }
        c.events.push((*name).to_owned());
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
    c.settle()
}
