//! `loopx.notify`: one notification per gate that waits on a human, across
//! clones, restarts and syncs, with a counting script standing in for a
//! chat webhook. Notifications are sent by a detached runner after the
//! command has returned: [`settle`] waits for it before a test looks.

use std::path::{Path, PathBuf};

use crate::common::{Machine, TestEnv};

/// A script that appends what it reads on stdin (one JSON line per call)
/// to `log`; configured as `loopx.notify` on `m`.
fn counting(m: &Machine, log: &Path) {
    let script = log.with_extension("sh");
    std::fs::write(&script, format!("#!/bin/sh\ncat >> '{}'\n", log.display())).unwrap();
    m.git(&[
        "config",
        "loopx.notify",
        &format!("sh '{}'", script.display()),
    ]);
}

/// Waits until the clone at `repo` has no notify runner at work and none
/// pending (a guard fails the test if that takes minutes: a hang, not a
/// timing).
pub(crate) fn settle(repo: &Path) {
    let base = repo.join(".git/loopx");
    let started = std::time::Instant::now();
    loop {
        let free = !base.join("notify-pending").exists()
            && std::process::Command::new("flock")
                .args(["-n"])
                .arg(base.join("notify.lock"))
                .arg("true")
                .status()
                .is_ok_and(|s| s.success());
        if free {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "the notify runner never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn calls(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per call"))
        .collect()
}

fn team() -> (TestEnv, String) {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["sync"]).ok();
    (env, hub)
}

fn logs(env: &TestEnv) -> (PathBuf, PathBuf) {
    (env.root().join("a.log"), env.root().join("b.log"))
}

#[test]
fn a_gate_is_notified_once_across_clones_restarts_and_a_sync() {
    let (env, hub) = team();
    let (alog, blog) = logs(&env);
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    counting(&a, &alog);
    counting(&b, &blog);
    b.loopx(&["sync"]).ok();
    a.agent(
        "agent-a",
        &[
            "gate",
            "open",
            "--kind",
            "permission",
            "--question",
            "May I push to main?",
        ],
    )
    .ok();
    settle(&a.repo);
    let got = calls(&alog);
    assert_eq!(got.len(), 1, "notified once, as the gate opened");
    let g = &got[0];
    let id = g["id"].as_str().unwrap().to_owned();
    assert_eq!(g["kind"], "permission");
    assert_eq!(g["goal"], "main");
    assert_eq!(g["question"], "May I push to main?");
    assert_eq!(g["options"], serde_json::json!(["approve", "reject"]));
    assert_eq!(g["opened_by"], "agent:agent-a");
    // Where it is, and an answer that runs from anywhere.
    let path = std::fs::canonicalize(&a.repo).unwrap();
    let path = path.to_str().unwrap();
    assert_eq!(
        g["answer_commands"][0],
        format!("loopx -C {path} gate answer {id} --choice approve")
    );
    assert_eq!(g["repository"]["path"], path);
    assert_eq!(g["repository"]["name"], "repo");
    assert_eq!(g["repository"]["url"], hub.as_str());
    assert_eq!(g["repository"]["ref"], "refs/loopx/state");
    // The notification is recorded in the state, as a tick of its own.
    let log = a
        .loopx(&["log", "--op", "gate.notified", "--json"])
        .ok()
        .stdout;
    assert_eq!(log.lines().count(), 1, "{log}");
    // Later ticks, each a new process (a restart), notify nothing more.
    a.add("More work");
    a.add("Even more work");
    settle(&a.repo);
    assert_eq!(calls(&alog).len(), 1);
    // The other clone syncs the gate with its record: it stays quiet.
    a.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    b.add("B's work");
    settle(&b.repo);
    assert_eq!(calls(&blog).len(), 0, "b saw the gate already notified");
    assert_eq!(calls(&alog).len(), 1);
    // The record re-applies to the same tree: the history verifies.
    a.loopx(&["verify"]).ok();
    b.loopx(&["verify"]).ok();
}

