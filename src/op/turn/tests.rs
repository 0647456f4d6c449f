//! Unit tests of the ops that close a turn: `turn.refresh`, `quota.spend`,
//! `quota.void` and `turn.settle`.

use crate::model::quota::{Spend, Void};
use crate::op::test_support::*;
use crate::op::{QuotaSpend, RefreshState, Settle};

/// When the turn of most tests began.
const ISSUED: &str = "2026-01-01T09:10:00Z";

/// The claimed board after agent-a's validated writeback at 09:11 (a note on
/// its claim): a turn issued at 09:10 may spend a slot.
fn worked_board() -> State {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:11:00Z",
            update(T1, 1, None, Some("lexer done")),
        ),
    );
    assert_eq!(
        s.agents[&aid("agent-a")].last_writeback,
        Some(t("2026-01-01T09:11:00Z"))
    );
    s
}

fn spends(s: &State, agent: &str) -> Vec<Spend> {
    s.quota
        .get(&aid(agent))
        .map(|l| l.spends.clone())
        .unwrap_or_default()
}

// ------------------------------------------------------------ turn.refresh

#[test]
fn refresh_records_the_last_turn() {
    let mut s = claimed_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            refresh(Outcome::Advanced, Some(T1), Some("  write the tests ")),
        ),
    );
    let a = &s.agents[&aid("agent-a")];
    let last = a.last_turn.clone().expect("recorded");
    assert_eq!(last.at, t("2026-01-01T09:12:00Z"));
    assert_eq!(last.goal, gid("main"));
    assert_eq!(last.outcome, Outcome::Advanced);
    assert_eq!(last.turn.as_deref(), Some("7a1e"));
    assert_eq!(last.todo, Some(tid(T1)));
    assert_eq!(last.next_action.as_deref(), Some("write the tests"));
    assert_eq!(
        last.digest,
        turn::digest(&s, &aid("agent-a"), &gid("main"), t("2026-01-01T09:12:00Z"))
    );
    // Advancing is a writeback.
    assert_eq!(a.last_writeback, Some(t("2026-01-01T09:12:00Z")));
}

#[test]
fn an_unchanged_turn_is_no_writeback_and_a_blocked_one_is() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:12:00Z",
            refresh(Outcome::Unchanged, None, None),
        ),
    );
    let b = &s.agents[&aid("agent-b")];
    assert_eq!(
        b.last_turn.as_ref().map(|l| l.outcome),
        Some(Outcome::Unchanged)
    );
    assert_eq!(b.last_writeback, None);
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:13:00Z",
            refresh(Outcome::Blocked, None, None),
        ),
    );
    assert_eq!(
        s.agents[&aid("agent-b")].last_writeback,
        Some(t("2026-01-01T09:13:00Z"))
    );
}

#[test]
fn refresh_is_for_registered_agents_only() {
    let mut s = board();
    let at = "2026-01-01T09:12:00Z";
    refuse(
        &mut s,
        &op(human(), at, refresh(Outcome::Advanced, None, None)),
        Exit::Refused,
        "agents-only",
    );
    refuse(
        &mut s,
        &op(agent("agent-z"), at, refresh(Outcome::Advanced, None, None)),
        Exit::Refused,
        "not-registered",
    );
}

#[test]
fn refresh_names_a_known_goal_a_live_todo_of_it_and_a_real_next_action() {
    let mut s = board();
    let at = "2026-01-01T09:12:00Z";
    let a = || agent("agent-a");
    let mut change = refresh(Outcome::Advanced, None, None);
    if let Change::RefreshState(RefreshState { goal, .. }) = &mut change {
        *goal = gid("nope");
    }
    refuse(&mut s, &op(a(), at, change), Exit::Error, "unknown-goal");
    refuse(
        &mut s,
        &op(a(), at, refresh(Outcome::Advanced, Some(T2), None)),
        Exit::Error,
        "unknown-todo",
    );
    refuse(
        &mut s,
        &op(a(), at, refresh(Outcome::Advanced, None, Some(" \t "))),
        Exit::Usage,
        "empty-text",
    );
    ok(
        &mut s,
        &op(human(), at, goal_add("docs", "Write the manual")),
    );
    let mut change = refresh(Outcome::Advanced, Some(T1), None);
    if let Change::RefreshState(RefreshState { goal, .. }) = &mut change {
        *goal = gid("docs");
    }
    refuse(&mut s, &op(a(), at, change), Exit::Usage, "wrong-goal");
}

