//! Verified history: forgeries made with git plumbing on one clone and
//! pushed to a hub are refused by `loopx sync` and `loopx verify` on another
//! clone (state unchanged, no local tick lost), and by a hub guarded with
//! `loopx hub install` before they land. An honest history of every op kind
//! verifies.

use std::path::{Path, PathBuf};

use crate::common::daemon::Daemon;
use crate::common::forge::{self, Parts};
use crate::common::{Machine, TestEnv, git_in, rfc3339, run};

/// Two clones of a board: `a` (the environment's repository) and `b`, an
/// unguarded hub (`origin`) and a guarded one (`guarded`) at the same tip,
/// and todo `todo` claimed by agent-a at `claimed_at` (unix seconds).
pub(crate) struct Team<'e> {
    env: &'e TestEnv,
    a: Machine<'e>,
    b: Machine<'e>,
    hub: PathBuf,
    /// Where the clones reach the guarded hub.
    guarded_url: String,
    todo: String,
    claimed_at: i64,
}

fn team(env: &TestEnv) -> Team<'_> {
    // The guarded hub over file:// (the git daemon test below covers
    // git://, tests/cli/test_server.rs nginx's smart HTTP).
    team_with(env, |guarded| format!("file://{}", guarded.display()))
}

/// [`team`] with the guarded hub (a bare repository, its guard installed)
/// reached at the URL `serve` returns for it.
pub(crate) fn team_with(env: &TestEnv, serve: impl FnOnce(&Path) -> String) -> Team<'_> {
    let hub = PathBuf::from(env.hub("hub.git"));
    let guarded = PathBuf::from(env.hub("guarded.git"));
    env.loopx(&["-C", guarded.to_str().unwrap(), "hub", "install"])
        .ok();
    env.git(&["remote", "add", "origin", hub.to_str().unwrap()]);
    let guarded_url = serve(&guarded);
    env.git(&["remote", "add", "guarded", &guarded_url]);
    let todo = env.add("Claimed by a", &[]);
    env.agent("agent-a", &["todo", "claim", &todo]).ok();
    let a = env.machine();
    let claimed_at: i64 = a
        .git(&["log", "-1", "--format=%at", "refs/loopx/state"])
        .trim()
        .parse()
        .unwrap();
    env.loopx(&["sync"]).ok();
    // The guarded hub verifies the whole honest history as it arrives.
    let (ok, err) = forge::push(&a, "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "an honest first push is taken: {err}");
    let b = env.clone_machine("b", hub.to_str().unwrap());
    b.git(&["remote", "add", "guarded", &guarded_url]);
    b.loopx(&["sync"]).ok();
    Team {
        env,
        a,
        b,
        hub,
        guarded_url,
        todo,
        claimed_at,
    }
}

fn hub_tip(hub: &Path) -> String {
    git_in(hub, &["rev-parse", "refs/loopx/state"])
        .trim()
        .to_owned()
}

