//! `loopx gc`: packing, and pruning what lost races left behind, older
//! than the window, and nothing any ref, reflog or index reaches.
//!
//! Ages come from backdated file times (no sleeping): git judges an
//! unreachable object's age by its loose file, or by its pack file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::common::{Output, TestEnv, run};

const DAY: u64 = 24 * 60 * 60;

/// Sets the modification time of `path` to `days` ago.
fn backdate(path: &Path, days: u64) {
    let when = SystemTime::now() - Duration::from_secs(days * DAY);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("backdating {}: {e}", path.display()));
}

/// Every loose object file and pack file of the repository.
fn object_files(env: &TestEnv) -> Vec<PathBuf> {
    let objects = env.repo.join(".git/objects");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&objects).expect("objects dir") {
        let dir = dir.expect("entry").path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if (name.len() == 2 || name == "pack") && dir.is_dir() {
            for f in std::fs::read_dir(&dir).expect("object dir") {
                out.push(f.expect("entry").path());
            }
        }
    }
    out
}

/// Makes every object in the repository `days` old.
fn age_everything(env: &TestEnv, days: u64) {
    for f in object_files(env) {
        backdate(&f, days);
    }
}

/// The loose file of an object.
fn loose_file(env: &TestEnv, oid: &str) -> PathBuf {
    env.repo
        .join(".git/objects")
        .join(&oid[..2])
        .join(&oid[2..])
}

/// Writes a blob with `text` and returns its id.
fn blob(env: &TestEnv, text: &str) -> String {
    let file = env.root().join("blob.txt");
    std::fs::write(&file, text).expect("write");
    env.git(&["hash-object", "-w", file.to_str().unwrap()])
        .trim()
        .to_owned()
}

/// A tree holding `blob` as `name`, and a commit of it (with `parent`).
fn tree_and_commit(
    env: &TestEnv,
    blob: &str,
    name: &str,
    parent: Option<&str>,
) -> (String, String) {
    let mut c = Command::new("git");
    crate::common::isolate(&mut c, env.root());
    let mut child = c
        .args(["mktree"])
        .current_dir(&env.repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("git mktree");
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "100644 blob {blob}\t{name}").unwrap();
    let out = child.wait_with_output().expect("mktree");
    let tree = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let mut args = vec!["commit-tree", tree.as_str(), "-m", name];
    if let Some(p) = parent {
        args.extend(["-p", p]);
    }
    let commit = env.git(&args).trim().to_owned();
    (tree, commit)
}

fn exists(env: &TestEnv, oid: &str) -> bool {
    let mut c = Command::new("git");
    crate::common::isolate(&mut c, env.root());
    c.args(["cat-file", "-e", oid])
        .current_dir(&env.repo)
        .status()
        .expect("git runs")
        .success()
}

fn gc(env: &TestEnv, args: &[&str]) -> Output {
    let mut all = vec!["gc", "--json"];
    all.extend_from_slice(args);
    run(env.command().args(&all))
}

/// What a lost compare-and-swap leaves: a commit on the state's tip with
/// its own tree and blob, which no ref reaches. Returns the three ids.
fn lost_race(env: &TestEnv, text: &str) -> [String; 3] {
    let tip = env.tip().expect("a state");
    let b = blob(env, text);
    let (t, c) = tree_and_commit(env, &b, "todo.toml", Some(&tip));
    [b, t, c]
}

