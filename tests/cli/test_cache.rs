//! The local state cache (`.git/loopx/cache/`): derived and disposable. A
//! damaged, foreign or stale cache is rebuilt silently and never changes an
//! answer; a tick writes the cache of its new tip; `verify` never trusts it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use crate::common::{Output, TestEnv, run, settle};

/// The head file of the cache of the default state ref (the whole cache
/// in the one-file layout of [`board`]).
fn cache_file(env: &TestEnv) -> PathBuf {
    env.repo.join(".git/loopx/cache/refs_loopx_state/head")
}

/// A command at a fixed time, so two runs can be compared whole.
fn at_fixed_time(env: &TestEnv, agent: Option<&str>, args: &[&str]) -> Output {
    let mut c: Command = env.spawner().command();
    c.env("LOOPX_NOW", "2024-12-03T12:00:00Z")
        .env("LOOPX_SEED", "cache");
    if let Some(a) = agent {
        c.env("LOOPX_AGENT", a);
    }
    run(c.args(args))
}

/// What the hot read commands answer, with their exit statuses.
fn answers(env: &TestEnv) -> Vec<(i32, String)> {
    answers_after(env, &|| {})
}

/// [`answers`], with `before` run before each command (so each one finds
/// the cache `before` leaves, not the one the command before rebuilt).
fn answers_after(env: &TestEnv, before: &dyn Fn()) -> Vec<(i32, String)> {
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
        before();
        let out = at_fixed_time(env, *agent, args);
        // Silent: nothing about the cache, whatever its state.
        assert!(!out.stderr.contains("cache"), "{args:?}: {}", out.stderr);
        (out.code, out.stdout)
    })
    .collect()
}

/// Below this many todos the cache is one file (`loopx::cache::SHARD_VAR`):
/// the layout of every board here before `loopx::cache::SHARD_FROM` was
/// lowered to 1 (now only an empty board's), kept for the tests that
/// damage, forge and age that one file. The default layout (every todo in
/// a shard, the claimed ones in the head too) is every other test's.
const ONE_FILE: &str = "1000000";

