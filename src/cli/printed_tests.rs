//! Every command loopx prints parses as printed (issue 53): the examples and
//! help of every command, every next step a refusal names, and every
//! `loopx …` in README.md and docs/*.md are parsed with loopx's own command
//! line, placeholders (`GATE`, `t-…`, `NAME` …) filled from a fixture. A
//! parse, not a run: exit 2 also means other things. What cannot be filled
//! (an ellipsis standing for more flags, `[optional]` parts) is skipped and
//! counted; the count of commands checked never goes down.

use std::path::Path;

use clap::{CommandFactory, Parser};

use crate::next::Next;

/// How many commands the first version of this test checked.
const FIRST_VERSION: usize = 591;

/// Each next step a refusal can name, one of every kind (a kind added
/// later fails to compile here until it is listed).
fn every_next() -> Vec<Next> {
    let all = vec![
        Next::Todos,
        Next::ReadyTodos,
        Next::AllTodos,
        Next::ShowTodo("t-1a2b3c4d".into()),
        Next::ClaimTodo("t-1a2b3c4d".into()),
        Next::FinishTodo(None),
        Next::FinishTodo(Some("t-1a2b3c4d".into())),
        Next::ForceRelease("t-1a2b3c4d".into()),
        Next::ReopenTodo("t-1a2b3c4d".into()),
        Next::OpenTodo("t-1a2b3c4d".into()),
        Next::UpdateTodo,
        Next::AddTodo,
        Next::AddTodoWithCheck,
        Next::ShouldRun,
        Next::QuotaOf("agent-a".into()),
        Next::RunEvidence,
        Next::AddEvidence,
        Next::RefreshState,
        Next::AddGoal,
        Next::ListGoals,
        Next::SetGoal("main".into()),
        Next::ResumeGoal("main".into()),
        Next::ListGates,
        Next::ShowGate("g-1a2b3c4d".into()),
        Next::CloseGate("answer".into(), "g-1a2b3c4d".into()),
        Next::CloseGate("withdraw".into(), "g-1a2b3c4d".into()),
        Next::RegisterAgent(None),
        Next::RegisterAgent(Some("agent-a".into())),
        Next::ListAgents,
        Next::List("todo".into()),
        Next::List("signer".into()),
        Next::List("machine".into()),
        Next::Doctor,
        Next::TrustSigner("ada".into()),
        Next::AnnounceSigner("ada".into()),
        Next::ApproveSigner("ada".into()),
        Next::ReclaimSigner("ada".into()),
        Next::TrustTodo("t-1a2b3c4d".into()),
        Next::SetupMachine(None),
        Next::SetupMachine(Some("laptop".into())),
        Next::AdmitMachine("laptop".into(), "SHA256:abc".into()),
        Next::RaiseBudget {
            goal: "main".into(),
            usd: Some(40),
            tokens: None,
            agent: None,
        },
        Next::RaiseBudget {
            goal: "main".into(),
            usd: Some(12),
            tokens: Some(2_000_000),
            agent: Some("agent-a".into()),
        },
    ];
    for n in &all {
        match n {
            Next::Todos
            | Next::ReadyTodos
            | Next::AllTodos
            | Next::ShowTodo(_)
            | Next::ClaimTodo(_)
            | Next::FinishTodo(_)
            | Next::ForceRelease(_)
            | Next::ReopenTodo(_)
            | Next::OpenTodo(_)
            | Next::UpdateTodo
            | Next::AddTodo
            | Next::AddTodoWithCheck
            | Next::ShouldRun
            | Next::QuotaOf(_)
            | Next::RunEvidence
            | Next::AddEvidence
            | Next::RefreshState
            | Next::AddGoal
            | Next::ListGoals
            | Next::SetGoal(_)
            | Next::ResumeGoal(_)
            | Next::ListGates
            | Next::ShowGate(_)
            | Next::CloseGate(..)
            | Next::RegisterAgent(_)
            | Next::ListAgents
            | Next::List(_)
            | Next::Doctor
            | Next::TrustSigner(_)
            | Next::AnnounceSigner(_)
            | Next::ApproveSigner(_)
            | Next::ReclaimSigner(_)
            | Next::TrustTodo(_)
            | Next::SetupMachine(_)
            | Next::AdmitMachine(..)
            | Next::RaiseBudget { .. } => {}
        }
    }
    all
}

