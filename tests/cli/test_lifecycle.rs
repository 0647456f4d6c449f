//! Validation, edit, reopen, archive and agent retire.

use crate::common::{TestEnv, assert_text};

#[test]
fn done_runs_the_validation_once_and_refuses_on_failure() {
    let env = TestEnv::with_board();
    // The validation checks for a file in the repository root, no shell.
    let t = env.add("Make the file", &["--", "test", "-f", "made.txt"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let ticks = env.ticks();
    let out = env.agent("agent-a", &["todo", "done", &t]).code(3);
    assert_text(
        &out.stderr.replace(&t, "T"),
        "Validating T: test -f made.txt\nerror: T is not done: its validation `test -f made.txt` failed (exit 1)\nhint: nothing was marked done; the failure is recorded as evidence (tick 6); fix what it reports and run `loopx todo done` again\n",
    );
    // The failure is one tick of evidence, and the todo is still claimed.
    assert_eq!(env.ticks(), ticks + 1);
    let v = env
        .loopx(&["evidence", "list", "--todo", &t, "--json"])
        .ok()
        .json();
    assert_eq!(v["evidence"][0]["run"]["exit"], 1);
    assert_eq!(v["evidence"][0]["summary"], "validation: test -f made.txt");
    assert_eq!(
        env.loopx(&["todo", "show", &t, "--json"]).ok().json()["status"],
        "claimed"
    );
    // Another agent's completion is refused before anything runs.
    let out = env.agent("agent-b", &["todo", "done", &t]).code(4);
    assert!(!out.stderr.contains("Validating"), "{}", out.stderr);
    assert_eq!(env.ticks(), ticks + 1);
    std::fs::write(env.repo.join("made.txt"), "x").unwrap();
    let v = env
        .agent("agent-a", &["todo", "done", &t, "--json"])
        .ok()
        .json();
    assert_eq!(v["todo"]["status"], "done");
    assert_eq!(v["validation"]["exit"], 0);
    assert_eq!(v["validation"]["argv"][0], "test");
    // The recorded result is in the tick; nobody runs it again.
    let msg = env.git(&["log", "-1", "--format=%B", "refs/loopx/state"]);
    assert!(
        msg.contains("[change.validation]\nargv = [\"test\", \"-f\", \"made.txt\"]\nexit = 0\n"),
        "{msg}"
    );
    let file = env.git(&[
        "show",
        &format!("refs/loopx/state:todos/{}/{t}.toml", &t[2..4]),
    ]);
    assert!(
        file.contains("[validate]\nargv = [\"test\", \"-f\", \"made.txt\"]\ntimeout = \"5m\"\n"),
        "{file}"
    );
}

#[test]
fn validation_output_is_shown_timeouts_are_failures_and_secrets_redacted() {
    let env = TestEnv::with_board();
    let t = env.add(
        "Echo",
        &[
            "--validate-timeout",
            "1s",
            "--",
            "sh",
            "-c",
            "echo API_TOKEN=$(echo aHVudGVyMg== | base64 -d); echo boom >&2; exit 7",
        ],
    );
    let out = env.loopx(&["todo", "done", &t]).code(3);
    assert!(
        out.stderr
            .contains("failed (exit 7)\nAPI_TOKEN=[REDACTED]\nboom\n"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("hunter2"));
    let slow = env.add("Slow", &["--validate-timeout", "1s", "--", "sleep", "5"]);
    let out = env.loopx(&["todo", "done", &slow]).code(3);
    assert!(out.stderr.contains("failed (timed out)"), "{}", out.stderr);
    let missing = env.add("Missing", &["--", "no-such-program-loopx"]);
    let out = env.loopx(&["todo", "done", &missing]).code(3);
    assert!(
        out.stderr
            .contains("could not start: no-such-program-loopx"),
        "{}",
        out.stderr
    );
}

#[test]
fn edit_and_reopen() {
    let env = TestEnv::with_board();
    let a = env.add("A", &[]);
    let b = env.add("B", &["--after", &a]);
    env.loopx(&[
        "todo",
        "edit",
        &b,
        "--title",
        "B, renamed",
        "--priority",
        "P0",
        "--no-after",
        "--note",
        "independent now",
    ])
    .ok();
    let v = env.loopx(&["todo", "show", &b, "--json"]).ok().json();
    assert_eq!(v["title"], "B, renamed");
    assert_eq!(v["priority"], "P0");
    assert!(v.get("after").is_none());
    // A cycle is refused.
    env.loopx(&["todo", "edit", &a, "--after", &b]).ok();
    let out = env.loopx(&["todo", "edit", &b, "--after", &a]).code(3);
    assert!(out.stderr.contains("already waits for"), "{}", out.stderr);
    env.loopx(&["todo", "edit", &b]).code(2);
    env.loopx(&["todo", "done", &b]).ok();
    let out = env.loopx(&["todo", "reopen", &b]).ok();
    assert_text(&out.stdout.replace(&b, "B"), "Reopened B \"B, renamed\".\n");
    env.loopx(&["todo", "reopen", &b]).code(3);
    assert_text(
        &env.git(&["log", "-1", "--format=%s", "refs/loopx/state"])
            .replace(&b, "B"),
        "reopen B \"B, renamed\" (was done) — Ada Lovelace\n",
    );
}

#[test]
fn archive_moves_done_todos_out_of_the_live_set() {
    let env = TestEnv::with_board();
    let a = env.add("A", &[]);
    let b = env.add("B", &[]);
    let c = env.add("C", &["--after", &a]);
    env.loopx(&["todo", "done", &a]).ok();
    env.loopx(&["todo", "done", &b]).ok();
    let out = env.loopx(&["todo", "archive"]).ok();
    assert_text(&out.stdout, "Archived 2 done todos.\n");
    let files = env.git(&["ls-tree", "-r", "--name-only", "refs/loopx/state"]);
    assert!(
        files.contains(&format!("archive/todos/{}/{a}.toml", &a[2..4])),
        "{files}"
    );
    assert!(
        !files.contains(&format!("\ntodos/{}/{a}.toml", &a[2..4])),
        "{files}"
    );
    // The live list no longer has them; --all does; show finds them.
    assert!(!env.loopx(&["todo", "list"]).ok().stdout.contains(&a));
    let all = env.loopx(&["todo", "list", "--all"]).ok().stdout;
    assert!(all.contains(&format!("{a}  P2  archived")), "{all}");
    let v = env.loopx(&["todo", "show", &a, "--json"]).ok().json();
    assert_eq!(v["archived"], true);
    // A todo waiting on an archived one is ready: archived means done.
    let ready = env
        .agent("agent-a", &["todo", "list", "--ready"])
        .ok()
        .stdout;
    assert!(ready.contains(&c), "{ready}");
    env.loopx(&["todo", "archive"]).code(3);
    env.loopx(&["doctor"]).ok();
}

#[test]
fn retiring_an_agent_releases_its_claims() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-b", &["agent", "retire", "agent-a"])
        .code(3);
    let out = env.loopx(&["agent", "retire", "agent-a"]).ok();
    assert_text(
        &out.stdout.replace(&t, "T"),
        "Retired agent agent-a, released T.\n",
    );
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "open");
    assert_eq!(v["notes"][0]["text"], "released because agent-a retired");
    env.agent("agent-a", &["todo", "claim", &t]).code(3);
    env.agent("agent-b", &["agent", "retire", "agent-b"]).ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
}
