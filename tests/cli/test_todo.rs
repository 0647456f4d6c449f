use crate::common::{TestEnv, assert_text};

#[test]
fn add_prints_the_id_and_writes_a_fanned_out_file() {
    let env = TestEnv::with_board();
    let out = env
        .loopx(&[
            "todo",
            "add",
            "Write the parser",
            "--priority",
            "P1",
            "--note",
            "start with the lexer",
        ])
        .ok();
    let id = out.stdout.trim().to_owned();
    assert!(id.starts_with("t-") && id.len() == 10, "{id}");
    assert_text(
        &out.stderr,
        "Added ID \"Write the parser\".\n"
            .replace("ID", &id)
            .as_str(),
    );
    let path = format!("todos/{}/{id}.toml", &id[2..4]);
    let file = env.git(&["show", &format!("refs/loopx/state:{path}")]);
    assert_text(
        &file.replace(&id, "ID"),
        r#"id = "ID"
goal = "main"
title = "Write the parser"
priority = "P1"
status = "open"
epoch = 0
created_at = "2024-12-02T09:03:00Z"
created_by = "human:Ada Lovelace <ada@example.com>"
updated_at = "2024-12-02T09:03:00Z"

[[notes]]
at = "2024-12-02T09:03:00Z"
by = "human:Ada Lovelace <ada@example.com>"
text = "start with the lexer"
"#,
    );
    let v = env.loopx(&["todo", "add", "Second", "--json"]).ok().json();
    assert_eq!(v["op"], "todo.add");
    assert!(v["todo"].as_str().unwrap().starts_with("t-"));
}

#[test]
fn the_whole_lifecycle_of_a_todo() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    let u = env.add("Test the parser", &["--after", &t]);
    let list = env.loopx(&["todo", "list"]).ok().stdout;
    assert_text(
        &list.replace(&t, "T").replace(&u, "U"),
        "T  P1  open      -             Write the parser\nU  P2  open      -             Test the parser\n",
    );
    // Only the first is ready: the second waits for it.
    let ready = env
        .agent("agent-a", &["todo", "list", "--ready"])
        .ok()
        .stdout;
    assert_text(
        &ready.replace(&t, "T"),
        "T  P1  open      -             Write the parser\n",
    );

    // A unique prefix is enough.
    let out = env.agent("agent-a", &["todo", "claim", &t[..5]]).ok();
    assert_text(
        &out.stdout.replace(&t, "T"),
        "Claimed T \"Write the parser\" until 2024-12-02T09:52:00Z (epoch 1).\n",
    );
    let mine = env
        .agent("agent-a", &["todo", "list", "--mine"])
        .ok()
        .stdout;
    assert_text(
        &mine.replace(&t, "T"),
        "T  P1  claimed   agent-a       Write the parser\n",
    );
    // Claiming again renews without a new epoch.
    let out = env
        .agent("agent-a", &["todo", "claim", &t, "--ttl", "2h"])
        .ok();
    assert_text(
        &out.stdout.replace(&t, "T"),
        "Renewed T \"Write the parser\" until 2024-12-02T11:09:00Z (epoch 1).\n",
    );
    env.agent("agent-a", &["todo", "update", &t, "--note", "lexer done"])
        .ok();
    let out = env
        .agent(
            "agent-a",
            &["todo", "done", &t, "--note", "all green", "--json"],
        )
        .ok();
    let v = out.json();
    assert_eq!(v["todo"]["status"], "done");
    assert_eq!(v["todo"]["epoch"], 1);
    assert!(v["todo"].get("owner").is_none());

    // Now the second is ready.
    let ready = env
        .agent("agent-b", &["todo", "list", "--ready"])
        .ok()
        .stdout;
    assert_text(
        &ready.replace(&u, "U"),
        "U  P2  open      -             Test the parser\n",
    );
    let show = env.loopx(&["todo", "show", &t]).ok().stdout;
    assert_text(
        &show.replace(&t, "T"),
        "T  P1  done  main\nWrite the parser\ndone at 2024-12-02T09:11:00Z\ncreated 2024-12-02T09:03:00Z by Ada Lovelace\n  2024-12-02T09:10:00Z agent-a: lexer done\n  2024-12-02T09:11:00Z agent-a: all green\n",
    );
    let subjects = env.git(&["log", "--format=%s", "refs/loopx/state"]);
    assert_text(
        &subjects.replace(&t, "T").replace(&u, "U"),
        r#"done T "Write the parser" — agent-a
update T "Write the parser" note — agent-a
renew T "Write the parser" — agent-a
claim T "Write the parser" — agent-a
add U "Test the parser" — Ada Lovelace
add T "Write the parser" — Ada Lovelace
register agent agent-b (custom) — Ada Lovelace
register agent agent-a (custom) — Ada Lovelace
init with goal main — Ada Lovelace
"#,
    );
}

