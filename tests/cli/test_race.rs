//! Real processes racing on the state ref.

use std::collections::BTreeMap;

use crate::common::{Output, TestEnv, run};

#[test]
fn sixteen_processes_claim_one_todo_and_exactly_one_wins() {
    let env = TestEnv::with_board();
    let agents: Vec<String> = (0..16).map(|i| format!("racer-{i:02}")).collect();
    for a in &agents {
        env.loopx(&["agent", "register", a]).ok();
    }
    for round in 0..4 {
        race_for_one_todo(&env, &agents, round);
    }
}

#[test]
fn eight_writers_fifty_ticks_each_lose_nothing() {
    let env = TestEnv::with_board();
    let start = env.ticks();
    let spawner = env.spawner();
    const WORKERS: usize = 8;
    const PAIRS: usize = 25; // an add and an update each: 50 ticks per worker
    let added: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let sp = spawner.clone();
                s.spawn(move || {
                    let mut ids = Vec::new();
                    for i in 0..PAIRS {
                        let title = format!("w{w} item {i}");
                        let out = run(sp.command().args(["todo", "add", &title])).ok();
                        let id = out.stdout.trim().to_owned();
                        run(sp.command().args([
                            "todo",
                            "update",
                            &id,
                            "--note",
                            &format!("note {w}/{i}"),
                        ]))
                        .ok();
                        ids.push(id);
                    }
                    ids
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_eq!(
        env.ticks(),
        start + WORKERS * PAIRS * 2,
        "every tick landed"
    );
    let v = env.loopx(&["todo", "list", "--json"]).ok().json();
    let todos = v["todos"].as_array().unwrap();
    assert_eq!(todos.len(), WORKERS * PAIRS, "every todo is in the state");
    let titles: BTreeMap<String, String> = todos
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["title"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (w, ids) in added.iter().enumerate() {
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(
                titles.get(id).map(String::as_str),
                Some(format!("w{w} item {i}").as_str())
            );
            let t = env.loopx(&["todo", "show", id, "--json"]).ok().json();
            assert_eq!(
                t["notes"][0]["text"],
                format!("note {w}/{i}"),
                "no update was lost"
            );
        }
    }
    // The history is one first-parent chain with consecutive tick numbers.
    let ticks = env.git(&[
        "log",
        "--format=%(trailers:key=Loopx-Tick,valueonly)",
        "refs/loopx/state",
    ]);
    let ticks: Vec<u64> = ticks
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let n = ticks.len() as u64;
    assert_eq!(ticks, (1..=n).rev().collect::<Vec<_>>());
    assert_eq!(
        env.git(&["rev-list", "--merges", "--count", "refs/loopx/state"])
            .trim(),
        "0"
    );
}

/// Races agents for one new todo; asserts exactly one wins, every other
/// is told who did (exit 4), and the state holds one claim tick, the
/// winner's.
fn race_for_one_todo(env: &TestEnv, agents: &[String], round: usize) {
    let t = env.add(&format!("contested {round}"), &[]);
    let before = env.ticks();
    let spawner = env.spawner();
    let outs: Vec<(String, Output)> = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .iter()
            .map(|a| {
                let (sp, t, a) = (spawner.clone(), t.clone(), a.clone());
                s.spawn(move || {
                    let out = run(sp
                        .command()
                        .env("LOOPX_AGENT", &a)
                        .args(["todo", "claim", &t]));
                    (a, out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let winners: Vec<&String> = outs
        .iter()
        .filter(|(_, o)| o.code == 0)
        .map(|(a, _)| a)
        .collect();
    assert_eq!(winners.len(), 1, "round {round}: {outs:#?}");
    let winner = winners[0];
    for (a, o) in &outs {
        if a != winner {
            assert_eq!(o.code, 4, "round {round}, {a}: {o:#?}");
            assert!(
                o.stderr.contains(&format!("{winner} holds it")),
                "round {round}, {a} is told who won: {}",
                o.stderr
            );
        }
    }
    assert_eq!(env.ticks(), before + 1, "one claim tick per round");
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["claim"]["owner"], winner.as_str());
    assert_eq!(v["epoch"], 1);
}

/// Commits no ref reaches: what lost compare-and-swap races leave.
fn lost_races(env: &TestEnv) -> usize {
    env.git(&["fsck", "--unreachable", "--no-reflogs", "--no-progress"])
        .lines()
        .filter(|l| l.starts_with("unreachable commit"))
        .count()
}

#[test]
fn without_the_queue_the_compare_and_swap_alone_lets_exactly_one_win() {
    let env = TestEnv::with_board();
    let agents: Vec<String> = (0..16).map(|i| format!("racer-{i:02}")).collect();
    for a in &agents {
        env.loopx(&["agent", "register", a]).ok();
    }
    // The writers' queue is held here the whole round: every process waits
    // out its patience, then races on the compare-and-swap alone.
    let turn = loopx::queue::wait(&env.repo.join(".git"), loopx::queue::PATIENCE);
    assert!(turn.held());
    race_for_one_todo(&env, &agents, 0);
    drop(turn);
    race_for_one_todo(&env, &agents, 1);
}

#[test]
fn queued_writers_take_turns_and_lose_no_race() {
    let env = TestEnv::with_board();
    let agents: Vec<String> = (0..8).map(|i| format!("racer-{i}")).collect();
    for a in &agents {
        env.loopx(&["agent", "register", a]).ok();
    }
    let todos: Vec<String> = (0..8).map(|i| env.add(&format!("t{i}"), &[])).collect();
    let spawner = env.spawner();
    let got: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .iter()
            .map(|a| {
                let (sp, a) = (spawner.clone(), a.clone());
                s.spawn(move || {
                    let out = run(sp
                        .command()
                        .env("LOOPX_AGENT", &a)
                        .args(["todo", "claim", "--next", "--json"]))
                    .ok();
                    out.json()["todo"]["id"].as_str().unwrap().to_owned()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut sorted = got.clone();
    sorted.sort();
    let mut want = todos.clone();
    want.sort();
    assert_eq!(sorted, want, "each process claimed a different todo");
    // Each read the tip in its turn: no commit was written in vain.
    assert_eq!(lost_races(&env), 0);
}
