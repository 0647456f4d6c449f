//! Step 3 of a round: a pure function from what was observed and the
//! options to a plan (or a typed reason to stop). No git, no clock, no
//! ref: unit-tested on hand-made values, like [`super::replay::plan_replay`].

use crate::error::{Code, Refusal};
use crate::repo::Repo;
use crate::store::{Oid, Tip};
use crate::trust::AllowedSigners;
use crate::tx::Snapshot;
use crate::verify::{Finding, Rule};

use super::observe::{Both, First, Fresh, LocalSide, Observed, RemoteSide, Shape, Side};
use super::replay::{Step, plan_replay};
use super::{Names, Options, Outcome, Rejected};

/// What one round does.
pub(super) enum Plan {
    /// Both sides hold `tip`.
    UpToDate { tip: Tip },
    /// The fetched tip is older than one synced here already: fetch again.
    Refetch,
    /// Move the local ref from `from` to the remote's `to` (a fast-forward,
    /// a first sync, or every local op already on the remote).
    Pull {
        from: Option<Oid>,
        to: Tip,
        pulled: usize,
    },
    /// Follow a rewritten or unrelated remote, keeping `from` under a
    /// backup ref.
    Adopt { from: Tip, to: Tip, pulled: usize },
    /// Push the local tip as it is, expecting the remote at `expected`.
    Push {
        tip: Tip,
        expected: Option<Oid>,
        count: usize,
    },
    /// Push nothing this round, and go again (a new goal ref waiting for
    /// the other half of its split to land: [`super::observe::Fresh`]).
    Wait(String),
    /// Write `steps` on top of `onto`, push them expecting the remote at
    /// `expected` (its tip; None for a ref it does not have), then move the
    /// local ref from `local`.
    Replay {
        expected: Option<Oid>,
        /// Boxed: a state is much larger than the other variants.
        onto: Box<Snapshot>,
        local: Oid,
        steps: Vec<Step>,
        rejected: Vec<Rejected>,
        pulled: usize,
    },
}

/// Why a round stops without changing anything.
#[derive(Debug)]
pub(super) enum Stop {
    NoState,
    /// The remote has no state although this clone synced `synced` with it.
    RemoteGone {
        synced: Tip,
    },
    Rewritten {
        synced: Tip,
        remote: Tip,
    },
    Unrelated,
    /// A remote commit is not a valid tick.
    RemoteInvalid(Finding),
    /// A local commit is not a valid tick.
    LocalInvalid(Finding),
    /// The replay refused the remote's history (an op id it reuses).
    Refused(Refusal),
}

/// Decides the round.
pub(super) fn decide(
    seen: Observed,
    opts: &Options,
    signers: &AllowedSigners,
) -> Result<(Plan, Option<Oid>), Box<Stop>> {
    let verified_to = seen.shape.verified_remote();
    decide_plan(seen.shape, opts, signers).map(|p| (p, verified_to))
}

