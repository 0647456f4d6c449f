//! Unit tests of the op log format: every op kind survives a round trip
//! through a tick's commit message, and the kind names agree everywhere.

use std::collections::BTreeSet;

use super::*;
use crate::model::FORMAT;
use crate::op::RefreshState;
use crate::op::test_support::*;

fn effect(subject: &str) -> Effect {
    Effect::new(Happened::Initialized, subject)
}

fn actors() -> [Actor; 2] {
    [human(), agent("agent-a")]
}

#[test]
fn a_tick_message_is_whole_and_readable() {
    let o = op(
        agent("agent-a"),
        "2026-01-01T09:10:00Z",
        claim(T1, 0, LEASE),
    );
    let msg = render(
        &o,
        &effect("claim t-000000a1 \"Write the parser\""),
        7,
        FORMAT,
        &[(REPLAYED_FROM, "0123abcd".to_owned())],
    );
    assert_eq!(
        msg,
        format!(
            r#"claim t-000000a1 "Write the parser" — agent-a

id = "o-0000000000000001"
at = "2026-01-01T09:10:00Z"
actor = "agent:agent-a"

[change]
op = "todo.claim"
todo = "t-000000a1"
epoch = 0
lease = "10m"

Loopx-Op: todo.claim
Loopx-Agent: agent-a
Loopx-Tick: 7
Loopx-Format: {FORMAT}
Loopx-Replayed-From: 0123abcd
"#
        )
    );
}

#[test]
fn every_op_kind_round_trips_through_a_commit_message() {
    for change in every_change() {
        for actor in actors() {
            let o = op(actor.clone(), "2026-01-01T09:10:00Z", change.clone());
            let msg = render(&o, &effect("a subject"), 42, FORMAT, &[]);
            let parsed = parse(&msg).unwrap_or_else(|e| panic!("{e}\n{msg}"));
            assert_eq!(parsed.op, o, "{msg}");
            assert_eq!(parsed.subject, format!("a subject — {}", actor.name()));
            assert_eq!((parsed.tick, parsed.format), (42, FORMAT));
            let kind = change.kind();
            assert!(
                parsed
                    .trailers
                    .contains(&("Loopx-Op".to_owned(), kind.to_owned())),
                "{msg}"
            );
            let who = match &actor {
                Actor::Agent(id) => ("Loopx-Agent".to_owned(), id.to_string()),
                Actor::Human { name, email } => {
                    ("Loopx-Human".to_owned(), format!("{name} <{email}>"))
                }
            };
            assert!(parsed.trailers.contains(&who), "{msg}");
            // The cheap readers agree with the full parse.
            assert_eq!(tick_of(&msg), Some(42));
            assert_eq!(kind_of(&msg), Some(kind));
            assert_eq!(op_id_of(&msg), Some(o.id.as_str()));
        }
    }
}

#[test]
fn ops_without_their_optional_fields_round_trip_too() {
    for change in [
        init(None, None),
        goal_set(),
        register("agent-a", Runtime::Custom, &[]),
        add(T1, "Write the parser"),
        release(T1, 0),
        update(T1, 0, None, None),
        done(T1, 0, None),
        evidence("0000e1e1", None, EvidenceKind::Note, None),
        Change::RefreshState(RefreshState {
            progress: Some("0123456789abcdef".to_owned()),
            ..RefreshState::new(gid("main"), Outcome::Unchanged)
        }),
    ] {
        let o = op(human(), "2026-01-01T09:10:00Z", change);
        let msg = render(&o, &effect("s"), 1, FORMAT, &[]);
        assert_eq!(parse(&msg).map(|p| p.op), Ok(o), "{msg}");
    }
}

#[test]
fn extra_trailers_are_kept_after_the_own_ones() {
    let o = op(human(), "2026-01-01T09:10:00Z", init(None, None));
    let extra = [
        (REPLAYED_FROM, "aaaa".to_owned()),
        (REJECTED_FROM, "bbbb".to_owned()),
    ];
    let parsed = parse(&render(&o, &effect("init"), 3, FORMAT, &extra)).expect("parses");
    let keys: Vec<&str> = parsed.trailers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "Loopx-Op",
            "Loopx-Human",
            "Loopx-Tick",
            "Loopx-Format",
            REPLAYED_FROM,
            REJECTED_FROM
        ]
    );
    for own in OWN_TRAILERS {
        assert!(
            own == "Loopx-Agent" || keys.contains(&own),
            "{own} is written"
        );
    }
}

#[test]
fn a_subject_is_one_line_whatever_it_holds() {
    let o = op(human(), "2026-01-01T09:10:00Z", init(None, None));
    let msg = render(&o, &effect("add t-1 \"two\n\nlines\"  "), 1, FORMAT, &[]);
    let parsed = parse(&msg).expect("parses");
    assert_eq!(parsed.subject, "add t-1 \"two lines\" — Ada");
    assert_eq!(parsed.op, o);
}

#[test]
fn an_unknown_op_kind_asks_for_an_upgrade() {
    let o = op(human(), "2026-01-01T09:10:00Z", init(None, None));
    let msg = render(&o, &effect("init"), 1, FORMAT, &[])
        .replace("op = \"init\"", "op = \"todo.teleport\"")
        .replace("Loopx-Op: init", "Loopx-Op: todo.teleport");
    assert_eq!(
        parse(&msg),
        Err("the op \"todo.teleport\" is unknown to this loopx: upgrade loopx".to_owned())
    );
    // A known kind whose body does not parse is corrupt, not new.
    let msg = render(&o, &effect("init"), 1, FORMAT, &[]).replace("at = ", "at_ = ");
    let err = parse(&msg).expect_err("no time");
    assert!(err.starts_with("the op does not parse: "), "{err}");
}