// ------------------------------------------------------------- quota.spend

#[test]
fn spend_records_one_slot_for_the_turn() {
    let mut s = worked_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            spend("turn-1", ISSUED),
        ),
    );
    assert_eq!(
        spends(&s, "agent-a"),
        vec![Spend {
            turn: "turn-1".to_owned(),
            goal: gid("main"),
            at: t("2026-01-01T09:12:00Z"),
            void: None,
        }]
    );
    let goal = &s.goals[&gid("main")];
    let slots = turn::slots(&s, &aid("agent-a"), goal, t("2026-01-01T09:12:00Z"));
    assert_eq!((slots.used, slots.left()), (1, 47));
}

#[test]
fn a_second_spend_for_the_same_turn_changes_nothing() {
    let mut s = worked_board();
    let a = || agent("agent-a");
    ok(
        &mut s,
        &op(a(), "2026-01-01T09:12:00Z", spend("turn-1", ISSUED)),
    );
    let before = s.clone();
    let effect = ok_effect(
        &mut s,
        &op(a(), "2026-01-01T09:13:00Z", spend("turn-1", ISSUED)),
    );
    assert_eq!(
        effect.what,
        Happened::Spent {
            agent: aid("agent-a"),
            already: true,
        }
    );
    assert_eq!(s, before);
}

#[test]
fn spend_needs_a_writeback_since_the_turn_began() {
    let mut s = worked_board();
    // The writeback at 09:11 is older than a turn issued at 09:30.
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:31:00Z",
            spend("turn-2", "2026-01-01T09:30:00Z"),
        ),
        Exit::Refused,
        "no-writeback",
    );
    assert!(
        r.message
            .starts_with("agent-a has made no validated writeback")
    );
    // agent-b never wrote anything back.
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:31:00Z",
            spend("turn-3", ISSUED),
        ),
        Exit::Refused,
        "no-writeback",
    );
}

#[test]
fn a_token_older_than_the_window_is_refused() {
    let mut s = worked_board();
    // The default window is 24h.
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T09:10:01Z",
            spend("turn-1", ISSUED),
        ),
        Exit::Refused,
        "token-expired",
    );
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T09:10:00Z",
            spend("turn-1", ISSUED),
        ),
    );
}

#[test]
fn spend_is_for_registered_agents_on_a_known_goal() {
    let mut s = worked_board();
    let at = "2026-01-01T09:12:00Z";
    refuse(
        &mut s,
        &op(human(), at, spend("turn-1", ISSUED)),
        Exit::Refused,
        "agents-only",
    );
    refuse(
        &mut s,
        &op(agent("agent-z"), at, spend("turn-1", ISSUED)),
        Exit::Refused,
        "not-registered",
    );
    let mut change = spend("turn-1", ISSUED);
    if let Change::QuotaSpend(QuotaSpend { goal, .. }) = &mut change {
        *goal = gid("nope");
    }
    refuse(
        &mut s,
        &op(agent("agent-a"), at, change),
        Exit::Error,
        "unknown-goal",
    );
}

#[test]
fn spends_that_left_the_window_are_dropped_from_the_ledger() {
    let mut s = worked_board();
    let a = || agent("agent-a");
    ok(
        &mut s,
        &op(a(), "2026-01-01T09:12:00Z", spend("turn-1", ISSUED)),
    );
    // A day and a bit later: a new writeback, a new turn.
    ok(
        &mut s,
        &op(
            a(),
            "2026-01-02T10:00:00Z",
            refresh(Outcome::Advanced, None, None),
        ),
    );
    ok(
        &mut s,
        &op(
            a(),
            "2026-01-02T10:01:00Z",
            spend("turn-2", "2026-01-02T09:59:00Z"),
        ),
    );
    let turns: Vec<String> = spends(&s, "agent-a").into_iter().map(|x| x.turn).collect();
    assert_eq!(turns, ["turn-2"]);
}

// -------------------------------------------------------------- quota.void