fn decide_plan(shape: Shape, opts: &Options, signers: &AllowedSigners) -> Result<Plan, Box<Stop>> {
    match shape {
        Shape::Empty => Err(Box::new(Stop::NoState)),
        Shape::Same { tip } => Ok(Plan::UpToDate { tip }),
        Shape::StaleFetch => Ok(Plan::Refetch),
        Shape::RemoteGone { synced } => Err(Box::new(Stop::RemoteGone { synced })),
        Shape::LocalOnly { local, first } => match first {
            First::Fresh(Fresh::Wait(why)) => Ok(Plan::Wait(why)),
            First::Fresh(Fresh::Rebuild {
                onto,
                state_id,
                side,
                first_pin,
            }) => rebuild(*onto, state_id, side, first_pin, local.commit, signers),
            First::Push(side) => {
                mine(side)?;
                Ok(Plan::Push {
                    count: usize::try_from(local.tick).unwrap_or(usize::MAX),
                    tip: local,
                    expected: None,
                })
            }
        },
        Shape::RemoteOnly { remote, theirs } => {
            let side = their(theirs)?;
            Ok(Plan::Pull {
                from: None,
                to: remote,
                pulled: side.commits,
            })
        }
        Shape::Rewritten {
            local,
            remote,
            theirs: Some(theirs),
            ..
        }
        | Shape::Unrelated {
            local,
            remote,
            theirs: Some(theirs),
        } if opts.adopt_remote => {
            let side = their(theirs)?;
            Ok(Plan::Adopt {
                from: local,
                to: remote,
                pulled: side.commits,
            })
        }
        Shape::Rewritten { synced, remote, .. } => {
            Err(Box::new(Stop::Rewritten { synced, remote }))
        }
        Shape::Unrelated { .. } => Err(Box::new(Stop::Unrelated)),
        Shape::Behind {
            local,
            remote,
            theirs,
        } => {
            let side = their(theirs)?;
            Ok(Plan::Pull {
                from: Some(local.commit),
                to: remote,
                pulled: side.commits,
            })
        }
        Shape::Ahead {
            local,
            remote,
            ours,
        } => {
            let side = mine(ours)?;
            Ok(Plan::Push {
                tip: local,
                expected: Some(remote.commit),
                count: side.ticks.len(),
            })
        }
        Shape::Diverged {
            local,
            remote,
            base,
            sides,
        } => {
            debug_assert!(
                base != local.commit,
                "diverged: local ticks beyond the base"
            );
            let Both { ours, theirs } = sides.map_err(|f| Box::new(Stop::LocalInvalid(f)))?;
            let remote_side = their(theirs)?;
            let planned = plan_replay(
                &remote_side.verified.state,
                &ours.ticks,
                &remote_side.ops,
                signers,
                &crate::trust::Binding::live(remote_side.state_id.clone()),
            )
            .map_err(|r| Box::new(Stop::Refused(r)))?;
            let pulled = remote_side.commits.saturating_sub(planned.already);
            if planned.steps.is_empty() {
                // Every local op is already on the remote: a fast-forward.
                return Ok(Plan::Pull {
                    from: Some(local.commit),
                    to: remote,
                    pulled,
                });
            }
            Ok(Plan::Replay {
                expected: Some(remote.commit),
                onto: Box::new(Snapshot {
                    tip: remote_side.verified.tip,
                    state: remote_side.verified.state,
                }),
                local: local.commit,
                steps: planned.steps,
                rejected: planned.rejected,
                pulled,
            })
        }
    }
}

/// A new goal ref's ticks written again on top of `onto`, for its first
/// push ([`Fresh::Rebuild`]): the same replay as a diverged ref's, onto a
/// state the remote holds on another ref, with nothing of this ref there.
fn rebuild(
    onto: Snapshot,
    state_id: Option<String>,
    side: Result<LocalSide, Finding>,
    first_pin: Option<Oid>,
    local: Oid,
    signers: &AllowedSigners,
) -> Result<Plan, Box<Stop>> {
    let ours = side.map_err(|f| Box::new(Stop::LocalInvalid(f)))?;
    let mut planned = plan_replay(
        &onto.state,
        &ours.ticks,
        &std::collections::HashMap::new(),
        signers,
        &crate::trust::Binding::live(state_id),
    )
    .map_err(|r| Box::new(Stop::Refused(r)))?;
    if let (Some(pin), Some(first)) = (first_pin, planned.steps.first_mut()) {
        // A first split's goal tick pins the shared split of its parent.
        first
            .extra
            .retain(|(k, _)| k != crate::tx::goalref::TRAILER);
        first
            .extra
            .push((crate::tx::goalref::TRAILER.to_owned(), pin.to_string()));
    }
    Ok(Plan::Replay {
        expected: None,
        onto: Box::new(onto),
        local,
        steps: planned.steps,
        rejected: planned.rejected,
        pulled: 0,
    })
}

/// The remote's side, as observed for a shape that takes it.
fn their(side: Side<RemoteSide>) -> Result<RemoteSide, Box<Stop>> {
    side.map_err(|f| Box::new(Stop::RemoteInvalid(f)))
}

/// The local side, as observed for a shape that sends it.
fn mine(side: Side<LocalSide>) -> Result<LocalSide, Box<Stop>> {
    side.map_err(|f| Box::new(Stop::LocalInvalid(f)))
}

/// The outcome a plan reports when it lands.
pub(super) fn outcome(plan: &Plan) -> Option<Outcome> {
    match plan {
        Plan::UpToDate { .. } => Some(Outcome::UpToDate),
        Plan::Pull { .. } => Some(Outcome::Pulled),
        Plan::Adopt { .. } => Some(Outcome::Adopted),
        Plan::Push { .. } => Some(Outcome::Pushed),
        Plan::Replay { .. } => Some(Outcome::Replayed),
        Plan::Refetch | Plan::Wait(_) => None,
    }
}

