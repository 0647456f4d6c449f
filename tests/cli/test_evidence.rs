//! Evidence: records of what was tried, with the code commit they saw.

use crate::common::{TestEnv, assert_text};

#[test]
fn evidence_run_records_passing_and_failing_commands() {
    let env = TestEnv::with_board();
    env.git(&["commit", "-q", "--allow-empty", "-m", "code"]);
    let t = env.add("A", &[]);
    let out = env
        .agent(
            "agent-a",
            &[
                "evidence",
                "run",
                "--todo",
                &t,
                "--",
                "sh",
                "-c",
                "echo all good",
            ],
        )
        .ok();
    assert!(
        out.stdout
            .starts_with("Passed: `sh -c echo all good` (exit 0, "),
        "{}",
        out.stdout
    );
    // A failing command is evidence: recorded, and exit 3 with its status.
    let before = env.ticks();
    let out = env
        .agent(
            "agent-a",
            &[
                "evidence",
                "run",
                "--todo",
                &t,
                "--json",
                "--",
                "sh",
                "-c",
                "echo nope; exit 2",
            ],
        )
        .code(3);
    let v = out.json();
    assert_eq!(v["passed"], false);
    assert_eq!(v["evidence"]["run"]["exit"], 2);
    assert_eq!(v["evidence"]["run"]["output_tail"], "nope");
    assert_eq!(v["evidence"]["todo"], t.as_str());
    assert_eq!(env.ticks(), before + 1);
    let sha = v["evidence"]["run"]["output_sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    // The record is a file under evidence/<yyyy-mm>/<xx>/.
    let id = v["evidence"]["id"].as_str().unwrap();
    let path = format!("evidence/2024-12/{}/{id}.toml", &id[2..4]);
    let file = env.git(&["show", &format!("refs/loopx/state:{path}")]);
    assert!(
        file.contains(
            "kind = \"test\"\nsummary = \"sh -c echo nope; exit 2\"\nby = \"agent:agent-a\""
        ),
        "{file}"
    );
    assert!(file.contains("[code]\nhead = \""), "{file}");
    assert_text(
        &env.git(&["log", "-1", "--format=%s", "refs/loopx/state"])
            .replace(&t, "T")
            .replace(id, "E"),
        "evidence E test failed (exit 2) on T: \"sh -c echo nope; exit 2\" — agent-a\n",
    );
}

#[test]
fn timeouts_no_output_and_redaction() {
    let env = TestEnv::with_board();
    let out = env
        .loopx(&[
            "evidence",
            "run",
            "--timeout",
            "1s",
            "--json",
            "--",
            "sleep",
            "5",
        ])
        .code(3);
    assert_eq!(out.json()["evidence"]["run"]["timed_out"], true);
    let secret = "ghp_0123456789abcdefghijklmnop";
    let script = format!("echo token: {secret}; echo Bearer abc.def.ghi");
    let out = env
        .loopx(&["evidence", "run", "--json", "--", "sh", "-c", &script])
        .ok();
    let tail = out.json()["evidence"]["run"]["output_tail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_text(&tail, "token: [REDACTED]\nBearer [REDACTED]");
    let out = env
        .loopx(&[
            "evidence",
            "run",
            "--no-output",
            "--json",
            "--",
            "echo",
            "hidden",
        ])
        .ok();
    assert!(out.json()["evidence"]["run"].get("output_tail").is_none());
    // A program that does not exist is a failed run, recorded.
    let out = env
        .loopx(&["evidence", "run", "--json", "--", "no-such-program-loopx"])
        .code(3);
    assert!(
        out.json()["evidence"]["run"]["error"]
            .as_str()
            .unwrap()
            .contains("no-such-program-loopx")
    );
}

#[test]
fn evidence_is_stale_once_head_moves_and_knows_a_dirty_worktree() {
    let env = TestEnv::with_board();
    env.git(&["commit", "-q", "--allow-empty", "-m", "first"]);
    let e1 = env
        .loopx(&[
            "evidence",
            "add",
            "--summary",
            "reviewed the lexer",
            "--kind",
            "review",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    std::fs::write(env.repo.join("notes.txt"), "draft").unwrap();
    let v = env
        .loopx(&["evidence", "add", "--summary", "with local edits", "--json"])
        .ok()
        .json();
    assert_eq!(v["evidence"]["code"]["dirty"], true);
    let e2 = v["evidence"]["id"].as_str().unwrap().to_owned();
    let v1 = env.loopx(&["evidence", "list", "--json"]).ok().json();
    assert_eq!(v1["evidence"][1]["id"], e1.as_str());
    assert_eq!(v1["evidence"][1]["code"]["dirty"], false);
    assert_eq!(
        env.loopx(&["evidence", "list", "--stale", "--json"])
            .ok()
            .json()["evidence"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    env.git(&["add", "notes.txt"]);
    env.git(&["commit", "-q", "-m", "second"]);
    let stale = env.loopx(&["evidence", "list", "--stale"]).ok().stdout;
    assert!(
        stale.contains(&e1) && stale.contains(&e2) && stale.contains("[stale]"),
        "{stale}"
    );
    let e3 = env
        .loopx(&["evidence", "add", "--summary", "fresh"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert!(
        !env.loopx(&["evidence", "list", "--stale"])
            .ok()
            .stdout
            .contains(&e3)
    );
}

#[test]
fn artifacts_are_hashed() {
    let env = TestEnv::with_board();
    std::fs::write(env.repo.join("report.txt"), "42 passed\n").unwrap();
    let v = env
        .loopx(&[
            "evidence",
            "add",
            "--summary",
            "bench report",
            "--artifact",
            "report.txt",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(v["evidence"]["kind"], "artifact");
    assert_eq!(v["evidence"]["artifact"]["path"], "report.txt");
    assert_eq!(v["evidence"]["artifact"]["bytes"], 10);
    assert_eq!(
        v["evidence"]["artifact"]["sha256"],
        "e6d47cc01ac7d20e7ba7acd6d1ad113573c1991f02c5af5f0f64a0572e0607f1"
    );
    env.loopx(&[
        "evidence",
        "add",
        "--summary",
        "x",
        "--artifact",
        "missing.txt",
    ])
    .code(2);
    env.loopx(&["evidence", "add", "--summary", "x", "--todo", "t-0000"])
        .code(1);
    env.loopx(&[
        "evidence",
        "add",
        "--summary",
        "x",
        "--kind",
        "sync-rejected",
    ])
    .code(2);
    env.loopx(&["evidence", "run"]).code(2);
}
