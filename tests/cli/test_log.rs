//! `loopx log` on a fixed-clock history, and the plain-git recipes of
//! docs/review.md run against the same history.

use crate::common::fixtures::{hand_commit, history};
use crate::common::{TestEnv, assert_text};

const FULL_LOG: &str = r#"  13  2024-12-02T09:12:00Z  agent-a           todo.claim          renew t-fd6162d1 "Write the manual"
  12  2024-12-02T09:11:00Z  agent-a           todo.claim          claim t-fd6162d1 "Write the manual"
  11  2024-12-02T09:10:00Z  agent-a           todo.done           done t-aa735014 "Write the parser"
  10  2024-12-02T09:09:00Z  agent-b           todo.release        release t-fd6162d1 "Write the manual"
   9  2024-12-02T09:08:00Z  agent-b           todo.claim          claim t-fd6162d1 "Write the manual"
   8  2024-12-02T09:07:00Z  agent-a           todo.update         update t-aa735014 "Write the parser" note
   7  2024-12-02T09:06:00Z  agent-a           todo.claim          claim t-aa735014 "Write the parser"
   6  2024-12-02T09:05:00Z  Ada Lovelace      todo.add            add t-fd6162d1 "Write the manual"
   5  2024-12-02T09:04:00Z  Ada Lovelace      todo.add            add t-aa735014 "Write the parser"
   4  2024-12-02T09:03:00Z  Ada Lovelace      goal.add            goal add docs "Write the manual"
   3  2024-12-02T09:02:00Z  Ada Lovelace      agent.register      register agent agent-b (custom)
   2  2024-12-02T09:01:00Z  Ada Lovelace      agent.register      register agent agent-a (custom)
   1  2024-12-02T09:00:00Z  Ada Lovelace      init                init with goal main
"#;

