//! `loopx diff` on the fixed-clock history of `common::fixtures`.

use crate::common::fixtures::history;
use crate::common::{TestEnv, assert_text};

#[test]
fn diff_summarizes_two_states() {
    let (env, _) = history();
    let out = env.loopx(&["diff", "5", "10"]).ok();
    assert_text(
        &out.stdout,
        r#"tick 5 (2024-12-02T09:04:00Z) → tick 10 (2024-12-02T09:09:00Z)
claimed    todo t-aa735014 "Write the parser" by agent-a until 2024-12-02T09:51:00Z: +1 note
added      todo t-fd6162d1 "Write the manual": P2
"#,
    );
    // B defaults to the tip.
    let out = env.loopx(&["diff", "3"]).ok();
    assert_text(
        &out.stdout,
        r#"tick 3 (2024-12-02T09:02:00Z) → tick 13 (2024-12-02T09:12:00Z)
added      goal docs "Write the manual"
added      todo t-aa735014 "Write the parser": P1
done       todo t-aa735014 "Write the parser": +2 notes
added      todo t-fd6162d1 "Write the manual": P2
claimed    todo t-fd6162d1 "Write the manual" by agent-a until 2024-12-02T11:12:00Z
"#,
    );
    // Each lifecycle step on its own.
    let steps = [
        (
            "1",
            "3",
            "registered agent agent-a: custom\nregistered agent agent-b: custom\n",
        ),
        (
            "8",
            "9",
            "claimed    todo t-fd6162d1 \"Write the manual\" by agent-b until 2024-12-02T09:53:00Z\n",
        ),
        (
            "9",
            "10",
            "released   todo t-fd6162d1 \"Write the manual\" (held by agent-b)\n",
        ),
        (
            "10",
            "11",
            "done       todo t-aa735014 \"Write the parser\": +1 note\n",
        ),
        (
            "12",
            "13",
            "renewed    todo t-fd6162d1 \"Write the manual\" by agent-a until 2024-12-02T11:12:00Z\n",
        ),
        (
            "7",
            "8",
            "updated    todo t-aa735014 \"Write the parser\": +1 note\n",
        ),
    ];
    for (a, b, want) in steps {
        let out = env.loopx(&["diff", a, b]).ok().stdout;
        let body = out.split_once('\n').unwrap().1;
        assert_text(body, want);
    }
    // Backwards reads as the reverse, and the same state has no changes.
    let out = env.loopx(&["diff", "11", "10"]).ok().stdout;
    assert_text(
        out.split_once('\n').unwrap().1,
        "reopened   todo t-aa735014 \"Write the parser\"\nclaimed    todo t-aa735014 \"Write the parser\" by agent-a until 2024-12-02T09:51:00Z: -1 note\n",
    );
    let out = env.loopx(&["diff", "13", "refs/loopx/state"]).ok();
    assert_text(
        &out.stdout,
        "tick 13 (2024-12-02T09:12:00Z) → tick 13 (2024-12-02T09:12:00Z)\nNo changes.\n",
    );
}

#[test]
fn diff_p_adds_the_file_diffs() {
    let (env, _) = history();
    let out = env.loopx(&["diff", "9", "10", "-p"]).ok();
    assert_text(
        &out.stdout,
        r#"tick 9 (2024-12-02T09:08:00Z) → tick 10 (2024-12-02T09:09:00Z)
released   todo t-fd6162d1 "Write the manual" (held by agent-b)

--- a/todos/fd/t-fd6162d1.toml
+++ b/todos/fd/t-fd6162d1.toml
@@ -2,13 +2,8 @@
 goal = "docs"
 title = "Write the manual"
 priority = "P2"
-status = "claimed"
+status = "open"
 epoch = 1
 created_at = "2024-12-02T09:05:00Z"
 created_by = "human:Ada Lovelace <ada@example.com>"
-updated_at = "2024-12-02T09:08:00Z"
-
-[claim]
-owner = "agent-b"
-since = "2024-12-02T09:08:00Z"
-lease_until = "2024-12-02T09:53:00Z"
+updated_at = "2024-12-02T09:09:00Z"
"#,
    );
}

#[test]
fn diff_json_is_one_document() {
    let (env, _) = history();
    let out = env.loopx(&["diff", "5", "10", "--json"]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        r#"{"from":{"tick":5,"commit":"<commit>","time":"2024-12-02T09:04:00Z"},"to":{"tick":10,"commit":"<commit>","time":"2024-12-02T09:09:00Z"},"changes":[{"entity":"todo","id":"t-aa735014","change":"claimed","title":"Write the parser","owner":"agent-a","lease_until":"2024-12-02T09:51:00Z","details":["+1 note"]},{"entity":"todo","id":"t-fd6162d1","change":"added","title":"Write the manual","details":["P2"]}]}
"#,
    );
    let v = env.loopx(&["diff", "12", "13", "-p", "--json"]).ok().json();
    assert_eq!(v["changes"][0]["change"], "renewed");
    assert_eq!(v["files"][0]["path"], "todos/fd/t-fd6162d1.toml");
    assert_eq!(v["files"][0]["change"], "modified");
}

#[test]
fn diff_refuses_unknown_ticks() {
    let (env, _) = history();
    let out = env.loopx(&["diff", "3", "99"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no tick 99; the newest is 13\nhint: `loopx log` lists the ticks\n",
    );
    env.loopx(&["diff", "x"]).code(2);
    env.loopx(&["diff"]).code(2);
    TestEnv::new().loopx(&["diff", "1"]).code(1);
}
