//! What one tick may write: bounded text, single-line names, no secret in a
//! validation command.
//!
//! A tick is replicated to every clone and read by every command there, so
//! an oversized note costs everyone memory, and a title with line breaks
//! breaks every one-line listing and can pose as commit trailers. These
//! checks run in [`super::apply_as`] for every op, whatever format its tick
//! claims (they came with format [`SINCE`]; from format 4 a tick saying
//! `Loopx-Format: 1` is no way round them); [`file()`] bounds every file a
//! tick writes.

use super::Change;
use crate::error::{Code, Refusal};
use crate::model::Validation;
use crate::op::{
    AgentRegister, EvidenceAdd, GateAnswer, GateOpen, GoalAdd, GoalSet, Init, MachineAdmit,
    MachinePropose, QuotaPark, QuotaVoid, RefreshState, Settle, SignerAnnounce, SignerApprove,
    SignerReclaim, TodoAdd, TodoDone, TodoEdit, TodoHandoff, TodoTrust, TodoUpdate,
};

/// The format that introduced these limits (now held by every tick).
pub const SINCE: u32 = 2;
/// A todo title, an option name, a scope path, a capability: characters.
pub const TITLE: usize = 300;
/// A gate question, a goal guard, a summary, a next action: characters.
pub const QUESTION: usize = 2_000;
/// A note, an objective, a reason: bytes.
pub const NOTE: usize = 64 * 1024;
/// Any file a tick writes: bytes.
pub const FILE: usize = 256 * 1024;
/// Prices one `settings.set` may set or remove.
pub const PRICES: usize = 200;

/// Checks every text field of `change` (and of each step of a settle).
pub fn check(change: &Change) -> Result<(), Refusal> {
    match change {
        Change::Init(Init { objective, .. }) => opt(objective.as_deref(), "objective", note),
        Change::GoalAdd(GoalAdd { objective, .. }) => note(objective, "objective"),
        Change::GoalSet(GoalSet {
            objective,
            scope,
            guards,
            ..
        }) => {
            opt(objective.as_deref(), "objective", note)?;
            each(scope.iter().flatten(), "scope path", title)?;
            each(guards.iter().flatten(), "guard", question)
        }
        Change::AgentRegister(AgentRegister { capabilities, .. }) => {
            each(capabilities, "capability", title)
        }
        Change::TodoAdd(TodoAdd {
            title: t,
            capabilities,
            scope,
            note: n,
            validate,
            ..
        }) => {
            title(t, "title")?;
            each(capabilities, "capability", title)?;
            each(scope, "scope path", title)?;
            opt(n.as_deref(), "note", note)?;
            validate.as_ref().map_or(Ok(()), validation)
        }
        Change::TodoEdit(TodoEdit {
            title: t,
            note: n,
            validate,
            ..
        }) => {
            opt(t.as_deref(), "title", title)?;
            opt(n.as_deref(), "note", note)?;
            validate.as_ref().map_or(Ok(()), validation)
        }
        Change::TodoTrust(TodoTrust { digest, .. }) => title(digest, "digest"),
        // A public key, possibly with its line break: bytes only.
        Change::SignerAnnounce(SignerAnnounce { key, .. })
        | Change::SignerApprove(SignerApprove { key, .. })
        | Change::SignerReclaim(SignerReclaim { key, .. })
        | Change::MachinePropose(MachinePropose { key, .. }) => bytes(key.len(), 16 * 1024, "key"),
        Change::MachineAdmit(MachineAdmit {
            fingerprint,
            agents,
            ..
        }) => {
            title(fingerprint, "fingerprint")?;
            bytes(agents.len(), 64, "the agent patterns")?;
            each(agents, "agent pattern", title)
        }
        Change::TodoHandoff(TodoHandoff { note: n, .. }) => note(n, "note"),
        Change::TodoUpdate(TodoUpdate { note: n, .. })
        | Change::TodoDone(TodoDone { note: n, .. })
        | Change::GateAnswer(GateAnswer { note: n, .. }) => opt(n.as_deref(), "note", note),
        Change::GateOpen(GateOpen {
            question: q,
            options,
            ..
        }) => {
            question(q, "question")?;
            each(options, "option", title)
        }
        Change::RefreshState(RefreshState {
            next_action,
            progress,
            ..
        }) => {
            opt(next_action.as_deref(), "next action", question)?;
            opt(progress.as_deref(), "progress fingerprint", title)
        }
        Change::QuotaVoid(QuotaVoid { reason, .. }) => note(reason, "reason"),
        Change::QuotaPark(QuotaPark { reason, .. }) => opt(reason.as_deref(), "reason", question),
        Change::EvidenceAdd(EvidenceAdd { summary, run, .. }) => {
            question(summary, "summary")?;
            if let Some(r) = run {
                let argv: usize = r.argv.iter().map(String::len).sum();
                bytes(argv, NOTE, "the command line")?;
                bytes(r.output_tail.len(), NOTE, "the output tail")?;
            }
            Ok(())
        }
        Change::Settle(Settle { steps, .. }) => steps.iter().try_for_each(check),
        Change::SettingsSet(crate::op::SettingsSet {
            prices, unprice, ..
        }) => {
            let n = prices.len() + unprice.len();
            if n > PRICES {
                return Err(Refusal::usage(
                    Code::TooLong,
                    format!("{n} prices in one settings change; at most {PRICES}"),
                ));
            }
            Ok(())
        }
        Change::TodoClaim(_)
        | Change::SignerRequire(_)
        | Change::MachineRevoke(_)
        | Change::QuotaResume(_)
        | Change::TodoRenew(_)
        | Change::TodoRelease(_)
        | Change::TodoReopen(_)
        | Change::TodoArchive(_)
        | Change::AgentRetire(_)
        | Change::GoalSplit(_)
        | Change::GateWithdraw(_)
        | Change::GateNotified(_)
        | Change::QuotaSpend(_)
        | Change::UsageRecord(_) => Ok(()),
    }
}

