//! Sync on real hubs, where things go wrong: mirror clones, a claim whose
//! push fails, a remote that never answers, and putting a hub back after a
//! forgery landed on it (`sync --repair-remote`).

use std::net::TcpListener;
use std::path::PathBuf;

use crate::common::forge;
use crate::common::{TestEnv, git_in};

/// A board pushed to a fresh hub as `origin`.
fn team() -> (TestEnv, String) {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["sync"]).ok();
    (env, hub)
}

#[test]
fn a_mirror_clone_keeps_its_unsynced_ticks_and_doctor_warns() {
    let (env, hub) = team();
    git_in(env.root(), &["clone", "-q", "--mirror", &hub, "mirror.git"]);
    let m = env.machine_in(env.root().join("mirror.git"));
    m.git(&["config", "user.name", "Mirror"]);
    m.git(&["config", "user.email", "mirror@example.com"]);
    // A mirror is bare: written here on purpose.
    m.git(&["config", "loopx.allowBare", "true"]);
    let mine = m.add("Made on the mirror");
    env.add("Moves the hub", &[]);
    env.loopx(&["sync"]).ok();
    // The mirror's refspec (+refs/*:refs/*) does not reach the state ref
    // through loopx's own fetch: the local tick is replayed, not dropped.
    let out = m.loopx(&["sync"]).ok();
    assert!(
        out.stdout
            .starts_with("Pulled 1 tick, pushed 1, replayed 1, rejected 0"),
        "{}",
        out.stdout
    );
    m.loopx(&["todo", "show", &mine]).ok();
    let out = m.loopx(&["doctor"]).ok();
    assert!(
        out.stdout.contains(
            "warning: git config remote.origin.fetch = +refs/*:refs/* makes a plain `git fetch` write the remote's refs/loopx/state into refs/loopx/state, over this clone's state"
        ),
        "{}",
        out.stdout
    );
    // An ordinary clone after `sync --setup` gets no warning.
    env.loopx(&["sync", "--setup"]).ok();
    let out = env.loopx(&["doctor"]).ok();
    assert!(
        !out.stdout.contains("warning: git config remote"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_claim_whose_push_fails_leaves_no_claim() {
    let (env, hub) = team();
    let t = env.add("Wanted", &[]);
    env.loopx(&["sync"]).ok();
    // The hub refuses every push from now on.
    let hook = PathBuf::from(&hub).join("hooks").join("pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'closed for maintenance' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .agent("agent-a", &["todo", "claim", &t, "--sync", "--json"])
        .code(1);
    assert!(
        out.stderr.contains(&format!(
            "error: the claim of {t} did not reach the remote, so it was released here: nothing was claimed: origin did not take the push"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["error"]["code"], "push-failed");
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "open", "{v}");
    // Once the hub takes pushes again, the next sync leaves the todo free
    // there too: no phantom claim.
    std::fs::remove_file(&hook).unwrap();
    env.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    let v = b.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "open", "{v}");
    b.loopx(&["verify"]).ok();
}

#[test]
fn a_remote_that_never_answers_times_out() {
    let (env, _hub) = team();
    // Accepts connections (the kernel's backlog) and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    env.git(&[
        "remote",
        "add",
        "silent",
        &format!("git://127.0.0.1:{port}/hub.git"),
    ]);
    env.git(&["config", "loopx.syncTimeout", "2s"]);
    let out = env.loopx(&["sync", "silent"]).code(1);
    assert!(
        out.stderr
            .contains("did not finish within 2s (git config loopx.syncTimeout sets the limit)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("nothing was changed here"),
        "{}",
        out.stderr
    );
    drop(silent);
}

#[test]
fn repair_remote_puts_an_unguarded_hub_back_at_the_last_verified_tick() {
    let (env, hub) = team();
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    let good = a.tip().unwrap();
    // b forges a tick by hand and pushes it with plain git.
    b.agent("agent-b", &["evidence", "add", "--summary", "fine"])
        .ok();
    b.loopx(&["sync"]).ok();
    let honest = b.tip().unwrap();
    b.agent("agent-b", &["evidence", "add", "--summary", "forged"])
        .ok();
    let forged = forge::amend_tip(&b, |m, p| {
        p.tree = forge::tree_with(m, &p.tree, &[("notes.txt", Some(b"psst\n"))]);
    });
    let (ok, err) = forge::push(&b, "origin", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    // a has a local tick and refuses the hub's state.
    let mine = a.add("Mine");
    a.loopx(&["sync"]).code(3);
    assert_eq!(
        a.rev("refs/loopx/state~1").unwrap(),
        good,
        "nothing moved here"
    );
    // An agent may not repair the hub: it is a human act.
    a.agent("agent-a", &["sync", "--repair-remote"]).code(3);
    // Without a terminal it lists and asks for --yes; --dry-run lists.
    let out = a.loopx(&["sync", "--repair-remote"]).code(2);
    assert!(out.stderr.contains("--dry-run"), "{}", out.stderr);
    assert!(out.stderr.contains(&forged[..8]), "{}", out.stderr);
    let out = a
        .loopx(&["sync", "--repair-remote", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(out["applied"], false, "{out}");
    assert_eq!(out["removed"][0]["commit"], forged.as_str());
    assert_eq!(
        git_in(
            std::path::Path::new(&hub),
            &["rev-parse", "refs/loopx/state"]
        )
        .trim(),
        forged,
        "a dry run changes nothing"
    );
    let out = a
        .loopx(&["sync", "--repair-remote", "--yes", "--json"])
        .ok()
        .json();
    assert_eq!(out["applied"], true, "{out}");
    assert_eq!(out["removed"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(out["removed"][0]["commit"], forged.as_str());
    assert_eq!(out["to"], honest.as_str());
    let hub_tip = git_in(
        std::path::Path::new(&hub),
        &["rev-parse", "refs/loopx/state"],
    );
    assert_eq!(hub_tip.trim(), honest);
    // Everyone syncs on without seeing a rewrite; a's tick arrives.
    let out = a.loopx(&["sync"]).ok();
    assert!(out.stdout.contains("pushed 1"), "{}", out.stdout);
    a.loopx(&["todo", "show", &mine]).ok();
    let c = env.clone_machine("c", &hub);
    c.loopx(&["sync"]).ok();
    c.loopx(&["verify"]).ok();
    // A hub with nothing to repair says so.
    let out = a.loopx(&["sync", "--repair-remote"]).ok();
    assert!(out.stdout.contains("nothing to repair"), "{}", out.stdout);
}

/// Issue 25 item 3: a tick that is only in this machine's future (a slow
/// clock here) is reported by `--repair-remote`, never removed.
#[test]
fn repair_remote_never_removes_a_tick_only_this_machine_refuses() {
    let (env, hub) = team();
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    // b's tick is in a's future (dated 2099 with plumbing: LOOPX_NOW may
    // not be ahead of the clock), pushed to the plain hub.
    b.loopx(&["todo", "add", "Ahead"]).ok();
    crate::common::forge::redate_tip(&b, 4_070_908_800);
    let (ok, err) = crate::common::forge::push(&b, "origin", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    let hub_tip = || {
        git_in(
            std::path::Path::new(&hub),
            &["rev-parse", "refs/loopx/state"],
        )
        .trim()
        .to_owned()
    };
    let before = hub_tip();
    let out = a.loopx(&["sync", "--repair-remote", "--yes"]).code(3);
    assert!(out.stderr.contains("[future]"), "{}", out.stderr);
    assert!(out.stderr.contains("not removed"), "{}", out.stderr);
    assert_eq!(hub_tip(), before, "the hub keeps the tick");
}

/// Four clones tick and sync at once, and two syncs run at once in one of
/// them (issue 27 item 7): no sync ever reports a rewritten hub, an invalid
/// tick or a failed push, nothing is lost, and every clone converges.
#[test]
fn four_clones_syncing_at_once_raise_no_false_alarm() {
    use crate::common::run;
    let (env, hub) = team();
    let clones: Vec<_> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| {
            let m = env.clone_machine(n, &hub);
            m.loopx(&["sync"]).ok();
            m
        })
        .collect();
    const ROUNDS: usize = 5;
    let spawners: Vec<_> = clones.iter().map(|m| env.spawner_in(&m.repo)).collect();
    let outs: Vec<(String, crate::common::Output)> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (c, sp) in spawners.iter().enumerate() {
            let sp = sp.clone();
            handles.push(s.spawn(move || {
                let mut outs = Vec::new();
                for i in 0..ROUNDS {
                    let title = format!("clone {c} item {i}");
                    outs.push((
                        title.clone(),
                        run(sp.command().args(["todo", "add", &title])),
                    ));
                    outs.push((format!("sync {c}/{i}"), run(sp.command().args(["sync"]))));
                }
                outs
            }));
        }
        // A second syncer in clone a, racing the first there.
        let sp = spawners[0].clone();
        handles.push(s.spawn(move || {
            (0..ROUNDS * 2)
                .map(|i| (format!("extra sync {i}"), run(sp.command().args(["sync"]))))
                .collect()
        }));
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    let mut alarms = Vec::new();
    for (what, out) in &outs {
        let code = out.code;
        let false_alarm = out.stderr.contains("rewritten")
            || out.stderr.contains("invalid-tick")
            || out.stderr.contains("not a valid loopx tick")
            || out.stderr.contains("did not take the push")
            || out.stderr.contains("locked by");
        // Exit 4 (retries exhausted) is honest under this load; nothing
        // else may fail.
        if false_alarm || !matches!(code, 0 | 4) {
            alarms.push(format!("{what}: exit {code}: {}", out.stderr));
        }
    }
    assert!(
        alarms.is_empty(),
        "{} false alarms:\n{}",
        alarms.len(),
        alarms.join("\n")
    );
    // Everyone converges on one state holding every todo.
    for _ in 0..2 {
        for m in &clones {
            m.loopx(&["sync"]).ok();
        }
    }
    let tip = clones[0].tip();
    for m in &clones {
        assert_eq!(m.tip(), tip, "every clone converges");
    }
    let listed = clones[0].loopx(&["--json", "todo", "list"]).ok().stdout;
    for c in 0..4 {
        for i in 0..ROUNDS {
            assert!(
                listed.contains(&format!("clone {c} item {i}")),
                "clone {c} item {i} is on the hub"
            );
        }
    }
    for m in &clones {
        m.loopx(&["verify"]).ok();
    }
}

/// Issue 27 item 4: a tick dated in this machine's future (made under a
/// `LOOPX_NOW` ahead of the clock) wedges nothing: sync refuses to push it
/// with a hint that discards nothing, and `sync --redate` writes it and the
/// later local ticks again, keeping every op.
#[test]
fn a_future_dated_tick_is_redated_and_no_work_is_lost() {
    let (env, hub) = team();
    let a = env.clone_machine("a", &hub);
    a.loopx(&["sync"]).ok();
    // A tick dated 2099 (with plumbing: LOOPX_NOW may not be ahead of the
    // clock), then honest work on top of it (written before it and moved
    // after it: this clone's writer refuses to write behind its history).
    let base = a.tip().unwrap();
    let later = a.add("Later, honest work");
    let honest = a.tip().unwrap();
    a.git(&["update-ref", "refs/loopx/state", &base]);
    let future = a.add("From the future");
    crate::common::forge::redate_tip(&a, 4_070_908_800);
    let out = a.loopx(&["--json", "todo", "add", "Behind"]).code(3);
    assert_eq!(out.error_code(), "clock-behind", "{}", out.stderr);
    assert!(out.stderr.contains("loopx sync --redate"), "{}", out.stderr);
    let on_top = crate::common::forge::replant(&a, &honest, &a.tip().unwrap());
    a.git(&["update-ref", "refs/loopx/state", &on_top]);
    let before = a.tip();
    let out = a.loopx(&["sync"]).code(3);
    assert!(out.stderr.contains("[future]"), "{}", out.stderr);
    assert!(out.stderr.contains("loopx sync --redate"), "{}", out.stderr);
    for bad in ["update-ref", "force-with-lease", "--repair-remote"] {
        assert!(!out.stderr.contains(bad), "{bad}: {}", out.stderr);
    }
    assert_eq!(a.tip(), before, "a refused sync changes nothing");
    // The recovery keeps both todos; the future one now dated honestly.
    let out = a.loopx(&["--json", "sync", "--redate"]).ok().json();
    assert_eq!(out["redated"], 1, "{out}");
    assert_eq!(out["rewritten"], 2, "{out}");
    let backup = out["backup"].as_str().unwrap().to_owned();
    assert_eq!(a.rev(&backup), before, "the old tip is kept");
    a.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    for t in [&future, &later] {
        b.loopx(&["todo", "show", t]).ok();
    }
    b.loopx(&["verify"]).ok();
    // Nothing left to redate.
    let out = a.loopx(&["--json", "sync", "--redate"]).ok().json();
    assert_eq!(out["redated"], 0, "{out}");
}
