//! Trust, closed (issue 25 items 1, 2, 5, 6, 7). Each test is the attack:
//! commits forged with git plumbing on one clone, pushed to a hub guarded by
//! `loopx hub install` (over file://) and to a plain one, then refused by
//! the guarded hub, by another clone's `sync` and by its `verify`, with the
//! rule named, nothing moved, and honest work going on afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::fixtures::publish_gate;
use crate::common::forge::{self, Parts};
use crate::common::hubs::{clone, guarded_url, hub_tip, hubs, push_guarded, refused_everywhere};
use crate::common::keys::{announce, have_openssh, keygen, sign_with, signer, trust};
use crate::common::{Machine, TestEnv, git_in};

/// The op id in a tick's message.
fn op_id(message: &str) -> String {
    message
        .lines()
        .find_map(|l| l.strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')))
        .expect("a tick has an op id")
        .to_owned()
}

fn todo_path(id: &str) -> String {
    format!("todos/{}/{id}.toml", &id[2..4])
}

/// Item 1: the rogue machine gives its own P0 `todo add -- sh -c …` the op
/// id of a harmless validation Ada's clone wrote. Refused everywhere, so
/// Ada's agent never claims it and the command never runs.
#[test]
fn a_tick_that_reuses_an_op_id_is_refused_everywhere() {
    let env = TestEnv::with_board();
    let h = hubs(&env);
    let a = env.machine();
    let harmless = a.add("Check the docs");
    a.loopx(&["todo", "edit", &harmless, "--", "true"]).ok();
    let harmless_op = op_id(&forge::read(&a, "refs/loopx/state").message);
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    let b = clone(&env, &h, "mallory");
    let start = b.tip().unwrap();
    let evil = b
        .loopx(&[
            "todo",
            "add",
            "Fix typo",
            "--priority",
            "P0",
            "--",
            "sh",
            "-c",
            "touch PWNED",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    forge::amend_tip(&b, |m, p| {
        let own = op_id(&p.message);
        p.message = p.message.replace(&own, &harmless_op);
        let path = todo_path(&evil);
        let file = String::from_utf8(forge::file(m, "refs/loopx/state", &path))
            .unwrap()
            .replace(&own, &harmless_op);
        assert!(file.contains(&harmless_op), "{file}");
        p.tree = forge::tree_with(m, &p.tree, &[(path.as_str(), Some(file.as_bytes()))]);
    });
    refused_everywhere(&h, &b, &a, &start, "op-id-reused", Some("op-id-reused"));
    assert!(!a.repo.join("PWNED").exists());
    // Honest work goes on: the harmless validation runs where it was written.
    a.agent("agent-a", &["todo", "claim", &harmless]).ok();
    a.agent("agent-a", &["todo", "done", &harmless]).ok();
    a.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    b.loopx(&["verify"]).ok();
}

/// Item 1: a validation written on this clone runs only as written: a
/// forged tick that keeps its op id in `validate_from` but changes the
/// command (the same todo, another argv) is not "written here".
#[test]
fn a_validation_written_here_runs_only_as_written() {
    let env = TestEnv::with_board();
    let m = env.machine();
    let t = m.add("Check");
    m.loopx(&["todo", "edit", &t, "--", "true"]).ok();
    m.agent(
        "agent-a",
        &["evidence", "add", "--summary", "looked around"],
    )
    .ok();
    let honest = m.tip().unwrap();
    forge::amend_tip(&m, |m, p| {
        let path = todo_path(&t);
        let file = String::from_utf8(forge::file(m, "refs/loopx/state", &path)).unwrap();
        let changed = file.replace(
            "argv = [\"true\"]",
            "argv = [\"sh\", \"-c\", \"touch PWNED\"]",
        );
        assert_ne!(file, changed, "{file}");
        p.tree = forge::tree_with(m, &p.tree, &[(path.as_str(), Some(changed.as_bytes()))]);
    });
    m.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = m.agent("agent-a", &["--json", "todo", "done", &t]).code(3);
    // The hand-made tick is not a valid one: the tip it made is not
    // verified, so nothing runs on it (issue 44's verified tip); the
    // record of what was written here would refuse the changed command too.
    assert_eq!(out.error_code(), "unverified-tip", "{}", out.stderr);
    assert!(!m.repo.join("PWNED").exists(), "the changed command ran");
    // Back on the honest tip, the one it wrote runs: a fresh todo with its
    // own validation.
    m.git(&["update-ref", "refs/loopx/state", &honest]);
    let own = m.add("Own check");
    m.loopx(&["todo", "edit", &own, "--", "true"]).ok();
    m.agent("agent-b", &["todo", "claim", &own]).ok();
    m.agent("agent-b", &["todo", "done", &own]).ok();
}

/// Item 2: once this clone has enforced signatures, a renamed, emptied or
/// unconfigured allowed-signers file refuses every human act (signed or
/// not), and `verify` fails closed too; restored, work goes on.
#[test]
fn a_missing_trust_root_refuses_every_human_act() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let a = env.machine();
    let ada = signer(&env, &a, "ada");
    let gate = publish_gate(&a);
    let before = a.tip();
    let file = a.repo.with_extension("allowed_signers");
    let moved = a.repo.with_extension("moved");
    // The agent renames the file (same OS user) and answers unsigned.
    std::fs::rename(&file, &moved).unwrap();
    a.git(&["config", "--unset", "user.signingKey"]);
    let out = a
        .loopx(&["--json", "gate", "answer", &gate, "--choice", "approve"])
        .code(3);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stderr);
    assert!(out.stderr.contains("is missing"), "{}", out.stderr);
    assert!(
        out.stderr.contains("restore the allowed-signers file"),
        "{}",
        out.stderr
    );
    // Signed by Ada: still nothing counts until the file is back.
    sign_with(&a, &ada);
    let out = a
        .loopx(&["--json", "gate", "answer", &gate, "--choice", "approve"])
        .code(3);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stderr);
    // An emptied file, or none configured: the same.
    std::fs::write(&file, "# nobody\n").unwrap();
    let out = a.loopx(&["--json", "goal", "set", "main", "--status", "paused"]);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stderr);
    let configured = a.git(&["config", "loopx.allowedSignersFile"]);
    a.git(&["config", "--unset", "loopx.allowedSignersFile"]);
    let out = a.loopx(&["--json", "goal", "set", "main", "--status", "paused"]);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stderr);
    // verify fails closed on the history's human acts.
    let v = a.loopx(&["--json", "verify"]).code(3).json();
    assert_eq!(v["findings"][0]["rule"], "signature", "{v}");
    assert_eq!(v["findings"][0]["refusal"], "no-trust-root", "{v}");
    assert_eq!(a.tip(), before, "nothing moved");
    // Restored: honest work goes on.
    a.git(&["config", "loopx.allowedSignersFile", configured.trim()]);
    std::fs::rename(&moved, &file).unwrap();
    a.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    a.loopx(&["verify"]).ok();
}

