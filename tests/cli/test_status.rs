use crate::common::{TestEnv, assert_text};

#[test]
fn status_fits_one_screen() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    let u = env.add("Test the parser", &["--after", &t]);
    env.add("Write docs", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env.loopx(&["status"]).ok();
    assert_text(
        &out.stdout.replace(&t, "T").replace(&u, "U"),
        r#"loopx  refs/loopx/state  tick 7
goal main (active): Ship the parser
todos: 1 ready, 1 open, 1 waiting, 1 claimed, 0 blocked, 0 deferred, 0 done; 2 agents
claims:
  agent-a  T  Write the parser  (44m left)
recent:
     7  2026-11-30T09:06:00Z  claim T "Write the parser" — agent-a
     6  2026-11-30T09:05:00Z  add t-9f36c3b9 "Write docs" — Ada Lovelace
     5  2026-11-30T09:04:00Z  add U "Test the parser" — Ada Lovelace
     4  2026-11-30T09:03:00Z  add T "Write the parser" — Ada Lovelace
     3  2026-11-30T09:02:00Z  register agent agent-b (custom) — Ada Lovelace
"#,
    );
}

#[test]
fn status_json_is_a_bounded_summary() {
    let env = TestEnv::with_board();
    for i in 0..30 {
        let t = env.add(&format!("todo {i}"), &[]);
        if i < 15 {
            env.agent(
                if i % 2 == 0 { "agent-a" } else { "agent-b" },
                &["todo", "claim", &t],
            )
            .ok();
        }
    }
    let out = env.loopx(&["status", "--json"]).ok();
    let v = out.json();
    assert_eq!(v["counts"]["claimed"], 15);
    assert_eq!(v["counts"]["open"], 15);
    assert_eq!(v["claims_total"], 15);
    assert_eq!(v["claims"].as_array().unwrap().len(), 10);
    assert_eq!(v["recent"].as_array().unwrap().len(), 5);
    assert!(out.stdout.len() < 4096, "{} bytes", out.stdout.len());
}

#[test]
fn reads_write_nothing() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let before = env.tip();
    for args in [
        vec!["status"],
        vec!["todo", "list", "--all"],
        vec!["todo", "show", &t],
        vec!["goal", "list"],
        vec!["goal", "show", "main"],
        vec!["agent", "list"],
        vec!["agent", "show", "agent-a"],
    ] {
        env.loopx(&args).ok();
        env.agent("agent-a", &args).ok();
    }
    assert_eq!(env.tip(), before);
}