#[test]
fn a_human_voids_a_spend_which_stops_counting_and_stays_recorded() {
    let mut s = worked_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            spend("turn-1", ISSUED),
        ),
    );
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:13:00Z",
            void("agent-a", "turn-1", "  a test run  "),
        ),
    );
    let recorded = spends(&s, "agent-a");
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].void,
        Some(Void {
            by: human(),
            at: t("2026-01-01T09:13:00Z"),
            reason: "a test run".to_owned(),
        })
    );
    let goal = &s.goals[&gid("main")];
    let slots = turn::slots(&s, &aid("agent-a"), goal, t("2026-01-01T09:14:00Z"));
    assert_eq!(slots.used, 0);
    // Voiding again is refused.
    refuse(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:14:00Z",
            void("agent-a", "turn-1", "again"),
        ),
        Exit::Refused,
        "already-voided",
    );
}

#[test]
fn void_is_for_humans_with_a_reason_and_a_real_spend() {
    let mut s = worked_board();
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:12:00Z",
            spend("turn-1", ISSUED),
        ),
    );
    let at = "2026-01-01T09:13:00Z";
    refuse(
        &mut s,
        &op(agent("agent-a"), at, void("agent-a", "turn-1", "mine")),
        Exit::Refused,
        "humans-only",
    );
    refuse(
        &mut s,
        &op(human(), at, void("agent-a", "turn-1", "  ")),
        Exit::Usage,
        "empty-text",
    );
    refuse(
        &mut s,
        &op(human(), at, void("agent-a", "turn-9", "no such turn")),
        Exit::Error,
        "unknown-spend",
    );
    refuse(
        &mut s,
        &op(human(), at, void("agent-b", "turn-1", "not its turn")),
        Exit::Error,
        "unknown-spend",
    );
}

// ------------------------------------------------------------- turn.settle

fn settle(steps: Vec<Change>) -> Change {
    Change::Settle(Settle {
        turn: "turn-1".to_owned(),
        steps,
    })
}

#[test]
fn settle_applies_every_step_in_one_op() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let written = ok_evidence(
        &mut s,
        &op(
            agent("agent-a"),
            at,
            settle(vec![
                evidence(
                    "0000e1e1",
                    Some(T1),
                    EvidenceKind::Test,
                    Some(command_run(&["cargo", "test"], Some(0))),
                ),
                done(T1, 1, Some("all green")),
                refresh(Outcome::Advanced, Some(T1), None),
                spend("turn-1", ISSUED),
            ]),
        ),
    );
    assert_eq!(written.len(), 1);
    assert_eq!(todo1(&s).status, TodoStatus::Done);
    assert_eq!(todo1(&s).done_at, Some(t(at)));
    let a = &s.agents[&aid("agent-a")];
    assert_eq!(
        a.last_turn.as_ref().map(|l| l.outcome),
        Some(Outcome::Advanced)
    );
    assert_eq!(a.last_writeback, Some(t(at)));
    assert_eq!(spends(&s, "agent-a").len(), 1);
}

#[test]
fn a_refused_step_refuses_the_whole_settle() {
    let mut s = claimed_board();
    // The note would land (and be a writeback at 09:15), but the spend
    // after it is for a turn issued later, with no writeback since: nothing
    // of the settle may land.
    let r = refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:15:00Z",
            settle(vec![
                evidence("0000e1e1", None, EvidenceKind::Note, None),
                spend("turn-1", "2026-01-01T09:16:00Z"),
            ]),
        ),
        Exit::Refused,
        "no-writeback",
    );
    assert!(r.message.contains("agent-b"), "{}", r.message);
    // A step refused for a conflict keeps its own exit and code.
    refuse(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:15:00Z",
            settle(vec![
                refresh(Outcome::Advanced, None, None),
                done(T1, 1, None),
            ]),
        ),
        Exit::Conflict,
        "claimed",
    );
}

#[test]
fn settle_refuses_nothing_to_record_and_a_nested_settle() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    refuse(
        &mut s,
        &op(agent("agent-a"), at, settle(Vec::new())),
        Exit::Usage,
        "empty-settle",
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            at,
            settle(vec![
                refresh(Outcome::Advanced, None, None),
                settle(vec![refresh(Outcome::Advanced, None, None)]),
            ]),
        ),
        Exit::Usage,
        "nested-settle",
    );
}