/// Item 2: the state can require signatures for the whole team (a signed
/// act). A clone with no allowed-signers file then refuses every human act
/// (it fails closed, with what to do), and its unsigned act, forged onto
/// the hub with plumbing, is refused by the guarded hub, by a clone that
/// trusts Ada and by its own verify.
#[test]
fn a_state_that_requires_signatures_binds_every_clone() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let h = hubs(&env);
    let a = env.machine();
    signer(&env, &a, "ada");
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    let b = clone(&env, &h, "bob");
    // Bob's unsigned pause, written before the policy: the template of the
    // forgery below.
    b.loopx(&["goal", "set", "main", "--status", "paused"]).ok();
    let template = forge::read(&b, "refs/loopx/state");
    let goal_file = forge::file(&b, "refs/loopx/state", "goals/main.toml");
    // Unsigned, the policy cannot be set.
    let out = b.loopx(&["--json", "signer", "require"]).code(3);
    assert_eq!(out.error_code(), "unsigned", "{}", out.stderr);
    b.git(&[
        "update-ref",
        "refs/loopx/state",
        template.parent.as_deref().unwrap(),
    ]);
    // Ada sets it, signed.
    let out = a.loopx(&["--json", "signer", "require"]).ok().json();
    assert_eq!(out["required"], true, "{out}");
    let toml = String::from_utf8(forge::file(&a, "refs/loopx/state", "loopx.toml")).unwrap();
    assert!(toml.contains("signatures = \"humans\""), "{toml}");
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    // Bob's clone trusts nobody: every human act is refused, with a hint.
    let before = b.tip();
    let out = b.loopx(&["--json", "goal", "set", "main", "--status", "paused"]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stderr);
    assert!(out.stderr.contains("requires signatures"), "{}", out.stderr);
    assert_eq!(b.tip(), before);
    // Forged with plumbing on top of the policy: the same pause, unsigned.
    let start = b.tip().unwrap();
    let edits = [("goals/main.toml", Some(goal_file.as_slice()))];
    let forged = forge::tick_on(&b, &start, &template, &edits);
    b.git(&["update-ref", "refs/loopx/state", &forged]);
    refused_everywhere(&h, &b, &a, &start, "signature", Some("unsigned"));
    // Bob's own verify refuses it too (no trust root), and his clone still
    // does the agents' work.
    b.git(&["update-ref", "refs/loopx/state", &forged]);
    let v = b.loopx(&["--json", "verify"]).code(3).json();
    assert_eq!(v["findings"][0]["refusal"], "no-trust-root", "{v}");
    b.git(&["update-ref", "refs/loopx/state", &start]);
    b.agent("agent-a", &["todo", "add", "Agent work"]).ok();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    a.loopx(&["verify"]).ok();
}