impl Team<'_> {
    /// The guarded hub's tip, asked through the server.
    fn guarded_tip(&self) -> String {
        let listed = self
            .a
            .git(&["ls-remote", &self.guarded_url, "refs/loopx/state"]);
        listed
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// Forges on `b` with `forge`, pushes it to both hubs, and checks that
    /// the guarded hub, `a`'s sync and `a`'s verify all refuse it for
    /// `rule`; then puts the unguarded hub and `b` back.
    fn refused(&self, name: &str, rule: &str, forge: impl FnOnce(&Self, &Machine)) {
        let (a, b) = (&self.a, &self.b);
        let start = b.tip().unwrap();
        assert_eq!(hub_tip(&self.hub), start);
        // A local tick on `a` that is not synced yet.
        let mine = a.add(&format!("Local work before the {name}"));
        let (a_tip, a_synced) = (a.tip(), a.rev("refs/loopx/synced/origin"));
        forge(self, b);
        let forged = b.tip().unwrap();
        assert_ne!(forged, start, "{name}: a forgery was made");
        // The guarded hub refuses it and stays where it was.
        let (ok, err) = forge::push(b, "guarded", "refs/loopx/state:refs/loopx/state");
        assert!(!ok, "{name}: the guarded hub took it");
        assert!(
            err.contains("loopx hub: refusing refs/loopx/state")
                && err.contains(&format!("[{rule}]")),
            "{name}: the pusher is told why ({rule}):\n{err}"
        );
        assert_eq!(self.guarded_tip(), start, "{name}: guarded hub moved");
        // The unguarded hub takes it; `a` refuses to sync with it.
        let (ok, err) = forge::push(b, "origin", "refs/loopx/state:refs/loopx/state");
        assert!(ok, "{name}: {err}");
        let out = a.loopx(&["sync"]).code(3);
        assert!(
            out.stderr
                .contains("error: origin holds an invalid tick: commit ")
                && out.stderr.contains(&format!("[{rule}]"))
                // A tick in this machine's future is a clock question,
                // never a reason to take ticks off the hub.
                && out.stderr.contains("--repair-remote") == (rule != "future"),
            "{name}: {}",
            out.stderr
        );
        assert_eq!(a.tip(), a_tip, "{name}: a's state moved");
        assert_eq!(a.rev("refs/loopx/synced/origin"), a_synced);
        a.loopx(&["todo", "show", &mine]).ok();
        // verify names the same commit and rule, on one thread and on
        // three (the pipelined path refuses exactly what the serial does).
        let out = a
            .loopx(&[
                "verify",
                "--to",
                "refs/loopx/remotes/origin/state",
                "--json",
            ])
            .code(3)
            .json();
        for threads in ["1", "2"] {
            let other = run(a.command().env("LOOPX_VERIFY_THREADS", threads).args([
                "verify",
                "--to",
                "refs/loopx/remotes/origin/state",
                "--json",
            ]))
            .code(3)
            .json();
            assert_eq!(
                without_clock(other),
                without_clock(out.clone()),
                "{name}: verify on {threads} thread(s)"
            );
        }
        assert_eq!(out["ok"], false);
        assert_eq!(out["findings"][0]["rule"], rule, "{name}: {out}");
        assert_eq!(out["findings"][0]["commit"], forged.as_str(), "{name}");
        let out = a
            .loopx(&["verify", "--to", "refs/loopx/remotes/origin/state"])
            .code(3);
        assert!(out.stderr.contains(&forged[..8]), "{name}: {}", out.stderr);
        // Put the unguarded hub and b back.
        forge::set_hub_ref(&self.hub, "refs/loopx/state", &start);
        b.git(&["update-ref", "refs/loopx/state", &start]);
    }

    fn todo_path(&self) -> String {
        format!("todos/{}/{}.toml", &self.todo[2..4], self.todo)
    }
}

/// verify's JSON without the clock reading a `future` finding quotes (each
/// command here runs a minute later).
fn without_clock(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(fs) = v["findings"].as_array_mut() {
        for f in fs {
            if f["rule"] == "future" {
                f["message"] = serde_json::Value::Null;
            }
        }
    }
    v
}

/// The `Loopx-Format` a tick message says.
fn format_of(message: &str) -> String {
    message
        .lines()
        .find_map(|l| l.strip_prefix("Loopx-Format: "))
        .expect("a tick says its format")
        .to_owned()
}

/// An honest tick by `agent` on `m`, to forge on.
fn honest(m: &Machine, agent: &str) {
    m.agent(agent, &["evidence", "add", "--summary", "looked around"])
        .ok();
}

#[test]
fn forged_files_are_refused_by_sync_verify_and_the_hub() {
    let env = TestEnv::with_board();
    forged_files(&team(&env));
}