/// From format 7 a settle holds a turn's writeback only: a signer, machine
/// or settings act inside one would skip the checks `trust` makes on the
/// op itself (issue 44's review). Older ticks keep their old rule.
#[test]
fn from_format_7_a_settle_holds_only_a_turns_writeback() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let announce = Change::SignerAnnounce(crate::op::SignerAnnounce {
        name: crate::model::SignerName::new("bob").expect("a slug"),
        key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJRqOlZ4qkWVuwIN6zT8Rtnu8VP+zkcei4lRZKsBty30"
            .to_owned(),
    });
    refuse(
        &mut s,
        &op(human(), at, settle(vec![announce.clone()])),
        Exit::Usage,
        "nested-settle",
    );
    let mut old = s.clone();
    crate::op::apply_as(&mut old, &op(human(), at, settle(vec![announce])), 6)
        .expect("a format-6 settle kept its old rule");
}

// ------------------------------------------------------------ should-run from the claims

/// `decide_from_claims` on a state that holds only the claimed todos (the
/// state cache's head), finished on the whole state when it must be, gives
/// exactly `decide`'s answer on the whole state: over a few thousand
/// states that a random run of claims, releases, dones, adds (with
/// `after` and scopes), gates and unchanged or advanced turns reaches,
/// each asked by both agents at times before and after the leases end.
/// A random run of claims, releases, dones, adds (with `after` and
/// scopes), gates, their answers and unchanged or advanced turns; with
/// `rich`, also adds with other priorities and capabilities, and todos
/// blocked and opened again.
struct Run {
    s: State,
    seed: u64,
    ids: Vec<String>,
    minute: i64,
    rich: bool,
}

impl Run {
    fn new(seed: u64, rich: bool) -> Run {
        let mut s = board();
        if rich {
            // An agent that never claims: it always asks for a ready todo.
            let c = register("agent-c", Runtime::Codex, &["rust"]);
            ok(&mut s, &op(human(), "2026-01-01T09:00:00Z", c));
        }
        Run {
            s,
            seed,
            ids: vec![T1.to_owned()],
            minute: 2,
            rich,
        }
    }

