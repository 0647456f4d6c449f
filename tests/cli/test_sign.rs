//! Signed human authority and trusted validations, with real keys made by
//! `ssh-keygen` in the temp dir, a real `ssh-agent`, real clones and a real
//! bare hub. Skipped (with a message) where OpenSSH's tools are missing;
//! `.ci/run` installs them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::fixtures::publish_gate;
use crate::common::forge::renumber;
use crate::common::keys::{announce, fingerprint, have_openssh, keygen, sign_with, signer, trust};
use crate::common::{Output, TestEnv, git_in, isolate, run};

fn code(out: &Output) -> String {
    out.error_code()
}

/// A board pushed to a fresh hub as `origin`.
fn team() -> (TestEnv, String) {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["sync"]).ok();
    (env, hub)
}

#[test]
fn signed_answers_verify_and_replay_across_clones() {
    if !have_openssh() {
        return;
    }
    let (env, hub) = team();
    let a = env.machine();
    let ada = keygen(&env, "ada");
    let fp = fingerprint(&ada);
    // Ada announces her key and trusts it here, then signs with it.
    a.loopx(&["signer", "announce", "ada", "--key", &ada.to_string_lossy()])
        .ok();
    let out = a
        .loopx(&["--json", "signer", "trust", "ada", "--fingerprint", &fp])
        .ok();
    assert_eq!(out.json()["added"], true);
    sign_with(&a, &ada);
    let gate = publish_gate(&a);
    a.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    let shown = a.loopx(&["gate", "show", &gate]).ok().stdout;
    assert!(
        shown.contains("answer: approve by Ada Lovelace at "),
        "{shown}"
    );
    assert!(shown.contains(&format!("signed by ada ({fp})")), "{shown}");
    let log = a.loopx(&["log", "-n", "1"]).ok().stdout;
    assert!(log.ends_with(&format!("[signed by ada ({fp})]\n")), "{log}");
    let gate_file = a.git(&["show", &format!("refs/loopx/state:gates/{gate}.toml")]);
    assert!(gate_file.contains("\nsignature = \""), "{gate_file}");
    a.loopx(&["sync"]).ok();

    // Bob's clone trusts Ada too, by the same fingerprint: the signed answer
    // comes through sync and reads as hers.
    let b = env.clone_machine("bob", &hub);
    b.loopx(&["sync"]).ok();
    let out = b
        .loopx(&["signer", "trust", "ada", "--fingerprint", "SHA256:not-hers"])
        .code(3);
    assert!(out.stderr.contains("fingerprint-mismatch") || out.stderr.contains(&fp));
    b.loopx(&["signer", "trust", "ada", "--fingerprint", &fp])
        .ok();
    b.loopx(&["sync"]).ok();
    let shown = b.loopx(&["--json", "gate", "show", &gate]).ok().json();
    assert_eq!(shown["closed_signature"]["signer"], "ada");
    assert_eq!(shown["closed_signature"]["fingerprint"], fp.as_str());

    // A signed answer made while Bob moved the hub on is replayed onto
    // Bob's tick: the gate file it signed is unchanged, so it still holds.
    let second = publish_gate(&a);
    a.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    a.loopx(&["gate", "answer", &second, "--choice", "reject"])
        .ok();
    b.add("Bob's todo");
    b.loopx(&["sync"]).ok();
    let out = a.loopx(&["--json", "sync"]).ok().json();
    assert_eq!(out["outcome"], "replayed", "{out}");
    b.loopx(&["sync"]).ok();
    let shown = b.loopx(&["gate", "show", &second]).ok().stdout;
    assert!(shown.contains("answer: reject by Ada Lovelace"), "{shown}");
    assert!(shown.contains(&format!("signed by ada ({fp})")), "{shown}");
}