#[test]
fn gc_prunes_old_lost_race_objects_and_nothing_reachable() {
    let env = TestEnv::with_board();
    for i in 0..4 {
        env.add(&format!("t{i}"), &[]);
    }
    // Reachable only from a branch, from a reflog, from the index and from
    // a stash.
    std::fs::write(env.repo.join("a.txt"), "on main\n").unwrap();
    env.git(&["add", "a.txt"]);
    env.git(&["commit", "-q", "-m", "main"]);
    let on_branch = env.git(&["rev-parse", "HEAD:a.txt"]).trim().to_owned();
    let main = env.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let in_reflog_blob = blob(&env, "only in a reflog\n");
    let (_, in_reflog) = tree_and_commit(&env, &in_reflog_blob, "r.txt", None);
    env.git(&["update-ref", "-m", "side", "refs/heads/side", &in_reflog]);
    env.git(&["update-ref", "-m", "back", "refs/heads/side", &main]);
    std::fs::write(env.repo.join("a.txt"), "stashed\n").unwrap();
    env.git(&["stash", "-q"]);
    let stashed = env.git(&["rev-parse", "stash@{0}:a.txt"]).trim().to_owned();
    std::fs::write(env.repo.join("b.txt"), "only in the index\n").unwrap();
    env.git(&["add", "b.txt"]);
    let in_index = env.git(&["rev-parse", ":b.txt"]).trim().to_owned();
    // Lost races: two old ones (one loose, one packed) and a young one.
    let old = lost_race(&env, "owner = \"agent-a\"\n");
    let packed = lost_race(&env, "owner = \"agent-b\"\n");
    let young = lost_race(&env, "owner = \"agent-c\"\n");
    {
        let mut c = Command::new("git");
        crate::common::isolate(&mut c, env.root());
        let mut child = c
            .args(["pack-objects", "-q", ".git/objects/pack/pack"])
            .current_dir(&env.repo)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("git pack-objects");
        use std::io::Write;
        writeln!(child.stdin.take().unwrap(), "{}", packed.join("\n")).unwrap();
        assert!(child.wait().unwrap().success());
        for oid in &packed {
            std::fs::remove_file(loose_file(&env, oid)).expect("the loose copy");
        }
    }
    // Everything three weeks old, the young race from today.
    age_everything(&env, 21);
    for oid in &young {
        backdate(&loose_file(&env, oid), 0);
    }
    let kept: Vec<String> = [
        on_branch,
        main,
        in_reflog_blob,
        in_reflog.clone(),
        stashed,
        in_index,
    ]
    .into_iter()
    .chain(young.iter().cloned())
    .chain(std::iter::once(env.tip().unwrap()))
    .collect();
    for oid in old.iter().chain(&packed).chain(&kept) {
        assert!(exists(&env, oid), "{oid} is there before gc");
    }
    let state_files = env.git(&["ls-tree", "-r", "refs/loopx/state"]);

    let v = gc(&env, &[]).ok().json();
    assert_eq!(v["prune"]["expire"], "2.weeks.ago", "{v}");
    assert_eq!(v["prune"]["from"], "default", "{v}");
    assert!(v["prune"]["before"].is_string(), "{v}");
    assert_eq!(v["pruned"], 6, "the two old races, three objects each: {v}");
    assert_eq!(v["after"]["loose"], 0, "{v}");
    for oid in old.iter().chain(&packed) {
        assert!(!exists(&env, oid), "{oid} (an old lost race) is pruned");
    }
    for oid in &kept {
        assert!(exists(&env, oid), "{oid} is kept");
    }
    // The whole state and its history still read and verify.
    assert_eq!(env.git(&["ls-tree", "-r", "refs/loopx/state"]), state_files);
    env.git(&["fsck", "--full", "--no-dangling"]);
    env.loopx(&["verify"]).ok();
    env.loopx(&["doctor"]).ok();
    env.add("after gc", &[]);
    assert_eq!(env.git(&["stash", "list"]).lines().count(), 1);
    assert!(
        env.git(&["reflog", "show", "refs/heads/side"])
            .contains(&in_reflog[..7]),
        "gc leaves reflogs alone"
    );

    // The young race is kept in a cruft pack with its time (minutes old):
    // even `--prune now` keeps it, as it keeps what a running tick has just
    // written, since nothing younger than an hour is ever pruned.
    for f in object_files(&env) {
        if f.extension().is_some_and(|e| e == "mtimes") {
            continue;
        }
        backdate(&f, 21);
    }
    let v = gc(&env, &["--prune", "now"]).ok().json();
    assert_eq!(v["prune"]["from"], "option", "{v}");
    assert_eq!(v["prune"]["expire"], "1.hour.ago", "{v}");
    assert_eq!(v["prune"]["raised_from"], "now", "{v}");
    assert_eq!(v["pruned"], 0, "{v}");
    for oid in &young {
        assert!(exists(&env, oid), "{oid} is younger than an hour: kept");
    }
    env.loopx(&["verify"]).ok();
}

#[test]
fn gc_takes_the_window_from_gc_prune_expire_or_the_option() {
    let env = TestEnv::with_board();
    env.add("one", &[]);
    let race = lost_race(&env, "a race\n");
    age_everything(&env, 21);
    // Four weeks in the config: a three-week-old race stays.
    env.git(&["config", "gc.pruneExpire", "4.weeks.ago"]);
    let v = gc(&env, &[]).ok().json();
    assert_eq!(v["prune"]["expire"], "4.weeks.ago", "{v}");
    assert_eq!(v["prune"]["from"], "config", "{v}");
    assert_eq!(v["pruned"], 0, "{v}");
    assert!(race.iter().all(|o| exists(&env, o)));
    // never: only packing.
    let v = gc(&env, &["--prune", "never"]).ok().json();
    assert_eq!(v["prune"]["expire"], "never", "{v}");
    assert!(v["prune"].get("before").is_none(), "{v}");
    assert!(race.iter().all(|o| exists(&env, o)));
    // The option wins over the config. The cruft pack of the first run
    // dated the race; make it three weeks old again.
    age_everything(&env, 21);
    let v = gc(&env, &["--prune", "2.weeks.ago"]).ok().json();
    assert_eq!(v["pruned"], 3, "{v}");
    assert!(race.iter().all(|o| !exists(&env, o)));
    env.loopx(&["verify"]).ok();
}

