//! Every kind of repository: bare, linked worktrees sharing one state,
//! SHA-256; and packing.

use crate::common::{TestEnv, assert_text, git_in, run};

#[test]
fn a_bare_repository() {
    let env = TestEnv::empty();
    git_in(&env.repo, &["init", "-q", "--bare", "."]);
    env.git(&["config", "user.name", "Ada Lovelace"]);
    env.git(&["config", "user.email", "ada@example.com"]);
    // A bare repository is a hub: its state is written from clones, and
    // here only with --allow-bare.
    let refused = env
        .loopx(&["--json", "init", "--goal", "main", "--objective", "x"])
        .code(3);
    assert_eq!(refused.error_code(), "bare-repository");
    env.loopx(&["--allow-bare", "init", "--goal", "main", "--objective", "x"])
        .ok();
    env.loopx(&["--allow-bare", "agent", "register", "agent-a"])
        .ok();
    let t = env.add("A", &["--allow-bare", "--", "true"]);
    env.agent("agent-a", &["--allow-bare", "todo", "claim", &t])
        .ok();
    env.agent("agent-a", &["--allow-bare", "todo", "done", &t])
        .ok();
    assert_eq!(env.ticks(), 5);
    // -C from elsewhere works too.
    let mut c = env.command();
    let out = run(c
        .current_dir(env.root())
        .args(["-C", "repo", "status", "--json"]))
    .ok();
    assert_eq!(out.json()["tick"], 5);
}

#[test]
fn linked_worktrees_share_one_state() {
    let env = TestEnv::new();
    env.git(&["commit", "-q", "--allow-empty", "-m", "root"]);
    env.git(&["worktree", "add", "-q", "../wt", "-b", "wt"]);
    env.loopx(&["init", "--goal", "main", "--objective", "x"])
        .ok();
    let wt = env.root().join("wt");
    let mut c = env.command();
    let out = run(c
        .current_dir(&wt)
        .args(["todo", "add", "from the worktree"]))
    .ok();
    let t = out.stdout.trim().to_owned();
    let list = env.loopx(&["todo", "list"]).ok().stdout;
    assert!(list.contains(&t), "{list}");
    // loopx never touched either checkout.
    assert_text(&env.git(&["status", "--porcelain"]), "");
    assert_text(&git_in(&wt, &["status", "--porcelain"]), "");
}

#[test]
fn a_sha256_repository() {
    let env = TestEnv::empty();
    git_in(&env.repo, &["init", "-q", "--object-format=sha256", "."]);
    env.git(&["config", "user.name", "Ada Lovelace"]);
    env.git(&["config", "user.email", "ada@example.com"]);
    env.loopx(&["init", "--goal", "main", "--objective", "x"])
        .ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    let t = env.add("A", &[]);
    let v = env
        .agent("agent-a", &["todo", "claim", &t, "--json"])
        .ok()
        .json();
    assert_eq!(v["commit"].as_str().unwrap().len(), 64);
    env.git(&["fsck", "--strict", "--no-dangling"]);
    env.loopx(&["doctor"]).ok();
}

#[test]
fn gc_packs_and_ticks_pack_in_the_background() {
    let env = TestEnv::with_board();
    for i in 0..5 {
        env.add(&format!("t{i}"), &[]);
    }
    let out = env.loopx(&["gc", "--json"]).ok();
    let v = out.json();
    assert!(v["before"]["loose"].as_u64().unwrap() > 20, "{v}");
    assert_eq!(v["after"]["loose"], 0);
    // Every 4th tick starts a repack in the background.
    env.git(&["config", "loopx.autoPack", "4"]);
    for i in 0..4 {
        env.add(&format!("u{i}"), &[]);
    }
    let mut loose = u64::MAX;
    for _ in 0..100 {
        let counts = env.git(&["count-objects", "-v"]);
        loose = counts
            .lines()
            .find_map(|l| l.strip_prefix("count: "))
            .and_then(|v| v.parse().ok())
            .unwrap();
        if loose < 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        loose < 4,
        "the background repack packed the loose objects ({loose} left)"
    );
    env.git(&["fsck", "--no-dangling"]);
    env.loopx(&["status"]).ok();
}

#[test]
fn a_packed_state_reads_the_same_as_a_loose_one() {
    // Todo files are alike, so a repack stores most of them as deltas of one
    // another, in chains; reads go through the delta-base cache.
    let env = TestEnv::with_board();
    let mut ids = Vec::new();
    for i in 0..30 {
        let t = env.add(&format!("Make the parser handle case {i}"), &[]);
        env.loopx(&[
            "todo",
            "update",
            &t,
            "--note",
            &format!("first look at case {i}"),
        ])
        .ok();
        ids.push(t);
    }
    let read = || {
        let list = env.loopx(&["todo", "list", "--json"]).ok().stdout;
        let shown: Vec<String> = ids
            .iter()
            .map(|t| env.loopx(&["todo", "show", t, "--json"]).ok().stdout)
            .collect();
        (list, shown)
    };
    let loose = read();
    env.git(&[
        "repack",
        "-a",
        "-d",
        "-f",
        "-q",
        "--window=250",
        "--depth=50",
    ]);
    let counts = env.git(&["count-objects", "-v"]);
    assert!(counts.contains("count: 0\n"), "{counts}");
    assert_eq!(read(), loose);
    env.agent("agent-a", &["todo", "claim", &ids[7]]).ok();
    env.loopx(&["doctor"]).ok();
}
