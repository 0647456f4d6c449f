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
//! it.

use std::collections::HashMap;
use std::path::Path;

mod push;
mod shell;

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
    check_in(command, state, agent, None)
}

/// [`check`], with `git push` resolved in `dir` (the hook's working
/// directory; None: the current one).
pub fn check_in(
    command: &str,
    state: &State,
    agent: Option<&AgentId>,
    dir: Option<&Path>,
) -> Option<String> {
    let risks = risks(command);
    if risks.is_empty() {
        return None;
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
                    return Some(format!(
                        "loopx: an agent may not {verb} gate {} ({}): only a human may. Ask the user to run `loopx gate {verb} {}` themselves.",
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
}
