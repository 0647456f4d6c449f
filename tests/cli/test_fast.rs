//! The fast start-up path (`src/fast.rs`): should-run answers a cache hit
//! without opening the repository, and every change to a git config file,
//! to the variables that choose them, to the layout or to the files the
//! fast path keeps gives the same answer as a cold read (`LOOPX_NO_FAST=1`,
//! which always opens the repository).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Output, TestEnv, git_in, run, skipped};

/// should-run as `agent-a` at a fixed time, with extra variables (a value
/// of None removes the variable).
fn should_run(env: &TestEnv, dir: &Path, vars: &[(&str, Option<&str>)], cold: bool) -> Output {
    let mut c: Command = env.spawner().command();
    c.current_dir(dir)
        .env("LOOPX_NOW", "2024-12-03T12:00:00Z")
        .env("LOOPX_SEED", "fast")
        .env("LOOPX_AGENT", "agent-a");
    if cold {
        c.env("LOOPX_NO_FAST", "1");
    }
    for (k, v) in vars {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    run(c.args(["quota", "should-run", "--json"]))
}

/// The fast answer, after checking it equals the cold one; run twice, so
/// the second reads what the first (or the cold read) left behind.
fn answer(env: &TestEnv, vars: &[(&str, Option<&str>)]) -> String {
    answer_in(env, &env.repo.clone(), vars)
}

fn answer_in(env: &TestEnv, dir: &Path, vars: &[(&str, Option<&str>)]) -> String {
    let cold = should_run(env, dir, vars, true);
    for _ in 0..2 {
        let fast = should_run(env, dir, vars, false);
        assert_eq!(
            (fast.code, &fast.stdout, &fast.stderr),
            (cold.code, &cold.stdout, &cold.stderr),
            "{vars:?}"
        );
    }
    cold.stdout
}

/// The goal should-run answers for.
fn goal_of(stdout: &str) -> String {
    let v: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v["goal"].as_str().unwrap_or_default().to_owned()
}

/// A board with three active goals, so `loopx.goal` decides which one
/// should-run answers for; without it, the agent's pick across them: the
/// most urgent todo, on goal `ops` ([`PICKED`]).
fn three_goals() -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the docs"])
        .ok();
    env.loopx(&["goal", "add", PICKED, "--objective", "Keep it running"])
        .ok();
    env.add("Write the parser", &["--goal", "main"]);
    env.add("Write the guide", &["--goal", "docs"]);
    env.add("Fix the outage", &["--goal", PICKED, "--priority", "P0"]);
    env
}

/// The goal should-run answers for when no `loopx.goal` names one.
const PICKED: &str = "ops";

fn settings_file(env: &TestEnv) -> PathBuf {
    env.repo.join(".git/loopx/cache/settings")
}

#[test]
fn should_run_reads_no_object_database_on_a_cache_hit() {
    let env = three_goals();
    env.git(&["config", "loopx.goal", "docs"]);
    assert_eq!(goal_of(&answer(&env, &[])), "docs");
    assert!(settings_file(&env).is_file());
    if Command::new("strace").arg("-V").output().is_err() {
        skipped(format_args!(
            "should_run_reads_no_object_database_on_a_cache_hit: strace is not installed; the open-free check did not run"
        ));
        return;
    }
    // A container may forbid tracing (ptrace): say so rather than fail.
    if !Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skipped(format_args!(
            "should_run_reads_no_object_database_on_a_cache_hit: strace cannot trace here (ptrace refused); the open-free check did not run"
        ));
        return;
    }
    let trace = env.root().join("trace");
    let mut c = env.spawner().command();
    c.env("LOOPX_AGENT", "agent-a");
    let out = run(Command::new("strace")
        .args(["-f", "-e", "trace=openat,open,stat,statx,newfstatat", "-o"])
        .arg(&trace)
        .arg(c.get_program())
        .args(["quota", "should-run"])
        .env_clear()
        .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env_remove("LOOPX_NO_FAST")
        .current_dir(&env.repo));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let trace = std::fs::read_to_string(trace).unwrap();
    // gix's open scans the pack directory; the fast path reads the ref,
    // the settings and the cache only.
    assert!(!trace.contains("objects/pack"), "{trace}");
    assert!(trace.contains("loopx/cache/settings"), "{trace}");
    // With the fast path off, the same command opens the repository.
    let cold = env.root().join("trace-cold");
    run(Command::new("strace")
        .args(["-f", "-e", "trace=openat,open,stat,statx,newfstatat", "-o"])
        .arg(&cold)
        .arg(c.get_program())
        .args(["quota", "should-run"])
        .env_clear()
        .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("LOOPX_NO_FAST", "1")
        .current_dir(&env.repo))
    .ok();
    assert!(
        std::fs::read_to_string(cold)
            .unwrap()
            .contains("objects/pack")
    );
}