/// The refusal a command exits with for a stopped round.
pub(super) fn refusal(repo: &Repo, names: &Names, stop: Stop) -> anyhow::Error {
    match stop {
        Stop::Refused(mut r) => {
            r.message = format!("{} holds {}", names.remote, r.message);
            r
        }
        Stop::NoState => Refusal::error(
            Code::NoState,
            format!("there is no loopx state here or on {}", names.remote),
        )
        .with_hint("create one with `loopx init`; `loopx sync` then shares it"),
        Stop::RemoteGone { synced: s } => Refusal::error(
            Code::RemoteRewritten,
            format!(
                "{} no longer has a loopx state, though this machine synced tick {} ({}) with it",
                names.remote,
                s.tick,
                s.commit.short(8)
            ),
        )
        .with_hint(format!(
            "nothing was changed; if its removal was intended and this state should go there again, forget the old sync with `git update-ref -d {}` and run `loopx sync` again",
            names.synced
        )),
        Stop::Rewritten { synced, remote } => rewritten(repo, names, &synced, &remote),
        Stop::Unrelated => Refusal::error(
            Code::UnrelatedStates,
            format!(
                "the local state and {}'s share no history: each was made by its own `loopx init`",
                names.remote
            ),
        )
        .with_hint(format!(
            "nothing was changed; keep one: `loopx sync {} --adopt-remote` takes {}'s state and keeps this one under refs/loopx/backup/{}/…",
            names.remote, names.remote, names.remote
        )),
        Stop::RemoteInvalid(f) => refused_remote(names, &f),
        Stop::LocalInvalid(f) => refused_local(repo, names, &f),
    }
    .into()
}

fn rewritten(repo: &Repo, names: &Names, synced: &Tip, remote: &Tip) -> Refusal {
    Refusal::error(
        Code::RemoteRewritten,
        format!(
            "{}'s history was rewritten: its state (tick {}, {}) no longer contains tick {} ({}), which this machine synced with it",
            names.remote,
            remote.tick,
            remote.commit.short(8),
            synced.tick,
            synced.commit.short(8)
        ),
    )
    .with_hint(format!(
        "nothing was changed here. If the rewrite was meant, `loopx sync {r} --adopt-remote` follows it and keeps this state under refs/loopx/backup/{r}/…; if not, a human should find out who rewrote {r}'s {s} (its reflog, or `git log {t}`) and have them put the lost ticks back on top of what {r} holds now (this clone still has every tick up to {c}); never push over {r}'s ticks, which other machines wrote",
        r = names.remote,
        s = repo.state_ref(),
        t = names.tracking,
        c = synced.commit.short(8),
    ))
}

/// The refusal for a remote that holds a bad commit.
fn refused_remote(names: &Names, f: &Finding) -> Refusal {
    let hint = if f.rule == Rule::Future {
        format!(
            "nothing was changed here and no local tick is lost. The tick is dated after this machine's clock plus the clock-skew margin: check this machine's clock and the clock of whoever wrote it ({a}); it is taken once its time has come",
            a = f.author,
        )
    } else {
        format!(
            "nothing was changed here and no local tick is lost. {r} holds a commit that loopx did not write (or a rule it breaks), pushed as {a}: ask them what happened. A human can put {r} back at this clone's last verified tick with `loopx sync {r} --repair-remote`; `loopx hub install` makes a hub you run refuse such pushes",
            r = names.remote,
            a = f.author,
        )
    };
    let mut r = f.refusal(hint);
    r.message = format!("{} holds an invalid tick: {}", names.remote, r.message);
    if f.rule == Rule::Signature
        && let Some(code) = f.refusal
    {
        // The signature's own code (`bad-signature`, `unsigned`, …).
        r.code = code;
    }
    r
}