/// The forged files, each refused by the guarded hub, `a`'s sync and
/// `a`'s verify.
pub(crate) fn forged_files(t: &Team) {
    t.refused("forged gate answer", "tree", |_, b| {
        let gate = b
            .agent(
                "agent-a",
                &[
                    "gate",
                    "open",
                    "--question",
                    "Publish 1.0?",
                    "--kind",
                    "publish",
                ],
            )
            .ok()
            .stdout
            .trim()
            .to_owned();
        let opened = b.tip().unwrap();
        // What a human's answer writes, taken from a real answer...
        b.loopx(&["gate", "answer", &gate, "--choice", "approve"])
            .ok();
        let path = format!("gates/{gate}.toml");
        let answered = forge::file(b, "refs/loopx/state", &path);
        b.git(&["update-ref", "refs/loopx/state", &opened]);
        // ...slipped into a tick of agent-a's.
        honest(b, "agent-a");
        forge::amend_tip(b, |m, p| {
            p.tree = forge::tree_with(m, &p.tree, &[(&path, Some(&answered))]);
        });
    });
    t.refused("claim moved without an epoch bump", "tree", |t, b| {
        honest(b, "agent-b");
        let path = t.todo_path();
        let text = String::from_utf8(forge::file(b, "refs/loopx/state", &path)).unwrap();
        assert!(text.contains("owner = \"agent-a\""), "{text}");
        let moved: String = text
            .replace("owner = \"agent-a\"", "owner = \"agent-b\"")
            .lines()
            .map(|l| {
                if l.starts_with("lease_until = ") {
                    "lease_until = \"2099-01-01T00:00:00Z\"\n".to_owned()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        forge::amend_tip(b, |m, p| {
            p.tree = forge::tree_with(m, &p.tree, &[(&path, Some(moved.as_bytes()))]);
        });
    });
    t.refused("malformed evidence file", "tree", |_, b| {
        honest(b, "agent-b");
        forge::amend_tip(b, |m, p| {
            p.tree = forge::tree_with(
                m,
                &p.tree,
                &[("evidence/2026-11/ab/e-abababab.toml", Some(b"not toml {\n"))],
            );
        });
    });
    t.refused("archive move", "tree", |t, b| {
        honest(b, "agent-b");
        let path = t.todo_path();
        let bytes = forge::file(b, "refs/loopx/state", &path);
        let archived = format!("archive/{path}");
        forge::amend_tip(b, |m, p| {
            p.tree = forge::tree_with(m, &p.tree, &[(&path, None), (&archived, Some(&bytes[..]))]);
        });
    });
    t.refused("non-UTF-8 in the archive", "tree", |_, b| {
        honest(b, "agent-b");
        forge::amend_tip(b, |m, p| {
            p.tree = forge::tree_with(
                m,
                &p.tree,
                &[(
                    "archive/todos/ab/t-abababab.toml",
                    Some(b"title = \"\xff\"\n"),
                )],
            );
        });
    });
    t.refused("tree git fsck flags", "tree", |_, b| {
        honest(b, "agent-b");
        forge::amend_tip(b, |m, p| p.tree = forge::reversed_tree(m, &p.tree));
    });
    // Every forged commit was refused, and every local tick of a's waited:
    // with the hub put back, a's sync pushes them all, and both verify.
    let out = t.a.loopx(&["sync"]).ok();
    assert!(out.stdout.starts_with("Pushed 6 ticks"), "{}", out.stdout);
    t.b.loopx(&["sync"]).ok();
    assert_eq!(t.a.tree(), t.b.tree());
    t.b.loopx(&["verify"]).ok();
    let (ok, err) = forge::push(&t.a, "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "honest ticks pass the guarded hub: {err}");
}

#[test]
fn forged_ops_and_times_are_refused_by_sync_verify_and_the_hub() {
    let env = TestEnv::with_board();
    forged_ops(&team(&env));
}

/// The forged ops and times, each refused by the guarded hub, `a`'s sync
/// and `a`'s verify.
pub(crate) fn forged_ops(t: &Team) {
    t.refused("commit that is not a tick", "not-a-tick", |_, b| {
        let tip = forge::read(b, "refs/loopx/state");
        let hand = Parts {
            tree: forge::tree_with(b, &tip.tree, &[("notes.txt", Some(b"hello\n"))]),
            parent: b.tip(),
            message: "hand edit\n".to_owned(),
            author: ("Hand Editor".to_owned(), "hand@example.com".to_owned()),
            date: tip.date,
        };
        let commit = forge::write(b, &hand);
        b.git(&["update-ref", "refs/loopx/state", &commit]);
    });
    t.refused("steal dated in the future", "future", |t, b| {
        // An honest steal once the lease ran out, then moved to 2099 with
        // plumbing (LOOPX_NOW may not be ahead of the clock).
        let late = t.claimed_at + 3 * 3600;
        run(b
            .command()
            .env("LOOPX_NOW", rfc3339(late))
            .env("LOOPX_AGENT", "agent-b")
            .args(["todo", "claim", &t.todo]))
        .ok();
        // 2099-01-01T00:00:00Z
        forge::redate_tip(b, 4_070_908_800);
    });
    t.refused("backdated steal of a live lease", "refused", |t, b| {
        // An honest steal once the lease ran out, then moved back to a
        // minute after agent-a's claim, when the lease was live.
        let (late, early) = (t.claimed_at + 3 * 3600, t.claimed_at + 60);
        run(b
            .command()
            .env("LOOPX_NOW", rfc3339(late))
            .env("LOOPX_AGENT", "agent-b")
            .args(["todo", "claim", &t.todo]))
        .ok();
        forge::amend_tip(b, |_, p| {
            p.message = p.message.replace(
                &format!("at = \"{}\"", rfc3339(late)),
                &format!("at = \"{}\"", rfc3339(early)),
            );
            p.date = format!("{early} +0000");
        });
    });
    t.refused(
        "newer format with unknown fields",
        "format-too-new",
        |_, b| {
            honest(b, "agent-b");
            forge::amend_tip(b, |_, p| {
                p.message = p
                    .message
                    .replace(
                        &format!("Loopx-Format: {}", format_of(&p.message)),
                        "Loopx-Format: 99",
                    )
                    .replace(
                        "actor = \"agent:agent-b\"\n",
                        "actor = \"agent:agent-b\"\nmood = \"sneaky\"\n",
                    );
            });
        },
    );
    t.refused("unknown op fields", "message", |_, b| {
        honest(b, "agent-b");
        forge::amend_tip(b, |_, p| {
            p.message = p.message.replace(
                "actor = \"agent:agent-b\"\n",
                "actor = \"agent:agent-b\"\nmood = \"sneaky\"\n",
            );
        });
    });
    t.refused("author who is not the actor", "author", |_, b| {
        honest(b, "agent-b");
        forge::amend_tip(b, |_, p| {
            p.author = (
                "agent-a".to_owned(),
                "agent-a@agents.loopx.invalid".to_owned(),
            );
        });
    });
    let out = t.a.loopx(&["sync"]).ok();
    assert!(out.stdout.starts_with("Pushed 6 ticks"), "{}", out.stdout);
    t.env.loopx(&["verify"]).ok();
}

#[test]
fn verify_checks_a_range_and_names_the_first_bad_commit() {
    let env = TestEnv::with_board();
    let m = env.machine();
    env.add("One", &[]);
    env.add("Two", &[]);
    let out = env.loopx(&["verify"]).ok();
    assert_eq!(
        out.stdout,
        "Verified 5 ticks (tick 1 to 5): each one re-applies to exactly its tree.\n"
    );
    let out = env
        .loopx(&["verify", "--from", "3", "--to", "4", "--json"])
        .ok();
    let v = out.json();
    assert_eq!(
        (
            v["verified"].as_u64(),
            v["from"].as_u64(),
            v["tick"].as_u64()
        ),
        (Some(2), Some(2), Some(4))
    );
    // A tick dated in the future (forged with plumbing: LOOPX_NOW may fix
    // the clock only in the past) is refused until its time has come, and
    // a LOOPX_NOW ahead of the clock is no way to make it come sooner.
    let before = env.tip().unwrap();
    env.add("From the future", &[]);
    // 2099-01-01T00:00:00Z
    forge::redate_tip(&m, 4_070_908_800);
    let out = env.loopx(&["verify"]).code(3);
    assert!(out.stderr.contains("[future]"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("(tick 6, by Ada Lovelace <ada@example.com>)")
    );
    let out = run(env
        .command()
        .env("LOOPX_NOW", "2099-01-01T00:00:00Z")
        .args(["verify"]))
    .code(2);
    assert!(
        out.stderr
            .contains("LOOPX_NOW is 2099-01-01T00:00:00Z, after this machine's clock"),
        "{}",
        out.stderr
    );
    m.git(&["update-ref", "refs/loopx/state", &before]);
    // A hand edit, then an honest tick on top: the hand edit is named, and
    // nothing after it counts.
    let hand = env.commit_file("notes.txt", b"hello\n");
    env.loopx(&["todo", "add", "On top"]).ok();
    let out = env
        .loopx(&["verify", "--from", "2", "--json"])
        .code(3)
        .json();
    assert_eq!(out["findings"][0]["rule"], "not-a-tick", "{out}");
    assert_eq!(out["findings"][0]["commit"], hand.as_str());
    assert_eq!(out["findings"][0]["tick"], 6);
    assert_eq!(out["verified"], 4, "ticks 2 to 5");
    assert_eq!(m.rev("refs/loopx/state~1").as_deref(), Some(hand.as_str()));
}

#[test]
fn the_hub_hook_chains_an_existing_hook_and_guards_over_git_daemon() {
    let env = TestEnv::with_board();
    let hub = PathBuf::from(env.hub("hub.git"));
    // An existing pre-receive hook stays, and runs first.
    let hooks = hub.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let mark = env.root().join("chained-ran");
    std::fs::write(
        hooks.join("pre-receive"),
        format!(
            "#!/bin/sh\ncat >/dev/null\necho ran >> '{}'\n",
            mark.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        hooks.join("pre-receive"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let out = env
        .loopx(&["-C", hub.to_str().unwrap(), "hub", "install", "--json"])
        .ok()
        .json();
    assert!(
        out["chained"]
            .as_str()
            .unwrap()
            .ends_with("pre-receive.loopx-chained")
    );
    // Installing again updates loopx's hook and keeps the chained one.
    let again = env
        .loopx(&["-C", hub.to_str().unwrap(), "hub", "install", "--json"])
        .ok()
        .json();
    assert_eq!(again["updated"], true);
    // A hub install in a clone with a worktree is refused.
    env.loopx(&["hub", "install"]).code(2);
    // Over the git protocol: honest pushes go through, a rewrite and a
    // deletion of refs/loopx/* do not.
    let daemon = Daemon::start_with(&env, &[("LOOPX_NOW", "2024-12-03T00:00:00Z")]);
    let url = daemon.url("hub.git");
    env.git(&["remote", "add", "origin", &url]);
    env.loopx(&["sync"]).ok();
    assert!(mark.exists(), "the chained hook ran");
    let m = env.machine();
    let first = m.rev("refs/loopx/state~1").unwrap();
    env.add("More", &[]);
    env.loopx(&["sync"]).ok();
    let (ok, err) = forge::push(&m, "origin", &format!("+{first}:refs/loopx/state"));
    assert!(!ok && err.contains("not a fast-forward"), "{err}");
    let (ok, err) = forge::push(&m, "origin", ":refs/loopx/state");
    assert!(!ok && err.contains("never deleted"), "{err}");
    // A forged commit over the same transport.
    honest(&m, "agent-a");
    forge::amend_tip(&m, |m, p| {
        p.tree = forge::tree_with(m, &p.tree, &[("goals/main.toml", Some(b"id = \"main\"\n"))]);
    });
    let (ok, err) = forge::push(&m, "origin", "refs/loopx/state:refs/loopx/state");
    assert!(!ok && err.contains("[tree]"), "{err}");
    // Refs outside refs/loopx/ are not the hook's business.
    let (ok, err) = forge::push(&m, "origin", "refs/loopx/state:refs/heads/anything");
    assert!(ok, "{err}");
}

/// A tiny xorshift generator: the test's choices, repeatable by seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % n as u64).unwrap()
    }
}

/// Forges `m`'s tip (an honest tick just made) in one of the ways of
/// issue 25, returns the rule every verifier must name.
fn forge_tip(m: &Machine, kind: usize, used_ops: &[String]) -> &'static str {
    match kind {
        // An op id an earlier tick used.
        0 if !used_ops.is_empty() => {
            let reused = used_ops[used_ops.len() / 2].clone();
            forge::amend_tip(m, |_, p| {
                let own = p
                    .message
                    .lines()
                    .find_map(|l| l.strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')))
                    .unwrap()
                    .to_owned();
                p.message = p.message.replace(&own, &reused);
            });
            "op-id-reused"
        }
        // An older format than the chain's.
        1 => {
            forge::amend_tip(m, |_, p| {
                p.message = p.message.replace(
                    &format!("Loopx-Format: {}", format_of(&p.message)),
                    "Loopx-Format: 1",
                );
            });
            "format-down"
        }
        // A summary carrying a fake trailer on a line of its own: the op
        // is no longer the one its machine signed, which is checked first.
        _ => {
            forge::amend_tip(m, |_, p| {
                p.message = p.message.replace(
                    "summary = \"checked\"",
                    "summary = \"checked\\nLoopx-Human: Ada Lovelace <ada@example.com>\"",
                );
            });
            "signature"
        }
    }
}

/// Random honest ops from three clones, with forgeries of issue 25's kinds
/// injected (a reused op id, a format that goes down, a fake trailer in a
/// one-line field): every forgery is refused by the guarded hub and by the
/// forger's own sync, and every honest tick is accepted everywhere. The
/// team runs with every signature required (issue 31): each human signs
/// with an announced key every clone and both hubs trust, and each clone's
/// machine is admitted for the agents.
#[test]
fn random_honest_ops_from_three_clones_all_verify_everywhere() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    let guarded = PathBuf::from(env.hub("guarded.git"));
    env.loopx(&["-C", guarded.to_str().unwrap(), "hub", "install"])
        .ok();
    let guarded_url = format!("file://{}", guarded.display());
    env.git(&["remote", "add", "origin", &hub]);
    env.git(&["remote", "add", "guarded", &guarded_url]);
    env.loopx(&["sync"]).ok();
    let machines = [
        env.machine(),
        env.clone_machine("b", &hub),
        env.clone_machine("c", &hub),
    ];
    for m in &machines[1..] {
        m.git(&["remote", "add", "guarded", &guarded_url]);
        m.loopx(&["sync"]).ok();
    }
    // Every signature required: keys, announcements, machines, the policy.
    let names = ["ada", "b", "c"];
    let keys: Vec<PathBuf> = names
        .iter()
        .map(|n| crate::common::keys::keygen(&env, n))
        .collect();
    let allowed = env.root().join("team_allowed_signers");
    let lines: String = names
        .iter()
        .zip(&keys)
        .map(|(n, k)| format!("{n} {}", std::fs::read_to_string(k).unwrap()))
        .collect();
    std::fs::write(&allowed, lines).unwrap();
    for repo in [Path::new(&hub), guarded.as_path()] {
        git_in(
            repo,
            &[
                "config",
                "loopx.allowedSignersFile",
                allowed.to_str().unwrap(),
            ],
        );
    }
    let mut fingerprints = Vec::new();
    for ((m, n), k) in machines.iter().zip(names).zip(&keys) {
        m.git(&[
            "config",
            "loopx.allowedSignersFile",
            allowed.to_str().unwrap(),
        ]);
        crate::common::keys::sign_with(m, k);
        m.loopx(&["sync"]).ok();
        crate::common::keys::announce(m, n, k);
        let v = m
            .loopx(&["--json", "machine", "setup", "--name", &format!("m-{n}")])
            .ok()
            .json();
        fingerprints.push(v["fingerprint"].as_str().unwrap().to_owned());
        m.loopx(&["sync"]).ok();
    }
    machines[0].loopx(&["sync"]).ok();
    for (n, fp) in names.iter().zip(&fingerprints) {
        machines[0]
            .loopx(&[
                "machine",
                "admit",
                &format!("m-{n}"),
                "--fingerprint",
                fp,
                "--for",
                "agent-*",
            ])
            .ok();
    }
    machines[0].loopx(&["signer", "require", "--machines"]).ok();
    for m in &machines {
        m.loopx(&["sync"]).ok();
    }
    let (ok, err) = forge::push(&machines[0], "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    let mut rng = Rng(0x05ee_d0f1_00b5);
    let mut todos: Vec<String> = Vec::new();
    let mut gates: Vec<String> = Vec::new();
    let mut forgeries = 0;
    for step in 0..48 {
        let m = &machines[rng.below(machines.len())];
        let agent = ["agent-a", "agent-b"][rng.below(2)];
        let pick = |rng: &mut Rng, v: &[String]| v.get(rng.below(v.len().max(1))).cloned();
        // Refusals are part of an honest history too: exit codes are not
        // checked here, only that whatever landed verifies.
        match rng.below(13) {
            0 | 1 => {
                let out = m.loopx(&["todo", "add", &format!("Task {step}")]);
                if out.code == 0 {
                    todos.push(out.stdout.trim().to_owned());
                }
            }
            2 | 3 => {
                if let Some(t) = pick(&mut rng, &todos) {
                    let _ = m.agent(agent, &["todo", "claim", &t]);
                }
            }
            4 => {
                if let Some(t) = pick(&mut rng, &todos) {
                    let _ = m.agent(agent, &["todo", "update", &t, "--note", "progress"]);
                }
            }
            5 => {
                if let Some(t) = pick(&mut rng, &todos) {
                    let _ = m.agent(agent, &["todo", "done", &t]);
                }
            }
            6 => {
                if let Some(t) = pick(&mut rng, &todos) {
                    let _ = m.agent(agent, &["todo", "release", &t]);
                }
            }
            7 => {
                let _ = m.agent(agent, &["evidence", "add", "--summary", "checked"]);
            }
            8 => {
                let out = m.agent(
                    agent,
                    &["gate", "open", "--question", "Go on?", "--kind", "decision"],
                );
                if out.code == 0 {
                    gates.push(out.stdout.trim().to_owned());
                }
                if let Some(g) = pick(&mut rng, &gates) {
                    let _ = m.loopx(&["gate", "answer", &g, "--choice", "approve"]);
                }
            }
            9 => {
                let _ = m.loopx(&["todo", "archive"]);
            }
            10 | 11 => {
                // A forgery on an honest tick of this clone.
                let before = m.tip().unwrap();
                let used: Vec<String> = m
                    .git(&["log", "--format=%b", "refs/loopx/state"])
                    .lines()
                    .filter_map(|l| l.strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')))
                    .map(str::to_owned)
                    .collect();
                m.agent(agent, &["evidence", "add", "--summary", "checked"])
                    .ok();
                let rule = forge_tip(m, rng.below(3), &used);
                forgeries += 1;
                let (ok, err) = forge::push(m, "guarded", "refs/loopx/state:refs/loopx/state");
                assert!(
                    !ok && err.contains(&format!("[{rule}]")),
                    "step {step}: the guarded hub must refuse a forgery ({rule}): {err}"
                );
                let out = m.loopx(&["sync"]);
                assert_eq!(
                    out.code, 3,
                    "step {step}: sync pushed a forgery: {}",
                    out.stderr
                );
                assert!(out.stderr.contains(&format!("[{rule}]")), "{}", out.stderr);
                m.git(&["update-ref", "refs/loopx/state", &before]);
            }
            _ => {
                let _ = m.agent(agent, &["sync"]);
            }
        }
    }
    assert!(forgeries > 0, "the seed injects forgeries");
    // Everyone syncs until the hub holds everything.
    for _ in 0..2 {
        for m in &machines {
            m.loopx(&["sync"]).ok();
        }
    }
    let tree = machines[0].tree();
    for m in &machines {
        assert_eq!(m.tree(), tree);
        let out = m.loopx(&["verify", "--json"]).ok().json();
        assert_eq!(out["ok"], true);
    }
    env.loopx(&["-C", &hub, "verify"]).ok();
    // Every honest tick passes the guarded hub.
    let (ok, err) = forge::push(&machines[0], "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    env.loopx(&["-C", guarded.to_str().unwrap(), "verify"]).ok();
}

/// A history an older loopx wrote (format 2: its trailers and its
/// `loopx.toml` say 2) verifies under this one, re-rendered in its own
/// format; a tick that claims an older format than its op kind has is
/// refused.
#[test]
fn a_history_in_an_older_format_verifies_and_a_newer_op_cannot_claim_it() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-a", &["todo", "update", &t, "--note", "halfway"])
        .ok();
    let m = env.machine();
    let now = format!(
        "format = {}\n",
        format_of(&forge::read(&m, "refs/loopx/state").message)
    );
    let commits = m.git(&["rev-list", "--reverse", "refs/loopx/state"]);
    let mut parent: Option<String> = None;
    for c in commits.lines() {
        let mut p = forge::read(&m, c);
        assert_eq!(format_of(&p.message), "7");
        p.message = p.message.replace("Loopx-Format: 7\n", "Loopx-Format: 2\n");
        let toml = String::from_utf8(forge::file(&m, c, "loopx.toml")).unwrap();
        assert!(toml.starts_with(&now), "{toml}");
        let old = toml.replacen("format = 7\n", "format = 2\n", 1);
        p.tree = forge::tree_with(&m, &p.tree, &[("loopx.toml", Some(old.as_bytes()))]);
        p.parent = parent.clone();
        parent = Some(forge::write(&m, &p));
    }
    m.git(&["update-ref", "refs/loopx/state", parent.as_deref().unwrap()]);
    env.loopx(&["verify"]).ok();
    // New ticks on that state carry this binary's format, and verify too.
    env.agent("agent-a", &["quota", "park", "--until", "1h"])
        .ok();
    assert_eq!(format_of(&forge::read(&m, "refs/loopx/state").message), "7");
    env.loopx(&["verify"]).ok();
    // The park claims format 2, which has no such op.
    forge::amend_tip(&m, |_, p| {
        p.message = p.message.replace("Loopx-Format: 7\n", "Loopx-Format: 2\n");
    });
    let v = env.loopx(&["verify", "--json"]).code(3).json();
    let text = v.to_string();
    assert!(text.contains("\"message\""), "{text}");
    assert!(
        text.contains(
            "its op quota.park first exists in format 3, but the tick says Loopx-Format 2"
        ),
        "{text}"
    );
}

#[test]
fn a_long_verify_prints_no_progress_into_a_pipe_and_threads_agree() {
    let env = TestEnv::with_board();
    for i in 0..12 {
        env.add(&format!("Todo {i}"), &[]);
    }
    let mut answers = Vec::new();
    for threads in ["1", "2"] {
        // stderr is a pipe here: no progress line, whatever the length.
        let out = run(env
            .command()
            .env("LOOPX_VERIFY_THREADS", threads)
            .args(["verify"]))
        .ok();
        assert_eq!(out.stderr, "", "{threads} thread(s)");
        assert!(
            out.stdout.starts_with("Verified 15 ticks"),
            "{}",
            out.stdout
        );
        let json = run(env
            .command()
            .env("LOOPX_VERIFY_THREADS", threads)
            .args(["verify", "--from", "4", "--json"]))
        .ok();
        assert_eq!(json.stderr, "");
        answers.push(json.json());
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0]["verified"], 12);
}
