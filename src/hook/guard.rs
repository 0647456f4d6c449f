//! The tool guard: which shell commands an open human-only gate covers, and
//! an agent's `loopx gate answer|withdraw` on a human-only gate.
//!
//! The command is split into simple commands (on `;`, `&&`, `||`, `|`, `&`,
//! newlines, subshells and command substitutions; `sh -c`/`bash -c`/`eval`
//! strings are split too), leading `VAR=value` words and wrappers (`sudo`,
//! `env`, `time`, `nohup`, `npx`, `uv run`, …) are skipped, and the program
//! with its first words is matched against a fixed table (see
//! docs/integrations.md). This stops an honest agent from running what a
//! pending gate is about; it is not a sandbox: a script, an alias or a
//! renamed binary walks past it.

use crate::model::{AgentId, Gate, GateKind, State};
use crate::op::{rules, short};

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
}

const PUBLISH: &[GateKind] = &[GateKind::Publish, GateKind::Permission];
const PRODUCTION: &[GateKind] = &[GateKind::Production, GateKind::Permission];
const PROVISION: &[GateKind] = &[GateKind::Production, GateKind::Spend, GateKind::Permission];
const SPEND: &[GateKind] = &[GateKind::Spend, GateKind::Permission];

/// Why the command must not run, or None when nothing covers it. Without
/// an agent id every open gate counts.
pub fn check(command: &str, state: &State, agent: Option<&AgentId>) -> Option<String> {
    let risks = risks(command);
    if risks.is_empty() {
        return None;
    }
    let concerning: Vec<&Gate> = match agent {
        Some(a) => rules::gates_for(state, a, None),
        None => state.gates.values().filter(|g| g.is_open()).collect(),
    };
    for risk in &risks {
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
    collect(command, &mut out, 0);
    out
}

fn collect(command: &str, out: &mut Vec<Risk>, depth: u8) {
    if depth > 3 {
        return;
    }
    for segment in segments(command) {
        collect_words(&words(&segment), out, depth);
    }
}

/// One simple command, as words: wrappers skipped, `sh -c` and `eval`
/// strings and `find -exec` commands looked into, then classified.
fn collect_words(words: &[String], out: &mut Vec<Risk>, depth: u8) {
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
        collect(script, out, depth + 1);
        return;
    }
    if program == "eval" {
        collect(&args.join(" "), out, depth + 1);
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
                collect_words(&rest[i + 1..end], out, depth + 1);
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
        // `git -C . push`, `git -c k=v push`: global options come first.
        "git" => git_globals(args),
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
        "git" if sub == "push" => git_push(args),
        "git" if sub == "config" => args
            .iter()
            .map(|a| a.to_ascii_lowercase())
            .find(|a| {
                [
                    "loopx.allowedsignersfile",
                    "gpg.ssh.allowedsignersfile",
                    "loopx.runvalidations",
                    "loopx.signaturesfrom",
                ]
                .iter()
                .any(|k| a.starts_with(k))
            })
            .map(|key| Risk::TrustChange {
                what: format!("git config {key}"),
            }),
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

/// The arguments after git's global options (`-C DIR`, `-c KEY=VALUE`,
/// `--git-dir DIR`, `--no-pager`, …).
fn git_globals<'a, 'b>(args: &'b [&'a str]) -> &'b [&'a str] {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        let takes_value = matches!(
            *a,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--config-env"
                | "--super-prefix"
        );
        i += if takes_value { 2 } else { 1 };
    }
    &args[i.min(args.len())..]
}

/// Branches whose push is a release or a deploy in most projects.
const PROTECTED: &[&str] = &["main", "master", "production", "prod", "release", "live"];

fn git_push(args: &[&str]) -> Option<Risk> {
    if args
        .iter()
        .any(|a| matches!(*a, "--tags" | "--follow-tags" | "--mirror"))
    {
        return covered("git push --tags".to_owned(), PUBLISH);
    }
    // After `push`: the remote, then refspecs.
    let pos: Vec<&str> = positionals(args).into_iter().skip(2).collect();
    for spec in pos {
        let dst = spec
            .rsplit(':')
            .next()
            .unwrap_or(spec)
            .trim_start_matches('+');
        if dst.starts_with("refs/tags/") {
            return covered(format!("git push {spec}"), PUBLISH);
        }
        let branch = dst.strip_prefix("refs/heads/").unwrap_or(dst);
        if PROTECTED.contains(&branch) || branch.starts_with("release/") {
            return covered(format!("git push to {branch}"), PRODUCTION);
        }
    }
    None
}

/// Splits a shell command into simple commands, outside quotes.
fn segments(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == '\\' && q == '"' {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '\\' => {
                    cur.push(c);
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                }
                ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' => {
                    out.push(std::mem::take(&mut cur));
                }
                '$' if chars.peek() == Some(&'(') => {
                    out.push(std::mem::take(&mut cur));
                }
                _ => cur.push(c),
            },
        }
    }
    out.push(cur);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// Splits a simple command into words, removing quotes.
fn words(segment: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some('\'') if c == '\'' => quote = None,
            Some('"') if c == '"' => quote = None,
            Some('"') if c == '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            Some(_) => cur.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                    in_word = true;
                }
                c if c.is_whitespace() => {
                    if in_word {
                        out.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                }
                _ => {
                    cur.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Drops `VAR=value` words and wrappers that run the rest as a command.
fn strip_wrappers(words: &[String]) -> &[String] {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let name = w.rsplit('/').next().unwrap_or(w);
        if is_assignment(w) {
            i += 1;
            continue;
        }
        match name {
            "sudo" | "doas" | "env" | "time" | "nohup" | "command" | "exec" | "nice" | "xargs"
            | "npx" | "pnpx" | "bunx" | "timeout" | "stdbuf" | "caffeinate" => {
                i += 1;
                // Their own flags and values (`-u root`, `-n 10`, a timeout).
                while i < words.len() {
                    let a = words[i].as_str();
                    if a.starts_with('-') {
                        i += 1;
                        if matches!(a, "-u" | "-g" | "-n" | "-s" | "-k" | "-C" | "-I") {
                            i += 1;
                        }
                    } else if is_assignment(a)
                        || (name == "timeout"
                            && a.chars().next().is_some_and(|c| c.is_ascii_digit()))
                    {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "uv" | "poetry" | "pipenv" | "pdm" | "rye"
                if words.get(i + 1).is_some_and(|s| s == "run") =>
            {
                i += 2
            }
            "bundle" if words.get(i + 1).is_some_and(|s| s == "exec") => i += 2,
            _ => break,
        }
    }
    &words[i.min(words.len())..]
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((k, _)) => {
            !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
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
}