/// The refusal for a local commit that is not a valid tick.
fn refused_local(repo: &Repo, names: &Names, f: &Finding) -> Refusal {
    if f.rule == Rule::Future {
        return f.refusal(format!(
            "nothing was pushed to {} and nothing was changed. The tick was written while this machine's clock (or LOOPX_NOW) was ahead; no hub takes it, nor any tick after it. `loopx sync --redate` writes it again at this machine's time and every later local tick as it was (nothing is discarded; the old tip is kept under refs/loopx/backup/redate/…), then sync again",
            names.remote,
        ));
    }
    f.refusal(format!(
        "nothing was pushed to {} and nothing was changed. `loopx verify` names every commit of {} it refuses and why; keep the ticks after it: they can be redone with loopx commands once it is out of the way",
        names.remote,
        repo.state_ref(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Actor, OpId, State};
    use crate::op::{Change, Init, Op, message};
    use crate::time::Timestamp;
    use crate::verify::Verified;

    fn tip(n: u8, tick: u64) -> Tip {
        Tip {
            commit: Oid::from_hex_for_tests(n),
            tree: Oid::from_hex_for_tests(100 + n),
            tick,
        }
    }

    fn seen(shape: Shape) -> Observed {
        Observed { shape }
    }

    fn ours(ticks: Vec<(Oid, message::Parsed)>) -> Side<LocalSide> {
        Ok(LocalSide { ticks })
    }

    fn theirs_verified(ops: &[&Op]) -> RemoteSide {
        RemoteSide {
            verified: Verified {
                tip: tip(3, 2),
                state: State::default(),
            },
            commits: 1,
            ops: ops
                .iter()
                .map(|op| (op.id.to_string(), crate::trust::op_digest(op)))
                .collect(),
            state_id: None,
        }
    }

    fn finding(rule: Rule) -> Finding {
        Finding {
            commit: Oid::from_hex_for_tests(2).to_string(),
            tick: 2,
            author: "Hand <hand@example.com>".into(),
            rule,
            message: "bad".into(),
            refusal: None,
        }
    }

    fn local_op(id: &str) -> (Oid, message::Parsed) {
        let op = Op {
            id: OpId::from_hex(id),
            at: Timestamp::parse("2026-11-30T09:00:00Z").unwrap(),
            actor: Actor::Human {
                name: "Ada".into(),
                email: "ada@example.com".into(),
            },
            signature: None,
            change: Change::Init(Init {
                goal: None,
                objective: None,
            }),
        };
        (
            Oid::from_hex_for_tests(2),
            message::Parsed {
                subject: String::new(),
                op,
                tick: 2,
                format: crate::model::FORMAT,
                trailers: Vec::new(),
            },
        )
    }

    fn plan(seen: Observed, adopt: bool) -> Result<Plan, Box<Stop>> {
        let opts = Options {
            adopt_remote: adopt,
            ..Options::default()
        };
        decide(seen, &opts, &AllowedSigners::none()).map(|(p, _)| p)
    }

    fn stop(seen: Observed) -> Stop {
        match plan(seen, false) {
            Err(stop) => *stop,
            Ok(_) => panic!("a stop"),
        }
    }

    #[test]
    fn equal_tips_are_up_to_date_and_a_stale_fetch_fetches_again() {
        let s = seen(Shape::Same { tip: tip(2, 2) });
        assert!(matches!(plan(s, false), Ok(Plan::UpToDate { tip }) if tip.tick == 2));
        assert!(matches!(
            plan(seen(Shape::StaleFetch), false),
            Ok(Plan::Refetch)
        ));
    }

    #[test]
    fn a_push_expects_the_fetched_remote_tip() {
        let s = seen(Shape::Ahead {
            local: tip(2, 2),
            remote: tip(3, 2),
            ours: ours(vec![local_op("00000000000000aa")]),
        });
        let Ok(Plan::Push {
            tip: t,
            expected,
            count,
        }) = plan(s, false)
        else {
            panic!("a push");
        };
        assert_eq!(t.commit, Oid::from_hex_for_tests(2));
        assert_eq!(expected, Some(Oid::from_hex_for_tests(3)));
        assert_eq!(count, 1);
        // A first push expects no ref at all.
        let s = seen(Shape::LocalOnly {
            local: tip(2, 2),
            first: First::Push(ours(Vec::new())),
        });
        assert!(matches!(
            plan(s, false),
            Ok(Plan::Push { expected: None, .. })
        ));
    }

    #[test]
    fn goal_ticks_pinning_replaced_shared_ticks_are_replayed_not_pushed() {
        // Ahead of the remote, observed as a replay onto it.
        let s = seen(Shape::Diverged {
            local: tip(2, 2),
            remote: tip(1, 1),
            base: Oid::from_hex_for_tests(1),
            sides: Ok(Both {
                ours: LocalSide {
                    ticks: vec![local_op("00000000000000aa")],
                },
                theirs: Ok(theirs_verified(&[])),
            }),
        });
        let Ok(Plan::Replay {
            local,
            steps,
            rejected,
            ..
        }) = plan(s, false)
        else {
            panic!("a replay");
        };
        assert_eq!(local, Oid::from_hex_for_tests(2));
        assert_eq!(steps.len(), 1);
        assert!(rejected.is_empty());
    }

    #[test]
    fn a_new_goal_ref_waits_for_its_split_half_or_is_written_again_onto_it() {
        let s = seen(Shape::LocalOnly {
            local: tip(2, 2),
            first: First::Fresh(Fresh::Wait("the other half first".to_owned())),
        });
        assert!(matches!(plan(s, false), Ok(Plan::Wait(w)) if w == "the other half first"));
        let s = seen(Shape::LocalOnly {
            local: tip(2, 2),
            first: First::Fresh(Fresh::Rebuild {
                onto: Box::new(Snapshot {
                    tip: tip(4, 1),
                    state: State::default(),
                }),
                state_id: None,
                side: ours(vec![local_op("00000000000000ab")]),
                first_pin: Some(Oid::from_hex_for_tests(5)),
            }),
        });
        let Ok(Plan::Replay {
            expected,
            onto,
            steps,
            pulled,
            ..
        }) = plan(s, false)
        else {
            panic!("a replay");
        };
        // Pushed as the ref's first state, on the other half's parent.
        assert_eq!(expected, None);
        assert_eq!(onto.tip.commit, Oid::from_hex_for_tests(4));
        assert_eq!(pulled, 0);
        assert_eq!(steps.len(), 1);
        let pins: Vec<&str> = steps[0]
            .extra
            .iter()
            .filter(|(k, _)| k == crate::tx::goalref::TRAILER)
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(pins, [Oid::from_hex_for_tests(5).to_string()]);
    }

    #[test]
    fn a_rewrite_is_refused_unless_adopted() {
        let rewritten = |theirs| {
            seen(Shape::Rewritten {
                local: tip(2, 2),
                remote: tip(3, 2),
                synced: tip(1, 1),
                theirs,
            })
        };
        assert!(matches!(
            stop(rewritten(None)),
            Stop::Rewritten { synced, remote } if synced.tick == 1 && remote.tick == 2
        ));
        assert!(matches!(
            plan(rewritten(Some(Ok(theirs_verified(&[])))), true),
            Ok(Plan::Adopt { from, to, pulled: 1 })
                if from.commit == Oid::from_hex_for_tests(2) && to.commit == Oid::from_hex_for_tests(3)
        ));
        let s = seen(Shape::RemoteGone { synced: tip(1, 1) });
        assert!(matches!(stop(s), Stop::RemoteGone { .. }));
        let s = seen(Shape::Unrelated {
            local: tip(2, 2),
            remote: tip(3, 2),
            theirs: None,
        });
        assert!(matches!(stop(s), Stop::Unrelated));
    }

    #[test]
    fn invalid_ticks_stop_the_round_on_either_side() {
        let s = seen(Shape::Diverged {
            local: tip(2, 2),
            remote: tip(3, 2),
            base: Oid::from_hex_for_tests(1),
            sides: Err(finding(Rule::NotATick)),
        });
        assert!(matches!(stop(s), Stop::LocalInvalid(f) if f.rule == Rule::NotATick));
        let s = seen(Shape::Behind {
            local: tip(2, 2),
            remote: tip(3, 2),
            theirs: Err(finding(Rule::Future)),
        });
        assert!(matches!(stop(s), Stop::RemoteInvalid(f) if f.rule == Rule::Future));
    }

    #[test]
    fn diverged_sides_replay_unless_the_remote_has_every_local_op() {
        let op = local_op("00000000000000aa");
        let known = op.1.op.clone();
        let diverged = |ticks, theirs| {
            seen(Shape::Diverged {
                local: tip(2, 2),
                remote: tip(3, 2),
                base: Oid::from_hex_for_tests(1),
                sides: Ok(Both {
                    ours: LocalSide { ticks },
                    theirs: Ok(theirs),
                }),
            })
        };
        assert!(matches!(
            plan(diverged(vec![op.clone()], theirs_verified(&[&known])), false),
            Ok(Plan::Pull { from: Some(_), to, pulled: 0 }) if to.tick == 2
        ));
        let Ok(Plan::Replay {
            onto,
            local,
            steps,
            pulled,
            ..
        }) = plan(diverged(vec![op], theirs_verified(&[])), false)
        else {
            panic!("a replay");
        };
        assert_eq!(onto.tip.commit, Oid::from_hex_for_tests(3));
        assert_eq!(local, Oid::from_hex_for_tests(2));
        assert_eq!(pulled, 1);
        assert_eq!(steps.len(), 1, "the init op applies to an empty state");
    }
}