#[test]
fn log_lists_every_tick_newest_first() {
    let (env, _) = history();
    assert_text(&env.loopx(&["log"]).ok().stdout, FULL_LOG);
    // -n counts ticks from the newest.
    let out = env.loopx(&["log", "-n", "2"]).ok();
    assert_text(
        &out.stdout,
        &FULL_LOG
            .lines()
            .take(2)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    assert_text(&env.loopx(&["log", "-n", "0"]).ok().stdout, "");
}

#[test]
fn log_filters_by_agent_todo_op_goal_and_time() {
    let (env, ids) = history();
    let only = |ticks: &[u32]| -> String {
        FULL_LOG
            .lines()
            .filter(|l| {
                let n: u32 = l.split_whitespace().next().unwrap().parse().unwrap();
                ticks.contains(&n)
            })
            .map(|l| format!("{l}\n"))
            .collect()
    };
    // The global --agent flag filters here; LOOPX_AGENT does not.
    assert_text(
        &env.loopx(&["log", "--agent", "agent-b"]).ok().stdout,
        &only(&[10, 9]),
    );
    assert_text(&env.agent("agent-b", &["log"]).ok().stdout, FULL_LOG);
    // A unique prefix names the todo.
    assert_text(
        &env.loopx(&["log", "--todo", &ids.parser[..4]]).ok().stdout,
        &only(&[11, 8, 7, 5]),
    );
    assert_text(
        &env.loopx(&["log", "--todo", &ids.manual]).ok().stdout,
        &only(&[13, 12, 10, 9, 6]),
    );
    assert_text(
        &env.loopx(&["log", "--op", "todo.claim"]).ok().stdout,
        &only(&[13, 12, 9, 7]),
    );
    // A group of operations.
    assert_text(
        &env.loopx(&["log", "--op", "agent"]).ok().stdout,
        &only(&[3, 2]),
    );
    // The goal's own ticks and its todos' ticks.
    assert_text(
        &env.loopx(&["log", "--goal", "docs"]).ok().stdout,
        &only(&[13, 12, 10, 9, 6, 4]),
    );
    assert_text(
        &env.loopx(&["log", "--goal", "main"]).ok().stdout,
        &only(&[11, 8, 7, 5, 1]),
    );
    assert_text(
        &env.loopx(&["log", "--since", "2024-12-02T09:10:00Z"])
            .ok()
            .stdout,
        &only(&[13, 12, 11]),
    );
    // Filters combine, and -n counts what they let through.
    assert_text(
        &env.loopx(&["log", "--agent", "agent-a", "--op", "todo.claim", "-n", "2"])
            .ok()
            .stdout,
        &only(&[13, 12]),
    );
}

#[test]
fn log_refuses_what_it_cannot_filter_by() {
    let (env, _) = history();
    let out = env.loopx(&["log", "--op", "todo.steal"]).code(2);
    assert_text(
        &out.stderr,
        "error: \"todo.steal\" is not an operation loopx knows\nhint: use a group (init, goal, agent, todo, signer, machine, gate, evidence, turn, quota, usage, settings) or a kind such as todo.claim; `loopx log --help` explains\n",
    );
    let out = env.loopx(&["log", "--goal", "nope"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no goal nope\nhint: `loopx goal list` shows the goals\n",
    );
    let out = env.loopx(&["log", "--agent", "agent-z"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no agent agent-z\nhint: `loopx agent list` shows the registered agents\n",
    );
    env.loopx(&["log", "--todo", "t-ffff"]).code(1);
    env.loopx(&["log", "--since", "yesterday"]).code(2);
    env.loopx(&["log", "-n", "many"]).code(2);
    let empty = TestEnv::new();
    let out = empty.loopx(&["log"]).code(1);
    assert!(
        out.stderr.contains("there is no loopx state here"),
        "{}",
        out.stderr
    );
}

#[test]
fn log_p_adds_each_files_diff() {
    let (env, _) = history();
    let out = env.loopx(&["log", "-p", "-n", "2"]).ok();
    assert_text(
        &out.stdout,
        r#"  13  2024-12-02T09:12:00Z  agent-a           todo.claim          renew t-fd6162d1 "Write the manual"
--- a/todos/fd/t-fd6162d1.toml
+++ b/todos/fd/t-fd6162d1.toml
@@ -6,9 +6,9 @@
 epoch = 2
 created_at = "2024-12-02T09:05:00Z"
 created_by = "human:Ada Lovelace <ada@example.com>"
-updated_at = "2024-12-02T09:11:00Z"
+updated_at = "2024-12-02T09:12:00Z"
 
 [claim]
 owner = "agent-a"
 since = "2024-12-02T09:11:00Z"
-lease_until = "2024-12-02T09:56:00Z"
+lease_until = "2024-12-02T11:12:00Z"

  12  2024-12-02T09:11:00Z  agent-a           todo.claim          claim t-fd6162d1 "Write the manual"
--- a/todos/fd/t-fd6162d1.toml
+++ b/todos/fd/t-fd6162d1.toml
@@ -2,8 +2,13 @@
 goal = "docs"
 title = "Write the manual"
 priority = "P2"
-status = "open"
-epoch = 1
+status = "claimed"
+epoch = 2
 created_at = "2024-12-02T09:05:00Z"
 created_by = "human:Ada Lovelace <ada@example.com>"
-updated_at = "2024-12-02T09:09:00Z"
+updated_at = "2024-12-02T09:11:00Z"
+
+[claim]
+owner = "agent-a"
+since = "2024-12-02T09:11:00Z"
+lease_until = "2024-12-02T09:56:00Z"
"#,
    );
    // The first tick adds every file.
    let out = env.loopx(&["log", "-p", "--op", "init"]).ok();
    assert_text(
        &out.stdout,
        r#"   1  2024-12-02T09:00:00Z  Ada Lovelace      init                init with goal main
--- /dev/null
+++ b/loopx.toml
@@ -0,0 +1,5 @@
+format = 7
+
+[settings]
+lease = "45m"
+clock_skew = "30s"
--- /dev/null
+++ b/goals/main.toml
@@ -0,0 +1,10 @@
+id = "main"
+objective = "Ship the parser"
+status = "active"
+created_at = "2024-12-02T09:00:00Z"
+created_by = "human:Ada Lovelace <ada@example.com>"
+updated_at = "2024-12-02T09:00:00Z"
+
+[quota]
+slots = 48
+window = "1d"
"#,
    );
}

#[test]
fn log_json_is_one_record_per_line() {
    let (env, _) = history();
    let out = env.loopx(&["log", "--json", "-n", "2"]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        r#"{"tick":13,"commit":"<commit>","time":"2024-12-02T09:12:00Z","actor":"agent:agent-a","op":"todo.claim","subject":"renew t-fd6162d1 \"Write the manual\""}
{"tick":12,"commit":"<commit>","time":"2024-12-02T09:11:00Z","actor":"agent:agent-a","op":"todo.claim","subject":"claim t-fd6162d1 \"Write the manual\""}
"#,
    );
    let out = env
        .loopx(&["log", "--json", "-p", "--op", "todo.release"])
        .ok();
    assert_text(
        &env.normalize(&out.stdout),
        r#"{"tick":10,"commit":"<commit>","time":"2024-12-02T09:09:00Z","actor":"agent:agent-b","op":"todo.release","subject":"release t-fd6162d1 \"Write the manual\"","files":[{"path":"todos/fd/t-fd6162d1.toml","change":"modified","diff":"--- a/todos/fd/t-fd6162d1.toml\n+++ b/todos/fd/t-fd6162d1.toml\n@@ -2,13 +2,8 @@\n goal = \"docs\"\n title = \"Write the manual\"\n priority = \"P2\"\n-status = \"claimed\"\n+status = \"open\"\n epoch = 1\n created_at = \"2024-12-02T09:05:00Z\"\n created_by = \"human:Ada Lovelace <ada@example.com>\"\n-updated_at = \"2024-12-02T09:08:00Z\"\n-\n-[claim]\n-owner = \"agent-b\"\n-since = \"2024-12-02T09:08:00Z\"\n-lease_until = \"2024-12-02T09:53:00Z\"\n+updated_at = \"2024-12-02T09:09:00Z\"\n"}]}
"#,
    );
    let all = env.loopx(&["log", "--format", "json"]).ok().stdout;
    assert_eq!(all.lines().count(), 13);
    for line in all.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["tick"].is_u64() && v["commit"].is_string(), "{line}");
    }
}

#[test]
fn a_commit_made_by_hand_is_shown_not_fatal() {
    let (env, _) = history();
    hand_commit(&env);
    let out = env.loopx(&["log", "-n", "2"]).ok();
    assert_text(
        &out.stdout,
        r#"   -  2024-12-02T09:00:00Z  Ada Lovelace      (not a loopx tick)  Fix a typo by hand
  13  2024-12-02T09:12:00Z  agent-a           todo.claim          renew t-fd6162d1 "Write the manual"
"#,
    );
    // Filters pass only ticks.
    let out = env.loopx(&["log", "--op", "todo", "-n", "1"]).ok();
    assert_text(
        &out.stdout,
        &FULL_LOG
            .lines()
            .take(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    // Its out-of-order time does not end a --since walk early.
    let out = env.loopx(&["log", "--since", "2024-12-02T09:10:00Z"]).ok();
    assert_text(
        &out.stdout,
        &FULL_LOG
            .lines()
            .take(3)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let v = env.loopx(&["log", "--json", "-n", "1"]).ok().json();
    assert_eq!(v["tick"], serde_json::Value::Null);
    assert_eq!(v["op"], serde_json::Value::Null);
    assert_eq!(v["author"], "Ada Lovelace <ada@example.com>");
    assert_eq!(v["subject"], "Fix a typo by hand");
}

#[test]
fn history_commands_write_nothing() {
    let (env, _) = history();
    let before = env.tip();
    let refs = env.git(&["for-each-ref"]);
    for args in [
        vec!["log", "-p"],
        vec!["log", "--goal", "docs", "--json"],
        vec!["show", "7"],
        vec!["diff", "2", "9", "-p"],
        vec!["status", "--at", "5"],
    ] {
        env.loopx(&args).ok();
        env.agent("agent-a", &args).ok();
    }
    assert_eq!(env.tip(), before);
    assert_eq!(env.git(&["for-each-ref"]), refs);
}

/// Every recipe of docs/review.md's plain-git section, run as written there
/// (the docs must contain the exact command), against the fixed history.
#[test]
fn plain_git_recipes_from_the_docs() {
    let (env, ids) = history();
    let docs = include_str!("../../docs/review.md");
    let path = format!("todos/{}/{}.toml", &ids.parser[2..4], ids.parser);
    let recipe = |shown: &str, args: &[&str]| -> String {
        assert!(
            docs.contains(shown),
            "docs/review.md does not show the recipe `{shown}`"
        );
        env.git(args)
    };

    let out = recipe(
        "git log --oneline refs/loopx/state",
        &["log", "--oneline", "refs/loopx/state"],
    );
    let subjects: Vec<&str> = out
        .lines()
        .map(|l| &l[l.find(' ').unwrap() + 1..])
        .collect();
    assert_eq!(subjects.len(), 13);
    assert_eq!(
        subjects[0],
        "renew t-fd6162d1 \"Write the manual\" — agent-a"
    );
    assert_eq!(subjects[12], "init with goal main — Ada Lovelace");

    // One todo's whole history: its file's log.
    let out = recipe(
        "git log -p refs/loopx/state -- todos/aa/t-aa735014.toml",
        &["log", "-p", "refs/loopx/state", "--", &path],
    );
    let ticks: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Loopx-Tick: "))
        .collect();
    assert_eq!(ticks, ["11", "8", "7", "5"]);
    assert!(out.contains("+status = \"done\""), "{out}");

    let out = recipe(
        "git log --format='%(trailers:key=Loopx-Op,valueonly)' refs/loopx/state",
        &[
            "log",
            "--format=%(trailers:key=Loopx-Op,valueonly)",
            "refs/loopx/state",
        ],
    );
    let ops: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(ops.len(), 13);
    assert_eq!(ops[0], "todo.claim");
    assert_eq!(ops[12], "init");

    let out = recipe(
        "git log --format='%h %(trailers:key=Loopx-Tick,valueonly,separator=) %(trailers:key=Loopx-Op,valueonly,separator=) %an' refs/loopx/state",
        &[
            "log",
            "--format=%h %(trailers:key=Loopx-Tick,valueonly,separator=) %(trailers:key=Loopx-Op,valueonly,separator=) %an",
            "refs/loopx/state",
        ],
    );
    let rows: Vec<String> = out
        .lines()
        .map(|l| l.split_once(' ').unwrap().1.to_owned())
        .collect();
    assert_eq!(rows[0], "13 todo.claim agent-a");
    assert_eq!(rows[9], "4 goal.add Ada Lovelace");

    // Filter by trailer (never by grep, which matches lines in notes).
    let shell = |shown: &str| -> String {
        assert!(
            docs.contains(shown),
            "docs/review.md does not show the recipe `{shown}`"
        );
        let out = std::process::Command::new("sh")
            .args(["-c", shown])
            .current_dir(&env.repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{shown}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = shell(
        "git log --format='%h %(trailers:key=Loopx-Op,valueonly,separator=) %s' refs/loopx/state | awk '$2 == \"todo.release\"'",
    );
    assert_eq!(out.lines().count(), 1);
    assert!(out.contains("release t-fd6162d1"), "{out}");
    let out = shell(
        "git log --format='%h%x09%(trailers:key=Loopx-Agent,valueonly,separator=)%x09%s' refs/loopx/state | awk -F '\\t' '$2 == \"agent-b\"'",
    );
    assert_eq!(out.lines().count(), 2, "{out}");
    let out = shell(
        "git log --format='%h%x09%(trailers:key=Loopx-Human,valueonly,separator=)%x09%s' refs/loopx/state | awk -F '\\t' '$2 ~ /^Ada Lovelace /'",
    );
    assert!(out.contains("init with goal main"), "{out}");
    assert!(out.lines().all(|l| l.ends_with("— Ada Lovelace")), "{out}");
    let out = shell(
        "git log --format='%H %(trailers:key=Loopx-Tick,valueonly,separator=)' refs/loopx/state | awk '$2 == 7 {print $1}'",
    );
    let subject = env.git(&["log", "-1", "--format=%s", out.trim()]);
    assert!(
        subject
            .trim_end()
            .ends_with("claim t-aa735014 \"Write the parser\" — agent-a"),
        "{subject}"
    );

    // One tick in full; a file as it was; the files between two states.
    let out = recipe(
        "git show refs/loopx/state~6",
        &["show", "refs/loopx/state~6"],
    );
    assert!(out.contains("Loopx-Tick: 7\n"), "{out}");
    assert!(out.contains("+owner = \"agent-a\""), "{out}");
    let out = recipe(
        "git show refs/loopx/state~6:todos/aa/t-aa735014.toml",
        &["show", &format!("refs/loopx/state~6:{path}")],
    );
    assert!(out.contains("status = \"claimed\"\n"), "{out}");
    let out = recipe(
        "git diff --stat refs/loopx/state~8 refs/loopx/state",
        &["diff", "--stat", "refs/loopx/state~8", "refs/loopx/state"],
    );
    assert!(out.contains("3 files changed"), "{out}");
    let out = recipe(
        "git ls-tree -r --name-only refs/loopx/state",
        &["ls-tree", "-r", "--name-only", "refs/loopx/state"],
    );
    assert_text(
        &out,
        "agents/agent-a.toml\nagents/agent-b.toml\ngoals/docs.toml\ngoals/main.toml\nloopx.toml\ntodos/aa/t-aa735014.toml\ntodos/fd/t-fd6162d1.toml\n",
    );

    // Keep the state out of `git log --all`.
    env.git(&["commit", "-q", "--allow-empty", "-m", "Real work"]);
    let out = recipe(
        "git log --oneline --exclude='refs/loopx/*' --exclude='refs/remotes/*/loopx/*' --all",
        &[
            "log",
            "--oneline",
            "--exclude=refs/loopx/*",
            "--exclude=refs/remotes/*/loopx/*",
            "--all",
        ],
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("Real work"), "{out}");
    // A fetched copy of the state stays out too.
    let head = env.tip().unwrap();
    env.git(&["update-ref", "refs/remotes/origin/loopx/state", &head]);
    let out = env.git(&[
        "log",
        "--oneline",
        "--exclude=refs/loopx/*",
        "--exclude=refs/remotes/*/loopx/*",
        "--all",
    ]);
    assert_eq!(out.lines().count(), 1, "{out}");
    // The same as an alias.
    let alias = "log --oneline --exclude=refs/loopx/* --exclude=refs/remotes/*/loopx/* --all";
    recipe(
        &format!("git config alias.lg \"{alias}\""),
        &["config", "alias.lg", alias],
    );
    assert_eq!(env.git(&["lg"]), out);
}