    fn next(&mut self) -> u64 {
        self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Applies one random op (refused or not); its time.
    fn step(&mut self, step: usize) -> String {
        self.minute += (self.next() % 4) as i64;
        let at = t("2026-01-01T09:00:00Z")
            .plus(Span::minutes(self.minute))
            .to_string();
        let who = if self.next().is_multiple_of(2) {
            "agent-a"
        } else {
            "agent-b"
        };
        let r = self.next();
        let pick = self.ids[(r % self.ids.len() as u64) as usize].clone();
        let epoch = self.s.todos.get(&tid(&pick)).map_or(0, |t| t.epoch);
        let kinds = if self.rich { 12 } else { 9 };
        let (actor, change) = match self.next() % kinds {
            0 | 1 => (agent(who), claim(&pick, epoch, LEASE)),
            2 => (agent(who), release(&pick, epoch)),
            3 => (agent(who), done(&pick, epoch, None)),
            4 | 9 => {
                let hex = format!("{:08x}", self.next() as u32);
                let after: Vec<&str> = if self.next().is_multiple_of(3) {
                    vec![pick.as_str()]
                } else {
                    vec![]
                };
                let scope: &[&str] = if self.next().is_multiple_of(3) {
                    &["src/**"]
                } else {
                    &[]
                };
                let caps: &[&str] = if self.rich && self.next().is_multiple_of(4) {
                    &["rust"]
                } else {
                    &[]
                };
                let mut c = add_with(&after, caps, scope, None);
                if let Change::TodoAdd(a) = &mut c {
                    a.todo = tid(&hex);
                    a.title = format!("job {step}");
                    if self.rich {
                        a.priority = format!("P{}", self.next() % 3).parse().unwrap();
                    }
                }
                self.ids.push(hex);
                (human(), c)
            }
            5 => {
                let blocks = match self.next() % 3 {
                    0 => Blocks::Todo(tid(&pick)),
                    1 => Blocks::Agent(aid(who)),
                    _ => Blocks::Goal,
                };
                let c = Change::GateOpen(crate::op::GateOpen {
                    gate: GateId::from_hex(&format!("{:08x}", self.next() as u32)),
                    goal: gid("main"),
                    question: "Go on?".to_owned(),
                    options: strings(&["yes", "no"]),
                    kind: GateKind::Decision,
                    blocks,
                });
                (human(), c)
            }
            6 => {
                let open: Vec<GateId> = self
                    .s
                    .gates
                    .values()
                    .filter(|g| g.is_open())
                    .map(|g| g.id.clone())
                    .collect();
                let Some(g) = open.first() else {
                    return at;
                };
                let c = Change::GateAnswer(crate::op::GateAnswer {
                    gate: g.clone(),
                    choice: "yes".to_owned(),
                    note: None,
                });
                (human(), c)
            }
            10 => (
                human(),
                update(&pick, epoch, Some(TodoStatus::Blocked), None),
            ),
            11 => (human(), update(&pick, epoch, Some(TodoStatus::Open), None)),
            _ => {
                let outcome = if self.next().is_multiple_of(2) {
                    Outcome::Unchanged
                } else {
                    Outcome::Advanced
                };
                (agent(who), refresh(outcome, None, None))
            }
        };
        let _ = apply(&mut self.s, &op(actor, &at, change));
        at
    }
}

/// The state with only its claimed todos, as the cache's head holds it.
fn claimed_only(s: &State) -> State {
    State {
        todos: s
            .todos
            .iter()
            .filter(|(_, t)| t.claim.is_some())
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect(),
        ..s.clone()
    }
}

#[test]
fn deciding_from_the_claims_answers_as_the_whole_state_does() {
    let mut run = Run::new(29, false);
    let (mut head_only, mut finished, mut no_change, mut own) = (0, 0, 0, 0);
    for step in 0..1500 {
        let at = run.step(step);
        let s = &run.s;

        let claimed = claimed_only(s);
        let goal = &s.goals[&gid("main")];
        for who in ["agent-a", "agent-b"] {
            for later in [0, 5, 11, 30] {
                let now = t(&at).plus(Span::minutes(later));
                let want = turn::decide(s, &aid(who), goal, now);
                assert_eq!(
                    crate::op::board::counts(s, now),
                    crate::op::board::derive(s, now, &[]).counts,
                    "the counts alone, step {step}"
                );
                no_change += usize::from(
                    want.skip == Some(turn::Reason::NoChange)
                        && want.todo.as_ref().is_some_and(|(_, own)| *own),
                );
                own += usize::from(want.todo.as_ref().is_some_and(|(_, own)| *own));
                let got = match turn::decide_from_claims(&claimed, &aid(who), goal, now) {
                    Ok(d) => {
                        head_only += 1;
                        d
                    }
                    Err(p) => {
                        finished += 1;
                        p.finish(s, &aid(who), goal, now)
                    }
                };
                assert_eq!(
                    format!("{got:?}"),
                    format!("{want:?}"),
                    "step {step}, {who} at +{later}m"
                );
            }
        }
    }
    // Both ways are taken often.
    assert!(
        head_only > 1000 && finished > 1000 && no_change > 100 && own > 1000,
        "{head_only} from the claims, {finished} finished, {no_change} no-change on an own claim, {own} own"
    );
}

/// The digest's bytes are pinned: a hash of these lines, as written
/// before the digest fed its hash without a `String` per line (a
/// `last_turn.digest` in a state must never change meaning).
#[test]
fn the_digest_hashes_the_same_lines_as_ever() {
    use sha2::{Digest, Sha256};
    let mut s = worked_board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:12:00Z",
            add_with(&[], &[], &[], None),
        ),
    );
    let now = t("2026-01-01T09:13:00Z");
    let t1 = &s.todos[&tid(T1)];
    let t2 = &s.todos[&tid(T2)];
    let mut h = Sha256::new();
    h.update(format!("claim {} {} {}\n", t1.id, t1.epoch, t1.status));
    h.update(format!("ready {} {}\n", t2.id, t2.updated_at));
    let want = crate::model::id::hex(&h.finalize()[..8]);
    assert_eq!(turn::digest(&s, &aid("agent-a"), &gid("main"), now), want);
}

// ------------------------------------------------------------ the ready index