/// `text` made to pass as a one-line field of at most `max` characters:
/// line breaks become spaces, and a longer text is cut with an ellipsis.
/// For texts loopx composes itself (a default summary, a sync rejection's
/// reason), which must never be refused.
pub fn fit(text: &str, max: usize) -> String {
    let one = text.replace(['\n', '\r'], " ");
    if one.chars().count() <= max {
        return one;
    }
    let cut: String = one.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// An op's signature (base64, one line): at most 16 KiB, far above any SSH
/// signature's size.
pub fn signature(text: &str) -> Result<(), Refusal> {
    one_line(text, "signature")?;
    bytes(text.len(), 16 * 1024, "signature")
}

/// Checks an evidence summary, for commands that check before they run.
pub fn summary(text: &str) -> Result<(), Refusal> {
    question(text, "summary")
}

/// Checks the size of one file a tick is about to write.
pub fn file(path: &str, len: usize) -> Result<(), Refusal> {
    if len <= FILE {
        return Ok(());
    }
    Err(Refusal::usage(
        Code::TooLarge,
        format!(
            "this change would make {path} {} KiB, over the limit of {} KiB for one file",
            len.div_ceil(1024),
            FILE / 1024
        ),
    )
    .with_hint("nothing was changed; write less (long notes belong in a file in the repository, referenced from the note)"))
}

/// A validation runs on every machine and is stored as written: a secret in
/// it would be in every clone's history.
fn validation(v: &Validation) -> Result<(), Refusal> {
    each(&v.argv, "validation argument", |a, what| {
        bytes(a.len(), NOTE, what)
    })?;
    if let Some(i) = crate::redact::secret_arg(&v.argv) {
        return Err(Refusal::usage(
            Code::SecretInValidation,
            format!(
                "the validation command's argument {} looks like it holds a secret ({})",
                i + 1,
                crate::redact::text(&v.argv[i])
            ),
        )
        .with_hint("a validation is stored in the history as written: pass the secret through the environment instead (e.g. read $API_TOKEN in a script) and leave it out of the command"));
    }
    Ok(())
}

fn opt(
    text: Option<&str>,
    what: &str,
    check: fn(&str, &str) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    text.map_or(Ok(()), |t| check(t, what))
}

fn each<'a>(
    items: impl IntoIterator<Item = &'a String>,
    what: &str,
    check: impl Fn(&str, &str) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    items.into_iter().try_for_each(|s| check(s, what))
}

/// One line of at most [`TITLE`] characters.
fn title(text: &str, what: &str) -> Result<(), Refusal> {
    one_line(text, what)?;
    chars(text, TITLE, what)
}

/// One line of at most [`QUESTION`] characters.
fn question(text: &str, what: &str) -> Result<(), Refusal> {
    one_line(text, what)?;
    chars(text, QUESTION, what)
}

/// Any number of lines, at most [`NOTE`] bytes.
fn note(text: &str, what: &str) -> Result<(), Refusal> {
    bytes(text.len(), NOTE, what)
}

