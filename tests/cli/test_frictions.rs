//! The small frictions a new user met (issue 53, item 2), one test each:
//! time flags, a failed write to the output, `status --html -`, a pager
//! that cannot start, a bare hub, a command group without its subcommand,
//! the status counts, log's columns, `[unsigned]` marks and the digest's
//! done lines. (The hooks doctor's note is in test_hooks_install.rs, the
//! git identity in test_identity.rs.)

use std::process::Command;

use crate::common::hubs::{hubs, push_guarded};
use crate::common::keys::{have_openssh, signer};
use crate::common::{START, TestEnv, git_in, rfc3339, run};

/// `YYYY-MM-DD` of a time.
fn date(secs: i64) -> String {
    rfc3339(secs)[..10].to_owned()
}

/// `YYYY-MM-DD HH:MM` of a time, as people type it.
fn date_time(secs: i64) -> String {
    rfc3339(secs)[..16].replace('T', " ")
}

#[test]
fn every_time_flag_takes_durations_dates_and_unix_seconds() {
    let env = TestEnv::with_board();
    // Ticks 1-3 (init, two agents) at START, +1m, +2m; tick 4 at +3m.
    let first_at = env.now_secs();
    env.add("First", &[]);
    env.advance(3 * 3600);
    let second_at = env.now_secs();
    env.add("Second", &[]);
    assert_eq!(first_at, START + 180);

    // --at 2h: the board as it was two hours ago (tick 4).
    let now = env.now_secs();
    let at = env.loopx(&["--json", "status", "--at", "2h"]).ok().json();
    assert_eq!(at["tick"], 4, "{at}");
    assert_eq!(at["as_of"], rfc3339(now - 7200), "{at}");
    // A date and time, read as UTC; unix seconds; bare digits stay a tick.
    for (rev, tick) in [
        (date_time(first_at), 4),
        (date_time(second_at), 5),
        (format!("@{}", first_at + 59), 4),
        ("3".to_owned(), 3),
    ] {
        let v = env.loopx(&["--json", "status", "--at", &rev]).ok().json();
        assert_eq!(v["tick"], tick, "--at {rev}: {v}");
    }
    let shown = env
        .loopx(&["--json", "show", &date_time(first_at)])
        .ok()
        .json();
    assert_eq!(shown["tick"], 4, "{shown}");
    // log --since: a date (its midnight) and a date with a time.
    let ticks = |since: &str| {
        env.loopx(&["--json", "log", "--since", since])
            .ok()
            .stdout
            .lines()
            .count()
    };
    assert_eq!(ticks(&date(START)), 5);
    assert_eq!(ticks(&date(START + 86_400)), 0);
    assert_eq!(ticks(&date_time(second_at)), 1);
    assert_eq!(ticks("1h"), 1);
    // park --until: a duration reads from now, a date is its midnight.
    let now = env.now_secs();
    let parked = env
        .agent("agent-a", &["--json", "quota", "park", "--until", "2h"])
        .ok()
        .json();
    assert_eq!(parked["until"], rfc3339(now + 7200), "{parked}");
    let tomorrow = date(START + 86_400);
    let parked = env
        .agent(
            "agent-a",
            &["--json", "quota", "park", "--until", &tomorrow],
        )
        .ok()
        .json();
    assert_eq!(parked["until"], format!("{tomorrow}T00:00:00Z"), "{parked}");
    // What is refused says every form it takes.
    let bad = env.loopx(&["status", "--at", "yesterday"]).code(2);
    assert!(
        bad.stderr.contains("a date (") && bad.stderr.contains("@UNIX-SECONDS"),
        "{}",
        bad.stderr
    );
    let bad = env
        .agent("agent-a", &["--json", "quota", "park", "--until", "12/07"])
        .code(2);
    assert_eq!(bad.error_code(), "bad-time");
    // Each flag's help says which way a duration reads.
    for (args, says) in [
        (&["log", "--help"][..], "a duration reads as that long ago"),
        (
            &["digest", "--help"][..],
            "a duration reads as that long ago",
        ),
        (
            &["status", "--help"][..],
            "a duration reads as that long ago",
        ),
        (
            &["quota", "park", "--help"][..],
            "a duration reads as that long from now",
        ),
        (&["status", "--help"][..], "tick number (bare digits)"),
    ] {
        let help = env.loopx(args).ok().stdout.replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains(says), "{args:?}: {help}");
    }
}