/// The ready index kept by ticks (`ready::update_all` after every op of a
/// random run with priorities, capabilities, `after`, scopes, blocked
/// todos and gates, its lists cut short so that they drain and are ranked
/// again often) is always exactly the first candidates in each agent's
/// pick order; and should-run and the brief's ready todos answered from
/// the claimed todos and the index are the whole state's answers, at times
/// before and after the leases end, whenever the index answers at all.
#[test]
fn the_ready_index_answers_as_the_whole_state_does() {
    use crate::op::brief;
    use crate::op::turn::ready;
    let sizes = ready::Sizes { cap: 4, low: 2 };
    let every = ready::Sizes {
        cap: usize::MAX,
        low: 0,
    };
    let mut run = Run::new(2929, true);
    let mut index = ready::build_all(&run.s, sizes);
    let (mut answered, mut fell_back, mut briefs, mut picks) = (0, 0, 0, 0);
    let (mut whole_briefs, mut digested, mut no_change, mut nothing) = (0, 0, 0, 0);
    for step in 0..3000 {
        let before = run.s.clone();
        let at = run.step(step);
        let s = &run.s;
        let touched = crate::model::files::touched(&before, s);
        index = ready::update_all(Some(index), s, &touched, sizes);
        let main = gid("main");
        let goal = &s.goals[&main];
        let claimed = claimed_only(s);
        for who in ["agent-a", "agent-b", "agent-c"] {
            let a = &s.agents[&aid(who)];
            let list = &index[&aid(who)].goals[&main];
            let all = ready::build(s, a, &main, every);
            assert!(
                all.todos.starts_with(&list.todos)
                    && (!list.complete || all.todos.len() == list.todos.len()),
                "step {step}, {who}: the list is not the first candidates"
            );
            for later in [0, 5, 11, 30] {
                let now = t(&at).plus(Span::minutes(later));
                let want = turn::decide(s, &aid(who), goal, now);
                let got = match turn::decide_from_claims(&claimed, &aid(who), goal, now) {
                    Ok(d) => d,
                    Err(p) => {
                        match p.finish_from_ready(&claimed, &aid(who), goal, now, Some(list)) {
                            Ok(d) => {
                                answered += 1;
                                let unchanged = a.last_turn.as_ref().is_some_and(|l| {
                                    l.outcome == Outcome::Unchanged && l.goal == main
                                });
                                digested += usize::from(unchanged);
                                no_change += usize::from(d.skip == Some(turn::Reason::NoChange));
                                nothing += usize::from(matches!(
                                    d.skip,
                                    Some(turn::Reason::NothingReady { .. })
                                ));
                                d
                            }
                            Err(p) => {
                                fell_back += 1;
                                p.finish(s, &aid(who), goal, now)
                            }
                        }
                    }
                };
                assert_eq!(
                    format!("{got:?}"),
                    format!("{want:?}"),
                    "step {step}, {who} at +{later}m"
                );
                // claim --next's pick from the index is the whole state's.
                if let Some(t) = ready::best_of(&claimed, std::slice::from_ref(list), a, now) {
                    picks += 1;
                    let whole = rules::best_ready(s, a, Some(&main), now).map(|b| &b.id);
                    assert_eq!(
                        Ok(&t.id),
                        whole,
                        "claim --next, step {step}, {who} at +{later}m"
                    );
                }
                // The session-start brief from the head and the list.
                let since = a.last_turn.as_ref().map(|t| t.at);
                if let Some(b) = brief::from_ready(&claimed, &aid(who), goal, now, since, list) {
                    whole_briefs += 1;
                    let whole = brief::build(s, &aid(who), goal, now, since, None);
                    assert_eq!(
                        b.human(),
                        whole.human(),
                        "brief::from_ready, step {step}, {who} at +{later}m"
                    );
                }
                if let Some(first) = ready::first_ready(&claimed, list, a, now, 3) {
                    briefs += 1;
                    let whole = brief::build(s, &aid(who), goal, now, None, None);
                    let want: Vec<&TodoId> = whole.ready.iter().map(|l| &l.id).collect();
                    let got: Vec<&TodoId> = first.iter().map(|t| &t.id).collect();
                    assert_eq!(got, want, "the brief, step {step}, {who} at +{later}m");
                }
            }
        }
    }
    assert!(
        answered > 1000
            && fell_back > 20
            && briefs > 1500
            && picks > 1000
            && whole_briefs > 1500
            && digested > 300
            && no_change > 50
            && nothing > 20,
        "{answered} answered from the index, {fell_back} fell back, {briefs} briefs, {picks} picks, {whole_briefs} whole briefs, {digested} with an unchanged last turn, {no_change} no-change, {nothing} nothing ready"
    );
}

