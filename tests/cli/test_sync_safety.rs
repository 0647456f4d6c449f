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
    let out = a.loopx(&["sync", "--repair-remote", "--json"]).ok().json();
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