/// A board with goal `main`, agents `agent-a` and `agent-b`, three todos
/// (one claimed by agent-a) and maybe a gate, its cache one file
/// ([`ONE_FILE`]).
fn board(gate: bool) -> (TestEnv, String) {
    let mut env = TestEnv::new();
    env.set_env(loopx::cache::SHARD_VAR, ONE_FILE);
    env.loopx(&["init", "--goal", "main", "--objective", "Ship the parser"])
        .ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    env.loopx(&["agent", "register", "agent-b"]).ok();
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
        &settle(
            &tok,
            &t2,
            &["--outcome", "advanced", "--note", "started", "--", "true"],
        ),
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

/// Shard from 4 todos, one todo a shard (`loopx::cache::SHARD_VAR`): a
/// small board spread over several files, as 10,000 todos are.
const SHARD_FROM: &str = "4";

/// The cache folder of the default state ref.
fn folder(env: &TestEnv) -> PathBuf {
    env.repo.join(".git/loopx/cache/refs_loopx_state")
}

/// The cache folder's files by name.
fn files(env: &TestEnv) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(folder(env))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

/// Puts exactly `files` in the cache folder.
fn restore(env: &TestEnv, files: &BTreeMap<String, Vec<u8>>) {
    let _ = std::fs::remove_dir_all(folder(env));
    std::fs::create_dir_all(folder(env)).unwrap();
    for (name, bytes) in files {
        std::fs::write(folder(env).join(name), bytes).unwrap();
    }
}

/// A command with the cache sharded.
fn sharded(env: &TestEnv, agent: Option<&str>, args: &[&str]) -> Output {
    let mut c = env.command();
    c.env(loopx::cache::SHARD_VAR, SHARD_FROM);
    if let Some(a) = agent {
        c.env("LOOPX_AGENT", a);
    }
    run(c.args(args))
}

/// [`answers_after`] with the cache sharded.
fn sharded_answers(env: &TestEnv, before: &dyn Fn()) -> Vec<(i32, String)> {
    [
        (None, &["status", "--json"][..]),
        (Some("agent-a"), &["quota", "should-run", "--json"][..]),
        (Some("agent-b"), &["quota", "should-run"][..]),
        (None, &["todo", "list", "--json"][..]),
    ]
    .iter()
    .map(|(agent, args)| {
        before();
        let mut c: Command = env.spawner().command();
        c.env("LOOPX_NOW", "2024-12-03T12:00:00Z")
            .env("LOOPX_SEED", "cache")
            .env(loopx::cache::SHARD_VAR, SHARD_FROM);
        if let Some(a) = agent {
            c.env("LOOPX_AGENT", a);
        }
        let out = run(c.args(*args));
        assert!(!out.stderr.contains("cache"), "{args:?}: {}", out.stderr);
        (out.code, out.stdout)
    })
    .collect()
}

/// The board of [`board`] without its gate, with six todos, its cache sharded (eight shards,
/// some empty) and warm.
fn sharded_board() -> (TestEnv, Vec<String>) {
    let (env, t) = board(false);
    let mut todos = vec![t];
    for title in ["Write the tests", "Fix the build", "Tidy the docs"] {
        todos.push(env.add(title, &[]));
    }
    let _ = std::fs::remove_dir_all(folder(&env));
    sharded(&env, None, &["status"]).ok();
    let head = String::from_utf8(files(&env)["head"].clone()).unwrap();
    assert!(head.contains("\nshards 8\n"), "{head:.600}");
    (env, todos)
}

#[test]
fn a_damaged_or_missing_shard_is_a_miss_and_no_answer_changes() {
    let (env, _) = sharded_board();
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    let want = sharded_answers(&env, &cold);
    sharded(&env, None, &["status"]).ok();
    let good = files(&env);
    assert_eq!(
        good.len(),
        10,
        "a head, the ready index and eight shards: {:?}",
        good.keys()
    );
    assert_eq!(
        sharded_answers(&env, &|| {}),
        want,
        "from the sharded cache"
    );
    let shards: Vec<&String> = good.keys().filter(|k| k.starts_with("todos-")).collect();
    let full = shards
        .iter()
        .find(|k| good[**k].len() > 200)
        .expect("a shard with a todo");
    for name in &shards {
        let bytes = &good[*name];
        let body_at = bytes.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
        let mut damaged: Vec<(&str, Option<Vec<u8>>)> = vec![
            ("missing", None),
            ("zero-length", Some(Vec::new())),
            ("truncated", Some(bytes[..bytes.len() - 1].to_vec())),
        ];
        if name == full {
            let mut flipped = bytes.clone();
            flipped[body_at + (bytes.len() - body_at) / 2] ^= 0x01;
            let other = shards.iter().find(|k| *k != name).unwrap();
            damaged.extend([
                ("a flipped bit", Some(flipped)),
                ("garbage", Some(b"\x00\xffnot a shard\n\n[".repeat(20))),
                ("another shard's file", Some(good[*other].clone())),
                ("trailing bytes", Some([bytes.as_slice(), b"x"].concat())),
            ]);
        }
        for (what, content) in damaged {
            let path = folder(&env).join(name);
            let put = || {
                restore(&env, &good);
                match &content {
                    Some(c) => std::fs::write(&path, c).unwrap(),
                    None => std::fs::remove_file(&path).unwrap(),
                }
            };
            assert_eq!(sharded_answers(&env, &put), want, "{name}: {what}");
            assert!(files(&env) == good, "{name}: {what}: rebuilt");
        }
    }
    // A directory or a FIFO in a shard's place.
    let path = folder(&env).join(full);
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert_eq!(sharded_answers(&env, &|| {}), want, "a directory");
    std::fs::remove_dir(&path).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(sharded_answers(&env, &|| {}), want, "a FIFO");
    assert!(files(&env) == good, "FIFO replaced");
}

/// A tick rewrites only the head and the shard of the todo it changed; a
/// multi-file update torn anywhere (the writer died between files, or a
/// racer put back an older file) is a miss, never a mixed state.
#[test]
fn a_tick_rewrites_one_shard_and_a_torn_update_is_never_read() {
    let (env, todos) = sharded_board();
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    let tip_a = env.tip().unwrap();
    let want_a = sharded_answers(&env, &cold);
    sharded(&env, None, &["status"]).ok();
    let before = files(&env);
    // A claim by agent-b of a ready todo: its status and should-run's
    // answers change, in one shard.
    sharded(&env, Some("agent-b"), &["todo", "claim", &todos[1]]).ok();
    let tip_b = env.tip().unwrap();
    let after = files(&env);
    let changed: Vec<&String> = after
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert_eq!(
        changed.len(),
        3,
        "the head, the ready index and one shard: {changed:?}"
    );
    assert!(changed.iter().any(|k| *k == "head"), "{changed:?}");
    assert!(changed.iter().any(|k| *k == "ready"), "{changed:?}");
    let shard = *changed
        .iter()
        .find(|k| **k != "head" && **k != "ready")
        .unwrap();
    let head = String::from_utf8(after["head"].clone()).unwrap();
    assert!(head.contains(&format!("commit {tip_b}\n")), "{head:.800}");
    assert!(
        head.contains(&format!(" {tip_a} ")),
        "untouched shards keep the commit they were written at: {head:.800}"
    );
    let want = sharded_answers(&env, &cold);
    assert_ne!(want, want_a, "the tick shows in the answers");
    assert_eq!(
        sharded_answers(&env, &|| restore(&env, &after)),
        want,
        "from the cache updated in place"
    );
    let mixed = |base: &BTreeMap<String, Vec<u8>>, from: &BTreeMap<String, Vec<u8>>, name: &str| {
        let mut m = base.clone();
        m.insert(name.to_owned(), from[name].clone());
        m
    };
    let torn: Vec<(&str, BTreeMap<String, Vec<u8>>)> = vec![
        ("the new shard, the old head", mixed(&before, &after, shard)),
        ("the new head, the old shard", mixed(&after, &before, shard)),
        ("the old tip's whole cache", before.clone()),
        (
            "the new head, the old ready index",
            mixed(&after, &before, "ready"),
        ),
        (
            "the new ready index, the old head",
            mixed(&before, &after, "ready"),
        ),
        (
            "the new head alone",
            mixed(&BTreeMap::new(), &after, "head"),
        ),
    ];
    for (what, files) in torn {
        assert_eq!(
            sharded_answers(&env, &|| restore(&env, &files)),
            want,
            "with {what}"
        );
    }
    // Unsharded readers and writers share the folder: a tick without the
    // shards rewrites it whole, and every answer holds.
    env.agent(
        "agent-b",
        &["todo", "update", &todos[1], "--note", "halfway"],
    )
    .ok();
    let head = String::from_utf8(files(&env)["head"].clone()).unwrap();
    assert!(head.contains("\nshards 0\n"), "{head:.300}");
    let want = sharded_answers(&env, &cold);
    assert_eq!(answers_after(&env, &|| {}).len(), 6);
    assert_eq!(sharded_answers(&env, &|| {}), want);
}

/// Readers racing writers: every reader answers, with a state that some
/// tick of the history held, whatever cache files it found mid-write; the
/// cache one file ([`ONE_FILE`]).
#[test]
fn readers_racing_ticks_always_answer_a_real_state() {
    race(ONE_FILE);
}

/// [`readers_racing_ticks_always_answer_a_real_state`] with the cache in
/// shards, each tick rewriting the head and one shard in place.
#[test]
fn readers_racing_ticks_on_a_sharded_cache_always_answer_a_real_state() {
    race(SHARD_FROM);
}

/// Readers racing writers (see the tests above): each file is renamed into
/// place, a torn file fails its checksum, and a shard of another commit
/// than its head names is a miss.
fn race(shard_from: &str) {
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
                    let mut c = sp.command();
                    c.env(loopx::cache::SHARD_VAR, shard_from);
                    outs.push(run(c.env("LOOPX_AGENT", agent).args(args)));
                }
                outs
            }));
        }
        for _ in 0..6 {
            let sp = spawner.clone();
            handles.push(s.spawn(move || {
                (0..8)
                    .map(|_| {
                        let mut c = sp.command();
                        c.env(loopx::cache::SHARD_VAR, shard_from);
                        run(c.args(["todo", "list", "--all", "--json"]))
                    })
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
    // The statuses after each tick of the history, from the log.
    let mut held: Vec<BTreeMap<String, String>> = Vec::new();
    let mut now: BTreeMap<String, String> = todos
        .iter()
        .map(|t| (t.clone(), "open".to_owned()))
        .collect();
    held.push(now.clone());
    let log = env.loopx(&["log", "--json"]).ok().stdout;
    let mut lines: Vec<&str> = log.lines().collect();
    lines.reverse();
    for line in lines {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let status = match e["op"].as_str().unwrap() {
            "todo.claim" => "claimed",
            "todo.done" => "done",
            _ => continue,
        };
        let subject = e["subject"].as_str().unwrap();
        let t = todos
            .iter()
            .find(|t| subject.contains(t.as_str()))
            .expect("a todo");
        now.insert(t.clone(), status.to_owned());
        held.push(now.clone());
    }
    for o in lists {
        let v = o.json();
        let seen: BTreeMap<String, String> = v["todos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["id"].as_str().unwrap().to_owned(),
                    t["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert!(held.contains(&seen), "a state no tick held: {seen:?}");
    }
    let done = env.loopx(&["todo", "list", "--all", "--json"]).ok().json();
    for t in done["todos"].as_array().unwrap() {
        assert_eq!(t["status"], "done", "{t}");
    }
}

/// should-run for an agent with a claim to work on reads the cache's head
/// alone (it holds the claimed todos): with every shard gone it answers as
/// a cold read does and leaves them gone; an agent without a claim needs
/// the shards (the best ready todo), finds them missing and rebuilds them.
/// A damaged head (a flipped bit in its claimed todo, truncated, empty,
/// missing) is a miss for both, never a wrong answer (an older tick's head:
/// `a_tick_rewrites_one_shard_and_a_torn_update_is_never_read`).
#[test]
fn should_run_on_an_own_claim_reads_the_head_alone() {
    let (env, todos) = sharded_board();
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    let ask = |agent: &str| {
        let mut c: Command = env.spawner().command();
        c.env("LOOPX_NOW", "2024-12-03T12:00:00Z")
            .env("LOOPX_SEED", "cache")
            .env(loopx::cache::SHARD_VAR, SHARD_FROM)
            .env("LOOPX_AGENT", agent);
        let out = run(c.args(["quota", "should-run", "--json"]));
        assert!(!out.stderr.contains("cache"), "{}", out.stderr);
        (out.code, out.stdout)
    };
    cold();
    let want_a = ask("agent-a");
    assert!(
        want_a.1.contains(&todos[0]),
        "agent-a's own claim: {}",
        want_a.1
    );
    cold();
    let want_b = ask("agent-b");
    assert!(!want_b.1.contains(&todos[0]), "{}", want_b.1);
    sharded(&env, None, &["status"]).ok();
    let good = files(&env);
    let head_only: BTreeMap<String, Vec<u8>> = good
        .iter()
        .filter(|(k, _)| *k == "head")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    restore(&env, &head_only);
    assert_eq!(ask("agent-a"), want_a, "from the head alone");
    assert!(files(&env) == head_only, "no shard read, none rebuilt");
    assert_eq!(ask("agent-b"), want_b, "the shards were missing: a miss");
    assert!(files(&env) == good, "rebuilt whole");
    // The head holds agent-a's claimed todo: damage it.
    let head = &good["head"];
    let body_at = head.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let at = body_at
        + head[body_at..]
            .windows(todos[0].len())
            .position(|w| w == todos[0].as_bytes())
            .expect("the claimed todo is in the head");
    let mut flipped = head.clone();
    flipped[at + 3] ^= 0x01;
    for (what, content) in [
        ("a flipped bit in the claimed todo", Some(flipped)),
        ("truncated", Some(head[..head.len() - 1].to_vec())),
        ("zero-length", Some(Vec::new())),
        ("missing", None),
    ] {
        for (agent, want) in [("agent-a", &want_a), ("agent-b", &want_b)] {
            restore(&env, &good);
            let path = folder(&env).join("head");
            match &content {
                Some(c) => std::fs::write(&path, c).unwrap(),
                None => std::fs::remove_file(&path).unwrap(),
            }
            assert_eq!(&ask(agent), want, "{agent}, the head {what}");
            assert!(files(&env) == good, "{agent}, the head {what}: rebuilt");
        }
    }
}

/// `status` shows the counts a sharded head keeps, from the head alone,
/// when every claim is as live now as when they were counted (the newest
/// claim's start); at a time when a lease has ended since, it reads every
/// todo. Either way it answers as a cold read at that time does.
#[test]
fn status_counts_from_the_head_hold_at_any_time() {
    let (env, todos) = sharded_board();
    // agent-b's claim beside agent-a's.
    sharded(&env, Some("agent-b"), &["todo", "claim", &todos[1]]).ok();
    let wall = String::from_utf8(
        Command::new("date")
            .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wall = wall.trim();
    let status = |now: &str| {
        let mut c: Command = env.spawner().command();
        c.env("LOOPX_NOW", now)
            .env(loopx::cache::SHARD_VAR, SHARD_FROM);
        let out = run(c.args(["status", "--json"]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    sharded(&env, None, &["todo", "list"]).ok();
    let good = files(&env);
    let head_only: BTreeMap<String, Vec<u8>> = good
        .iter()
        .filter(|(k, _)| *k == "head")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Which claims are live at a time, from a cold status at that time.
    let expired = |json: &str| -> Vec<bool> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["expired"].as_bool().unwrap())
            .collect()
    };
    cold();
    let at_wall = status(wall);
    let lease_end = {
        let v: serde_json::Value = serde_json::from_str(&at_wall).unwrap();
        v["claims"][0]["lease_until"].as_str().unwrap().to_owned()
    };
    // The counts were counted as of the newest claim's start, when both
    // claims (agent-b's minutes after agent-a's) were live: they hold at a
    // time when both still are, and only then.
    let (mut heads, mut misses) = (0, 0);
    for now in [
        wall.to_owned(),
        lease_end.replace('Z', "").get(..16).unwrap().to_owned() + ":00Z",
        "2020-01-01T00:00:00Z".to_owned(),
        // The latest a command may be told: this machine's clock.
        crate::common::rfc3339(crate::common::system_now()),
    ] {
        cold();
        let want = status(&now);
        restore(&env, &head_only);
        assert_eq!(status(&now), want, "at {now}");
        let from_head = expired(&want).iter().all(|e| !e);
        assert_eq!(
            files(&env) == head_only,
            from_head,
            "at {now}: from the head alone: {from_head}"
        );
        if from_head {
            heads += 1;
        } else {
            misses += 1;
        }
    }
    assert!(
        heads >= 2 && misses >= 1,
        "{heads} from the head, {misses} not"
    );
    let v: serde_json::Value = serde_json::from_str(&status(wall)).unwrap();
    assert_eq!(v["counts"]["claimed"], 2, "{v}");
}

/// `should-run` for an agent with no claim of its own answers from the
/// sharded head and the ready index beside it, no shard read: at a time
/// when a claimed todo's lease is live and at one when it has ended (the
/// answer changes with the time, the index does not), and after a tick
/// that kept the index. Whatever is wrong with the index file (a flipped
/// bit, truncated, empty, missing, the index of the commit before), the
/// answer is a cold read's.
#[test]
fn should_run_without_a_claim_reads_the_head_and_the_ready_index() {
    let (env, _) = sharded_board();
    let add = |title: &str| {
        let out = sharded(&env, None, &["todo", "add", title, "--priority", "P0"]);
        out.ok().stdout.trim().to_owned()
    };
    let ask = |now: &str| {
        let mut c: Command = env.spawner().command();
        c.env("LOOPX_NOW", now)
            .env("LOOPX_SEED", "cache")
            .env(loopx::cache::SHARD_VAR, SHARD_FROM)
            .env("LOOPX_AGENT", "agent-b");
        let out = run(c.args(["quota", "should-run", "--json"]));
        assert!(!out.stderr.contains("cache"), "{}", out.stderr);
        (out.code, out.stdout)
    };
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    // Only the head and the index.
    let lean = |all: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        all.iter()
            .filter(|(k, _)| *k == "head" || *k == "ready")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    // agent-a claims the todo agent-b would take.
    let first = ask(&env.now()).1;
    let best = first.split('"').skip_while(|w| *w != "id").nth(2).unwrap();
    let best = best.to_owned();
    sharded(&env, Some("agent-a"), &["todo", "claim", &best]).ok();
    let live = env.now();
    let ended = crate::common::rfc3339(crate::common::system_now());
    let (live, ended) = (live.as_str(), ended.as_str());
    let mut wants = Vec::new();
    for now in [live, ended] {
        cold();
        let want = ask(now);
        assert_eq!(want.0, 0, "{}", want.1);
        let good = files(&env);
        assert!(good.contains_key("ready"), "the cold read wrote the index");
        restore(&env, &lean(&good));
        assert_eq!(ask(now), want, "from the head and the index at {now}");
        assert!(files(&env) == lean(&good), "no shard read at {now}");
        wants.push(want);
    }
    assert!(
        !wants[0].1.contains(&best) && wants[1].1.contains(&best),
        "agent-a's lease on {best} decides: {wants:?}"
    );
    // A tick keeps the index: a more urgent todo is the answer.
    let before = files(&env);
    let hotfix = add("Ship the hotfix");
    let good = files(&env);
    restore(&env, &lean(&good));
    let after = ask(live);
    assert!(after.1.contains(&hotfix), "{}", after.1);
    assert!(files(&env) == lean(&good), "no shard read after the tick");
    cold();
    assert_eq!(ask(live), after, "the cold answer after the tick");
    // Whatever is wrong with the index, the cold answer.
    let ready = &good["ready"];
    let body_at = ready.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let mut flipped = ready.clone();
    flipped[body_at + 10] ^= 0x01;
    for (what, content) in [
        ("a flipped bit", Some(flipped)),
        ("truncated", Some(ready[..ready.len() - 1].to_vec())),
        ("zero-length", Some(Vec::new())),
        ("missing", None),
        ("of the commit before", Some(before["ready"].clone())),
    ] {
        restore(&env, &good);
        let path = folder(&env).join("ready");
        match &content {
            Some(c) => std::fs::write(&path, c).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
        assert_eq!(ask(live), after, "the index {what}");
        // The reader that fell back wrote the index again: the next one
        // answers from the head and the index alone.
        let repaired = files(&env);
        restore(&env, &lean(&repaired));
        assert_eq!(ask(live), after, "the index {what}, repaired");
        assert!(
            files(&env) == lean(&repaired),
            "the index {what} was repaired: no shard read after it"
        );
    }
}

/// The brief a runtime's SessionStart hook prints reads, like should-run,
/// the cache's head and the agent's ready list, not every todo: with only
/// those two files on disk it prints a cold read's brief and reads no
/// shard, for an agent on its own claim and one without a claim. A
/// damaged or missing index gives the cold brief, and the index is
/// written again.
#[test]
fn the_session_start_brief_reads_the_head_and_the_ready_index() {
    let (env, _) = sharded_board();
    let start = |agent: &str, session: &str| {
        let payload = format!(
            r#"{{"session_id":"{session}","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#,
            env.repo.display()
        );
        let mut c: Command = env.spawner().command();
        c.env("LOOPX_NOW", env.now())
            .env("LOOPX_SEED", "cache")
            .env(loopx::cache::SHARD_VAR, SHARD_FROM)
            .env("LOOPX_AGENT", agent);
        let out = crate::common::run_stdin(
            c.args(["hook", "claude-code", "SessionStart"]),
            payload.as_bytes(),
        );
        assert!(!out.stderr.contains("cache"), "{}", out.stderr);
        (out.code, out.stdout)
    };
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    let lean = |all: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        all.iter()
            .filter(|(k, _)| *k == "head" || *k == "ready")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    // agent-a holds a claim; agent-b has none and is told what to claim.
    for (agent, session, says) in [
        (
            "agent-a",
            "5e551011-0000-4000-8000-00000000000a",
            "go on with your claim",
        ),
        (
            "agent-b",
            "5e551011-0000-4000-8000-00000000000b",
            "Next: claim",
        ),
    ] {
        cold();
        let want = start(agent, session);
        assert_eq!(want.0, 0, "{}", want.1);
        assert!(want.1.contains(says), "{agent}: {}", want.1);
        let good = files(&env);
        restore(&env, &lean(&good));
        assert_eq!(
            start(agent, session),
            want,
            "{agent} from the head and the index"
        );
        assert!(files(&env) == lean(&good), "{agent}: no shard read");
        // A damaged or missing index: the cold brief, and the index is
        // whole again after it.
        for damage in ["missing", "garbage"] {
            restore(&env, &good);
            let path = folder(&env).join("ready");
            match damage {
                "missing" => std::fs::remove_file(&path).unwrap(),
                _ => std::fs::write(&path, b"loopx-cache-ready\nnot an index\n\n").unwrap(),
            }
            assert_eq!(start(agent, session), want, "{agent}, the index {damage}");
            let repaired = files(&env);
            restore(&env, &lean(&repaired));
            assert_eq!(
                start(agent, session),
                want,
                "{agent}, the index {damage}, repaired"
            );
            assert!(
                files(&env) == lean(&repaired),
                "{agent}: the index {damage} was repaired"
            );
        }
    }
}

/// A tick on a named todo (`todo claim ID`, `todo update ID`) reads the
/// head, the ready index and that todo's shard only, writes them, and
/// every answer from the cache it leaves is a cold read's. With the named
/// todo's shard missing it reads the whole state (from the tree) and the
/// cache is whole again.
#[test]
fn a_tick_on_a_named_todo_reads_and_writes_only_its_shard() {
    let (env, todos) = sharded_board();
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    let x = &todos[1];
    let shard_of = |files: &BTreeMap<String, Vec<u8>>| {
        files
            .iter()
            .find(|(k, v)| k.starts_with("todos-") && v.windows(x.len()).any(|w| w == x.as_bytes()))
            .map(|(k, _)| k.clone())
            .expect("a shard holds the todo")
    };
    for (agent, args) in [
        ("agent-b", vec!["todo", "claim", x.as_str()]),
        (
            "agent-b",
            vec!["todo", "update", x.as_str(), "--note", "halfway"],
        ),
        ("agent-b", vec!["todo", "release", &x[..5]]),
    ] {
        sharded(&env, None, &["status"]).ok();
        let good = files(&env);
        let mine = shard_of(&good);
        // Only the head, the ready index and the todo's shard: the other
        // shards stay gone (the tick keeps the index from the todo alone).
        let part: BTreeMap<String, Vec<u8>> = good
            .iter()
            .filter(|(k, _)| *k == "head" || *k == "ready" || **k == mine)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        restore(&env, &part);
        sharded(&env, Some(agent), &args).ok();
        let left = files(&env);
        assert_eq!(
            left.keys().collect::<Vec<_>>(),
            part.keys().collect::<Vec<_>>(),
            "{args:?}: only the head, the ready index and the todo's shard"
        );
        assert_ne!(left[&mine], good[&mine], "{args:?}: the shard rewritten");
        assert_eq!(
            sharded_answers(&env, &|| restore(&env, &left)),
            sharded_answers(&env, &cold),
            "{args:?}: the cache left answers as a cold read"
        );
    }
    // The named todo's shard missing: the whole state is read.
    sharded(&env, None, &["status"]).ok();
    let good = files(&env);
    let mine = shard_of(&good);
    let mut lacking = good.clone();
    lacking.remove(&mine);
    restore(&env, &lacking);
    sharded(&env, Some("agent-b"), &["todo", "claim", x]).ok();
    assert_eq!(files(&env).len(), good.len(), "rebuilt whole");
    let left = files(&env);
    assert_eq!(
        sharded_answers(&env, &|| restore(&env, &left)),
        sharded_answers(&env, &cold),
        "after a full read"
    );
}

/// `todo claim --next` on a sharded cache picks from the ready index
/// beside the head: the todo a cold read picks (in a copy of the
/// repository without a cache), with only the head, the index and that todo's shard on
/// disk, and the other shards stay absent (no full read). With the index
/// gone it picks the same from the whole state.
#[test]
fn claim_next_picks_from_the_ready_index_and_reads_one_shard() {
    let (env, _) = sharded_board();
    let cold = || {
        let _ = std::fs::remove_dir_all(folder(&env));
    };
    let json = |out: Output| out.ok().json();
    // What a cold read picks: `claim --next` in a copy of the repository
    // with no cache at all.
    let pick = || {
        let copy = env.root().join("copy");
        let _ = std::fs::remove_dir_all(&copy);
        let ok = std::process::Command::new("cp")
            .arg("-a")
            .arg(&env.repo)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(ok.success());
        let _ = std::fs::remove_dir_all(copy.join(".git/loopx/cache"));
        let c = copy.to_str().unwrap();
        let v = json(sharded(
            &env,
            Some("agent-b"),
            &["-C", c, "todo", "claim", "--next", "--json"],
        ));
        v["todo"]["id"]
            .as_str()
            .expect("a todo claimed")
            .to_string()
    };
    // Twice: each claim leaves the next best todo for the next one.
    for round in 0..2 {
        let want = pick();
        sharded(&env, None, &["status"]).ok();
        let good = files(&env);
        let mine = good
            .iter()
            .find(|(k, v)| {
                k.starts_with("todos-") && v.windows(want.len()).any(|w| w == want.as_bytes())
            })
            .map(|(k, _)| k.clone())
            .expect("a shard holds the todo");
        let part: BTreeMap<String, Vec<u8>> = good
            .iter()
            .filter(|(k, _)| *k == "head" || *k == "ready" || **k == mine)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        restore(&env, &part);
        let v = json(sharded(
            &env,
            Some("agent-b"),
            &["todo", "claim", "--next", "--json"],
        ));
        assert_eq!(v["todo"]["id"], want.as_str(), "round {round}: {v}");
        assert_eq!(
            files(&env).keys().collect::<Vec<_>>(),
            part.keys().collect::<Vec<_>>(),
            "round {round}: only the head, the index and the picked todo's shard"
        );
        let left = files(&env);
        assert_eq!(
            sharded_answers(&env, &|| restore(&env, &left)),
            sharded_answers(&env, &cold),
            "round {round}: the cache left answers as a cold read"
        );
        // Released again for the next round, except the last claim.
        if round == 0 {
            json(sharded(
                &env,
                Some("agent-b"),
                &["todo", "release", &want, "--json"],
            ));
            // A release leaves it first again: claim it for good.
            json(sharded(
                &env,
                Some("agent-b"),
                &["todo", "claim", &want, "--json"],
            ));
        }
    }
    // No index: the same pick from the whole state.
    let want = pick();
    sharded(&env, None, &["status"]).ok();
    let mut lacking = files(&env);
    lacking.remove("ready");
    restore(&env, &lacking);
    let v = json(sharded(
        &env,
        Some("agent-b"),
        &["todo", "claim", "--next", "--json"],
    ));
    assert_eq!(v["todo"]["id"], want.as_str(), "{v}");
}

/// A tick on a named todo that claims a scope: another open todo writing
/// the same paths stops being ready for every agent that could take it, so the partial tick
/// counts the board again rather than carry the head's counts (status
/// from the head after it equals a cold read's).
#[test]
fn a_claim_that_takes_a_scope_counts_the_board_again() {
    let (env, _) = sharded_board();
    // A todo writing the parser that only agent-a can take (a capability
    // agent-b lacks): ready until agent-b claims another one writing it.
    env.loopx(&["agent", "register", "agent-a", "--capability", "rust"])
        .ok();
    let x = env.add("Edit the parser", &["--scope", "src/parser/**"]);
    env.add(
        "Rename the parser",
        &["--scope", "src/parser/**", "--capability", "rust"],
    );
    let counts =
        |env: &TestEnv| sharded(env, None, &["status", "--json"]).ok().json()["counts"].clone();
    // A sharded cache at the tip, so the claim's tick is a partial one.
    let _ = std::fs::remove_dir_all(folder(&env));
    let before = counts(&env);
    assert!(files(&env).contains_key("todos-00"), "sharded");
    sharded(&env, Some("agent-b"), &["todo", "claim", &x]).ok();
    let warm = counts(&env);
    let _ = std::fs::remove_dir_all(folder(&env));
    let cold = counts(&env);
    assert_eq!(warm, cold, "the head's counts after the claim");
    assert_eq!(
        before["ready"].as_u64().unwrap() - 2,
        cold["ready"].as_u64().unwrap(),
        "the claimed todo and the one sharing its scope are no longer ready: {before} {cold}"
    );
}

/// The default layout (`loopx::cache::SHARD_FROM`, no override): an empty
/// board's cache is one file; from one live todo on every todo is in a
/// shard and the head holds only the claimed ones, so `should-run` on an
/// own claim reads the head alone even on a small board, and answers as a
/// cold read does. `status` and `todo list` from the default layout equal
/// a cold read's too.
#[test]
fn a_small_board_is_sharded_and_should_run_on_a_claim_reads_the_head_alone() {
    let env = TestEnv::with_board();
    env.loopx(&["status"]).ok();
    let head = String::from_utf8(files(&env)["head"].clone()).unwrap();
    assert!(head.contains("\nshards 0\n"), "an empty board: {head:.400}");
    assert_eq!(files(&env).len(), 1, "one file");
    let t = env.add("Write the parser", &["--priority", "P1"]);
    env.add("Write the docs", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let good = files(&env);
    let names: Vec<&String> = good.keys().collect();
    assert_eq!(
        names,
        ["head", "ready", "todos-00"],
        "one shard and the index"
    );
    let head = String::from_utf8(good["head"].clone()).unwrap();
    assert!(head.contains("\nshards 1\n"), "{head:.400}");
    let body = head.split_once("\n\n").unwrap().1;
    assert!(
        body.contains("Write the parser"),
        "the claimed todo: {body:.400}"
    );
    assert!(
        !body.contains("Write the docs"),
        "only the claimed todo: {body:.400}"
    );
    let warm = answers(&env);
    let _ = std::fs::remove_dir_all(folder(&env));
    assert_eq!(
        answers(&env),
        warm,
        "the default layout answers as a cold read"
    );
    // should-run on agent-a's claim with only the head on disk.
    let head_only: BTreeMap<String, Vec<u8>> = files(&env)
        .into_iter()
        .filter(|(k, _)| k == "head")
        .collect();
    let ask = || at_fixed_time(&env, Some("agent-a"), &["quota", "should-run", "--json"]);
    let want = ask();
    assert!(want.stdout.contains(&t), "{}", want.stdout);
    restore(&env, &head_only);
    let got = ask();
    assert_eq!((got.code, got.stdout), (want.code, want.stdout));
    assert!(files(&env) == head_only, "no shard read, none rebuilt");
}

/// should-run after the agent's turn ended unchanged (the no-change
/// digest) and when nothing is ready (the reasons' counts) answers from the
/// head and the agent's ready list alone, as a cold read does.
#[test]
fn should_run_after_an_unchanged_turn_or_with_nothing_ready_reads_the_head_and_the_index() {
    let (env, _) = sharded_board();
    let ask = || {
        let mut c: Command = env.spawner().command();
        c.env("LOOPX_NOW", env.now())
            .env("LOOPX_SEED", "cache")
            .env(loopx::cache::SHARD_VAR, SHARD_FROM)
            .env("LOOPX_AGENT", "agent-b");
        let out = run(c.args(["quota", "should-run", "--json"]));
        assert!(!out.stderr.contains("cache"), "{}", out.stderr);
        (out.code, out.stdout)
    };
    let lean = |all: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        all.iter()
            .filter(|(k, _)| *k == "head" || *k == "ready")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let from_the_index = |code: &str| {
        let _ = std::fs::remove_dir_all(folder(&env));
        let want = ask();
        assert!(want.1.contains(code), "{}", want.1);
        let good = files(&env);
        restore(&env, &lean(&good));
        assert_eq!(ask(), want, "{code} from the head and the index");
        assert!(files(&env) == lean(&good), "{code}: no shard read");
    };
    sharded(
        &env,
        Some("agent-b"),
        &["refresh-state", "--outcome", "unchanged"],
    )
    .ok();
    from_the_index("no-change");
    // agent-a claims every other todo: nothing is ready for agent-b.
    for _ in 0..10 {
        if sharded(&env, Some("agent-a"), &["todo", "claim", "--next"]).code != 0 {
            break;
        }
    }
    from_the_index("nothing-ready");
    // A tick on a named todo carries the entry but cannot make one:
    // agent-a releases one of its todos and claims it again by its id,
    // each a tick on its shard alone. The first reader reads every todo
    // and writes the index again; the next answers from the head and the
    // index.
    let _ = std::fs::remove_dir_all(folder(&env));
    let want = ask();
    let mine = want.1.clone();
    assert!(mine.contains("nothing-ready"), "{mine}");
    let listed = sharded(&env, Some("agent-a"), &["todo", "list", "--json"])
        .ok()
        .stdout;
    let id = listed
        .split('"')
        .find(|w| w.starts_with("t-"))
        .expect("a todo")
        .to_owned();
    let released = sharded(&env, Some("agent-a"), &["todo", "release", &id]);
    assert_eq!(released.code, 0, "{}", released.stderr);
    sharded(&env, Some("agent-a"), &["todo", "claim", &id]).ok();
    let first = ask();
    assert!(first.1.contains("nothing-ready"), "{}", first.1);
    let repaired = files(&env);
    restore(&env, &lean(&repaired));
    assert_eq!(ask(), first, "nothing-ready after the repair");
    assert!(
        files(&env) == lean(&repaired),
        "nothing-ready: the reader wrote the index again, no shard read after it"
    );
}