// ------------------------------------------------------------ across goals

/// The board with a second goal `docs` holding T2 (more urgent than T1).
fn two_goal_board() -> State {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T09:02:00Z",
            goal_add("docs", "Write the guide"),
        ),
    );
    let mut t2 = crate::op::TodoAdd::new(
        tid(T2),
        gid("docs"),
        "Write the guide".to_owned(),
        crate::model::Priority::DEFAULT,
    );
    t2.priority = "P0".parse().unwrap();
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:03:00Z", Change::TodoAdd(t2)),
    );
    s
}

fn across(s: &State, who: &str, at: &str) -> (String, turn::Decision) {
    let goals = s.scope(&aid(who));
    let (g, d) = turn::decide_across(s, &aid(who), &goals, t(at));
    (g.id.to_string(), d)
}

#[test]
fn across_goals_the_pick_is_claim_nexts_and_an_own_claim_comes_first() {
    let mut s = two_goal_board();
    let (g, d) = across(&s, "agent-a", "2026-01-01T09:05:00Z");
    assert_eq!(g, "docs");
    assert_eq!(d.todo, Some((tid(T2), false)));
    let a = s.agents[&aid("agent-a")].clone();
    assert_eq!(
        rules::best_ready(&s, &a, None, t("2026-01-01T09:05:00Z"))
            .unwrap()
            .id,
        tid(T2),
        "the same pick as claim --next"
    );
    // agent-a holds T1 on main: its claim comes first.
    ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:10:00Z",
            claim(T1, 0, LEASE),
        ),
    );
    let (g, d) = across(&s, "agent-a", "2026-01-01T09:11:00Z");
    assert_eq!((g.as_str(), d.todo), ("main", Some((tid(T1), true))));
}

#[test]
fn across_goals_a_skip_on_one_goal_passes_to_the_next() {
    let mut s = two_goal_board();
    // docs is paused: it drops out of the scope, and main answers.
    let mut pause = crate::op::GoalSet::new(gid("docs"));
    pause.status = Some(GoalStatus::Paused);
    ok(
        &mut s,
        &op(human(), "2026-01-01T09:04:00Z", Change::GoalSet(pause)),
    );
    let (g, d) = across(&s, "agent-a", "2026-01-01T09:05:00Z");
    assert_eq!((g.as_str(), d.skip), ("main", None));
    // Nothing ready anywhere: one skip, which names a goal of the scope.
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:06:00Z",
            claim(T1, 0, LEASE),
        ),
    );
    let (g, d) = across(&s, "agent-a", "2026-01-01T09:07:00Z");
    assert_eq!(g, "main");
    assert_eq!(d.skip.map(|r| r.code()), Some("nothing-ready"));
}

#[test]
fn the_agent_wide_window_caps_spend_across_goals() {
    let mut s = two_goal_board();
    for (g, n) in [("main", 2), ("docs", 2)] {
        let mut set = crate::op::GoalSet::new(gid(g));
        set.quota_slots = Some(n);
        ok(
            &mut s,
            &op(human(), "2026-01-01T09:04:00Z", Change::GoalSet(set)),
        );
    }
    // Two spends on main, none on docs: docs's own window has room, the
    // agent-wide one (2, the largest of its goals') has none.
    let ledger = s.quota.get_or_insert_with(aid("agent-a"), || {
        crate::model::quota::Ledger::new(aid("agent-a"))
    });
    for (turn, at) in [
        ("a1", "2026-01-01T09:05:00Z"),
        ("a2", "2026-01-01T09:06:00Z"),
    ] {
        ledger.spends.push(Spend {
            turn: turn.to_owned(),
            goal: gid("main"),
            at: t(at),
            void: None,
        });
    }
    let (_, d) = across(&s, "agent-a", "2026-01-01T09:07:00Z");
    assert_eq!(d.skip.map(|r| r.code()), Some("agent-quota-exhausted"));
    assert_eq!(
        turn::agent_slots(&s, &aid("agent-a"), t("2026-01-01T09:07:00Z")).map(|x| x.left()),
        Some(0)
    );
}
