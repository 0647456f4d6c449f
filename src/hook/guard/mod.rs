//! The tool guard: which shell commands an open human-only gate covers, and
//! an agent's `loopx gate answer|withdraw` on a human-only gate.
//!
//! The command is split into simple commands (on `;`, `&&`, `||`, `|`, `&`,
//! newlines, subshells and command substitutions; `sh -c`/`bash -c`/`eval`
//! strings are split too), leading `VAR=value` words and wrappers (`sudo`,
//! `env`, `time`, `nohup`, `npx`, `uv run`, …) are skipped, and the program
//! with its first words is matched against a fixed table (see
//! docs/integrations.md). Variables set earlier in the same command line
//! (`L=loopx; $L gate answer …`) are substituted, a `cd DIR` moves where
//! later commands run, and a `git push` whose destination git decides (no
//! refspec, `HEAD`) is resolved with git, read-only, in that directory.
//! This stops an honest agent from running what a pending gate is about;
//! it is not a sandbox: a script, an alias or a renamed binary walks past
//! it. It fails closed: a call whose command it cannot read
//! ([`command_of`]) or whose judging panics or outlasts [`DEADLINE`]
//! ([`judged`]) is denied by the hook, unless a human switched it off
//! ([`SWITCH`]).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

mod push;
pub mod scope;
mod shell;

use super::{Input, Runtime};
use crate::model::{AgentId, Gate, GateKind, State};
use crate::op::{rules, short};
use push::*;
use shell::*;

/// A command that something in the table matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Risk {
    /// A command the gate kinds cover (`permission` covers every entry).
    Covered {
        what: String,
        kinds: &'static [GateKind],
    },
    /// `loopx gate answer|withdraw ID`; the id as typed, if any.
    GateAnswer { verb: String, gate: Option<String> },
    /// A change of what this machine trusts: `loopx signer trust`, or git
    /// config of the allowed-signers file, `loopx.runValidations` or
    /// `loopx.signaturesFrom`. Always denied to an agent.
    TrustChange { what: String },
    /// Moving loopx's refs (or planting replacement objects) with git
    /// plumbing: `git update-ref refs/loopx/…`, `git replace`, a fetch into
    /// `refs/loopx/…`. Always denied to an agent.
    StateWrite { what: String },
    /// A `git push` whose destination git decides (no refspec, or `HEAD`):
    /// resolved by [`check_in`] with git, only when a gate could cover it.
    Push(Push),
}

/// A `git push` to resolve: where it runs and what it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// `git -C DIR` or an earlier `cd DIR`, relative to the hook's
    /// directory.
    pub dir: Option<String>,
    /// The remote named on the command line.
    pub remote: Option<String>,
    /// The refspecs that name `HEAD` (empty: none was given, so git's
    /// config decides).
    pub specs: Vec<String>,
    /// The command as the denial names it.
    pub what: String,
}

const PUBLISH: &[GateKind] = &[GateKind::Publish, GateKind::Permission];
const PRODUCTION: &[GateKind] = &[GateKind::Production, GateKind::Permission];
const PROVISION: &[GateKind] = &[GateKind::Production, GateKind::Spend, GateKind::Permission];
const SPEND: &[GateKind] = &[GateKind::Spend, GateKind::Permission];

/// Why the command must not run, or None when nothing covers it. Without
/// an agent id every open gate counts. A `git push` git must resolve is
/// resolved in the current directory.
pub fn check(command: &str, state: &State, agent: Option<&AgentId>) -> Option<String> {
    check_in(command, state, agent, None, true)
}