#[test]
fn a_failed_write_to_the_output_says_so_and_speaks_of_no_tick() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        crate::common::skipped(format_args!("skipped: no /dev/full here"));
        return;
    };
    let env = TestEnv::with_board();
    env.add("A", &[]);
    let before = env.tip();
    for args in [
        &["log"][..],
        &["status"][..],
        &["show", "1"][..],
        &["--json", "todo", "list"][..],
    ] {
        let mut c = env.command();
        c.args(args)
            .stdout(full.try_clone().expect("dup /dev/full"));
        let out = run(&mut c).code(1);
        let error = &out.stderr[out.stderr.find("error: ").expect("an error")..];
        assert!(
            error.starts_with("error: cannot write the output: No space left on device"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            !error.contains(" tick") && !error.contains(" while "),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(env.tip(), before, "nothing was written");
}

#[test]
fn status_html_dash_is_stdout_and_json_says_what_was_written() {
    let env = TestEnv::with_board();
    env.add("A", &[]);
    let page = env.loopx(&["status", "--html", "-"]).ok();
    assert!(
        page.stdout.starts_with("<!DOCTYPE html>"),
        "{}",
        page.stdout
    );
    assert!(page.stdout.contains("data-count=\"ready\""));
    assert!(!env.repo.join("-").exists(), "no file named -");
    let file = env.root().join("board.html");
    let f = file.to_str().unwrap();
    let written = env.loopx(&["--json", "status", "--html", f]).ok().json();
    assert_eq!(written["html"], f, "{written}");
    assert_eq!(written["ref"], "refs/loopx/state");
    assert_eq!(written["tick"], 4);
    let bytes = std::fs::metadata(&file).expect("the page").len();
    assert_eq!(written["bytes"], bytes);
    // The page and a JSON document cannot share stdout.
    let both = env.loopx(&["--json", "status", "--html", "-"]).code(2);
    assert_eq!(both.error_code(), "bad-usage");
    env.loopx(&["status", "--html", "-", "--watch"]).code(2);
}

#[test]
fn a_pager_that_cannot_start_leaves_the_output_and_says_so() {
    let env = TestEnv::with_board();
    // loopx on a pseudo-terminal through script(1), as the convention
    // test runs it.
    let paged = |pager: &str| -> Option<String> {
        let c = env.command();
        let line = format!("{} log", env!("CARGO_BIN_EXE_loopx"));
        let mut script = Command::new("script");
        script.env_clear();
        for (k, v) in c.get_envs() {
            if let Some(v) = v {
                script.env(k, v);
            }
        }
        script
            .env("LOOPX_PAGER", pager)
            .current_dir(&env.repo)
            .env("TERM", "dumb");
        let out = run(script.args(["-qec", &line, "/dev/null"]));
        (out.code == 0).then_some(out.stdout)
    };
    let Some(out) = paged("no-such-pager-53 -R") else {
        crate::common::skipped(format_args!(
            "skipped: script(1) cannot run loopx on a pseudo-terminal here"
        ));
        return;
    };
    assert!(
        out.contains("init") && out.contains("agent.register"),
        "the output is all there: {out:?}"
    );
    assert!(
        out.contains(
            "cannot start the pager `no-such-pager-53 -R` (no-such-pager-53 is not found)"
        ),
        "{out:?}"
    );
    let missing = paged("/nowhere/less").expect("runs");
    assert!(missing.contains("init") && missing.contains("/nowhere/less is not found"));
    // One that starts still pages.
    let through = paged("sed 's/^/PAGED /'").expect("runs");
    assert!(through.contains("PAGED "), "{through:?}");
}

#[test]
fn a_bare_hub_refuses_state_writes_but_guards_pushes() {
    let env = TestEnv::with_board();
    // `hub install` works in the bare hub, and its guard takes a push.
    let h = hubs(&env);
    let guarded = h.guarded.to_str().unwrap();
    let refused = env
        .loopx(&["-C", guarded, "--json", "todo", "add", "On the hub"])
        .code(3);
    assert_eq!(
        refused.error_code(),
        "bare-repository",
        "{}",
        refused.stdout
    );
    let message = refused.json()["error"]["message"].to_string();
    assert!(message.contains("this is a hub"), "{message}");
    assert!(message.contains("write from a clone"), "{message}");
    for args in [
        &["goal", "add", "web", "--objective", "x"][..],
        &["agent", "register", "agent-c"][..],
        &["init", "--goal", "x", "--objective", "y"][..],
    ] {
        let out = env
            .loopx(&[&["-C", guarded, "--json"][..], args].concat())
            .code(3);
        assert_eq!(out.error_code(), "bare-repository", "{args:?}");
    }
    // Reads work there.
    env.loopx(&["-C", guarded, "status"]).ok();
    env.loopx(&["-C", guarded, "verify"]).ok();
    // The clone writes and pushes through the guard as before.
    env.add("From the clone", &[]);
    push_guarded(&env.machine());
    // --allow-bare writes anyway (on the plain hub).
    let origin = h.origin.to_str().unwrap();
    git_in(&h.origin, &["config", "user.name", "Ada Lovelace"]);
    git_in(&h.origin, &["config", "user.email", "ada@example.com"]);
    env.loopx(&["-C", origin, "--allow-bare", "todo", "add", "Here anyway"])
        .ok();
    env.loopx(&["-C", origin, "todo", "add", "Not here"])
        .code(3);
    git_in(&h.origin, &["config", "loopx.allowBare", "true"]);
    env.loopx(&["-C", origin, "todo", "add", "Here on purpose"])
        .ok();
}

#[test]
fn a_command_group_without_its_subcommand_says_which_there_are() {
    let env = TestEnv::new();
    for (group, some) in [
        (&["todo"][..], "add, list"),
        (&["gate"][..], "answer"),
        (&["goal"][..], "add"),
    ] {
        let out = env.loopx(&[&["--json"][..], group].concat()).code(2);
        let v = out.json();
        assert_eq!(v["error"]["code"], "missing-subcommand", "{v}");
        assert_eq!(
            v["error"]["message"],
            format!("{} needs a subcommand", group.join(" "))
        );
        let hint = v["error"]["hint"].as_str().unwrap();
        assert!(hint.contains(some) && !hint.contains("Usage"), "{hint}");
    }
}

#[test]
fn status_counts_each_todo_once() {
    let env = TestEnv::with_board();
    let a = env.add("Ready", &[]);
    env.add("Waiting", &["--after", &a]);
    let held = env.add("Held", &[]);
    env.loopx(&[
        "gate",
        "open",
        "--question",
        "Go?",
        "--blocks",
        &format!("todo:{held}"),
        "--kind",
        "permission",
    ])
    .ok();
    let c = env.add("Claimed", &[]);
    env.agent("agent-a", &["todo", "claim", &c]).ok();
    env.advance(6 * 3600);
    let json = env.loopx(&["--json", "status"]).ok().json();
    let n = &json["counts"];
    let get = |k: &str| n[k].as_u64().unwrap_or_else(|| panic!("{k}: {n}"));
    // The JSON keeps `ready` and `open` as they were, and adds the parts.
    assert_eq!((get("ready"), get("open")), (2, 2), "{n}");
    assert_eq!((get("held"), get("reclaimable")), (1, 1), "{n}");
    let disjoint = ["open", "waiting", "claimed", "blocked", "deferred", "done"];
    assert_eq!(disjoint.iter().map(|k| get(k)).sum::<u64>(), 4, "{n}");
    let text = env.loopx(&["status"]).ok().stdout;
    assert!(
        text.contains(
            "todos: 1 ready, 1 held back, 1 waiting, 1 claimed (1 expired, free to take), 0 blocked, 0 deferred, 0 done; 2 agents"
        ),
        "{text}"
    );
}

#[test]
fn log_columns_stay_put_with_long_actors() {
    let env = TestEnv::with_board();
    let long = "release-engineering-agent-west";
    env.loopx(&["agent", "register", long]).ok();
    env.agent(long, &["todo", "add", "From a long name"]).ok();
    env.agent("agent-a", &["todo", "add", "From a short one"])
        .ok();
    let log = env.loopx(&["log"]).ok().stdout;
    // `NNNN  <time, 20>  <actor, 16>  <kind, 18>  <subject>`: every column
    // starts at the same character on every line.
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 6, "{log}");
    for l in &lines {
        let chars: Vec<char> = l.chars().collect();
        for gap in [4, 26, 44, 64] {
            assert_eq!(&chars[gap..gap + 2], &[' ', ' '], "column at {gap}: {l}");
        }
    }
    assert!(log.contains("release…ent-west  todo.add"), "{log}");
    assert!(log.contains("agent-a           todo.add"), "{log}");
}

#[test]
fn unsigned_marks_only_acts_that_needed_a_signature() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let decide = |q: &str| {
        let g = env
            .loopx(&[
                "gate",
                "open",
                "--goal",
                "main",
                "--question",
                q,
                "--option",
                "a",
                "--option",
                "b",
            ])
            .ok()
            .stdout
            .trim()
            .to_owned();
        env.loopx(&["gate", "answer", &g, "--choice", "a"]).ok();
    };
    // No signer anywhere: nothing is marked.
    env.loopx(&["goal", "add", "web", "--objective", "x"]).ok();
    decide("Before?");
    let log = env.loopx(&["log"]).ok().stdout;
    assert!(!log.contains("[unsigned]"), "{log}");
    // This machine trusts a signer and signs: a permission answer is
    // signed; a decision answer needs no signature and is not marked; the
    // goal added unsigned before is a human act that lacks one.
    signer(&env, &env.machine(), "ada");
    decide("After?");
    let p = env
        .loopx(&[
            "gate",
            "open",
            "--goal",
            "main",
            "--question",
            "Publish?",
            "--kind",
            "publish",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.loopx(&["gate", "answer", &p, "--choice", "approve"])
        .ok();
    let log = env.loopx(&["log"]).ok().stdout;
    let line = |needle: &str| {
        log.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {log}"))
            .to_owned()
    };
    assert!(line("goal add web").ends_with("[unsigned]"), "{log}");
    for l in log.lines().filter(|l| l.contains("gate.answer")) {
        if l.contains("Publish?") || l.contains(&p) {
            assert!(l.contains("[signed by ada"), "{l}");
        } else {
            assert!(!l.contains("unsigned"), "{l}");
        }
    }
    let json = env.loopx(&["--json", "log", "--op", "gate.answer"]).ok();
    for rec in json.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(rec).unwrap();
        assert_ne!(v["signature"], "unsigned", "{v}");
    }
}

#[test]
fn a_done_line_names_only_the_evidence_the_completion_rests_on() {
    let env = TestEnv::with_board();
    let validated = env.add("Validated", &["--", "true"]);
    env.agent("agent-a", &["todo", "claim", &validated]).ok();
    env.agent("agent-a", &["todo", "done", &validated]).ok();
    // Another agent records a failed run on it afterwards.
    env.agent(
        "agent-b",
        &["evidence", "run", "--todo", &validated, "--", "false"],
    )
    .code(3);
    let plain = env.add("Plain", &[]);
    env.agent("agent-b", &["todo", "claim", &plain]).ok();
    env.agent(
        "agent-b",
        &["evidence", "add", "--todo", &plain, "--summary", "reviewed"],
    )
    .ok();
    env.agent("agent-b", &["todo", "done", &plain]).ok();
    let digest = env
        .loopx(&["--json", "digest", "--since", "1h"])
        .ok()
        .json();
    let done: Vec<String> = digest["done"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(done.len(), 2, "{digest}");
    assert!(
        done[0].ends_with("\"Validated\", validation passed"),
        "{done:?}"
    );
    assert!(
        done[1].contains("\"Plain\", last evidence e-") && done[1].ends_with(" passed"),
        "{done:?}"
    );
}
