//! The conventions a person expects of a command line: help that lists
//! every command, colour and a pager that follow the usual switches, one
//! parser for time flags, JSON usage errors, man pages with the usual
//! sections.

use std::process::Command;

use crate::common::{Output, TestEnv, run};

/// `loopx --help` itself (not docs/cli.md): every command has its line.
#[test]
fn help_lists_every_command_with_a_description() {
    let env = TestEnv::new();
    let help = env.loopx(&["--help"]).ok().stdout;
    let commands = &help[help.find("Commands:").expect("a command list")..];
    let commands = &commands[..commands.find("\n\n").expect("the list ends")];
    let mut names = Vec::new();
    for line in commands.lines().skip(1) {
        // Continuation lines of a long description are indented further.
        if line.starts_with("   ") {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().expect("a name");
        assert!(
            words.next().is_some(),
            "`{name}` has no description in --help:\n{help}"
        );
        names.push(name.to_owned());
    }
    for name in ["status", "digest", "log", "settle", "sync", "man", "todo"] {
        assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
    }
    // Global options under their own heading, and examples.
    let global = &help[help.find("Global options:").expect("a global heading")..];
    for flag in ["-C <PATH>", "--json", "--agent", "--color", "--no-pager"] {
        assert!(global.contains(flag), "{flag} is not under Global options");
    }
    assert!(help.contains("Examples:\n  loopx"), "{help}");
    // A command's own help has its examples too.
    let status = env.loopx(&["status", "--help"]).ok().stdout;
    assert!(status.contains("Examples:"), "{status}");
    assert!(status.contains("Global options:"), "{status}");
}

/// A usage error (clap's) under --json is a JSON document like any other
/// error, with exit 2.
#[test]
fn usage_errors_under_json_are_json() {
    let env = TestEnv::with_board();
    for args in [
        &["--json", "log", "--bogus"][..],
        &["log", "--format", "json", "--max-count", "many"],
        &["--format=json", "lgo"],
    ] {
        let out = env.loopx(args).code(2);
        let doc = out.json();
        assert_eq!(doc["error"]["code"], "bad-usage", "{args:?}: {doc}");
        assert_eq!(doc["error"]["exit"], 2);
        assert!(
            !doc["error"]["message"].as_str().unwrap().is_empty(),
            "{doc}"
        );
    }
    let plain = env.loopx(&["log", "--bogus"]).code(2);
    assert!(plain.stdout.is_empty(), "{}", plain.stdout);
    assert!(plain.stderr.contains("unexpected argument '--bogus'"));
}

/// should-run's command line is parsed by hand (`Cli::should_run`) when it
/// is a form clap would take; anything else still meets clap: its errors,
/// as text or JSON, and its help.
#[test]
fn should_run_outside_the_hand_parsed_forms_is_clap_s() {
    let env = TestEnv::with_board();
    let plain = env.loopx(&["quota", "should-run", "--bogus"]).code(2);
    assert!(plain.stdout.is_empty(), "{}", plain.stdout);
    assert!(
        plain.stderr.contains("unexpected argument '--bogus'"),
        "{}",
        plain.stderr
    );
    for args in [
        &["--json", "quota", "should-run", "--bogus"][..],
        &["quota", "should-run", "--json", "--json"],
        &["quota", "should-run", "--format", "JSON", "--json"],
        &["quota", "--goal", "g", "should-run", "--json"],
        &["quota", "should-run", "--json", "--goal"],
    ] {
        let doc = env.loopx(args).code(2).json();
        assert_eq!(doc["error"]["code"], "bad-usage", "{args:?}: {doc}");
    }
    let help = env.loopx(&["quota", "should-run", "--help"]).ok();
    assert!(
        help.stdout.contains("Usage: loopx quota should-run"),
        "{}",
        help.stdout
    );
    // The forms taken by hand answer as before.
    let taken = env
        .loopx(&[
            "--agent=agent-a",
            "quota",
            "--format=json",
            "should-run",
            "--no-pager",
        ])
        .stdout;
    let doc: serde_json::Value = serde_json::from_str(&taken).expect("json");
    assert!(doc["decision"].is_string(), "{doc}");
}

/// `log --since 2h` reads a duration as `digest --since 12h` does; a bad
/// value says what is accepted.
#[test]
fn every_since_takes_a_duration_or_a_time() {
    let env = TestEnv::with_board();
    env.add("Early", &[]);
    env.advance(3 * 3600);
    env.add("Late", &[]);
    let recent = env.loopx(&["log", "--since", "2h", "--json"]).ok();
    let subjects: Vec<String> = recent
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["subject"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(subjects.len(), 1, "{subjects:?}");
    assert!(subjects[0].contains("Late"), "{subjects:?}");
    let all = env.loopx(&["log", "--since", "1d", "--json"]).ok();
    assert!(all.stdout.lines().count() > 3, "{}", all.stdout);
    let at = env
        .loopx(&["log", "--since", "2024-12-02T09:00:00Z", "--json"])
        .ok();
    assert_eq!(at.stdout.lines().count(), all.stdout.lines().count());
    for cmd in ["log", "digest"] {
        let bad = env.loopx(&[cmd, "--since", "yesterday"]).code(2);
        assert!(
            bad.stderr.contains("is not a time") && bad.stderr.contains("RFC 3339"),
            "{cmd}: {}",
            bad.stderr
        );
    }
}

/// `show`'s diff in colour or not, as the usual switches say.
fn show(env: &TestEnv, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = env.command();
    c.env_remove("NO_COLOR").env("TERM", "xterm-256color");
    for (k, v) in envs {
        c.env(k, v);
    }
    run(c.args(["show", "1"]).args(args)).ok()
}

#[test]
fn colour_follows_color_clicolor_no_color_and_term() {
    let env = TestEnv::with_board();
    let coloured = |o: &Output| o.stdout.contains("\x1b[");
    // Not a terminal: no colour, unless forced.
    assert!(!coloured(&show(&env, &[], &[])));
    assert!(coloured(&show(&env, &[("CLICOLOR_FORCE", "1")], &[])));
    assert!(coloured(&show(&env, &[], &["--color", "always"])));
    assert!(coloured(&show(&env, &[], &["--color=always"])));
    // NO_COLOR wins over CLICOLOR_FORCE; --color never over both.
    assert!(!coloured(&show(
        &env,
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
        &[]
    )));
    assert!(!coloured(&show(
        &env,
        &[("CLICOLOR_FORCE", "1")],
        &["--color", "never"]
    )));
    let bad = env.loopx(&["--color", "sometimes", "status"]).code(2);
    assert!(bad.stderr.contains("sometimes"), "{}", bad.stderr);
}

#[test]
fn long_output_goes_through_a_pager_on_a_terminal_only() {
    let env = TestEnv::with_board();
    // loopx run by script(1), so its stdout is a pseudo-terminal, with the
    // isolated environment a loopx command of the harness has.
    let paged = |pager: Option<&str>, args: &str| -> Option<String> {
        let c = env.command();
        let line = format!("{} {args}", env!("CARGO_BIN_EXE_loopx"));
        let mut script = Command::new("script");
        script.env_clear();
        for (k, v) in c.get_envs() {
            if let Some(v) = v {
                script.env(k, v);
            }
        }
        if let Some(p) = pager {
            script.env("LOOPX_PAGER", p);
        }
        script.current_dir(&env.repo).env("TERM", "dumb");
        let out = run(script.args(["-qec", &line, "/dev/null"]));
        (out.code == 0).then_some(out.stdout)
    };
    let Some(through) = paged(Some("sed 's/^/PAGED /'"), "log") else {
        {
            crate::common::skipped(format_args!(
                "skipped: script(1) cannot run loopx on a pseudo-terminal here"
            ));
        }
        return;
    };
    assert!(through.contains("PAGED "), "{through:?}");
    for cmd in ["show 1", "diff 1 2"] {
        let out = paged(Some("sed 's/^/PAGED /'"), cmd).unwrap();
        assert!(out.contains("PAGED "), "{cmd}: {out:?}");
    }
    // --no-pager, `cat` and an empty pager turn it off; so does JSON.
    for (pager, args) in [
        (Some("sed 's/^/PAGED /'"), "--no-pager log"),
        (Some("sed 's/^/PAGED /'"), "log --json"),
        (Some("cat"), "log"),
        (Some(""), "log"),
    ] {
        let out = paged(pager, args).unwrap();
        assert!(
            !out.contains("PAGED ") && out.contains("init"),
            "{args}: {out:?}"
        );
    }
    // git config core.pager is read when LOOPX_PAGER is unset.
    env.git(&["config", "core.pager", "sed 's/^/CORE /'"]);
    let out = paged(None, "log").unwrap();
    assert!(out.contains("CORE "), "{out:?}");
    // Piped, never.
    let piped = env.loopx(&["log"]).ok();
    assert!(!piped.stdout.contains("CORE "), "{}", piped.stdout);
}

/// The man page has the sections a man page has, and a synopsis as
/// `--help` writes it.
#[test]
fn man_pages_have_exit_status_environment_and_see_also() {
    let env = TestEnv::new();
    let page = env.loopx(&["man"]).ok().stdout;
    for section in [
        ".SH SYNOPSIS",
        ".SH EXAMPLES",
        ".SH \"EXIT STATUS\"",
        ".SH ENVIRONMENT",
        ".SH \"SEE ALSO\"",
        "LOOPX_AGENT",
        "NO_COLOR",
        "loopx\\-status(1)",
    ] {
        assert!(page.contains(section), "{section} missing:\n{page}");
    }
    let synopsis = &page[page.find(".SH SYNOPSIS").unwrap()..];
    let synopsis = synopsis.lines().nth(1).unwrap();
    assert_eq!(synopsis, "\\fBloopx\\fR [OPTIONS] <COMMAND>");
    assert!(!page.contains("[\\fB\\-C \\fR]"), "{page}");
    assert_eq!(page.matches(".ds Aq").count(), 2, "one preamble");
    let dir = env.root().join("man1");
    env.loopx(&["man", "--dir", dir.to_str().unwrap()]).ok();
    let claim = std::fs::read_to_string(dir.join("loopx-todo-claim.1")).unwrap();
    assert!(
        claim.contains("\\fBloopx todo claim\\fR [OPTIONS]"),
        "{claim}"
    );
    assert!(claim.contains("loopx(1), loopx\\-todo(1)"), "{claim}");
}