#[test]
fn release_and_update_status_give_the_claim_up() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env.agent("agent-a", &["todo", "release", &t]).ok();
    assert_text(&out.stdout.replace(&t, "T"), "Released T \"A\".\n");
    env.agent("agent-b", &["todo", "claim", &t]).ok();
    let v = env
        .agent(
            "agent-b",
            &[
                "todo",
                "update",
                &t,
                "--status",
                "blocked",
                "--note",
                "needs a decision",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(v["todo"]["status"], "blocked");
    assert_eq!(v["todo"]["epoch"], 2);
    assert!(v["todo"].get("owner").is_none());
    // Blocked is not ready.
    let out = env.agent("agent-a", &["todo", "claim", &t]).code(3);
    assert!(
        out.stderr.contains("is not ready: it is blocked"),
        "{}",
        out.stderr
    );
    env.loopx(&["todo", "update", &t, "--status", "open"]).ok();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
}

#[test]
fn only_the_owner_writes_a_claimed_todo() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let before = env.tip();
    let out = env.agent("agent-b", &["todo", "claim", &t]).code(4);
    assert_text(
        &out.stderr.replace(&t, "T"),
        "error: T is not ready: agent-a holds it until 2024-12-02T09:49:00Z\nhint: agent-a won it; pick another with `loopx todo list --ready`\n",
    );
    let out = env.agent("agent-b", &["todo", "done", &t]).code(4);
    assert_text(
        &out.stderr.replace(&t, "T"),
        "error: T is claimed by agent-a; only its owner may complete it\nhint: pick other work with `loopx todo list --ready`\n",
    );
    env.agent("agent-b", &["todo", "update", &t, "--note", "x"])
        .code(4);
    env.agent("agent-b", &["todo", "release", &t]).code(4);
    let out = env.loopx(&["todo", "done", &t]).code(4);
    assert!(
        out.stderr.contains("free it with `loopx todo release"),
        "{}",
        out.stderr
    );
    assert_eq!(env.tip(), before);
}

#[test]
fn todo_refusals() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.loopx(&["todo", "done", &t]).ok();
    let before = env.tip();
    // A done todo can be neither claimed nor done again.
    let out = env.agent("agent-a", &["todo", "claim", &t]).code(3);
    assert!(
        out.stderr.contains("is not ready: it is done"),
        "{}",
        out.stderr
    );
    env.loopx(&["todo", "done", &t]).code(3);
    // Humans do not claim.
    let u = env.add("B", &[]);
    let before_u = env.tip();
    let out = env.loopx(&["todo", "claim", &u]).code(3);
    assert!(
        out.stderr
            .starts_with("error: only a registered agent may claim a todo"),
        "{}",
        out.stderr
    );
    // Unregistered agents do not claim.
    let out = env.agent("ghost", &["todo", "claim", &u]).code(3);
    assert_text(
        &out.stderr,
        "error: agent ghost is not registered\nhint: register it first: `loopx agent register ghost`\n",
    );
    // Unknown --after ids, unknown and malformed todo ids.
    let out = env
        .loopx(&["todo", "add", "C", "--after", "t-00000000"])
        .code(1);
    assert_text(
        &out.stderr,
        "error: there is no todo t-00000000\nhint: `loopx todo list` shows them\n",
    );
    let out = env.agent("agent-a", &["todo", "claim", "../x"]).code(2);
    assert!(
        out.stderr.contains("is not a todo id or prefix"),
        "{}",
        out.stderr
    );
    env.loopx(&["todo", "add", "   "]).code(2);
    env.loopx(&["todo", "add", "D", "--priority", "P9"]).code(2);
    env.loopx(&["todo", "update", &u]).code(2);
    env.loopx(&["todo", "update", &u, "--status", "done"])
        .code(2);
    assert_eq!(env.tip(), before_u);
    assert_ne!(before, before_u);
}

#[test]
fn ambiguous_prefixes_are_refused() {
    let env = TestEnv::with_board();
    // Enough todos that some share a first hex digit.
    let ids: Vec<String> = (0..20)
        .map(|i| env.add(&format!("todo {i}"), &[]))
        .collect();
    let first = ids[0].chars().nth(2).unwrap().to_string();
    let sharing = ids.iter().filter(|id| id[2..].starts_with(&first)).count();
    let out = env.agent("agent-a", &["todo", "show", &first]);
    if sharing > 1 {
        let out = out.code(2);
        assert!(
            out.stderr.contains(&format!("matches {sharing} todos")),
            "{}",
            out.stderr
        );
    } else {
        out.ok();
    }
}

#[test]
fn capabilities_and_goals_decide_readiness() {
    let env = TestEnv::with_board();
    env.loopx(&["agent", "register", "rusty", "--capability", "rust"])
        .ok();
    let t = env.add("Needs rust", &["--capability", "rust"]);
    let out = env.agent("agent-a", &["todo", "claim", &t]).code(3);
    assert!(
        out.stderr.contains("it needs capability rust"),
        "{}",
        out.stderr
    );
    let ready = env.loopx(&["todo", "list", "--ready"]).ok().stdout;
    assert!(
        ready.contains(&t),
        "a human sees what some agent could take: {ready}"
    );
    env.loopx(&["goal", "set", "main", "--status", "paused"])
        .ok();
    let out = env.agent("rusty", &["todo", "claim", &t]).code(3);
    assert!(out.stderr.contains("its goal is paused"), "{}", out.stderr);
    env.loopx(&["goal", "set", "main", "--status", "active"])
        .ok();
    env.agent("rusty", &["todo", "claim", &t]).ok();
}