fn one_line(text: &str, what: &str) -> Result<(), Refusal> {
    // A blank text is the op's to refuse, as empty.
    if text.contains(['\n', '\r']) && !text.trim().is_empty() {
        return Err(Refusal::usage(
            Code::MultiLine,
            format!("the {what} has a line break; it must be one line"),
        )
        .with_hint("put it on one line; longer text belongs in a note (`--note`), which may have many lines"));
    }
    Ok(())
}

fn chars(text: &str, max: usize, what: &str) -> Result<(), Refusal> {
    // Bytes bound characters from above: count only when it could matter.
    if text.len() <= max {
        return Ok(());
    }
    let n = text.chars().count();
    if n <= max {
        return Ok(());
    }
    Err(Refusal::usage(
        Code::TooLong,
        format!("the {what} is {n} characters; the limit is {max}"),
    )
    .with_hint("shorten it; details belong in a note (`--note`, up to 64 KiB)"))
}

fn bytes(len: usize, max: usize, what: &str) -> Result<(), Refusal> {
    if len <= max {
        return Ok(());
    }
    Err(Refusal::usage(
        Code::TooLong,
        format!(
            "the {what} is {} KiB; the limit is {} KiB",
            len.div_ceil(1024),
            max / 1024
        ),
    )
    .with_hint("shorten it; put long text in a file in the repository and refer to it"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Exit;
    use crate::model::{Blocks, GateKind, GoalId, Priority, TodoId};
    use crate::op::{QuotaResume, SignerRequire};
    use crate::time::Span;

    fn add(title: &str, note: Option<String>, validate: Option<Vec<&str>>) -> Change {
        Change::TodoAdd(TodoAdd {
            note,
            validate: validate.map(|a| Validation {
                argv: a.into_iter().map(str::to_owned).collect(),
                timeout: Span::seconds(60),
            }),
            ..TodoAdd::new(
                TodoId::from_hex("00000001"),
                GoalId::new("main").unwrap(),
                title.to_owned(),
                Priority::default(),
            )
        })
    }

    fn refused(change: &Change) -> Refusal {
        let r = check(change).unwrap_err();
        assert_eq!(r.exit, Exit::Usage, "{r:?}");
        r
    }

    #[test]
    fn titles_are_one_line_and_bounded() {
        check(&add(&"x".repeat(TITLE), None, None)).unwrap();
        // Characters, not bytes: 300 two-byte characters are fine.
        check(&add(&"é".repeat(TITLE), None, None)).unwrap();
        let r = refused(&add(&"x".repeat(TITLE + 1), None, None));
        assert!(
            r.message.contains("301 characters; the limit is 300"),
            "{r:?}"
        );
        let r = refused(&add("Title\nLoopx-Human: Ada", None, None));
        assert_eq!(r.code, Code::MultiLine);
        refused(&add("carriage\rreturn", None, None));
    }

    #[test]
    fn notes_may_span_lines_up_to_the_limit() {
        check(&add("t", Some("a\nb\n".repeat(1000)), None)).unwrap();
        check(&add("t", Some("x".repeat(NOTE)), None)).unwrap();
        let r = refused(&add("t", Some("x".repeat(NOTE + 1)), None));
        assert!(r.message.contains("the limit is 64 KiB"), "{r:?}");
    }

    #[test]
    fn questions_and_options() {
        let gate = |q: &str, opts: &[&str]| {
            Change::GateOpen(GateOpen {
                gate: crate::model::GateId::from_hex("00000001"),
                goal: GoalId::new("main").unwrap(),
                question: q.to_owned(),
                options: opts.iter().map(|s| (*s).to_owned()).collect(),
                kind: GateKind::Decision,
                blocks: Blocks::Goal,
            })
        };
        check(&gate(&"q".repeat(QUESTION), &["yes", "no"])).unwrap();
        refused(&gate(&"q".repeat(QUESTION + 1), &["yes"]));
        refused(&gate("Ship?\n(no gates waiting)", &["yes"]));
        refused(&gate("Ship?", &["yes\nno"]));
        // A settle's steps are held to the same limits.
        let settle = Change::Settle(Settle {
            turn: "t".into(),
            steps: vec![add("ok", Some("x".repeat(NOTE + 1)), None)],
        });
        refused(&settle);
    }

    #[test]
    fn validations_carry_no_secret() {
        check(&add("t", None, Some(vec!["cargo", "test"]))).unwrap();
        let r = refused(&add(
            "t",
            None,
            Some(vec!["curl", "-H", "Authorization: Bearer abc123"]),
        ));
        assert_eq!(r.code, Code::SecretInValidation);
        assert!(!r.message.contains("abc123"), "{r:?}");
        assert!(r.hint.unwrap().to_string().contains("environment"));
        refused(&add("t", None, Some(vec!["deploy", "--token", "abc"])));
        let edit = Change::TodoEdit(TodoEdit {
            validate: Some(Validation {
                argv: ["curl", "https://ada:pw@example.com"]
                    .map(str::to_owned)
                    .to_vec(),
                timeout: Span::seconds(60),
            }),
            ..TodoEdit::new(TodoId::from_hex("00000001"), 0)
        });
        assert_eq!(refused(&edit).code, Code::SecretInValidation);
    }

    #[test]
    fn ticks_of_any_format_are_held_to_the_limits() {
        use crate::model::{Actor, OpId, State};
        use crate::op::{Op, apply, apply_as};
        let op = |change| Op {
            id: OpId::from_hex("0000000000000001"),
            at: crate::time::Timestamp::parse("2026-11-30T09:00:00Z").unwrap(),
            actor: Actor::Human {
                name: "Ada".to_owned(),
                email: "ada@example.com".to_owned(),
            },
            change,
            signature: None,
        };
        let mut state = State::default();
        apply(
            &mut state,
            &op(Change::Init(Init {
                goal: Some(GoalId::new("main").unwrap()),
                objective: Some("Ship".to_owned()),
            })),
        )
        .unwrap();
        // A 100 KB title over many lines, one of them a fake trailer.
        let title = format!(
            "Fix typo\nLoopx-Human: Ada <ada@example.com>\n{}",
            "x".repeat(100 * 1024)
        );
        let forged = op(add(&title, None, None));
        for format in [1, SINCE, crate::model::FORMAT] {
            let r = apply_as(&mut state.clone(), &forged, format).unwrap_err();
            assert_eq!(r.exit, Exit::Usage, "format {format}: {r:?}");
        }
        let secret = op(add("t", None, Some(vec!["deploy", "--token", "abc"])));
        let r = apply_as(&mut state.clone(), &secret, 1).unwrap_err();
        assert_eq!(r.code, Code::SecretInValidation);
        // An op newer than the format it claims is refused too.
        let park = op(Change::QuotaResume(QuotaResume {
            agent: crate::model::AgentId::new("agent-a").unwrap(),
        }));
        let r = apply_as(&mut state.clone(), &park, 2).unwrap_err();
        assert!(r.message.contains("first exists in format 3"), "{r:?}");
    }

    #[test]
    fn each_field_and_value_has_its_first_format() {
        use crate::model::{AgentId, Runtime};
        let register = |runtime| {
            Change::AgentRegister(AgentRegister {
                agent: AgentId::new("agent-o").unwrap(),
                runtime,
                capabilities: vec![],
                goals: None,
            })
        };
        assert_eq!(register(Runtime::Codex).since(), 1);
        assert_eq!(register(Runtime::OpenCode).since(), 4);
        assert_eq!(register(Runtime::Pi).since(), 4);
        let edit = |validate: Option<Validation>| {
            Change::TodoEdit(TodoEdit {
                title: Some("t".into()),
                validate,
                ..TodoEdit::new(TodoId::from_hex("00000001"), 0)
            })
        };
        assert_eq!(edit(None).since(), 1);
        let v = Validation {
            argv: vec!["true".into()],
            timeout: Span::seconds(60),
        };
        assert_eq!(edit(Some(v)).since(), 2);
        let refresh = Change::RefreshState(RefreshState {
            progress: Some("0123456789abcdef".into()),
            ..RefreshState::new(
                GoalId::new("main").unwrap(),
                crate::model::Outcome::Advanced,
            )
        });
        assert_eq!(refresh.since(), 3);
        let require = Change::SignerRequire(SignerRequire {
            signatures: crate::model::Signatures::Humans,
        });
        assert_eq!(require.since(), 4);
    }

    #[test]
    fn composed_texts_are_fitted_not_refused() {
        let reason = format!("is not done: it failed\nline 1\r\n{}", "x".repeat(3000));
        let fitted = fit(&reason, QUESTION);
        question(&fitted, "summary").unwrap();
        assert!(fitted.starts_with("is not done: it failed line 1  x"));
        assert!(fitted.ends_with('…'));
        assert_eq!(fit("short", QUESTION), "short");
    }

    #[test]
    fn files_are_bounded() {
        file("todos/ab/t-ab.toml", FILE).unwrap();
        let r = file("todos/ab/t-ab.toml", FILE + 1).unwrap_err();
        assert_eq!(r.exit, Exit::Usage);
        assert!(r.message.contains("256 KiB"), "{r:?}");
    }
}