#[test]
fn unsigned_and_unknown_key_acts_are_refused_locally() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let m = env.machine();
    let ada = keygen(&env, "ada");
    let mallory = keygen(&env, "mallory");
    let gate = publish_gate(&m);
    // Nobody trusted: works as before, and says so once.
    let out = m.loopx(&["status"]).ok();
    assert!(
        out.stderr.contains("human acts here are unsigned"),
        "{}",
        out.stderr
    );
    let out = m.loopx(&["status"]).ok();
    assert!(!out.stderr.contains("unsigned"), "{}", out.stderr);

    trust(&m, "ada", &ada);
    let before = env.tip();
    let out = m
        .loopx(&["--json", "gate", "answer", &gate, "--choice", "approve"])
        .code(3);
    assert_eq!(code(&out), "unsigned");
    assert!(
        out.stderr.contains("git config gpg.format ssh"),
        "{}",
        out.stderr
    );
    // Every human act, not only answers.
    let out = m
        .loopx(&["--json", "goal", "set", "main", "--status", "paused"])
        .code(3);
    assert_eq!(code(&out), "unsigned");
    // Signed, but by a key this machine does not list.
    sign_with(&m, &mallory);
    let out = m
        .loopx(&["--json", "gate", "answer", &gate, "--choice", "approve"])
        .code(3);
    assert_eq!(code(&out), "unknown-signer");
    assert!(
        out.stderr.contains(&fingerprint(&mallory)),
        "{}",
        out.stderr
    );
    assert_eq!(env.tip(), before, "a refused act changes nothing");
    // Ada's key passes once the state says it is hers, and acts that are
    // not human acts need nothing.
    sign_with(&m, &ada);
    let out = m
        .loopx(&["--json", "gate", "answer", &gate, "--choice", "approve"])
        .code(3);
    assert_eq!(code(&out), "not-announced", "{}", out.stderr);
    announce(&m, "ada", &ada);
    m.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    m.agent("agent-a", &["todo", "add", "Unsigned agent work"])
        .ok();
}

/// Writes a commit onto the hub's state ref with plain git: `message` on
/// top of the hub's tip, with `tree`.
/// Commits `message` on the hub's state by plumbing, dated `date` (the
/// op's own time, so that only its signature is wrong).
fn forge(env: &TestEnv, hub: &str, tree: &str, message: &str, date: &str) {
    let tip = git_in(Path::new(hub), &["rev-parse", "refs/loopx/state"]);
    let mut c = Command::new("git");
    isolate(&mut c, env.root());
    let out = c
        .args(["commit-tree", tree, "-p", tip.trim(), "-m", message])
        .current_dir(hub)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    git_in(Path::new(hub), &["update-ref", "refs/loopx/state", &commit]);
}

