//! The local state cache (`.git/loopx/cache/`): derived and disposable. A
//! damaged, foreign or stale cache is rebuilt silently and never changes an
//! answer; a tick writes the cache of its new tip; `verify` never trusts it.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Output, TestEnv, run};

/// The cache file of the default state ref.
fn cache_file(env: &TestEnv) -> PathBuf {
    env.repo.join(".git/loopx/cache/refs_loopx_state.state")
}

/// A command at a fixed time, so two runs can be compared whole.
fn at_fixed_time(env: &TestEnv, agent: Option<&str>, args: &[&str]) -> Output {
    let mut c: Command = env.spawner().command();
    c.env("LOOPX_NOW", "2026-12-01T12:00:00Z")
        .env("LOOPX_SEED", "cache");
    if let Some(a) = agent {
        c.env("LOOPX_AGENT", a);
    }
    run(c.args(args))
}

/// What the hot read commands answer, with their exit statuses.
fn answers(env: &TestEnv) -> Vec<(i32, String)> {
    [
        (None, &["status", "--json"][..]),
        (None, &["status"][..]),
        (Some("agent-a"), &["quota", "should-run", "--json"][..]),
        (Some("agent-b"), &["quota", "should-run"][..]),
        (None, &["todo", "list", "--json"][..]),
        (None, &["gate", "list", "--json"][..]),
    ]
    .iter()
    .map(|(agent, args)| {
        let out = at_fixed_time(env, *agent, args);
        // Silent: nothing about the cache, whatever its state.
        assert!(!out.stderr.contains("cache"), "{args:?}: {}", out.stderr);
        (out.code, out.stdout)
    })
    .collect()
}

fn board(gate: bool) -> (TestEnv, String) {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    env.add("Write the docs", &[]);
    env.add("Review the API", &["--priority", "P0"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    if gate {
        env.loopx(&["gate", "open", "--question", "Ship it?"]).ok();
    }
    (env, t)
}

#[test]
fn a_damaged_cache_is_rebuilt_and_no_answer_changes() {
    let (env, _) = board(true);
    let file = cache_file(&env);
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
    // From the tree, with no cache: the answers to keep.
    let want = answers(&env);
    assert!(file.is_file(), "a read writes the cache");
    let good = std::fs::read(&file).unwrap();
    let read = |f: &PathBuf| std::fs::read(f).unwrap_or_default();
    let text = String::from_utf8_lossy(&good).into_owned();
    assert!(text.starts_with("loopx-cache\n"), "{text:.200}");
    assert!(text.contains(&format!("commit {}\n", env.tip().unwrap())));
    assert_eq!(answers(&env), want, "from the cache");

    let body_at = good.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let mut flipped = good.clone();
    flipped[body_at + (good.len() - body_at) / 2] ^= 0x01;
    let mut zeroed = good.clone();
    for b in &mut zeroed[body_at..body_at + 64] {
        *b = b' ';
    }
    let edit = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        text.replacen(from, to, 1).into_bytes()
    };
    let version = format!("loopx {}", env!("CARGO_PKG_VERSION"));
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("zero-length", Vec::new()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("header only", good[..body_at].to_vec()),
        ("garbage", b"\x00\xffnot a cache at all\n\n{".repeat(50)),
        ("a flipped bit", flipped),
        ("a blanked block", zeroed),
        (
            "another binary version",
            edit(&version, "loopx 0.0.1-other"),
        ),
        ("another format", edit(" format ", " format 9")),
        ("another key", edit("key loopx", "key other")),
        ("no magic", edit("loopx-cache\n", "loopx-cache-2\n")),
        ("a bad length", edit("\nbytes ", "\nbytes 1")),
        ("a bad sum", edit("\nsum ", "\nsum 0")),
        ("another tree", edit("\ntree ", "\ntree 0")),
        ("a bad tick", edit("\ntick ", "\ntick x")),
        ("trailing bytes", [good.as_slice(), b"extra"].concat()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&file, &bytes).unwrap();
        assert_eq!(answers(&env), want, "with a cache of {what}");
        assert!(read(&file) == good, "{what}: rebuilt");
    }

    // A directory in its place: answered from the tree, nothing written.
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir_all(file.join("inner")).unwrap();
    assert_eq!(answers(&env), want, "with a directory in its place");
    assert!(file.is_dir());
    std::fs::remove_dir_all(&file).unwrap();

    // A dangling symlink and a FIFO (a read would block on one).
    std::os::unix::fs::symlink("/nonexistent/loopx-cache", &file).unwrap();
    assert_eq!(answers(&env), want, "with a dangling symlink");
    assert!(read(&file) == good, "symlink replaced");
    std::fs::remove_file(&file).unwrap();
    let ok = Command::new("mkfifo").arg(&file).status().unwrap();
    assert!(ok.success());
    assert_eq!(answers(&env), want, "with a FIFO in its place");
    assert!(read(&file) == good, "FIFO replaced");

    // The cache folder itself is a file: nothing can be cached, and
    // nothing changes.
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file.parent().unwrap(), b"in the way").unwrap();
    assert_eq!(answers(&env), want, "with a file for the cache folder");
    std::fs::remove_file(file.parent().unwrap()).unwrap();

    // Unreadable (for a user other than root, who reads it anyway).
    assert_eq!(answers(&env), want);
    let mut perms = std::fs::metadata(&file).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o000);
    std::fs::set_permissions(&file, perms).unwrap();
    assert_eq!(answers(&env), want, "with an unreadable cache");
}

