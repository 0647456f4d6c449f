//! Unit tests of `signer.announce`, `todo.trust` and `todo.edit`'s
//! validation: who may do them, what they record, and that any change of a
//! validation voids the trust in it.

use super::validation_digest;
use crate::model::{SignerName, Validation};
use crate::op::test_support::*;
use crate::op::{SignerAnnounce, TodoAdd, TodoEdit, TodoTrust};

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJRqOlZ4qkWVuwIN6zT8Rtnu8VP+zkcei4lRZKsBty30";

fn announce(name: &str, key: &str) -> Change {
    Change::SignerAnnounce(SignerAnnounce {
        name: SignerName::new(name).expect("a slug"),
        key: key.to_owned(),
    })
}

fn check(argv: &[&str]) -> Validation {
    Validation {
        argv: strings(argv),
        timeout: Span::minutes(5),
    }
}

/// The board with T2 added by agent-a, with a validation.
fn with_validation() -> State {
    let mut s = board();
    let mut add = add_with(&[], &[], &[], None);
    if let Change::TodoAdd(TodoAdd { validate, .. }) = &mut add {
        *validate = Some(check(&["sh", "-c", "touch PWNED"]));
    }
    ok(&mut s, &op(agent("agent-a"), "2026-01-01T09:02:00Z", add));
    s
}

#[test]
fn a_human_announces_a_key_without_its_comment_and_an_agent_may_not() {
    let mut s = board();
    let with_comment = format!("{KEY} ada@laptop\n");
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            announce("ada", &with_comment),
        ),
    );
    assert_eq!(subject, "signer announces ada (ssh-ed25519)");
    let ada = &s.signers[&SignerName::new("ada").unwrap()];
    assert_eq!(ada.key, KEY);
    assert_eq!(ada.announced_by, human());
    assert_eq!(ada.signature, None);
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:06:00Z", announce("ada", KEY)),
        Exit::Refused,
        "already-announced",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:06:00Z",
            announce("mallory", KEY),
        ),
        Exit::Refused,
        "humans-only",
    );
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:06:00Z",
            announce("bob", "ssh-rsa AAAA"),
        ),
        Exit::Usage,
        "bad-key",
    );
}

#[test]
fn todo_add_and_edit_record_who_wrote_the_validation_and_trust_replaces_it() {
    let mut s = with_validation();
    let from = s.todos[&tid(T2)].validate_from.clone().expect("recorded");
    assert_eq!((from.by, from.how.as_str()), (agent("agent-a"), "add"));
    let v = s.todos[&tid(T2)].validate.clone().unwrap();
    let trust = Change::TodoTrust(TodoTrust {
        todo: tid(T2),
        digest: validation_digest(&v),
    });
    refuse(
        &mut s,
        &op(agent("agent-a"), "2026-01-01T09:03:00Z", trust.clone()),
        Exit::Refused,
        "humans-only",
    );
    ok(&mut s, &op(human(), "2026-01-01T09:03:00Z", trust.clone()));
    let from = s.todos[&tid(T2)].validate_from.clone().unwrap();
    assert_eq!((from.by, from.how.as_str()), (human(), "trust"));
    // An edit of the validation voids the trust: the record names the edit.
    let edit = Change::TodoEdit(TodoEdit {
        validate: Some(check(&["cargo", "publish"])),
        ..TodoEdit::new(tid(T2), 0)
    });
    ok(&mut s, &op(agent("agent-b"), "2026-01-01T09:04:00Z", edit));
    let from = s.todos[&tid(T2)].validate_from.clone().unwrap();
    assert_eq!((from.by, from.how.as_str()), (agent("agent-b"), "edit"));
    // The old trust, replayed, no longer matches the validation.
    refuse(
        &mut s,
        &op(human(), "2026-01-01T09:05:00Z", trust),
        Exit::Conflict,
        "validation-changed",
    );
    // Nothing to trust on a todo without a validation.
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:05:00Z",
            Change::TodoTrust(TodoTrust {
                todo: tid(T1),
                digest: "sha256:00".to_owned(),
            }),
        ),
        Exit::Refused,
        "no-validation",
    );
}

#[test]
fn the_digest_names_the_argv_and_the_timeout() {
    let a = check(&["cargo", "test"]);
    let mut b = a.clone();
    b.timeout = Span::minutes(6);
    let c = check(&["cargo", "test", "--all"]);
    assert_ne!(validation_digest(&a), validation_digest(&b));
    assert_ne!(validation_digest(&a), validation_digest(&c));
    assert_eq!(validation_digest(&a), validation_digest(&a.clone()));
    assert!(validation_digest(&a).starts_with("sha256:"));
}
