//! Secrets never reach the history: every free text a command writes goes
//! through the one redactor, the writer is told, a gate option that holds
//! one is refused, and evidence output loses the token shapes a probe
//! found stored verbatim. Checked on the state's own blobs and commit
//! messages, which every clone and the hub receive.

use crate::common::TestEnv;

/// Everything the state ref holds: every blob of every tick and every
/// commit message.
fn whole_history(env: &TestEnv) -> String {
    let mut all = env.git(&["log", "--format=%B", "refs/loopx/state"]);
    for commit in env.git(&["rev-list", "refs/loopx/state"]).lines() {
        for line in env.git(&["ls-tree", "-r", commit]).lines() {
            let blob = line.split_whitespace().nth(2).unwrap();
            all.push_str(&env.git(&["cat-file", "-p", blob]));
        }
    }
    all
}

fn hex(n: usize) -> String {
    "3f9a0c7e1b5d2468".chars().cycle().take(n).collect()
}

fn mixed(n: usize) -> String {
    "Zx8Qw2Er5Ty7Ui0Op3As6Df9Gh1Jk4Lm"
        .chars()
        .cycle()
        .take(n)
        .collect()
}

#[test]
fn free_text_is_redacted_before_it_enters_the_state_and_the_writer_is_told() {
    let env = TestEnv::with_board();
    let secrets = [
        format!("hf_{}", "qwertyuiopasdfghjklzxcvbnmqwertyui"),
        format!("dop_v1_{}", hex(64)),
        format!("shpat_{}", hex(32)),
        format!("SK{}", hex(32)),
        format!("dapi{}", hex(32)),
        format!("key-{}", hex(32)),
        format!("ya29.{}", mixed(60)),
        format!("SG.{}.{}", mixed(22), mixed(43)),
    ];
    let bodies: Vec<String> = secrets.iter().map(|s| s[4..].to_owned()).collect();
    // A title, a note, a gate question, a next action and a goal's
    // objective, each holding secrets.
    let out = env
        .agent(
            "agent-a",
            &[
                "todo",
                "add",
                &format!("Rotate {}", secrets[0]),
                "--note",
                &format!("old one was {} and {}", secrets[1], secrets[2]),
            ],
        )
        .ok();
    assert!(
        out.stderr
            .contains("warning: the title and note looked like they held a secret"),
        "{}",
        out.stderr
    );
    let t = out.stdout.trim().to_owned();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env
        .agent(
            "agent-a",
            &[
                "gate",
                "open",
                "--kind",
                "permission",
                "--question",
                &format!("May I revoke {}?", secrets[3]),
            ],
        )
        .ok();
    assert!(
        out.stderr.contains("the question looked like"),
        "{}",
        out.stderr
    );
    env.agent(
        "agent-a",
        &[
            "refresh-state",
            "--outcome",
            "blocked",
            "--todo",
            &t,
            "--next-action",
            &format!("ask for a new {}", secrets[4]),
        ],
    )
    .ok();
    // Evidence output: the shapes a probe found stored verbatim.
    env.agent(
        "agent-a",
        &[
            "evidence",
            "run",
            "--",
            "sh",
            "-c",
            &format!(
                "echo {} pypi-AgEIcHlwaS5vcmc{} wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                secrets[7],
                mixed(60)
            ),
        ],
    )
    .ok();

    env.loopx(&[
        "goal",
        "add",
        "keys",
        "--objective",
        &format!("No more {} or {} in the logs", secrets[5], secrets[6]),
    ])
    .ok();
    let history = whole_history(&env);
    for (s, body) in secrets.iter().zip(&bodies) {
        assert!(!history.contains(body.as_str()), "{s} reached the history");
    }
    assert!(
        !history.contains(&mixed(60)),
        "the PyPI token reached the history"
    );
    assert!(
        !history.contains("wJalrXUtnFEMI"),
        "the AWS secret reached the history"
    );
    assert!(
        history.contains("Rotate [REDACTED]"),
        "the title lost its context"
    );
    env.loopx(&["verify"]).ok();

    // A gate option that holds a secret is refused, not redacted: an answer
    // names its option by its text.
    let before = env.tip();
    let out = env
        .agent(
            "agent-a",
            &[
                "gate",
                "open",
                "--goal",
                "main",
                "--question",
                "Which key?",
                "--option",
                &secrets[2],
                "--option",
                "the old one",
                "--format",
                "json",
            ],
        )
        .code(2);
    assert_eq!(out.error_code(), "secret-in-option");
    assert_eq!(env.tip(), before, "the state moved");

    // Honest work goes on, and ordinary text comes through untouched.
    let out = env
        .agent(
            "agent-a",
            &[
                "todo",
                "add",
                "Fix the cache key: it collides",
                "--goal",
                "main",
            ],
        )
        .ok();
    assert!(!out.stderr.contains("secret"), "{}", out.stderr);
    let listed = env.loopx(&["todo", "list", "--format", "json"]).ok();
    assert!(listed.stdout.contains("Fix the cache key: it collides"));
}