#[test]
fn the_cache_of_an_older_tip_is_never_read_for_a_newer_one() {
    let (env, t) = board(true);
    env.loopx(&["status"]).ok();
    let old = std::fs::read(cache_file(&env)).unwrap();
    env.agent("agent-a", &["todo", "update", &t, "--note", "halfway"])
        .ok();
    let tip = env.tip().unwrap();
    let written = String::from_utf8(std::fs::read(cache_file(&env)).unwrap()).unwrap();
    assert!(
        written.contains(&format!("commit {tip}\n")),
        "the tick wrote the cache of its new tip"
    );
    let want = answers(&env);
    // Put back the cache of the tip before: a whole, valid file for
    // another commit.
    std::fs::write(cache_file(&env), &old).unwrap();
    assert_eq!(answers(&env), want);
    let shown = at_fixed_time(&env, None, &["todo", "show", &t, "--json"]).ok();
    assert!(shown.stdout.contains("halfway"), "{}", shown.stdout);
}

#[test]
fn reads_use_the_cache_and_verify_never_does() {
    let (env, t) = board(false);
    env.loopx(&["status"]).ok();
    // Forge a cache that is whole and keyed to the tip, but says something
    // the tree does not: only a cache read can show it.
    let file = cache_file(&env);
    let text = String::from_utf8(std::fs::read(&file).unwrap()).unwrap();
    let (head, body) = text.split_once("\n\n").unwrap();
    let body = body.replace("Write the parser", "Write the forged parser");
    let head: Vec<String> = head
        .lines()
        .map(|l| {
            if l.starts_with("bytes ") {
                format!("bytes {}", body.len())
            } else if l.starts_with("sum ") {
                format!("sum {:016x}", loopx::cache::checksum(body.as_bytes()))
            } else {
                l.to_owned()
            }
        })
        .collect();
    std::fs::write(&file, format!("{}\n\n{body}", head.join("\n"))).unwrap();
    let list = env.loopx(&["todo", "list"]).ok();
    assert!(
        list.stdout.contains("Write the forged parser"),
        "{}",
        list.stdout
    );
    let v = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok()
        .json();
    assert_eq!(v["todo"]["title"], "Write the forged parser", "{v}");
    // verify re-derives every state from the tree: the chain is valid.
    env.loopx(&["verify"]).ok();
    // A tick builds on the state it read, so the forged title lands in
    // the tree of a tick whose op only adds a note: verify, which re-applies
    // that op to the state in the parent's tree, refuses it.
    env.agent("agent-a", &["todo", "update", &t, "--note", "halfway"])
        .ok();
    let out = env.loopx(&["verify"]);
    assert_ne!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // Deleting the cache is always safe: the answers come from the tree.
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    let list = env.loopx(&["todo", "list"]).ok();
    assert!(
        list.stdout.contains("Write the forged parser"),
        "{}",
        list.stdout
    );
}