/// Every `loopx …` command in `text`: backticked spans, and lines of a
/// fenced code block (markdown) or indented lines (a help's examples) that
/// start with `loopx `, cut at a comment (`#`, or two spaces before prose).
fn commands_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut prose = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    for span in prose.split('`').skip(1).step_by(2) {
        let span = span.trim();
        if span.starts_with("loopx ") {
            out.push(span.to_owned());
        }
    }
    let mut fenced = false;
    for raw in text.lines() {
        if raw.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced && !raw.starts_with("  ") {
            continue;
        }
        let line = raw.trim_start().trim_start_matches("$ ");
        if !line.starts_with("loopx ") {
            continue;
        }
        let cut = [line.find(" #"), line.find("  ")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(line.len());
        out.push(line[..cut].trim_end().to_owned());
    }
    out
}

/// The words of `cmd` with placeholders filled, or None when it cannot be
/// filled (an ellipsis for more flags, an optional part in brackets).
fn filled(cmd: &str) -> Option<Vec<String>> {
    let words = shell_words(cmd)?;
    let mut out = Vec::new();
    for w in words {
        if w.contains('…') && !matches!(w.as_str(), "g-…" | "t-…" | "e-…" | "SHA256:…") {
            return None;
        }
        if w.starts_with('[') || w.starts_with('<') || w.contains('{') || w.contains("$(") {
            return None;
        }
        if matches!(w.as_str(), "&&" | "|" | "||" | ";" | "\\" | "2>&1") || w.starts_with('>') {
            break;
        }
        // `goal add/list/show`: a list of commands, not one.
        if w.contains('/') && !w.contains('.') && out.len() < 3 && !w.starts_with('/') {
            return None;
        }
        let w = match w.as_str() {
            "GATE" | "g-…" => "g-1a2b3c4d".to_owned(),
            "T" | "ID" | "TODO" | "t-…" => "t-1a2b3c4d".to_owned(),
            "e-…" => "e-1a2b3c4d".to_owned(),
            "G" | "GOAL" => "main".to_owned(),
            "NAME" => "ada".to_owned(),
            "AGENT" => "agent-a".to_owned(),
            "CHOICE" => "approve".to_owned(),
            "FP" | "SHA256:…" => "SHA256:abc".to_owned(),
            "PATTERN" => "agent-*".to_owned(),
            "D" | "DURATION" => "1h".to_owned(),
            "N" => "3".to_owned(),
            "TICK" | "TICK|TIME" => "7".to_owned(),
            "SHELL" => "bash".to_owned(),
            v if v.starts_with('$') && v.contains("TOKEN") => {
                "lxt1:main:agent-a:0123456789abcdef:1733130000".to_owned()
            }
            v if v.starts_with('$') && v.to_lowercase().contains("todo") => "t-1a2b3c4d".to_owned(),
            v if v.starts_with('$') => "agent-a".to_owned(),
            other if other.contains('|') && !other.contains(' ') => {
                other.split('|').next().unwrap_or_default().to_owned()
            }
            other => other.to_owned(),
        };
        out.push(w);
    }
    Some(out)
}

/// Splits a command line into words as a POSIX shell would for plain
/// quoting (no expansions); None on an unclosed quote.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                has = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => cur.push(c),
                    }
                }
            }
            '"' => {
                has = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => cur.push(chars.next()?),
                        c => cur.push(c),
                    }
                }
            }
            c if c.is_whitespace() => {
                if has {
                    words.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            c => {
                has = true;
                cur.push(c);
            }
        }
    }
    if has {
        words.push(cur);
    }
    Some(words)
}