/// [`check`], with `git push` resolved in `dir` (the hook's working
/// directory; None: the current one). `verified`: the state was read at
/// the tip this clone last verified; when not (the ref moved outside
/// loopx), every human-only gate kind is judged open, so what any gate
/// covers and any agent's gate answer are denied, and other commands pass.
pub fn check_in(
    command: &str,
    state: &State,
    agent: Option<&AgentId>,
    dir: Option<&Path>,
    verified: bool,
) -> Option<String> {
    let risks = risks(command);
    if risks.is_empty() {
        return None;
    }
    if !verified {
        return unverified(risks, dir);
    }
    let concerning: Vec<&Gate> = match agent {
        Some(a) => rules::gates_for(state, a, None),
        None => state.gates.values().filter(|g| g.is_open()).collect(),
    };
    let covers = |kinds: &[GateKind]| {
        concerning
            .iter()
            .any(|g| g.kind.human_only() && kinds.contains(&g.kind))
    };
    let mut resolved = Vec::new();
    for risk in risks {
        match risk {
            // Only worth a git process when a gate could cover the push.
            Risk::Push(p) if covers(PRODUCTION) || covers(PUBLISH) => {
                resolved.extend(resolve_push(&p, dir));
            }
            Risk::Push(_) => {}
            r => resolved.push(r),
        }
    }
    for risk in &resolved {
        match risk {
            Risk::Covered { what, kinds } => {
                if let Some(g) = concerning
                    .iter()
                    .find(|g| g.kind.human_only() && kinds.contains(&g.kind))
                {
                    return Some(format!(
                        "loopx: `{what}` waits on gate {} ({}): \"{}\". Only a human can answer it; until then do not run this or anything that does the same.",
                        g.id,
                        g.kind.as_str(),
                        short(&g.question)
                    ));
                }
            }
            Risk::TrustChange { what } => {
                return Some(format!(
                    "loopx: an agent may not change what this machine trusts (`{what}`): only a human may. Ask the user to run it themselves."
                ));
            }
            Risk::StateWrite { what } => {
                return Some(format!(
                    "loopx: an agent may not move loopx's refs or plant replacement objects with git plumbing (`{what}`): the state changes only through loopx commands (sync, verify and a guarded hub refuse a hand-made tick anyway). Use the loopx command for what you meant to do."
                ));
            }
            Risk::Push(_) => {}
            Risk::GateAnswer { verb, gate } => {
                let target = gate.as_deref().and_then(|t| state.resolve_gate(t).ok());
                let human_only: Option<&Gate> = match &target {
                    Some(id) => state.gates.get(id).filter(|g| g.kind.human_only()),
                    None => state
                        .gates
                        .values()
                        .find(|g| g.is_open() && g.kind.human_only()),
                };
                if let Some(g) = human_only {
                    let choice = if verb == "answer" {
                        " --choice CHOICE"
                    } else {
                        ""
                    };
                    return Some(format!(
                        "loopx: an agent may not {verb} gate {} ({}): only a human may. Ask the user to run `loopx gate {verb} {}{choice}` themselves.",
                        g.id,
                        g.kind.as_str(),
                        g.id
                    ));
                }
            }
        }
    }
    None
}

/// [`check_in`] on a state read at a tip this clone has not verified: the
/// first risk any human-only gate kind covers (a push only where git
/// resolves it to a protected target), a trust change, a state write or a
/// gate answer, as if every such gate were open.
fn unverified(risks: Vec<Risk>, dir: Option<&Path>) -> Option<String> {
    let why = "this clone's loopx state ref moved outside loopx (a plain `git fetch` onto refs/loopx/*, `git update-ref`, a restored backup) to a tip it has not verified, so every gate a human answers is taken as open";
    let fix = "Ask the user to run `loopx verify` (or `loopx sync`) in this clone.";
    let mut resolved = Vec::new();
    for risk in risks {
        match risk {
            Risk::Push(p) => resolved.extend(resolve_push(&p, dir)),
            r => resolved.push(r),
        }
    }
    resolved.into_iter().find_map(|risk| match risk {
        Risk::Covered { what, .. } => Some(format!(
            "loopx: `{what}` is refused: {why}. {fix}"
        )),
        Risk::GateAnswer { verb, .. } => Some(format!(
            "loopx: an agent may not {verb} a gate now: {why}. {fix}"
        )),
        Risk::TrustChange { what } | Risk::StateWrite { what } => Some(format!(
            "loopx: `{what}` is refused: an agent may not change what this machine trusts or move loopx's refs, and {why}. {fix}"
        )),
        Risk::Push(_) => None,
    })
}

/// The variable that switches the guard off for a broken loopx, set by a
/// human in the runtime's launch environment: [`OFF`] is the one value
/// that does.
pub const SWITCH: &str = "LOOPX_GUARD";
pub const OFF: &str = "off";

/// Whether [`SWITCH`]'s value switches the guard off.
pub fn is_off(value: Option<&str>) -> bool {
    value == Some(OFF)
}

