//! Only a signature that holds lets a validation run (issue 44): a todo
//! whose validation carries a signature over other argv, or a signature
//! blob borrowed from another op of Ada's, reaches `refs/loopx/state` by a
//! path that skips sync's checks (a plain `git fetch` with a refspec onto
//! `refs/loopx/*`, `update-ref`); on a machine that trusts Ada its
//! validation does not run, and the refusal says the signature does not
//! vouch for it.

use crate::common::forge;
use crate::common::keys::{have_openssh, signer, trust};
use crate::common::{Machine, TestEnv};

/// The path of todo `id`'s file at `rev`.
fn todo_path(m: &Machine, rev: &str, id: &str) -> String {
    m.git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .find(|p| p.ends_with(&format!("{id}.toml")))
        .unwrap_or_else(|| panic!("{id} has a file at {rev}"))
        .to_owned()
}

/// Replaces `from` by `to` in `m`'s tip: its message and todo `id`'s file
/// (a forgery of an honest tick, with plumbing).
fn swap_in_tip(m: &Machine, id: &str, from: &str, to: &str) {
    forge::amend_tip(m, |m, p| {
        assert!(p.message.contains(from), "{from} in\n{}", p.message);
        p.message = p.message.replace(from, to);
        let path = todo_path(m, "refs/loopx/state", id);
        let text = String::from_utf8(forge::file(m, "refs/loopx/state", &path)).unwrap();
        assert!(text.contains(from), "{from} in\n{text}");
        let text = text.replace(from, to);
        p.tree = forge::tree_with(m, &p.tree, &[(&path, Some(text.as_bytes()))]);
    });
}

#[test]
fn a_signature_that_does_not_hold_runs_nothing_whatever_path_it_came_by() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let hub = env.hub("hub");
    let a = env.machine();
    a.git(&["remote", "add", "origin", &hub]);
    let ada = signer(&env, &a, "ada");
    // Ada's signed todo, with a harmless validation; it runs on a machine
    // that trusts her.
    let honest = a
        .loopx(&["todo", "add", "Check", "--", "touch", "HONEST"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    a.loopx(&["sync"]).ok();
    let v = env.clone_machine("victim", &hub);
    v.loopx(&["sync"]).ok();
    trust(&v, "ada", &ada);

    // The honest validation runs there.
    v.agent("agent-a", &["todo", "claim", &honest]).ok();
    v.agent("agent-a", &["todo", "done", &honest]).ok();
    assert!(v.repo.join("HONEST").exists(), "the honest validation ran");
    v.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();

    // 1. Swapped argv: Ada's signed `todo add`, its argv changed after
    // signing, on the forger's clone.
    a.loopx(&["todo", "add", "Lint", "--", "true"]).ok();
    a.loopx(&["sync"]).ok();
    let f = env.clone_machine("forger", &hub);
    f.loopx(&["sync"]).ok();
    let lint = todo_id(&f, "Lint");
    let base = f.tip().unwrap();
    swap_in_tip(
        &f,
        &lint,
        r#"argv = ["true"]"#,
        r#"argv = ["touch", "PWNED"]"#,
    );
    let swapped = f.tip().unwrap();

    // 2. A borrowed blob: an agent's todo whose validation names Ada's
    // signer announcement, with its signature, as the op that wrote it.
    f.git(&["update-ref", "refs/loopx/state", &swapped]);
    let announce = f.git(&[
        "log",
        "-1",
        "--format=%B",
        "refs/loopx/state",
        "--",
        "signers/ada.toml",
    ]);
    let field = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap()
            .trim_matches('"')
            .to_owned()
    };
    let (op, signature) = (field(&announce, "id"), field(&announce, "signature"));
    f.git(&["update-ref", "refs/loopx/state", &base]);
    f.agent(
        "agent-b",
        &["todo", "add", "Deploy", "--", "touch", "PWNED2"],
    )
    .ok();
    let deploy = todo_id(&f, "Deploy");
    forge::amend_tip(&f, |m, p| {
        let path = todo_path(m, "refs/loopx/state", &deploy);
        let text = String::from_utf8(forge::file(m, "refs/loopx/state", &path)).unwrap();
        let (head, _) = text.split_once("[validate_from]").unwrap();
        let text = format!(
            "{head}[validate_from]\nop = \"{op}\"\nby = \"human:Ada Lovelace <ada@example.com>\"\nat = \"{}\"\nhow = \"add\"\nsignature = \"{signature}\"\n",
            env.now()
        );
        p.tree = forge::tree_with(m, &p.tree, &[(&path, Some(text.as_bytes()))]);
    });
    let borrowed = f.tip().unwrap();

    // Each arrives on the victim around sync: a plain fetch onto
    // refs/loopx/state, or update-ref; an agent claims and finishes it.
    let source = f.repo.to_str().unwrap().to_owned();
    for (forged, id, file) in [(&swapped, &lint, "PWNED"), (&borrowed, &deploy, "PWNED2")] {
        for path in ["fetch", "update-ref"] {
            v.git(&["fetch", "-q", &hub, "+refs/loopx/state:refs/loopx/state"]);
            match path {
                "fetch" => {
                    f.git(&["update-ref", "refs/forged", forged]);
                    v.git(&["fetch", "-q", &source, "+refs/forged:refs/loopx/state"]);
                }
                _ => {
                    v.git(&["fetch", "-q", &source, "+refs/forged:refs/forged"]);
                    v.git(&["update-ref", "refs/loopx/state", forged]);
                }
            }
            v.agent("agent-a", &["todo", "claim", id]).ok();
            let out = v.agent("agent-a", &["--json", "todo", "done", id]).code(3);
            // The forged tick is not valid, so the tip is not verified and
            // nothing runs on it (the verified tip, issue 44's first item);
            // `todo show` below still finds the signature does not vouch.
            assert_eq!(out.error_code(), "unverified-tip", "{path}: {}", out.stderr);
            assert!(
                out.stderr.contains("is not a valid loopx tick"),
                "{path}: {}",
                out.stderr
            );
            assert!(
                !v.repo.join(file).exists(),
                "{path}: the forged validation ran"
            );
            let shown = v.loopx(&["--json", "todo", "show", id]).ok().json();
            assert_eq!(shown["validation_here"]["runs"], false, "{shown}");
        }
    }
    // Back on the honest state, Ada's signed validations run again.
    v.git(&["fetch", "-q", &hub, "+refs/loopx/state:refs/loopx/state"]);
    let again = a
        .loopx(&["todo", "add", "Again", "--", "touch", "AGAIN"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    a.loopx(&["sync"]).ok();
    v.loopx(&["sync"]).ok();
    v.agent("agent-a", &["todo", "claim", &again]).ok();
    v.agent("agent-a", &["todo", "done", &again]).ok();
    assert!(v.repo.join("AGAIN").exists(), "the honest validation ran");
    v.loopx(&["verify"]).ok();
}

/// The id of the todo titled `title` on `m`.
fn todo_id(m: &Machine, title: &str) -> String {
    m.loopx(&["--json", "todo", "list"]).ok().json()["todos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == title)
        .unwrap_or_else(|| panic!("a todo {title}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}