/// Signs `record` with the private key next to `public` (namespace loopx)
/// and returns the stored form: the base64 body on one line.
fn ssh_sign(public: &Path, record: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", "loopx", "-f"])
        .arg(public.with_extension(""))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(record).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The record a format-4 signature covers (docs/gates.md, "What a
/// signature proves"), rebuilt from an honest signed tick: the root
/// commit, the op without its signature, and the hashes of the files it
/// changed, as they were at its parent.
fn record_of(m: &Machine, commit: &str, root: &str) -> Vec<u8> {
    let parts = forge::read(m, commit);
    let body = parts
        .message
        .split_once("\n\n")
        .unwrap()
        .1
        .rsplit_once("\n\n")
        .unwrap()
        .0
        .lines()
        .filter(|l| !l.starts_with("signature = "))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = format!("loopx signed act 2\nstate = \"{root}\"\n{body}\n\n[revision]\n");
    let parent = parts.parent.unwrap();
    let mut changed: Vec<String> = m
        .git(&["diff", "--name-only", &parent, commit])
        .lines()
        .map(str::to_owned)
        .collect();
    changed.sort();
    for path in changed {
        let listed = m.git(&["ls-tree", "--name-only", &parent, &path]);
        let hash = if listed.trim().is_empty() {
            "absent".to_owned()
        } else {
            sha256_hex(&forge::file(m, &parent, &path))
        };
        out.push_str(&format!("\"{path}\" = \"{hash}\"\n"));
    }
    out.into_bytes()
}

/// Item 5: Bob's trusted key signs a gate answer whose actor is Ada.
/// Refused by every clone alike (`not-announced`), even one whose own
/// allowed-signers file calls Bob's key "ada": whose key it is comes from
/// the state's announcements.
#[test]
fn bobs_key_cannot_sign_an_act_as_ada() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let h = hubs(&env);
    let a = env.machine();
    let ada = keygen(&env, "ada");
    let bob = keygen(&env, "bob");
    trust(&a, "ada", &ada);
    trust(&a, "bob", &bob);
    sign_with(&a, &ada);
    announce(&a, "ada", &ada);
    a.loopx(&["sync"]).ok();
    let b = clone(&env, &h, "bob");
    trust(&b, "ada", &ada);
    trust(&b, "bob", &bob);
    sign_with(&b, &bob);
    announce(&b, "bob", &bob);
    let gate = publish_gate(&b);
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    let root = a
        .git(&["rev-list", "--max-parents=0", "refs/loopx/state"])
        .trim()
        .to_owned();
    // Bob's machine calls its human Ada: his key is refused for her act.
    b.git(&["config", "user.name", "Ada Lovelace"]);
    b.git(&["config", "user.email", "ada@example.com"]);
    let before = b.tip();
    let out = b
        .loopx(&["--json", "gate", "answer", &gate, "--choice", "approve"])
        .code(3);
    assert_eq!(out.error_code(), "not-announced", "{}", out.stderr);
    assert!(
        out.stderr.contains("bob <bob@example.com>"),
        "{}",
        out.stderr
    );
    assert_eq!(b.tip(), before);
    // With plumbing: Ada's honest signed answer as a template, re-signed
    // with Bob's key over exactly the record loopx signs.
    let start = a.tip().unwrap();
    a.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    let honest = a.tip().unwrap();
    let record = record_of(&a, &honest, &root);
    let template = forge::read(&a, &honest);
    a.git(&["update-ref", "refs/loopx/state", &start]);
    let ada_sig = template
        .message
        .lines()
        .find_map(|l| {
            l.strip_prefix("signature = \"")
                .and_then(|r| r.strip_suffix('"'))
        })
        .unwrap()
        .to_owned();
    let bob_sig = ssh_sign(&bob, &record);
    // The record is the one loopx signs: Ada's key over it verifies.
    let ada_again = ssh_sign(&ada, &record);
    assert!(!ada_again.is_empty());
    let gate_path = format!("gates/{gate}.toml");
    let gate_file = String::from_utf8(forge::file(&a, &honest, &gate_path))
        .unwrap()
        .replace(&ada_sig, &bob_sig);
    let forged = forge::write(
        &a,
        &Parts {
            tree: forge::tree_with(
                &a,
                &template.tree,
                &[(gate_path.as_str(), Some(gate_file.as_bytes()))],
            ),
            parent: template.parent.clone(),
            message: template.message.replace(&ada_sig, &bob_sig),
            author: template.author.clone(),
            date: template.date.clone(),
        },
    );
    a.git(&["update-ref", "refs/loopx/forged", &forged]);
    a.git(&["update-ref", "refs/loopx/state", &forged]);
    refused_everywhere(&h, &a, &b, &start, "signature", Some("not-announced"));
    // A third clone whose own file names Bob's key "ada" refuses it alike.
    let c = clone(&env, &h, "carol");
    let file = c.repo.with_extension("allowed_signers");
    std::fs::write(
        &file,
        format!(
            "ada {}ada {}",
            std::fs::read_to_string(&bob).unwrap(),
            std::fs::read_to_string(&ada).unwrap()
        ),
    )
    .unwrap();
    c.git(&[
        "config",
        "loopx.allowedSignersFile",
        &file.to_string_lossy(),
    ]);
    c.git(&[
        "fetch",
        "-q",
        a.repo.to_str().unwrap(),
        "refs/loopx/forged:refs/loopx/forged",
    ]);
    let v = c
        .loopx(&["--json", "verify", "--to", "refs/loopx/forged"])
        .code(3)
        .json();
    assert_eq!(v["findings"][0]["refusal"], "not-announced", "{v}");
    // Honest: Ada answers with her own key, and it goes everywhere.
    a.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    c.loopx(&["sync"]).ok();
    c.loopx(&["verify"]).ok();
}

/// Item 6: Ada's signed `todo add -- CMD` from project P1, copied with
/// plumbing into project P2 whose machines trust her key too (and where she
/// announced it as well): the signature binds P1's root commit, so P2's
/// verify and guarded hub refuse it.
#[test]
fn a_signed_act_does_not_replay_into_another_project() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let p1 = env.machine();
    let ada = signer(&env, &p1, "ada");
    let t = p1
        .loopx(&["todo", "add", "Deploy", "--", "sh", "-c", "touch DEPLOYED"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let signed = forge::read(&p1, "refs/loopx/state");
    assert!(
        signed.message.contains("\nsignature = \""),
        "{}",
        signed.message
    );
    let todo_file = forge::file(&p1, "refs/loopx/state", &todo_path(&t));
    // Project P2: its own board, Ada trusted and announced there too.
    let p2_dir = env.root().join("p2");
    std::fs::create_dir_all(&p2_dir).unwrap();
    git_in(&p2_dir, &["init", "-q", "-b", "main", "."]);
    let p2 = env.machine_in(p2_dir);
    p2.git(&["config", "user.name", "Ada Lovelace"]);
    p2.git(&["config", "user.email", "ada@example.com"]);
    p2.loopx(&["init", "--goal", "main", "--objective", "Ship the parser"])
        .ok();
    trust(&p2, "ada", &ada);
    sign_with(&p2, &ada);
    announce(&p2, "ada", &ada);
    let hub = PathBuf::from(env.hub("p2-guarded.git"));
    env.loopx(&["-C", hub.to_str().unwrap(), "hub", "install"])
        .ok();
    git_in(
        &hub,
        &[
            "config",
            "loopx.allowedSignersFile",
            &p2.repo.with_extension("allowed_signers").to_string_lossy(),
        ],
    );
    p2.git(&["remote", "add", "guarded", &guarded_url(&hub)]);
    push_guarded(&p2);
    let start = p2.tip().unwrap();
    let path = todo_path(&t);
    let edits = [(path.as_str(), Some(todo_file.as_slice()))];
    let forged = forge::tick_on(&p2, &start, &signed, &edits);
    p2.git(&["update-ref", "refs/loopx/forged", &forged]);
    let v = p2
        .loopx(&["--json", "verify", "--to", "refs/loopx/forged"])
        .code(3)
        .json();
    assert_eq!(v["findings"][0]["rule"], "signature", "{v}");
    assert_eq!(v["findings"][0]["refusal"], "bad-signature", "{v}");
    let (ok, err) = forge::push(&p2, "guarded", &format!("{forged}:refs/loopx/state"));
    assert!(!ok && err.contains("[signature]"), "{err}");
    assert_eq!(hub_tip(&hub), start);
    // Honest: the same act made in P2 is signed for P2.
    p2.loopx(&["todo", "add", "Deploy", "--", "sh", "-c", "touch DEPLOYED"])
        .ok();
    p2.loopx(&["verify"]).ok();
    push_guarded(&p2);
}

/// Item 7: a tick saying `Loopx-Format: 1` on a format-4 chain, carrying a
/// 100 KB multi-line title with a fake `Loopx-Human:` line, is refused
/// (formats never go down); the same title in the current format is
/// refused by the limits, which hold whatever format a tick claims.
#[test]
fn an_old_format_is_no_way_round_the_limits() {
    let env = TestEnv::with_board();
    let h = hubs(&env);
    let a = env.machine();
    let b = clone(&env, &h, "mallory");
    let start = b.tip().unwrap();
    let title = format!(
        "Fix typo\nLoopx-Human: Ada Lovelace <ada@example.com>\n{}",
        "x".repeat(100 * 1024)
    );
    let toml_title = format!("title = \"{}\"", title.replace('\n', "\\n"));
    let forge_title = |format: Option<&str>| {
        let t = b.add("Fix typo");
        forge::amend_tip(&b, |m, p| {
            assert!(p.message.contains("title = \"Fix typo\""), "{}", p.message);
            p.message = p.message.replace("title = \"Fix typo\"", &toml_title);
            if let Some(f) = format {
                p.message = p.message.replace("Loopx-Format: 7", f);
            }
            let path = todo_path(&t);
            let file = String::from_utf8(forge::file(m, "refs/loopx/state", &path))
                .unwrap()
                .replace("title = \"Fix typo\"", &toml_title);
            p.tree = forge::tree_with(m, &p.tree, &[(path.as_str(), Some(file.as_bytes()))]);
        })
    };
    let forged = forge_title(Some("Loopx-Format: 1"));
    assert!(forge::read(&b, &forged).message.contains("Loopx-Format: 1"));
    refused_everywhere(&h, &b, &a, &start, "format-down", None);
    let _ = forge_title(None);
    refused_everywhere(&h, &b, &a, &start, "refused", Some("multi-line"));
    // Honest work goes on.
    b.add("Fix the typo, honestly");
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    a.loopx(&["verify"]).ok();
    push_guarded(&a);
}

/// Item 7: the agent runtimes `opencode` and `pi` are new in format 4: a
/// tick that says format 3 cannot carry them.
#[test]
fn new_runtimes_need_format_4() {
    let env = TestEnv::with_board();
    let m = env.machine();
    m.loopx(&["agent", "register", "agent-o", "--runtime", "opencode"])
        .ok();
    m.loopx(&["agent", "register", "agent-p", "--runtime", "pi"])
        .ok();
    m.loopx(&["verify"]).ok();
    let start = m.rev("refs/loopx/state~1").unwrap();
    forge::amend_tip(&m, |_, p| {
        p.message = p.message.replace("Loopx-Format: 7", "Loopx-Format: 3");
    });
    let v = m.loopx(&["--json", "verify"]).code(3).json();
    assert_eq!(v["findings"][0]["rule"], "message", "{v}");
    assert!(
        v["findings"][0]["message"].as_str().unwrap().contains(
            "its op agent.register first exists in format 4, but the tick says Loopx-Format 3"
        ),
        "{v}"
    );
    m.git(&["update-ref", "refs/loopx/state", &start]);
    m.loopx(&["verify"]).ok();
}

/// Item 1 over the git protocol: a guarded hub served by `git daemon`
/// refuses a tick that reuses an op id, and takes the honest tick after.
#[test]
fn a_guarded_hub_over_git_daemon_refuses_a_reused_op_id() {
    let env = TestEnv::with_board();
    let hub = PathBuf::from(env.hub("hub.git"));
    env.loopx(&["-C", hub.to_str().unwrap(), "hub", "install"])
        .ok();
    let daemon =
        crate::common::daemon::Daemon::start_with(&env, &[("LOOPX_NOW", "2024-12-03T00:00:00Z")]);
    env.git(&["remote", "add", "origin", &daemon.url("hub.git")]);
    let m = env.machine();
    env.add("First", &[]);
    env.loopx(&["sync"]).ok();
    let used = op_id(&forge::read(&m, "refs/loopx/state").message);
    let start = m.tip().unwrap();
    m.agent("agent-a", &["evidence", "add", "--summary", "checked"])
        .ok();
    forge::amend_tip(&m, |_, p| {
        let own = op_id(&p.message);
        p.message = p.message.replace(&own, &used);
    });
    let (ok, err) = forge::push(&m, "origin", "refs/loopx/state:refs/loopx/state");
    assert!(!ok && err.contains("[op-id-reused]"), "{err}");
    assert_eq!(hub_tip(&hub), start);
    m.git(&["update-ref", "refs/loopx/state", &start]);
    m.agent("agent-a", &["evidence", "add", "--summary", "checked"])
        .ok();
    env.loopx(&["sync"]).ok();
    assert_eq!(hub_tip(&hub), m.tip().unwrap());
}

/// Item 1, sync's replay: the hub holds a tick that reuses the id of a
/// local op not yet pushed, with other content. Sync never takes it for
/// "already there" (which would drop the local op): it refuses, exit 3,
/// and changes nothing; once the hub is put back, the local op goes out.
#[test]
fn sync_never_takes_a_reused_op_id_for_already_there() {
    let env = TestEnv::with_board();
    let h = hubs(&env);
    let a = env.machine();
    let b = clone(&env, &h, "mallory");
    let start = b.tip().unwrap();
    a.agent("agent-a", &["evidence", "add", "--summary", "mine"])
        .ok();
    let mine = op_id(&forge::read(&a, "refs/loopx/state").message);
    b.agent("agent-b", &["evidence", "add", "--summary", "theirs"])
        .ok();
    forge::amend_tip(&b, |_, p| {
        let own = op_id(&p.message);
        p.message = p.message.replace(&own, &mine);
    });
    let (ok, err) = forge::push(&b, "origin", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    let before = a.tip();
    let out = a.loopx(&["--json", "sync"]).code(3);
    assert_eq!(out.error_code(), "op-id-reused", "{}", out.stderr);
    assert_eq!(a.tip(), before, "nothing moved");
    let log = a.loopx(&["log", "-n", "1"]).ok().stdout;
    assert!(log.contains("mine"), "the local op is kept: {log}");
    // The hub put back: the local op goes out.
    forge::set_hub_ref(&h.origin, "refs/loopx/state", &start);
    a.loopx(&["sync"]).ok();
    assert_eq!(hub_tip(&h.origin), a.tip().unwrap());
}