/// The command a tool event's call is about to run, for [`check_in`]:
/// None when the tool is not the runtime's shell (a `Write` of any size
/// is not the guard's), else the command; an error saying why when the
/// input does not let the guard tell (no tool named, a shell call without
/// a command it can read). The guard judges on these two fields alone.
pub fn command_of(runtime: Runtime, input: &Input) -> Result<Option<&str>, String> {
    let Some(tool) = input.tool.as_deref() else {
        return Err("the hook's input names no tool".to_owned());
    };
    if !runtime.is_shell(tool) {
        return Ok(None);
    }
    if let Some(why) = &input.command_error {
        return Err(format!("the {tool} call's input cannot be read: {why}"));
    }
    match input.command.as_deref() {
        Some(command) => Ok(Some(command)),
        None => Err(format!("the {tool} call has no command")),
    }
}

/// How long the guard's event may take, reading stdin included, before it
/// denies: within the 5 s the runtimes' templates give the hook, which
/// they would read as allow.
pub const DEADLINE: Duration = Duration::from_secs(3);

/// Runs the guard's judging `f` on its own thread, until `deadline` after
/// `started` (the start of the guard's event): a panic in it, or a
/// judging not done by then, becomes the error saying so, for the caller
/// to deny (the guard fails closed). A thread still judging is left
/// behind.
pub fn judged<T: Send + 'static>(
    started: Instant,
    deadline: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r.map_err(|panic| {
            panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned())
        }));
    });
    let left = deadline.saturating_sub(started.elapsed());
    match rx.recv_timeout(left) {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(what)) => Err(format!("loopx failed while checking it: {what}")),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "loopx did not finish checking it within {} s",
            deadline.as_secs_f64()
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("loopx failed while checking it".to_owned())
        }
    }
}

/// Everything in `command` the table matches, in order.
pub fn risks(command: &str) -> Vec<Risk> {
    let mut out = Vec::new();
    collect(command, &mut out, 0, &mut Scan::default());
    out
}

/// What earlier simple commands of the same command line set up for later
/// ones: shell variables (`L=loopx`, `export L=loopx`) and the directory
/// (`cd DIR`).
#[derive(Default)]
struct Scan {
    vars: HashMap<String, String>,
    dir: Option<String>,
}

impl Scan {
    /// `$NAME` and `${NAME}` words replaced by what the command line set
    /// them to (other words as they are).
    fn expand(&self, words: Vec<String>) -> Vec<String> {
        words
            .into_iter()
            .map(|w| {
                let name = w
                    .strip_prefix("${")
                    .and_then(|r| r.strip_suffix('}'))
                    .or_else(|| w.strip_prefix('$'));
                match name.and_then(|n| self.vars.get(n)) {
                    Some(v) => v.clone(),
                    None => w,
                }
            })
            .collect()
    }

    /// Takes in a simple command that only sets variables or changes
    /// directory; true if it was one.
    fn absorb(&mut self, words: &[String]) -> bool {
        let assigns = match words.first().map(String::as_str) {
            Some("export" | "declare" | "local" | "readonly" | "typeset") => &words[1..],
            Some("cd" | "pushd") => {
                let to = words[1..].iter().find(|w| !w.starts_with('-'));
                self.dir = Some(match (to, &self.dir) {
                    (Some(t), Some(d)) if !t.starts_with('/') => format!("{d}/{t}"),
                    (Some(t), _) => t.clone(),
                    (None, _) => "~".to_owned(),
                });
                return true;
            }
            _ => words,
        };
        let all = assigns
            .iter()
            .filter(|w| !w.starts_with('-'))
            .all(|w| is_assignment(w));
        if !all || assigns.is_empty() {
            return false;
        }
        for w in assigns.iter().filter(|w| !w.starts_with('-')) {
            if let Some((k, v)) = w.split_once('=') {
                self.vars.insert(k.to_owned(), v.to_owned());
            }
        }
        true
    }
}

fn collect(command: &str, out: &mut Vec<Risk>, depth: u8, scan: &mut Scan) {
    if depth > 3 {
        return;
    }
    for segment in segments(command) {
        let words = scan.expand(words(&segment));
        if scan.absorb(&words) {
            continue;
        }
        collect_words(&words, out, depth, scan);
    }
}