#[test]
fn a_commit_that_is_no_tick_says_what_is_missing() {
    assert_eq!(
        parse("Fix a typo by hand\n"),
        Err("the message has no body".to_owned())
    );
    assert_eq!(
        parse("Fix a typo\n\nby hand\n"),
        Err("the message has no trailers".to_owned())
    );
    let o = op(human(), "2026-01-01T09:10:00Z", init(None, None));
    let msg = render(&o, &effect("init"), 1, FORMAT, &[]);
    let format_line = format!("Loopx-Format: {}\n", crate::model::FORMAT);
    for (trailer, want) in [
        ("Loopx-Tick: 1\n", "the trailer Loopx-Tick is missing"),
        (format_line.as_str(), "the trailer Loopx-Format is missing"),
        ("Loopx-Op: init\n", "the trailer Loopx-Op is missing"),
    ] {
        assert_eq!(parse(&msg.replace(trailer, "")), Err(want.to_owned()));
    }
    assert_eq!(
        parse(&msg.replace("Loopx-Tick: 1", "Loopx-Tick: one")),
        Err("Loopx-Tick is not a number".to_owned())
    );
    assert_eq!(tick_of("Fix a typo by hand"), None);
    assert_eq!(kind_of("Fix a typo by hand"), None);
    assert_eq!(op_id_of("Fix a typo\n\nby hand"), None);
}

/// `Change::kind()` (the trailer), `Change::KINDS` (`log --op`, sync's
/// upgrade check) and the serde tag (the op body) name every kind the same.
#[test]
fn kind_kinds_and_serde_tags_agree_for_every_variant() {
    let samples = every_change();
    let kinds: Vec<&str> = samples.iter().map(Change::kind).collect();
    let distinct: BTreeSet<&str> = kinds.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        kinds.len(),
        "one sample per kind: {kinds:?}"
    );
    let listed: BTreeSet<&str> = Change::KINDS.iter().copied().collect();
    assert_eq!(listed.len(), Change::KINDS.len(), "KINDS has a duplicate");
    assert_eq!(distinct, listed, "KINDS and the variants differ");
    for change in &samples {
        let value = serde_json::to_value(change).expect("serializes");
        assert_eq!(value["op"], change.kind(), "{value}");
        let back: Change = serde_json::from_value(value).expect("deserializes");
        assert_eq!(&back, change);
    }
}

/// The stored form of one op of every kind, byte for byte: its TOML (the
/// body of a tick's message) and its JSON (`log --format json`, the MCP
/// answers). Each change is its own struct beside the `op` tag; this pins
/// that the fields still sit beside the tag exactly as when they were
/// inline in the enum. `every_kind.txt` was written by the code before the
/// structs; a difference here is a format change. A new kind adds its
/// sample's form: `LOOPX_BLESS=1` rewrites the file, and its diff must only
/// add lines.
#[test]
fn every_kind_keeps_its_stored_form() {
    let mut got = String::new();
    for change in every_change() {
        let op = op(agent("agent-a"), "2026-01-01T09:00:00Z", change);
        let toml = toml::to_string(&op).expect("serializes");
        let json = serde_json::to_string(&op).expect("serializes");
        assert_eq!(toml::from_str::<Op>(&toml).expect("parses"), op, "{toml}");
        assert_eq!(
            serde_json::from_str::<Op>(&json).expect("parses"),
            op,
            "{json}"
        );
        got.push_str(&format!("# {}\n{toml}{json}\n\n", op.change.kind()));
    }
    if std::env::var_os("LOOPX_BLESS").is_some() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/op/message/every_kind.txt");
        std::fs::write(path, &got).expect("write every_kind.txt");
        return;
    }
    let want = include_str!("every_kind.txt");
    if got != want {
        let (mut g, mut w) = (got.lines(), want.lines());
        let line = (1..)
            .find(|_| g.next() != w.next())
            .expect("the texts differ");
        panic!(
            "the stored form changed from line {line} on:\n{}",
            got.lines()
                .skip(line - 1)
                .take(12)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The first format of one op of every kind (every optional field set), as
/// the hand-written `since` said before the `changes!` table took over the
/// kinds' part of it: the expected text was written by that code.
#[test]
fn every_kind_needs_the_format_it_needed_before_the_table() {
    let got: String = every_change()
        .iter()
        .map(|c| format!("{} {}\n", c.kind(), c.since()))
        .collect();
    let want = "\
init 1
goal.add 1
goal.set 3
agent.register 1
todo.add 1
todo.claim 1
todo.renew 1
todo.handoff 1
todo.release 1
todo.update 1
todo.done 2
todo.edit 2
todo.trust 2
signer.announce 2
todo.reopen 1
todo.archive 1
agent.retire 1
gate.open 1
gate.answer 1
gate.withdraw 1
gate.notified 2
evidence.add 2
turn.refresh 3
quota.spend 1
quota.void 1
usage.record 3
quota.park 3
quota.resume 3
signer.require 4
machine.propose 5
machine.admit 5
machine.revoke 5
goal.split 1
settings.set 7
signer.approve 7
signer.reclaim 7
turn.settle 1
";
    assert_eq!(got, want);
}
