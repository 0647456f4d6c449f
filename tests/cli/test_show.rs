//! `loopx show` on the fixed-clock history of `common::fixtures`.

use crate::common::assert_text;
use crate::common::fixtures::{hand_commit, history};

const TICK_7: &str = r#"tick 7: claim t-aa735014 "Write the parser"
commit:    <commit>
time:      2024-12-02T09:06:00Z
actor:     agent:agent-a
op:        todo.claim (o-684957e159566a4d)
arguments:
  todo = "t-aa735014"
  epoch = 0
  lease = "45m"
trailers:
  Loopx-Op: todo.claim
  Loopx-Agent: agent-a
  Loopx-Tick: 7
  Loopx-Format: 7

--- a/todos/aa/t-aa735014.toml
+++ b/todos/aa/t-aa735014.toml
@@ -2,8 +2,13 @@
 goal = "main"
 title = "Write the parser"
 priority = "P1"
-status = "open"
-epoch = 0
+status = "claimed"
+epoch = 1
 created_at = "2024-12-02T09:04:00Z"
 created_by = "human:Ada Lovelace <ada@example.com>"
-updated_at = "2024-12-02T09:04:00Z"
+updated_at = "2024-12-02T09:06:00Z"
+
+[claim]
+owner = "agent-a"
+since = "2024-12-02T09:06:00Z"
+lease_until = "2024-12-02T09:51:00Z"
"#;

#[test]
fn show_prints_the_op_its_trailers_and_diffs() {
    let (env, _) = history();
    let out = env.loopx(&["show", "7"]).ok();
    assert_text(&env.normalize(&out.stdout), TICK_7);
    // A human's tick, with several arguments and files.
    let out = env.loopx(&["show", "6"]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        r#"tick 6: add t-fd6162d1 "Write the manual"
commit:    <commit>
time:      2024-12-02T09:05:00Z
actor:     human:Ada Lovelace <ada@example.com>
op:        todo.add (o-d510052f9b40e450)
arguments:
  todo = "t-fd6162d1"
  goal = "docs"
  title = "Write the manual"
  priority = "P2"
trailers:
  Loopx-Op: todo.add
  Loopx-Human: Ada Lovelace <ada@example.com>
  Loopx-Tick: 6
  Loopx-Format: 7

--- /dev/null
+++ b/todos/fd/t-fd6162d1.toml
@@ -0,0 +1,9 @@
+id = "t-fd6162d1"
+goal = "docs"
+title = "Write the manual"
+priority = "P2"
+status = "open"
+epoch = 0
+created_at = "2024-12-02T09:05:00Z"
+created_by = "human:Ada Lovelace <ada@example.com>"
+updated_at = "2024-12-02T09:05:00Z"
"#,
    );
}

#[test]
fn a_tick_is_named_by_number_commit_prefix_ref_or_time() {
    let (env, _) = history();
    let by_number = env.loopx(&["show", "7"]).ok().stdout;
    let commit = env.git(&["rev-parse", "refs/loopx/state~6"]);
    for name in [
        &commit.trim()[..8],
        commit.trim(),
        &commit.trim()[..12].to_ascii_uppercase(),
        "2024-12-02T09:06:00Z",
        "2024-12-02T09:06:59Z",
        "2024-12-02T10:06:30+01:00",
    ] {
        assert_text(&env.loopx(&["show", name]).ok().stdout, &by_number);
    }
    let tip = env.loopx(&["show", "13"]).ok().stdout;
    assert_text(&env.loopx(&["show", "refs/loopx/state"]).ok().stdout, &tip);
    assert_text(
        &env.loopx(&["show", "2030-01-01T00:00:00Z"]).ok().stdout,
        &tip,
    );
}