/// One simple command, as words: wrappers skipped, `sh -c` and `eval`
/// strings and `find -exec` commands looked into, then classified.
fn collect_words(words: &[String], out: &mut Vec<Risk>, depth: u8, scan: &mut Scan) {
    if depth > 3 {
        return;
    }
    let words = strip_wrappers(words);
    let Some(first) = words.first() else { return };
    let program = first.rsplit('/').next().unwrap_or(first).to_owned();
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    if matches!(program.as_str(), "sh" | "bash" | "zsh" | "dash")
        && let Some(i) = args.iter().position(|a| *a == "-c" || *a == "-lc")
        && let Some(script) = args.get(i + 1)
    {
        collect(script, out, depth + 1, scan);
        return;
    }
    if program == "eval" {
        collect(&args.join(" "), out, depth + 1, scan);
        return;
    }
    // A program the command line hides: a variable it did not set
    // (`$LOOPX gate answer …`), or a command substitution
    // (`$(command -v loopx) gate answer …` leaves `gate answer …`).
    // loopx's and git's own words are distinctive enough to go by.
    if program.starts_with('$') {
        out.extend(loopx(&args));
        out.extend(git(&args, scan));
        return;
    }
    if matches!(program.as_str(), "gate" | "signer") {
        let all: Vec<&str> = words.iter().map(String::as_str).collect();
        out.extend(loopx(&all));
        return;
    }
    if program == "git" {
        out.extend(git(&args, scan));
        return;
    }
    if program == "find" {
        // Every `-exec CMD… ;` (and -execdir, -ok, -okdir) runs CMD.
        let rest = &words[1..];
        let mut i = 0;
        while i < rest.len() {
            if matches!(rest[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let end = rest[i + 1..]
                    .iter()
                    .position(|w| w == ";" || w == "+")
                    .map_or(rest.len(), |p| i + 1 + p);
                collect_words(&rest[i + 1..end], out, depth + 1, scan);
                i = end;
            }
            i += 1;
        }
        return;
    }
    if let Some(r) = classify(&program, &args) {
        out.push(r);
    }
}

/// The first positional words after the program, flags skipped.
fn positionals<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect()
}

fn covered(what: String, kinds: &'static [GateKind]) -> Option<Risk> {
    Some(Risk::Covered { what, kinds })
}

fn classify(program: &str, args: &[&str]) -> Option<Risk> {
    // `cargo +nightly publish`: the toolchain comes first.
    let args = match program {
        "cargo" => &args[args.iter().take_while(|w| w.starts_with('+')).count()..],
        _ => args,
    };
    let pos = positionals(args);
    let sub = pos.first().copied().unwrap_or("");
    let sub2 = pos.get(1).copied().unwrap_or("");
    let has = |flag: &str| args.contains(&flag);
    let named = |s: &str| format!("{program} {s}");
    match program {
        "loopx" => loopx(args),
        "cargo" if sub == "publish" => covered(named(sub), PUBLISH),
        "npm" | "pnpm" | "bun" if sub == "publish" => covered(named(sub), PUBLISH),
        "yarn" if sub == "publish" || (sub == "npm" && sub2 == "publish") => {
            covered(named("publish"), PUBLISH)
        }
        "twine" if sub == "upload" => covered(named(sub), PUBLISH),
        "poetry" | "uv" | "flit" | "hatch" if sub == "publish" => covered(named(sub), PUBLISH),
        "gem" if sub == "push" => covered(named(sub), PUBLISH),
        "docker" | "podman" if sub == "push" => covered(named(sub), PUBLISH),
        "gh" if sub == "release" && matches!(sub2, "create" | "upload") => {
            covered(format!("gh release {sub2}"), PUBLISH)
        }
        "goreleaser" if sub.is_empty() || sub == "release" => {
            covered("goreleaser release".to_owned(), PUBLISH)
        }
        "mvn" if pos.contains(&"deploy") => covered(named("deploy"), PUBLISH),
        "gradle" | "gradlew" if pos.iter().any(|p| p.starts_with("publish")) => {
            covered(named("publish"), PUBLISH)
        }
        "kubectl" | "oc"
            if matches!(
                sub,
                "apply"
                    | "create"
                    | "delete"
                    | "replace"
                    | "patch"
                    | "rollout"
                    | "scale"
                    | "set"
                    | "edit"
            ) =>
        {
            covered(named(sub), PRODUCTION)
        }
        "helm"
            if matches!(
                sub,
                "install" | "upgrade" | "uninstall" | "rollback" | "delete"
            ) =>
        {
            covered(named(sub), PRODUCTION)
        }
        "terraform" | "tofu" | "terragrunt" if matches!(sub, "apply" | "destroy") => {
            covered(named(sub), PROVISION)
        }
        "pulumi" if matches!(sub, "up" | "update" | "destroy") => covered(named(sub), PROVISION),
        "fly" | "flyctl" | "cdk" | "serverless" | "sls" | "firebase" | "eb" | "wrangler"
            if matches!(sub, "deploy" | "publish" | "destroy") =>
        {
            covered(named(sub), PRODUCTION)
        }
        "vercel" if has("--prod") || has("--production") => covered(named("--prod"), PRODUCTION),
        "netlify" if sub == "deploy" && has("--prod") => {
            covered(named("deploy --prod"), PRODUCTION)
        }
        "gcloud" if pos.contains(&"deploy") => covered(named("… deploy"), PRODUCTION),
        "gcloud" | "az" | "doctl" if pos.contains(&"create") => covered(named("… create"), SPEND),
        "aws" if pos.iter().any(|p| p.contains("deploy")) => covered(named("… deploy"), PRODUCTION),
        "aws"
            if pos
                .iter()
                .any(|p| *p == "run-instances" || p.starts_with("create-")) =>
        {
            covered(named("… create"), SPEND)
        }
        "ansible-playbook" => covered(program.to_owned(), PRODUCTION),
        "make" | "just" | "task" if pos.iter().any(|p| p.starts_with("deploy")) => {
            covered(named("deploy"), PRODUCTION)
        }
        "npm" | "pnpm" | "yarn" | "bun"
            if pos.iter().any(|p| p.starts_with("deploy"))
                && (sub == "run" || sub.starts_with("deploy")) =>
        {
            covered(named("run deploy"), PRODUCTION)
        }
        p if p.starts_with("deploy") => covered(p.to_owned(), PRODUCTION),
        _ => None,
    }
}