/// Whether `word` names a subcommand at any level (`answer`, `should-run`).
fn is_subcommand(word: &str) -> bool {
    fn any(cmd: &mut clap::Command, word: &str) -> bool {
        cmd.build();
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        names.iter().any(|n| n == word)
            || names.iter().any(|n| {
                let mut sub = cmd.find_subcommand(n).expect("listed").clone();
                any(&mut sub, word)
            })
    }
    any(&mut super::Cli::command(), word)
}

/// Every command's long help (examples included), walked through the tree.
fn helps() -> Vec<(String, String)> {
    fn walk(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        cmd.build();
        out.push((path.to_owned(), cmd.render_long_help().to_string()));
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        for name in names {
            let mut sub = cmd.find_subcommand(&name).expect("listed").clone();
            walk(&mut sub, &format!("{path} {name}"), out);
        }
    }
    let mut out = Vec::new();
    walk(&mut super::Cli::command(), "loopx", &mut out);
    out
}

#[test]
#[expect(clippy::print_stdout, reason = "the test lists what it skipped")]
fn every_printed_command_parses_as_printed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources: Vec<(String, String)> = helps()
        .into_iter()
        .map(|(path, help)| (format!("`{path} --help`"), help))
        .collect();
    sources.push((
        "the refusals' next steps".to_owned(),
        every_next()
            .iter()
            .map(Next::cli)
            .collect::<Vec<_>>()
            .join("\n"),
    ));
    let mut docs = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let p = e.expect("an entry").path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    docs.sort();
    for p in docs {
        let text = std::fs::read_to_string(&p).expect("readable");
        let name = p.strip_prefix(root).unwrap_or(&p).display().to_string();
        sources.push((name, text));
    }
    let commands: Vec<String> = super::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    let (mut checked, mut skipped, mut bad) = (0, Vec::new(), Vec::new());
    for (source, text) in &sources {
        for cmd in commands_in(text) {
            let Some(words) = filled(&cmd) else {
                skipped.push(format!("{source}: {cmd}"));
                continue;
            };
            // Prose that starts with the word loopx ("loopx keeps …", a
            // record's name like `loopx signed act 2`) names no command.
            let first = words.iter().skip(1).find(|w| !w.starts_with('-'));
            if first.is_none_or(|w| !commands.contains(w)) {
                continue;
            }
            checked += 1;
            let Err(e) = super::Cli::try_parse_from(&words) else {
                continue;
            };
            use clap::error::ErrorKind;
            let text = e.to_string();
            // A command named with at most its flags (`loopx todo done`,
            // `loopx todo done --no-sync`, `loopx log --op`) is a reference
            // to it, not a command line to run: its missing arguments are
            // not an error. Given a positional, it must be whole.
            let path_and_flags = words
                .iter()
                .skip(1)
                .filter(|w| !w.starts_with('-'))
                .all(|w| commands.contains(w) || is_subcommand(w));
            let reference = path_and_flags
                && (e.kind() == ErrorKind::MissingRequiredArgument
                    || text.contains("a value is required"));
            if reference
                || matches!(
                    e.kind(),
                    ErrorKind::DisplayHelp
                        | ErrorKind::DisplayVersion
                        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                )
            {
                continue;
            }
            bad.push(format!(
                "{source}: `{cmd}`: {}",
                text.lines().next().unwrap_or_default()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {checked} printed commands do not parse:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // What was skipped, for `cargo test -- --nocapture`.
    println!(
        "checked {checked}; skipped {}:\n{}",
        skipped.len(),
        skipped.join("\n")
    );
    assert!(
        checked >= FIRST_VERSION,
        "checked {checked} printed commands, fewer than the first version of this test ({FIRST_VERSION}): a source stopped being read"
    );
}