#[test]
fn gc_refuses_a_date_git_does_not_understand_and_changes_nothing() {
    let env = TestEnv::with_board();
    env.add("one", &[]);
    let loose = || env.git(&["count-objects"]);
    let before = loose();
    let out = gc(&env, &["--prune", "someday"]).code(2);
    let v = out.json();
    assert_eq!(v["error"]["code"], "bad-date", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("someday"),
        "{v}"
    );
    assert_eq!(loose(), before, "nothing was packed");
    env.git(&["config", "gc.pruneExpire", "whenever"]);
    let out = run(env.command().args(["gc"])).code(2);
    assert!(
        out.stderr.contains("gc.pruneExpire") && out.stderr.contains("--prune"),
        "{}",
        out.stderr
    );
    assert_eq!(loose(), before, "nothing was packed");
}

#[test]
fn gc_after_racing_writers_leaves_no_old_unreachable_object() {
    let env = TestEnv::with_board();
    // The writers' queue is held here, so the writers race on the
    // compare-and-swap alone (after waiting out their patience) and the
    // losers leave real lost-race objects behind.
    let turn = loopx::queue::wait(&env.repo.join(".git"), loopx::queue::PATIENCE);
    assert!(turn.held());
    let spawner = env.spawner();
    std::thread::scope(|s| {
        for w in 0..12 {
            let sp = spawner.clone();
            s.spawn(move || {
                run(sp.command().args(["todo", "add", &format!("w{w}")])).ok();
            });
        }
    });
    drop(turn);
    let unreachable = || {
        env.git(&["fsck", "--unreachable", "--no-reflogs", "--no-progress"])
            .lines()
            .filter(|l| l.starts_with("unreachable "))
            .count()
    };
    let lost = unreachable();
    age_everything(&env, 15);
    let v = gc(&env, &[]).ok().json();
    assert_eq!(v["pruned"].as_u64().unwrap(), lost as u64, "{v}");
    assert_eq!(unreachable(), 0);
    env.loopx(&["verify"]).ok();
    let list = env.loopx(&["todo", "list", "--json"]).ok().json();
    assert_eq!(list["todos"].as_array().unwrap().len(), 12);
}

#[test]
fn a_tick_that_writes_an_old_unreachable_blob_again_renews_its_time() {
    // What a lost race left two weeks ago can be exactly what a tick writes
    // today. The tick writes it again (as git does), so its time is new and
    // a `loopx gc` running meanwhile keeps it instead of pruning it under
    // the tick.
    let env = TestEnv::with_board();
    let copy = env.root().join("copy");
    let cp = Command::new("cp")
        .args(["-a"])
        .arg(&env.repo)
        .arg(&copy)
        .status()
        .expect("cp runs");
    assert!(cp.success());
    let add = |dir: &Path| {
        run(env
            .spawner()
            .command()
            .current_dir(dir)
            .env("LOOPX_SEED", "same")
            .args(["todo", "add", "The same todo"]))
        .ok();
    };
    // In the copy (a lost race's stand-in): the blobs the tick writes.
    add(&copy);
    let changed = crate::common::git_in(
        &copy,
        &[
            "diff-tree",
            "-r",
            "--no-commit-id",
            "refs/loopx/state~1",
            "refs/loopx/state",
        ],
    );
    let blobs: Vec<String> = changed
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3).map(str::to_owned))
        .collect();
    assert!(!blobs.is_empty(), "{changed}");
    // Here: the same blobs, unreachable and three weeks old.
    for b in &blobs {
        let bytes = crate::common::git_in(&copy, &["cat-file", "blob", b]);
        let file = env.root().join("same.txt");
        std::fs::write(&file, bytes).unwrap();
        assert_eq!(
            env.git(&["hash-object", "-w", file.to_str().unwrap()])
                .trim(),
            b
        );
        backdate(&loose_file(&env, b), 21);
    }
    add(&env.repo);
    let week = Duration::from_secs(7 * DAY);
    for b in &blobs {
        let age = std::fs::metadata(loose_file(&env, b))
            .and_then(|m| m.modified())
            .map(|t| SystemTime::now().duration_since(t).unwrap_or_default())
            .unwrap();
        assert!(age < week, "{b} was written again: {age:?} old");
    }
    env.loopx(&["verify"]).ok();
}