/// `loopx [global flags] gate answer|withdraw ID`.
fn loopx(args: &[&str]) -> Option<Risk> {
    let mut rest = args.iter().copied();
    let mut pos = Vec::new();
    while let Some(a) = rest.next() {
        if matches!(a, "-C" | "--format" | "--agent") {
            rest.next();
        } else if !a.starts_with('-') {
            pos.push(a);
        } else if matches!(a, "--choice" | "--note") {
            rest.next();
        }
    }
    match pos.as_slice() {
        ["signer", "trust", ..] => Some(Risk::TrustChange {
            what: "loopx signer trust".to_owned(),
        }),
        ["gate", verb @ ("answer" | "withdraw"), tail @ ..] => Some(Risk::GateAnswer {
            verb: (*verb).to_owned(),
            gate: tail.first().map(|s| (*s).to_owned()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what(command: &str) -> Vec<String> {
        risks(command)
            .into_iter()
            .map(|r| match r {
                Risk::Covered { what, .. } => what,
                Risk::GateAnswer { verb, gate } => format!("gate {verb} {gate:?}"),
                Risk::TrustChange { what } => what,
                Risk::StateWrite { what } => format!("write: {what}"),
                Risk::Push(p) => format!("resolve: {} in {:?}", p.what, p.dir),
            })
            .collect()
    }

    #[test]
    fn publishing_and_deploying_match_through_wrappers() {
        assert_eq!(what("cargo publish --dry-run"), ["cargo publish"]);
        assert_eq!(
            what("cd x && CARGO_TOKEN=1 sudo -u ci cargo publish"),
            ["cargo publish"]
        );
        assert_eq!(what("npx cdk deploy Prod"), ["cdk deploy"]);
        assert_eq!(
            what("bash -c 'make build; kubectl apply -f k8s/'"),
            ["kubectl apply"]
        );
        assert_eq!(
            what("echo $(terraform apply -auto-approve)"),
            ["terraform apply"]
        );
        assert_eq!(what("./scripts/deploy.sh prod"), ["deploy.sh"]);
        assert_eq!(what("git push origin main"), ["git push to main"]);
        assert_eq!(
            what("git push -u origin HEAD:refs/heads/master"),
            ["git push to master"]
        );
        assert_eq!(what("git push --tags"), ["git push --tags"]);
        assert_eq!(what("gh release create v1.0"), ["gh release create"]);
        assert_eq!(what("uv run twine upload dist/*"), ["twine upload"]);
    }

    #[test]
    fn global_options_toolchains_and_find_exec_do_not_hide_a_command() {
        assert_eq!(
            what("git -C . push origin v1.0:refs/tags/v1.0"),
            ["git push v1.0:refs/tags/v1.0"]
        );
        assert_eq!(
            what("git -c core.sshCommand=ssh --no-pager push origin main"),
            ["git push to main"]
        );
        assert_eq!(what("git --git-dir=.git push --tags"), ["git push --tags"]);
        assert_eq!(what("cargo +nightly publish"), ["cargo publish"]);
        assert_eq!(
            what("find . -name x -exec loopx gate answer g-1a2b --choice approve \\;"),
            ["gate answer Some(\"g-1a2b\")"]
        );
        assert_eq!(
            what("find . -execdir cargo publish {} +"),
            ["cargo publish"]
        );
        assert!(what("git -C . push origin feature/x").is_empty());
        assert_eq!(
            what("env -u LOOPX_AGENT loopx signer trust mallory --fingerprint SHA256:x"),
            ["loopx signer trust"]
        );
        assert_eq!(
            what("git config --global loopx.runValidations all"),
            ["git config loopx.runvalidations"]
        );
        assert_eq!(
            what("git -C . config gpg.ssh.allowedSignersFile /tmp/mine"),
            ["git config gpg.ssh.allowedsignersfile"]
        );
        assert!(what("loopx signer list").is_empty());
        // Denied whatever gates are open, even with none.
        let why = check("loopx signer trust mallory", &State::default(), None).expect("denied");
        assert!(
            why.contains("may not change what this machine trusts"),
            "{why}"
        );
        assert!(what("git config user.name Ada").is_empty());
        assert!(what("find . -name '*.rs' -exec grep -l publish {} ;").is_empty());
    }

    #[test]
    fn harmless_commands_and_quoted_text_do_not_match() {
        assert!(what("cargo test && cargo build --release").is_empty());
        assert!(what("git push origin feature/parser").is_empty());
        assert!(what("echo 'cargo publish'").is_empty());
        assert!(what("grep -r \"kubectl apply\" docs").is_empty());
        assert!(what("kubectl get pods").is_empty());
        assert!(what("").is_empty());
    }

    #[test]
    fn loopx_gate_answers_are_seen_past_global_flags() {
        assert_eq!(
            what("loopx --json gate answer g-1a2b --choice approve"),
            ["gate answer Some(\"g-1a2b\")"]
        );
        assert_eq!(
            what("LOOPX_AGENT= loopx -C /r gate withdraw"),
            ["gate withdraw None"]
        );
        assert!(what("loopx gate list --open").is_empty());
    }

    #[test]
    fn variables_and_substitutions_do_not_hide_loopx() {
        assert_eq!(
            what("L=loopx; $L gate answer g-1a2b --choice approve"),
            ["gate answer Some(\"g-1a2b\")"]
        );
        assert_eq!(
            what("export L=/usr/bin/loopx && \"${L}\" gate withdraw g-1a2b"),
            ["gate withdraw Some(\"g-1a2b\")"]
        );
        // Not set on this command line: loopx's words give it away.
        assert_eq!(
            what("$LOOPX --json gate answer g-1a2b --choice approve"),
            ["gate answer Some(\"g-1a2b\")"]
        );
        assert_eq!(
            what("$(command -v loopx) gate answer g-1a2b --choice approve"),
            ["gate answer Some(\"g-1a2b\")"]
        );
        assert_eq!(
            what("`which loopx` signer trust mallory"),
            ["loopx signer trust"]
        );
        assert_eq!(what("G=git; $G push origin main"), ["git push to main"]);
        assert!(what("L=loopx; $L gate list --open").is_empty());
        assert!(what("X=1; echo $X").is_empty());
    }

    #[test]
    fn plumbing_that_moves_loopx_refs_is_seen() {
        assert_eq!(
            what("git update-ref refs/loopx/state 1b2c3d4"),
            ["write: git update-ref refs/loopx/state 1b2c3d4"]
        );
        assert_eq!(
            what("git -C /r update-ref -d refs/loopx/state"),
            ["write: git update-ref -d refs/loopx/state"]
        );
        assert_eq!(
            what("printf 'update refs/loopx/state 1b2c\\n' | git update-ref --stdin"),
            ["write: git update-ref --stdin"]
        );
        assert_eq!(what("git replace 1b2c 3d4e"), ["write: git replace"]);
        assert_eq!(
            what("git fetch hub +refs/loopx/state:refs/loopx/state"),
            ["write: git fetch into refs/loopx or refs/replace"]
        );
        assert!(what("git replace -l").is_empty());
        assert!(what("git update-ref refs/heads/x HEAD").is_empty());
        assert!(what("git fetch origin").is_empty());
        let why = check(
            "git update-ref refs/loopx/state 1b2c",
            &State::default(),
            None,
        )
        .expect("denied whatever gates are open");
        assert!(why.contains("may not move loopx's refs"), "{why}");
    }

    #[test]
    fn pushes_git_must_resolve_are_marked_with_where_they_run() {
        assert_eq!(what("git push"), ["resolve: git push in None"]);
        assert_eq!(
            what("git push --force"),
            ["resolve: git push --force in None"]
        );
        assert_eq!(
            what("git push -f origin"),
            ["resolve: git push --force origin in None"]
        );
        assert_eq!(
            what("git push -u origin HEAD"),
            ["resolve: git push origin HEAD in None"]
        );
        assert_eq!(
            what("cd ../other && git -C sub push"),
            ["resolve: git push in Some(\"../other/sub\")"]
        );
        assert_eq!(what("git push origin +main"), ["git push to main"]);
        assert_eq!(
            what("git push --all origin"),
            ["git push --all (every branch)"]
        );
        assert_eq!(
            what("git push --mirror"),
            ["git push --mirror", "git push --mirror (every branch)"]
        );
        assert_eq!(
            what("git push origin 'refs/heads/*:refs/heads/*'"),
            ["git push refs/heads/*:refs/heads/* (every branch)"]
        );
        assert_eq!(what("git push --tags origin"), ["git push --tags"]);
        assert!(what("git push origin feature/x").is_empty());
    }

    fn config(branch: Option<&str>, pairs: &[(&str, &str)]) -> crate::git::PushConfig {
        crate::git::PushConfig {
            branch: branch.map(str::to_owned),
            config: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn push(command: &str) -> Push {
        match risks(command).pop() {
            Some(Risk::Push(p)) => p,
            other => panic!("{command}: {other:?}"),
        }
    }

    #[test]
    fn git_config_decides_where_a_bare_push_goes() {
        let on_main = config(Some("main"), &[]);
        assert_eq!(push_destinations(&push("git push"), &on_main), ["main"]);
        assert_eq!(
            push_destinations(&push("git push -f origin"), &on_main),
            ["main"]
        );
        let detached = config(None, &[]);
        assert!(push_destinations(&push("git push"), &detached).is_empty());
        let nothing = config(Some("main"), &[("push.default", "nothing")]);
        assert!(push_destinations(&push("git push"), &nothing).is_empty());
        let matching = config(Some("feature"), &[("push.default", "matching")]);
        assert_eq!(
            push_destinations(&push("git push"), &matching),
            ["refs/heads/*"]
        );
        let upstream = config(
            Some("feature"),
            &[
                ("push.default", "upstream"),
                ("branch.feature.merge", "refs/heads/main"),
            ],
        );
        assert_eq!(
            push_destinations(&push("git push"), &upstream),
            ["refs/heads/main"]
        );
        // remote.<r>.push of the remote git picks (pushRemote first).
        let configured = config(
            Some("feature"),
            &[
                ("branch.feature.remote", "origin"),
                ("branch.feature.pushremote", "deploy"),
                ("remote.deploy.push", "HEAD:refs/heads/production"),
                ("remote.origin.push", "HEAD:refs/heads/feature"),
            ],
        );
        assert_eq!(
            push_destinations(&push("git push"), &configured),
            ["refs/heads/production"]
        );
        assert_eq!(
            push_destinations(&push("git push origin"), &configured),
            ["refs/heads/feature"]
        );
        // An explicit HEAD is the current branch whatever the config says.
        assert_eq!(
            push_destinations(&push("git push deploy HEAD"), &configured),
            ["feature"]
        );
    }

    #[test]
    fn the_guard_judges_a_shell_calls_command_and_refuses_one_it_cannot_read() {
        let parse = |runtime: Runtime, event, json: &str| {
            crate::hook::parse_input(runtime, event, json.as_bytes()).unwrap()
        };
        let claude = |json: &str| parse(Runtime::ClaudeCode, crate::hook::Event::Tool, json);
        let bash = claude(r#"{"tool_name":"Bash","tool_input":{"command":"cargo publish"}}"#);
        assert_eq!(
            command_of(Runtime::ClaudeCode, &bash),
            Ok(Some("cargo publish"))
        );
        // An argv array is read as shell words; its `-lc` script is split.
        let argv = claude(
            r#"{"tool_name":"shell","tool_input":{"command":["bash","-lc","cargo publish --dry-run"]}}"#,
        );
        let command = command_of(Runtime::Codex, &argv).unwrap().unwrap();
        assert_eq!(command, "bash -lc 'cargo publish --dry-run'");
        assert_eq!(what(command), ["cargo publish"]);
        // The input of a tool that is not the shell is not the guard's.
        let write = claude(r#"{"tool_name":"Write","tool_input":{"file_path":"a","content":7}}"#);
        assert_eq!(command_of(Runtime::ClaudeCode, &write), Ok(None));
        let empty = claude(r#"{"tool_name":"Bash","tool_input":{"command":""}}"#);
        assert_eq!(command_of(Runtime::ClaudeCode, &empty), Ok(Some("")));
        for (json, why) in [
            (
                r#"{"tool_input":{"command":"ls"}}"#,
                "the hook's input names no tool",
            ),
            (
                r#"{"tool_name":"Bash","tool_input":{}}"#,
                "the Bash call has no command",
            ),
            (
                r#"{"tool_name":"Bash","tool_input":{"command":42}}"#,
                "the Bash call's input cannot be read: its command is not text",
            ),
            (
                r#"{"tool_name":"Bash","tool_input":{"command":["cargo",1]}}"#,
                "the Bash call's input cannot be read: its command is a list of more than words",
            ),
            (
                r#"{"tool_name":"Bash","tool_input":"cargo publish"}"#,
                "the Bash call's input cannot be read: its tool_input is a string that is not JSON",
            ),
            (
                r#"{"tool_name":"Bash","tool_input":[1]}"#,
                "the Bash call's input cannot be read: its tool_input is not an object",
            ),
        ] {
            assert_eq!(
                command_of(Runtime::ClaudeCode, &claude(json)),
                Err(why.to_owned()),
                "{json}"
            );
        }
        // Cursor's event is about a shell command only.
        let cursor = |json: &str| parse(Runtime::Cursor, crate::hook::Event::Tool, json);
        assert_eq!(
            command_of(Runtime::Cursor, &cursor(r#"{"command":"npm publish"}"#)),
            Ok(Some("npm publish"))
        );
        assert_eq!(
            command_of(Runtime::Cursor, &cursor(r#"{"cwd":"/w"}"#)),
            Err("the shell call has no command".to_owned())
        );
    }

    #[test]
    fn a_panic_or_a_judging_past_the_deadline_becomes_the_reason_to_deny() {
        let long = Duration::from_secs(60);
        let now = Instant::now();
        assert_eq!(judged(now, long, || 7), Ok(7));
        let boom: Result<(), String> = judged(now, long, || panic!("boom"));
        assert_eq!(boom, Err("loopx failed while checking it: boom".to_owned()));
        let formatted: Result<(), String> = judged(now, long, || panic!("{} words", 2));
        assert_eq!(
            formatted,
            Err("loopx failed while checking it: 2 words".to_owned())
        );
        let started = Instant::now();
        let slow = judged(started, Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_secs(3600));
        });
        assert_eq!(
            slow,
            Err("loopx did not finish checking it within 0.02 s".to_owned())
        );
        // The deadline counts from the event's start, not the call's.
        let spent = Instant::now() - Duration::from_secs(5);
        let late = judged(spent, Duration::from_secs(4), || 7);
        assert!(
            late == Ok(7) || late == Err("loopx did not finish checking it within 4 s".to_owned())
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn only_off_switches_the_guard_off() {
        assert!(is_off(Some("off")));
        for value in [None, Some("on"), Some("0"), Some("OFF "), Some("false")] {
            assert!(!is_off(value), "{value:?}");
        }
    }
}