#[test]
fn show_says_what_to_do_about_a_missing_tick() {
    let (env, _) = history();
    let out = env.loopx(&["show", "999"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no tick 999; the newest is 13\nhint: `loopx log` lists the ticks\n",
    );
    assert_text(&out.stdout, "");
    let out = env.loopx(&["show", "0"]).code(2);
    assert!(out.stderr.contains("ticks start at 1"), "{}", out.stderr);
    let out = env.loopx(&["show", "tip"]).code(2);
    assert!(
        out.stderr
            .contains("\"tip\" names no tick: give a tick number (7)"),
        "{}",
        out.stderr
    );
    let out = env.loopx(&["show", "ffff0000"]).code(1);
    assert_text(
        &out.stderr,
        "error: no commit id starts with ffff0000\nhint: `loopx log` lists the ticks with their tick numbers\n",
    );
    let out = env.loopx(&["show", "refs/loopx/nope"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no ref refs/loopx/nope\nhint: give a full ref name such as refs/loopx/state\n",
    );
    let out = env.loopx(&["show", "2024-12-02T08:00:00Z"]).code(1);
    assert_text(
        &out.stderr,
        "error: there was no loopx state yet at 2024-12-02T08:00:00Z; the first tick is at 2024-12-02T09:00:00Z\nhint: give a later time, or a tick number\n",
    );
    let out = env.loopx(&["show", "999", "--json"]).code(1);
    assert_eq!(out.json()["error"]["code"], "unknown-tick");
}

#[test]
fn show_json_is_one_document() {
    let (env, _) = history();
    let out = env.loopx(&["show", "8", "--json"]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        r#"{"tick":8,"commit":"<commit>","parent":"<commit>","time":"2024-12-02T09:07:00Z","actor":"agent:agent-a","op":"todo.update","op_id":"o-f81de3ecd299fea7","subject":"update t-aa735014 \"Write the parser\" note","change":{"op":"todo.update","todo":"t-aa735014","epoch":1,"note":"lexer done"},"trailers":{"Loopx-Agent":"agent-a","Loopx-Format":"7","Loopx-Op":"todo.update","Loopx-Tick":"8"},"files":[{"path":"agents/agent-a.toml","change":"modified","diff":"--- a/agents/agent-a.toml\n+++ b/agents/agent-a.toml\n@@ -3,3 +3,4 @@\n status = \"active\"\n registered_at = \"2024-12-02T09:01:00Z\"\n registered_by = \"human:Ada Lovelace <ada@example.com>\"\n+last_writeback = \"2024-12-02T09:07:00Z\"\n"},{"path":"todos/aa/t-aa735014.toml","change":"modified","diff":"--- a/todos/aa/t-aa735014.toml\n+++ b/todos/aa/t-aa735014.toml\n@@ -6,9 +6,14 @@\n epoch = 1\n created_at = \"2024-12-02T09:04:00Z\"\n created_by = \"human:Ada Lovelace <ada@example.com>\"\n-updated_at = \"2024-12-02T09:06:00Z\"\n+updated_at = \"2024-12-02T09:07:00Z\"\n \n [claim]\n owner = \"agent-a\"\n since = \"2024-12-02T09:06:00Z\"\n lease_until = \"2024-12-02T09:51:00Z\"\n+\n+[[notes]]\n+at = \"2024-12-02T09:07:00Z\"\n+by = \"agent:agent-a\"\n+text = \"lexer done\"\n"}]}
"#,
    );
    let v = env.loopx(&["show", "1", "--json"]).ok().json();
    assert_eq!(v["parent"], serde_json::Value::Null);
    let paths: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["loopx.toml", "goals/main.toml"]);
}

#[test]
fn a_commit_made_by_hand_shows_as_not_a_tick() {
    let (env, _) = history();
    let commit = hand_commit(&env);
    let out = env.loopx(&["show", &commit[..10]]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        "(not a loopx tick): Fix a typo by hand
commit:    <commit>
time:      2024-12-02T09:00:00Z
author:    Ada Lovelace <ada@example.com>
why:       the message has no body
message:
  Fix a typo by hand
",
    );
    let v = env
        .loopx(&["show", "refs/loopx/state", "--json"])
        .ok()
        .json();
    assert_eq!(v["tick"], serde_json::Value::Null);
    assert_eq!(v["not_a_tick"], "the message has no body");
    assert_eq!(v["files"], serde_json::json!([]));
    // Tick numbers are still found below it.
    let out = env.loopx(&["show", "13"]).ok();
    assert!(out.stdout.starts_with("tick 13: renew"), "{}", out.stdout);
}

#[test]
fn a_tick_from_a_newer_loopx_says_to_upgrade() {
    let (env, ids) = history();
    let tree = env.git(&["rev-parse", "refs/loopx/state^{tree}"]);
    let message = format!(
        "teleport {} \"Write the manual\" — agent-a\n\nid = \"o-00000000000000aa\"\nat = \"2024-12-02T09:13:00Z\"\nactor = \"agent:agent-a\"\n\n[change]\nop = \"todo.teleport\"\ntodo = \"{}\"\nto = \"agent-b\"\n\nLoopx-Op: todo.teleport\nLoopx-Agent: agent-a\nLoopx-Tick: 14\nLoopx-Format: 7\n",
        ids.manual, ids.manual
    );
    let commit = env.git(&[
        "commit-tree",
        tree.trim(),
        "-p",
        "refs/loopx/state",
        "-m",
        &message,
    ]);
    env.git(&["update-ref", "refs/loopx/state", commit.trim()]);
    let out = env.loopx(&["log", "-n", "2"]).ok();
    assert_text(
        &out.stdout,
        r#"  14  2024-12-02T09:00:00Z  Ada Lovelace      (unreadable tick)   teleport t-fd6162d1 "Write the manual" — agent-a
  13  2024-12-02T09:12:00Z  agent-a           todo.claim          renew t-fd6162d1 "Write the manual"
"#,
    );
    let out = env.loopx(&["show", "14"]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        r#"tick 14 (unreadable tick): teleport t-fd6162d1 "Write the manual" — agent-a
commit:    <commit>
time:      2024-12-02T09:00:00Z
author:    Ada Lovelace <ada@example.com>
why:       the op "todo.teleport" is unknown to this loopx: upgrade loopx
message:
  teleport t-fd6162d1 "Write the manual" — agent-a

  id = "o-00000000000000aa"
  at = "2024-12-02T09:13:00Z"
  actor = "agent:agent-a"

  [change]
  op = "todo.teleport"
  todo = "t-fd6162d1"
  to = "agent-b"

  Loopx-Op: todo.teleport
  Loopx-Agent: agent-a
  Loopx-Tick: 14
  Loopx-Format: 7
"#,
    );
    let v = env.loopx(&["log", "--json", "-n", "1"]).ok().json();
    assert_eq!(v["tick"], 14);
    assert_eq!(v["op"], serde_json::Value::Null);
    assert_eq!(
        v["not_a_tick"],
        "the op \"todo.teleport\" is unknown to this loopx: upgrade loopx"
    );
}