#[test]
fn a_change_to_any_config_file_is_seen() {
    let env = three_goals();
    let root = env.root().to_path_buf();
    let home = root.join("home");
    let global = root.join("global.conf");
    let system = root.join("system.conf");
    let set = |file: &Path, goal: &str| {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, format!("[loopx]\n\tgoal = {goal}\n")).unwrap();
    };
    // The repository's own config: set, changed, removed.
    env.git(&["config", "loopx.goal", "docs"]);
    assert_eq!(goal_of(&answer(&env, &[])), "docs");
    env.git(&["config", "loopx.goal", "main"]);
    assert_eq!(goal_of(&answer(&env, &[])), "main");
    env.git(&["config", "--unset", "loopx.goal"]);
    assert_eq!(goal_of(&answer(&env, &[])), PICKED);

    // GIT_CONFIG_GLOBAL: named before it exists, then created, changed.
    let g = global.to_str().unwrap();
    let by_global = [("GIT_CONFIG_GLOBAL", Some(g))];
    assert_eq!(goal_of(&answer(&env, &by_global)), PICKED);
    set(&global, "docs");
    assert_eq!(goal_of(&answer(&env, &by_global)), "docs");
    set(&global, "main");
    assert_eq!(goal_of(&answer(&env, &by_global)), "main");

    // No GIT_CONFIG_GLOBAL: the XDG file, then ~/.gitconfig over it, then
    // XDG_CONFIG_HOME moving the XDG file.
    let plain = [("GIT_CONFIG_GLOBAL", None)];
    assert_eq!(goal_of(&answer(&env, &plain)), PICKED);
    set(&home.join(".config/git/config"), "docs");
    assert_eq!(goal_of(&answer(&env, &plain)), "docs");
    set(&home.join(".gitconfig"), "main");
    assert_eq!(goal_of(&answer(&env, &plain)), "main");
    std::fs::remove_file(home.join(".gitconfig")).unwrap();
    assert_eq!(goal_of(&answer(&env, &plain)), "docs");
    let xdg = root.join("xdg");
    let moved = [
        ("GIT_CONFIG_GLOBAL", None),
        ("XDG_CONFIG_HOME", Some(xdg.to_str().unwrap())),
    ];
    assert_eq!(goal_of(&answer(&env, &moved)), PICKED);
    set(&xdg.join("git/config"), "main");
    assert_eq!(goal_of(&answer(&env, &moved)), "main");
    // HOME itself.
    let other_home = root.join("home2");
    std::fs::create_dir_all(&other_home).unwrap();
    let elsewhere = [
        ("GIT_CONFIG_GLOBAL", None),
        ("HOME", Some(other_home.to_str().unwrap())),
    ];
    assert_eq!(goal_of(&answer(&env, &elsewhere)), PICKED);

    // The system file (GIT_CONFIG_SYSTEM), created after a read.
    let s = system.to_str().unwrap();
    let by_system = [
        ("GIT_CONFIG_NOSYSTEM", None),
        ("GIT_CONFIG_SYSTEM", Some(s)),
    ];
    answer(&env, &by_system);
    set(&system, "docs");
    assert_eq!(goal_of(&answer(&env, &by_system)), "docs");
    // GIT_CONFIG_NOSYSTEM turns it off again.
    let off = [
        ("GIT_CONFIG_NOSYSTEM", Some("1")),
        ("GIT_CONFIG_SYSTEM", Some(s)),
    ];
    assert_eq!(goal_of(&answer(&env, &off)), PICKED);

    // Settings on the command line's environment.
    let counted = [
        ("GIT_CONFIG_COUNT", Some("1")),
        ("GIT_CONFIG_KEY_0", Some("loopx.goal")),
        ("GIT_CONFIG_VALUE_0", Some("main")),
    ];
    assert_eq!(goal_of(&answer(&env, &counted)), "main");
    assert_eq!(goal_of(&answer(&env, &[])), PICKED);

    // An include, and a change in the included file (the fast path stands
    // aside for a config with includes).
    let included = root.join("included.conf");
    set(&included, "docs");
    env.git(&["config", "include.path", included.to_str().unwrap()]);
    assert_eq!(goal_of(&answer(&env, &[])), "docs");
    set(&included, "main");
    assert_eq!(goal_of(&answer(&env, &[])), "main");
    env.git(&["config", "--unset", "include.path"]);
    assert_eq!(goal_of(&answer(&env, &[])), PICKED);
}