#[test]
fn sync_refuses_an_old_signed_act_replayed_an_unsigned_one_and_an_unknown_key() {
    if !have_openssh() {
        return;
    }
    let (env, hub) = team();
    let a = env.machine();
    let ada = signer(&env, &a, "ada");
    a.loopx(&["goal", "set", "main", "--status", "paused"]).ok();
    let paused = a.git(&["rev-parse", "refs/loopx/state"]).trim().to_owned();
    let paused_msg = a.git(&["log", "-1", "--format=%B", &paused]);
    let paused_at = format!("@{}", a.git(&["log", "-1", "--format=%at", &paused]).trim());
    a.loopx(&["goal", "set", "main", "--status", "active"]).ok();
    a.loopx(&["sync"]).ok();
    let b = env.clone_machine("bob", &hub);
    trust(&b, "ada", &ada);
    b.loopx(&["sync"]).ok();
    let b_tip = b.tip();

    // The old signed "pause" is replayed on the hub: refused.
    let tree = a.git(&["rev-parse", &format!("{paused}^{{tree}}")]);
    let ticks = a.git(&["rev-list", "--count", "refs/loopx/state"]);
    let next = ticks.trim().parse::<usize>().unwrap() + 1;
    forge(
        &env,
        &hub,
        tree.trim(),
        &renumber(&paused_msg, next),
        &paused_at,
    );
    let out = b.loopx(&["--json", "sync"]).code(3);
    // A replayed act carries its op id again, which verify refuses before
    // it reads the signature (an op id appears once along a chain); the
    // signature rule catches it where the id is changed (below).
    assert_eq!(code(&out), "invalid-tick", "{}", out.stderr);
    assert!(out.stderr.contains("[op-id-reused]"), "{}", out.stderr);
    assert_eq!(b.tip(), b_tip, "a refused sync moves nothing");

    // The same act with its signature stripped: unsigned.
    git_in(
        Path::new(&hub),
        &[
            "update-ref",
            "refs/loopx/state",
            a.tip().as_deref().unwrap(),
        ],
    );
    // (under a fresh op id: the old one is refused as reused, above)
    let stripped: String = renumber(&paused_msg, next)
        .lines()
        .filter(|l| !l.starts_with("signature = "))
        .map(|l| {
            if l.starts_with("id = ") {
                "id = \"o-5eed5eed5eed5eed\""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    forge(&env, &hub, tree.trim(), &stripped, &paused_at);
    let out = b.loopx(&["--json", "sync"]).code(3);
    assert_eq!(code(&out), "unsigned", "{}", out.stderr);
    assert_eq!(b.tip(), b_tip);

    // A machine that trusts nobody lets Carol sign with a key she
    // announced herself; Bob's machine, which trusts only Ada, takes her
    // announcement (signed by the key it names, it grants nothing) and
    // refuses her answer.
    git_in(
        Path::new(&hub),
        &[
            "update-ref",
            "refs/loopx/state",
            a.tip().as_deref().unwrap(),
        ],
    );
    let c = env.clone_machine("carol", &hub);
    let carol = keygen(&env, "carol");
    c.loopx(&["sync"]).ok();
    sign_with(&c, &carol);
    c.loopx(&[
        "signer",
        "announce",
        "carol",
        "--key",
        &carol.to_string_lossy(),
    ])
    .ok();
    let gate = publish_gate(&c);
    c.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    c.loopx(&["sync"]).ok();
    let out = b.loopx(&["--json", "sync"]).code(3);
    assert_eq!(code(&out), "unknown-signer", "{}", out.stderr);
    assert_eq!(b.tip(), b_tip);
    assert!(
        out.stderr.contains("gate.answer by carol"),
        "{}",
        out.stderr
    );
    // On Carol's own machine the announcement stands, and still counts for
    // nothing: no allowed signer lists her key.
    let listed = c.loopx(&["--json", "signer", "list"]).ok().json();
    assert_eq!(listed["enforced"], false);
    let carol_row = listed["signers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "carol")
        .expect("carol is listed")
        .clone();
    assert_eq!(carol_row["trusted_as"], serde_json::Value::Null);
    let shown = c.loopx(&["gate", "show", &gate]).ok().stdout;
    assert!(
        shown.contains(&format!(
            "signed by an untrusted key ({})",
            fingerprint(&carol)
        )),
        "{shown}"
    );
}

/// An `ssh-agent` of the test's own, killed when dropped.
struct Agent {
    child: Child,
    sock: PathBuf,
}

impl Agent {
    fn start(env: &TestEnv) -> Agent {
        let sock = env.root().join("agent.sock");
        let child = Command::new("ssh-agent")
            .args(["-D", "-a"])
            .arg(&sock)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ssh-agent runs");
        // ssh-agent binds the socket before it listens: the file can exist
        // while a connection is still refused, so wait for one to succeed.
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "ssh-agent did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Agent { child, sock }
    }

    fn add(&self, private: &Path) {
        let out = Command::new("ssh-add")
            .arg(private)
            .env("SSH_AUTH_SOCK", &self.sock)
            .output()
            .expect("ssh-add runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_agent_that_sheds_its_markers_without_the_key_cannot_answer_a_publish_gate() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let m = env.machine();
    let ada = keygen(&env, "ada");
    trust(&m, "ada", &ada);
    // Ada's private key lives only in her ssh-agent: the file is gone.
    let agent = Agent::start(&env);
    agent.add(&ada.with_extension(""));
    std::fs::remove_file(ada.with_extension("")).expect("remove the private key");
    let key = std::fs::read_to_string(&ada).unwrap();
    m.git(&["config", "gpg.format", "ssh"]);
    m.git(&["config", "user.signingKey", &format!("key::{}", key.trim())]);
    let gate = publish_gate(&m);

    // The agent drops LOOPX_AGENT and its runtime markers: loopx takes it
    // for the human, but it cannot reach the key, so it cannot sign.
    let before = env.tip();
    let out = run(m
        .command()
        .args(["--json", "gate", "answer", &gate, "--choice", "approve"]));
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(code(&out), "signing-failed", "{}", out.stderr);
    assert_eq!(env.tip(), before);
    // An agent identity never signs, even with the key at hand.
    let out = run(m
        .command()
        .env("SSH_AUTH_SOCK", &agent.sock)
        .env("LOOPX_AGENT", "agent-a")
        .args(["--json", "gate", "answer", &gate, "--choice", "approve"]));
    assert_eq!(out.code, 3);
    assert_eq!(code(&out), "humans-only");
    // Ada, whose shell holds the agent, announces her key and answers:
    // signed through ssh-agent.
    let out = run(m.command().env("SSH_AUTH_SOCK", &agent.sock).args([
        "signer",
        "announce",
        "ada",
        "--key",
        &ada.to_string_lossy(),
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(m
        .command()
        .env("SSH_AUTH_SOCK", &agent.sock)
        .args(["gate", "answer", &gate, "--choice", "approve"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = m.loopx(&["gate", "show", &gate]).ok().stdout;
    assert!(
        shown.contains(&format!("signed by ada ({})", fingerprint(&ada))),
        "{shown}"
    );
    drop(agent);
}

#[test]
fn untrusted_validations_do_not_run_and_trusted_ones_do() {
    if !have_openssh() {
        return;
    }
    let (env, hub) = team();
    let a = env.machine();
    signer(&env, &a, "ada");
    // Bob's clone writes a todo whose validation would create a file.
    let b = env.clone_machine("bob", &hub);
    b.loopx(&["sync"]).ok();
    let id = b
        .loopx(&["todo", "add", "Fix typo", "--", "sh", "-c", "touch PWNED"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    a.agent("agent-a", &["todo", "claim", &id]).ok();
    let out = a.agent("agent-a", &["--json", "todo", "done", &id]).code(3);
    assert_eq!(code(&out), "untrusted-validation");
    assert!(
        out.stderr.contains("`sh -c 'touch PWNED'`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("bob wrote it"), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("loopx todo trust {id}")),
        "{}",
        out.stderr
    );
    assert!(
        !env.repo.join("PWNED").exists(),
        "the untrusted validation ran"
    );
    // settle --done refuses the same way.
    let token = a
        .agent("agent-a", &["--json", "quota", "should-run"])
        .json()["turn_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if !token.is_empty() {
        let out = a.agent(
            "agent-a",
            &[
                "--json",
                "settle",
                "--turn",
                &token,
                "--todo",
                &id,
                "--outcome",
                "advanced",
                "--done",
            ],
        );
        assert_eq!(code(&out), "untrusted-validation", "{}", out.stderr);
        assert!(!env.repo.join("PWNED").exists());
    }
    // Ada trusts it (a signed human act); now it runs.
    let shown = a.loopx(&["--json", "todo", "show", &id]).ok().json();
    assert_eq!(shown["validation_here"]["runs"], false, "{shown}");
    assert_eq!(shown["validate_from"]["by"], "human:bob <bob@example.com>");
    let out = a.loopx(&["todo", "trust", &id]).ok();
    assert!(out.stdout.contains("signed by ada"), "{}", out.stdout);
    let shown = a.loopx(&["todo", "show", &id]).ok().stdout;
    assert!(
        shown.contains(
            "validation: `sh -c 'touch PWNED'` (timeout 5m)\n  runs here: trusted: signed by ada ("
        ),
        "{shown}"
    );
    a.agent("agent-a", &["todo", "done", &id]).ok();
    assert!(
        env.repo.join("PWNED").exists(),
        "the trusted validation did not run"
    );

    // Written on this clone: runs on this clone without more ado.
    let own = b
        .loopx(&["todo", "add", "Own check", "--", "sh", "-c", "touch MINE"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    b.agent("agent-a", &["todo", "claim", &own]).ok();
    b.agent("agent-a", &["todo", "done", &own]).ok();
    assert!(b.repo.join("MINE").exists());
}

#[test]
fn todo_trust_is_voided_by_an_edit_and_config_all_runs_everything() {
    if !have_openssh() {
        return;
    }
    let (env, hub) = team();
    let a = env.machine();
    signer(&env, &a, "ada");
    let b = env.clone_machine("bob", &hub);
    b.loopx(&["sync"]).ok();
    let id = b
        .loopx(&["todo", "add", "Check", "--", "true"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    a.loopx(&["todo", "trust", &id]).ok();
    a.loopx(&["sync"]).ok();
    // Bob changes the validation after Ada trusted it.
    b.loopx(&["sync"]).ok();
    b.loopx(&["todo", "edit", &id, "--", "sh", "-c", "touch EDITED"])
        .ok();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    a.agent("agent-a", &["todo", "claim", &id]).ok();
    let out = a.agent("agent-a", &["--json", "todo", "done", &id]).code(3);
    assert_eq!(code(&out), "untrusted-validation");
    assert!(out.stderr.contains("(edit "), "{}", out.stderr);
    assert!(!env.repo.join("EDITED").exists());
    // The machine's own git config may let every validation run.
    a.git(&["config", "loopx.runValidations", "all"]);
    a.agent("agent-a", &["todo", "done", &id]).ok();
    assert!(env.repo.join("EDITED").exists());
}

#[test]
fn a_validation_the_tool_guard_denies_is_refused() {
    let env = TestEnv::with_board();
    env.loopx(&["hooks", "install", "--runtime", "claude-code", "--guard"])
        .ok();
    let id = env.add("Release", &["--", "cargo", "+nightly", "publish"]);
    env.agent("agent-a", &["todo", "claim", &id]).ok();
    env.agent(
        "agent-b",
        &[
            "gate",
            "open",
            "--kind",
            "publish",
            "--question",
            "Publish?",
            "--blocks",
            "agent:agent-b",
        ],
    )
    .ok();
    let out = env
        .agent("agent-a", &["--json", "todo", "done", &id])
        .code(3);
    assert_eq!(code(&out), "untrusted-validation", "{}", out.stderr);
    assert!(out.stderr.contains("tool guard"), "{}", out.stderr);
}

/// `loopx verify` and a guarded hub make the same signature check as sync:
/// an unsigned copy of a human act is found by the `signature` rule, and a
/// hub that trusts Ada refuses it at push time.
#[test]
fn verify_and_a_guarded_hub_refuse_an_unsigned_human_act() {
    if !have_openssh() {
        return;
    }
    let (env, hub) = team();
    let a = env.machine();
    signer(&env, &a, "ada");
    a.loopx(&["goal", "set", "main", "--status", "paused"]).ok();
    let paused = a.git(&["rev-parse", "refs/loopx/state"]).trim().to_owned();
    let paused_msg = a.git(&["log", "-1", "--format=%B", &paused]);
    let tree = a.git(&["rev-parse", &format!("{paused}^{{tree}}")]);
    let date = format!(
        "@{} +0000",
        a.git(&["log", "-1", "--format=%at", &paused]).trim()
    );
    a.loopx(&["goal", "set", "main", "--status", "active"]).ok();
    a.loopx(&["sync"]).ok();
    a.loopx(&["verify"]).ok();
    let next = a
        .git(&["rev-list", "--count", "refs/loopx/state"])
        .trim()
        .parse::<usize>()
        .unwrap()
        + 1;
    // Unsigned, and under a fresh op id (the same id again is refused as a
    // reused op id before anything else).
    let stripped: String = renumber(&paused_msg, next)
        .lines()
        .filter(|l| !l.starts_with("signature = "))
        .map(|l| {
            if l.starts_with("id = \"o-") {
                "id = \"o-00000000000000f1\"".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");

    // The unsigned copy, made with plain git on a's own clone.
    let tip = a.tip().expect("a has a state");
    let mut c = Command::new("git");
    isolate(&mut c, env.root());
    let out = c
        .args(["commit-tree", tree.trim(), "-p", &tip, "-m", &stripped])
        .current_dir(&a.repo)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Lovelace")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let forged = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    a.git(&["update-ref", "refs/loopx/forged", &forged]);

    let out = a
        .loopx(&["--json", "verify", "--to", "refs/loopx/forged"])
        .code(3);
    let doc = out.json();
    assert_eq!(doc["findings"][0]["rule"], "signature", "{doc}");
    assert_eq!(doc["findings"][0]["refusal"], "unsigned", "{doc}");
    assert_eq!(doc["findings"][0]["commit"], forged.as_str(), "{doc}");

    // The hub trusts Ada too, and guards its refs.
    let signers = a.repo.with_extension("allowed_signers");
    git_in(
        Path::new(&hub),
        &[
            "config",
            "loopx.allowedSignersFile",
            &signers.to_string_lossy(),
        ],
    );
    env.loopx(&["-C", &hub, "hub", "install"]).ok();
    let hub_tip = git_in(Path::new(&hub), &["rev-parse", "refs/loopx/state"]);
    let mut c = Command::new("git");
    isolate(&mut c, env.root());
    let out = c
        .args(["push", &hub, &format!("{forged}:refs/loopx/state")])
        .current_dir(&a.repo)
        .output()
        .expect("git runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the hub took an unsigned act: {stderr}"
    );
    assert!(stderr.contains("signature"), "{stderr}");
    assert_eq!(
        git_in(Path::new(&hub), &["rev-parse", "refs/loopx/state"]),
        hub_tip,
        "a refused push moves nothing"
    );
    // A signed act still goes through the guarded hub.
    a.loopx(&["goal", "set", "main", "--status", "paused"]).ok();
    a.loopx(&["sync"]).ok();
    assert_eq!(
        git_in(Path::new(&hub), &["rev-parse", "refs/loopx/state"]).trim(),
        a.tip().unwrap()
    );
}