/// The state a tick caches (the one it holds after `apply`) is the state
/// its tree gives: after each kind of tick, the answers from the cache the
/// tick wrote equal the answers read from the tree.
#[test]
fn every_tick_caches_what_its_tree_holds() {
    let env = TestEnv::with_board();
    let file = cache_file(&env);
    let check = |what: &str| {
        assert!(file.is_file(), "{what}: the tick wrote the cache");
        let cached = answers(&env);
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
        let from_tree = answers(&env);
        assert_eq!(cached, from_tree, "after {what}");
        // The read above wrote the cache again; the next tick replaces it.
    };
    let t1 = env.add("Write the lexer", &["--priority", "P1", "--", "true"]);
    check("todo add");
    let t2 = env.add("Write the parser", &["--after", &t1]);
    env.agent("agent-a", &["todo", "claim", &t1]).ok();
    check("todo claim");
    env.agent("agent-a", &["todo", "update", &t1, "--note", "halfway"])
        .ok();
    check("todo update");
    env.loopx(&["evidence", "add", "--todo", &t1, "--summary", "reviewed"])
        .ok();
    check("evidence add");
    env.agent("agent-a", &["todo", "done", &t1]).ok();
    check("todo done with a validation");
    let v = env
        .agent("agent-b", &["quota", "should-run", "--json"])
        .ok()
        .json();
    let tok = v["turn_token"].as_str().unwrap().to_owned();
    env.agent("agent-b", &["todo", "claim", &t2]).ok();
    env.agent(
        "agent-b",
        &[
            "settle",
            "--turn",
            &tok,
            "--todo",
            &t2,
            "--outcome",
            "advanced",
            "--note",
            "started",
            "--",
            "true",
        ],
    )
    .ok();
    check("settle");
    env.loopx(&["todo", "archive"]).ok();
    check("todo archive");
    let g = env
        .loopx(&["gate", "open", "--question", "Ship it?", "--json"])
        .ok()
        .json();
    check("gate open");
    let gate = g["gate"]["id"]
        .as_str()
        .or(g["id"].as_str())
        .unwrap()
        .to_owned();
    env.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    check("gate answer");
    env.loopx(&["goal", "set", "main", "--status", "paused"])
        .ok();
    check("goal set");
    env.loopx(&["agent", "retire", "agent-b"]).ok();
    check("agent retire");
}

/// Readers racing writers: every reader answers, with a state that some
/// tick of the history held, whatever cache file it found mid-write (writes
/// are renamed into place, and a torn file would fail its checksum).
#[test]
fn readers_racing_ticks_always_answer_a_real_state() {
    let env = TestEnv::with_board();
    let todos: Vec<String> = (0..6).map(|i| env.add(&format!("job {i}"), &[])).collect();
    let spawner = env.spawner();
    let outs: Vec<Output> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (i, t) in todos.iter().enumerate() {
            let (sp, t) = (spawner.clone(), t.clone());
            let agent = if i % 2 == 0 { "agent-a" } else { "agent-b" };
            handles.push(s.spawn(move || {
                let mut outs = Vec::new();
                for args in [&["todo", "claim", &t][..], &["todo", "done", &t][..]] {
                    outs.push(run(sp.command().env("LOOPX_AGENT", agent).args(args)));
                }
                outs
            }));
        }
        for _ in 0..6 {
            let sp = spawner.clone();
            handles.push(s.spawn(move || {
                (0..8)
                    .map(|_| run(sp.command().args(["todo", "list", "--all", "--json"])))
                    .collect()
            }));
        }
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    for o in &outs {
        assert_eq!(o.code, 0, "{o:#?}");
        assert!(!o.stderr.contains("cache"), "{o:#?}");
    }
    let lists: Vec<&Output> = outs.iter().filter(|o| o.stdout.starts_with('{')).collect();
    assert_eq!(lists.len(), 48);
    for o in lists {
        let v = o.json();
        let n = v["todos"].as_array().unwrap().len();
        assert_eq!(n, 6, "every list holds the six todos: {v}");
    }
    let done = env.loopx(&["todo", "list", "--all", "--json"]).ok().json();
    for t in done["todos"].as_array().unwrap() {
        assert_eq!(t["status"], "done", "{t}");
    }
}