#[test]
fn another_state_ref_is_seen() {
    let env = three_goals();
    assert_eq!(goal_of(&answer(&env, &[])), PICKED);
    // `loopx.ref` names a ref with no state yet: the cold read's error.
    env.git(&["config", "loopx.ref", "refs/loopx/goals/other"]);
    let out = should_run(&env, &env.repo, &[], false);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.error_code(), "no-state");
    answer(&env, &[]);
    env.git(&["config", "--unset", "loopx.ref"]);
    assert_eq!(goal_of(&answer(&env, &[])), PICKED);
}

/// One way of damaging the settings file.
type Damage<'a> = Box<dyn Fn() + 'a>;

#[test]
fn a_damaged_settings_file_or_state_ref_gives_the_cold_answer() {
    let env = three_goals();
    env.git(&["config", "loopx.goal", "docs"]);
    let good = answer(&env, &[]);
    let file = settings_file(&env);
    let bytes = std::fs::read(&file).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let damages: Vec<(&str, Damage)> = vec![
        ("empty", Box::new(|| std::fs::write(&file, b"").unwrap())),
        (
            "truncated",
            Box::new(|| std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap()),
        ),
        (
            "garbage",
            Box::new(|| std::fs::write(&file, [0xffu8; 300]).unwrap()),
        ),
        (
            "another goal in the body",
            Box::new(|| std::fs::write(&file, text.replace("\"docs\"", "\"main\"")).unwrap()),
        ),
        (
            "another ref in the body",
            Box::new(|| {
                std::fs::write(&file, text.replace("refs/loopx/state", "refs/loopx/zzz")).unwrap()
            }),
        ),
        (
            "another config checksum",
            Box::new(|| {
                let i = text.find("file 1 ").unwrap() + 7;
                let mut t = text.clone();
                t.replace_range(i..i + 1, if &text[i..=i] == "0" { "1" } else { "0" });
                std::fs::write(&file, t).unwrap()
            }),
        ),
        (
            "a directory",
            Box::new(|| {
                std::fs::remove_file(&file).unwrap();
                std::fs::create_dir(&file).unwrap();
            }),
        ),
    ];
    for (what, damage) in damages {
        damage();
        let fast = should_run(&env, &env.repo, &[], false);
        assert_eq!(fast.stdout, good, "{what}");
        assert_eq!(fast.code, 0, "{what}: {}", fast.stderr);
        if file.is_dir() {
            std::fs::remove_dir(&file).unwrap();
        }
        // The next read writes a good one again.
        assert_eq!(answer(&env, &[]), good, "{what}");
    }
    // A state ref that moved: the cache of the old tip is never read.
    env.agent("agent-a", &["todo", "claim", "--next", "--goal", "docs"])
        .ok();
    let claimed = answer(&env, &[]);
    assert_ne!(claimed, good);
    // A packed state ref, then a symbolic one.
    env.git(&["pack-refs", "--all"]);
    assert_eq!(answer(&env, &[]), claimed);
    let tip = env.tip().unwrap();
    env.git(&["update-ref", "refs/loopx/real", &tip]);
    env.git(&["symbolic-ref", "refs/loopx/state", "refs/loopx/real"]);
    answer(&env, &[]);
}