#[test]
fn a_gate_from_a_remote_is_notified_on_sync_and_not_again_elsewhere() {
    let (env, hub) = team();
    let (alog, blog) = logs(&env);
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    // a has no notify command: the gate travels un-notified.
    a.loopx(&[
        "gate",
        "open",
        "--kind",
        "spend",
        "--question",
        "May I spend $20?",
    ])
    .ok();
    a.loopx(&["sync"]).ok();
    counting(&b, &blog);
    b.loopx(&["sync"]).ok();
    settle(&b.repo);
    assert_eq!(
        calls(&blog).len(),
        1,
        "sync brought a gate that waits on a human"
    );
    b.loopx(&["sync"]).ok();
    settle(&b.repo);
    assert_eq!(calls(&blog).len(), 1);
    // a turns notifications on and syncs b's record: nothing to send.
    counting(&a, &alog);
    a.loopx(&["sync"]).ok();
    a.add("After the sync");
    settle(&a.repo);
    assert_eq!(calls(&alog).len(), 0);
}

#[test]
fn a_failed_command_never_fails_the_tick_shows_in_status_and_is_retried() {
    let env = TestEnv::with_board();
    let log = env.root().join("n.log");
    env.git(&["config", "loopx.notify", "false"]);
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "publish",
        "--question",
        "Publish 1.0?",
    ])
    .ok();
    settle(&env.repo);
    let st = env.loopx(&["status", "--json"]).ok().json();
    let id = st["gates"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(st["notify_failed"][0]["gate"], id.as_str());
    let text = env.loopx(&["status"]).ok().stdout;
    assert!(
        text.contains(&format!("notification failed for {id}: `false` exited")),
        "{text}"
    );
    // Reading does not retry (nothing moved); the next tick does, once the
    // back-off (a minute; each command here is a minute later) has passed.
    counting(&env.machine(), &log);
    env.loopx(&["status"]).ok();
    settle(&env.repo);
    assert_eq!(calls(&log).len(), 0);
    env.add("Any tick", &[]);
    settle(&env.repo);
    assert_eq!(calls(&log).len(), 1);
    let st = env.loopx(&["status", "--json"]).ok().json();
    assert!(st.get("notify_failed").is_none(), "{st}");
    env.add("Another tick", &[]);
    settle(&env.repo);
    assert_eq!(calls(&log).len(), 1);
}

#[test]
fn decisions_agents_may_answer_are_not_notified() {
    let env = TestEnv::with_board();
    let log = env.root().join("n.log");
    counting(&env.machine(), &log);
    env.agent(
        "agent-a",
        &[
            "gate",
            "open",
            "--question",
            "nom or winnow?",
            "--option",
            "nom",
            "--option",
            "winnow",
        ],
    )
    .ok();
    settle(&env.repo);
    assert_eq!(calls(&log).len(), 0);
}

#[test]
fn a_command_past_its_time_limit_is_stopped_and_the_tick_stands() {
    let env = TestEnv::with_board();
    env.git(&["config", "loopx.notify", "sleep 30"]);
    env.git(&["config", "loopx.notifyTimeout", "1s"]);
    let before = env.ticks();
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "production",
        "--question",
        "Deploy?",
    ])
    .ok();
    settle(&env.repo);
    assert_eq!(env.ticks(), before + 1, "the gate's tick, and no record");
    let st = env.loopx(&["status", "--json"]).ok().json();
    assert_eq!(st["gates"].as_array().unwrap().len(), 1);
    assert!(
        st["notify_failed"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("`sleep 30` ran longer than 1s and was stopped"),
        "{st}"
    );
}

#[test]
fn the_notify_command_is_read_from_local_or_global_config_only() {
    let env = TestEnv::with_board();
    let log = env.root().join("n.log");
    let script = log.with_extension("sh");
    std::fs::write(&script, format!("#!/bin/sh\ncat >> '{}'\n", log.display())).unwrap();
    // `git -c` and the environment's config are not this repository's settings.
    let out = env
        .command()
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "loopx.notify")
        .env("GIT_CONFIG_VALUE_0", format!("sh {}", script.display()))
        .args(["gate", "open", "--kind", "spend", "--question", "Spend?"])
        .output()
        .unwrap();
    assert!(out.status.success());
    settle(&env.repo);
    assert_eq!(calls(&log).len(), 0);
}