#[test]
fn layouts_the_fast_path_does_not_understand_take_the_slow_path() {
    let env = three_goals();
    env.git(&["config", "loopx.goal", "docs"]);
    let good = answer(&env, &[]);
    // A subdirectory, and -C.
    let sub = env.repo.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    assert_eq!(answer_in(&env, &sub, &[]), good);
    // A linked worktree (a `.git` file), and GIT_DIR.
    env.git(&["commit", "-q", "--allow-empty", "-m", "first"]);
    let wt = env.root().join("wt");
    env.git(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert_eq!(answer_in(&env, &wt, &[]), good);
    let git_dir = env.repo.join(".git");
    answer_in(
        &env,
        env.root(),
        &[("GIT_DIR", Some(git_dir.to_str().unwrap()))],
    );
    // Inside the git dir.
    assert_eq!(answer_in(&env, &git_dir, &[]), good);
    // A nested repository of its own, without state: the cold error.
    let nested = env.repo.join("nested");
    std::fs::create_dir_all(&nested).unwrap();
    git_in(&nested, &["init", "-q"]);
    let out = should_run(&env, &nested, &[], false);
    assert_eq!(out.error_code(), "no-state");
    // A repository owned by another user (when the tests run as root,
    // which may give files away): the cold refusal, never a cached answer.
    if std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false)
    {
        run(Command::new("chown")
            .args(["-R", "12345:12345"])
            .arg(&env.repo))
        .ok();
        let out = should_run(&env, &env.repo, &[], false);
        assert_eq!(out.error_code(), "unsafe-repository", "{}", out.stdout);
        run(Command::new("chown").args(["-R", "0:0"]).arg(&env.repo)).ok();
    }
    assert_eq!(answer(&env, &[]), good);
}

#[test]
fn another_build_rewrites_the_settings_and_answers_the_same() {
    let env = three_goals();
    env.git(&["config", "loopx.goal", "docs"]);
    let good = answer(&env, &[]);
    let ours = std::fs::read_to_string(settings_file(&env)).unwrap();
    // A copy of the binary is another build to the key (its size and time).
    let other = env.root().join("loopx-other");
    std::fs::copy(env!("CARGO_BIN_EXE_loopx"), &other).unwrap();
    // Another test thread forking meanwhile holds the copy's write
    // descriptor until its child execs, and an exec of a file open for
    // writing fails (ETXTBSY): wait until the copy runs.
    for _ in 0..200 {
        match Command::new(&other).arg("--version").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => break,
        }
    }
    let mut c = Command::new(&other);
    crate::common::isolate(&mut c, env.root());
    let out = run(c
        .current_dir(&env.repo)
        .env("LOOPX_NOW", "2024-12-03T12:00:00Z")
        .env("LOOPX_SEED", "fast")
        .env("LOOPX_AGENT", "agent-a")
        .args(["quota", "should-run", "--json"]));
    assert_eq!((out.code, &out.stdout), (0, &good));
    let theirs = std::fs::read_to_string(settings_file(&env)).unwrap();
    let key = |t: &str| t.lines().nth(1).unwrap_or_default().to_owned();
    assert_ne!(key(&ours), key(&theirs), "{theirs}");
    // And back: this build reads none of the other's, and answers the same.
    env.git(&["config", "loopx.goal", "main"]);
    assert_eq!(goal_of(&answer(&env, &[])), "main");
    assert_eq!(
        key(&std::fs::read_to_string(settings_file(&env)).unwrap()),
        key(&ours)
    );
}