/// The payload as a fake endpoint on 127.0.0.1 receives it (curl posts
/// it as it is): the repository's path and its remote's URL without
/// credentials (HTTPS with a user and token, ssh with a password, and a
/// URL an `insteadOf` rule rewrites, resolved as git resolves it), and
/// answer commands that run from anywhere. Then the endpoint answers 500:
/// curl's own line reaches `status`, the page and `doctor`.
#[test]
fn the_payload_says_where_without_credentials_and_curls_own_line_shows_everywhere() {
    if !crate::test_recipes::have("curl") {
        return;
    }
    let (url, seen) = crate::test_recipes::server();
    let env = TestEnv::with_board();
    let notify = |path: &str| {
        env.git(&[
            "config",
            "loopx.notify",
            &format!("curl -fsS --max-time 8 --data-binary @- {url}{path}"),
        ]);
    };
    notify("/notify");
    env.git(&[
        "config",
        "url.https://ada:tok3n@git.example.com/.insteadOf",
        "gh:",
    ]);
    let path = std::fs::canonicalize(&env.repo).unwrap();
    let path = path.to_str().unwrap().to_owned();
    let cases = [
        (
            "https://ada:s3cr3t@git.example.com/org/web.git",
            "https://git.example.com/org/web.git",
        ),
        (
            "ssh://git:hunter2@git.example.com:2222/org/web.git",
            "ssh://git@git.example.com:2222/org/web.git",
        ),
        ("gh:org/web.git", "https://git.example.com/org/web.git"),
    ];
    let open = |question: &str| -> String {
        let out = env
            .agent(
                "agent-a",
                &[
                    "--json",
                    "gate",
                    "open",
                    "--kind",
                    "permission",
                    "--question",
                    question,
                ],
            )
            .ok();
        settle(&env.repo);
        out.json()["gate"]["id"].as_str().unwrap().to_owned()
    };
    for (i, (remote, shown)) in cases.iter().enumerate() {
        if i == 0 {
            env.git(&["remote", "add", "origin", remote]);
        } else {
            env.git(&["remote", "set-url", "origin", remote]);
        }
        let id = open(&format!("May I deploy build {i}?"));
        let got = seen.lock().unwrap().clone();
        assert_eq!(got.len(), i + 1, "{got:?}");
        let body = &got[i].body;
        for secret in ["s3cr3t", "hunter2", "tok3n"] {
            assert!(!body.contains(secret), "{secret} sent: {body}");
        }
        let doc: serde_json::Value = serde_json::from_str(body).expect("the payload");
        assert_eq!(doc["repository"]["url"], *shown, "{remote}");
        assert_eq!(doc["repository"]["path"], path.as_str());
        assert_eq!(
            doc["answer_commands"][1],
            format!("loopx -C {path} gate answer {id} --choice reject")
        );
    }

    // The endpoint answers 500.
    notify("/revoked");
    let id = open("May I drop the old tables?");
    let line = "curl: (22) The requested URL returned error: 500";
    let status = env.loopx(&["--json", "status"]).ok().json();
    let failed = &status["notify_failed"][0];
    assert_eq!(failed["gate"], id.as_str(), "{status}");
    assert!(
        failed["reason"].as_str().unwrap().contains(line),
        "{status}"
    );
    let text = env.loopx(&["status"]).ok().stdout;
    assert!(text.contains(line), "{text}");
    let page = env.root().join("status.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    let section = &html[html
        .find("<section id=\"notify-failed\">")
        .expect("the section")..];
    assert!(
        section.contains(&format!("data-notify-failed=\"{id}\"")) && section.contains(line),
        "{section:.600}"
    );
    let doctor = env.loopx(&["doctor"]).ok().stdout;
    assert!(
        doctor.contains(&format!(
            "warning: the loopx.notify command failed for gate {id}"
        )) && doctor.contains(line),
        "{doctor}"
    );
    let doctor = env.loopx(&["--json", "doctor"]).ok().json();
    assert_eq!(doctor["healthy"], true, "a warning: {doctor}");
}