/// should-run with `-C dir` from the test's root, fast then cold.
fn answer_with_c(env: &TestEnv, dir: &Path) -> String {
    let ask = |cold: bool| {
        let mut c: Command = env.spawner().command();
        c.current_dir(env.root())
            .env("LOOPX_NOW", "2024-12-03T12:00:00Z")
            .env("LOOPX_SEED", "fast")
            .env("LOOPX_AGENT", "agent-a");
        if cold {
            c.env("LOOPX_NO_FAST", "1");
        }
        run(c.arg("-C").arg(dir).args(["quota", "should-run", "--json"]))
    };
    let fast = ask(false);
    let cold = ask(true);
    assert_eq!(
        (fast.code, &fast.stdout, &fast.stderr),
        (cold.code, &cold.stdout, &cold.stderr),
        "{}",
        dir.display()
    );
    fast.stdout
}

#[test]
fn a_path_through_a_link_or_to_a_copy_is_checked_by_the_resolved_path() {
    let env = three_goals();
    env.git(&["config", "loopx.goal", "docs"]);
    let good = answer(&env, &[]);
    // The start's own `.git` is taken at once when the settings name the
    // path as given; a path through a link, a relative one and one with
    // `..` are resolved first, and answer the same.
    let link = env.root().join("link");
    std::os::unix::fs::symlink(&env.repo, &link).unwrap();
    assert_eq!(answer_with_c(&env, &link), good);
    std::fs::create_dir_all(env.repo.join("src")).unwrap();
    let relative = env.repo.strip_prefix(env.root()).unwrap();
    assert_eq!(answer_with_c(&env, relative), good);
    assert_eq!(answer_with_c(&env, &env.repo.join("src/..")), good);
    assert_eq!(answer_with_c(&env, &env.repo), good);
    // A copy of the clone holds settings that name the first clone's path
    // and config files: its own config change is seen on its first, fast,
    // read, and the first clone's answer stands.
    let copy = env.root().join("copy");
    run(Command::new("cp").arg("-a").arg(&env.repo).arg(&copy)).ok();
    git_in(&copy, &["config", "loopx.goal", "main"]);
    let first = should_run(&env, &copy, &[], false);
    assert_eq!(goal_of(&first.stdout), "main", "{}", first.stderr);
    assert_eq!(goal_of(&answer_in(&env, &copy, &[])), "main");
    assert_eq!(answer_with_c(&env, &copy), answer_in(&env, &copy, &[]));
    assert_eq!(answer(&env, &[]), good);
}

#[test]
fn a_settled_config_file_is_checked_by_its_stat_and_a_change_is_still_seen() {
    let env = three_goals();
    env.git(&["config", "loopx.goal", "docs"]);
    // A file last changed over 3 s before the settings are written is
    // keyed by its stat as well: a hit then reads no config file.
    std::thread::sleep(std::time::Duration::from_millis(3500));
    std::fs::remove_file(settings_file(&env)).ok();
    assert_eq!(goal_of(&answer(&env, &[])), "docs");
    let config = env.repo.join(".git/config");
    let line = |env: &TestEnv| {
        std::fs::read_to_string(settings_file(env))
            .unwrap()
            .lines()
            .find(|l| l.ends_with(&format!(" {}", config.display())))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    let keyed = line(&env);
    let stat = keyed.split(' ').nth(3).unwrap_or_default();
    assert!(stat.len() > 1, "{keyed}");
    // The same size written in place (same inode), then by git (a new
    // file renamed over it): both seen.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("goal = docs", "goal = main")).unwrap();
    assert_eq!(goal_of(&answer(&env, &[])), "main");
    env.git(&["config", "loopx.goal", "docs"]);
    assert_eq!(goal_of(&answer(&env, &[])), "docs");
    // Changed moments ago: keyed by its content only, until it settles.
    assert_eq!(line(&env).split(' ').nth(3), Some("-"), "{}", line(&env));
}
