//! `loopx status`: one screen of what is happening.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::gate::GateRef;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::history::{self, Rev};
use crate::model::{AgentId, AgentStatus, Gate, GoalId, State, TodoId, TodoStatus};
use crate::op::{message, rules};
use crate::time::Timestamp;
use crate::trust::{self, AllowedSigners};
use crate::tx;

/// Show goals, who owns what, what is ready, and the last few ticks
///
/// With --at, the state as it was then: leases and readiness are judged at
/// that time, and the last ticks are those before it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show the state at a tick number, or at an RFC 3339 time (the newest
    /// tick at or before it); commit id prefixes and ref names work too
    #[arg(long, value_name = "TICK|TIME")]
    at: Option<Rev>,
}

/// At most this many claims and ticks are listed, so the output stays
/// bounded however large the board grows.
const MAX_CLAIMS: usize = 10;
const RECENT: usize = 5;

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(rename = "ref")]
    state_ref: &'a str,
    tick: u64,
    commit: String,
    /// Open gates, those waiting on a human first.
    gates: Vec<GateRef<'a>>,
    /// With --at: the time the state is shown at, and the tip's tick.
    #[serde(skip_serializing_if = "Option::is_none")]
    as_of: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tip_tick: Option<u64>,
    goals: Vec<GoalRow<'a>>,
    agents: usize,
    counts: Counts,
    claims: Vec<ClaimRow<'a>>,
    claims_total: usize,
    recent: Vec<TickRow>,
    /// Slots used per active agent on each active goal.
    quota: Vec<QuotaRow<'a>>,
}

#[derive(Serialize)]
struct QuotaRow<'a> {
    agent: &'a AgentId,
    goal: &'a GoalId,
    used: u32,
    slots: u32,
    window: String,
}

#[derive(Serialize)]
struct GoalRow<'a> {
    id: &'a GoalId,
    status: &'static str,
    objective: &'a str,
}

#[derive(Serialize, Default)]
struct Counts {
    ready: usize,
    open: usize,
    waiting: usize,
    claimed: usize,
    blocked: usize,
    deferred: usize,
    done: usize,
}

#[derive(Serialize)]
struct ClaimRow<'a> {
    todo: &'a TodoId,
    title: &'a str,
    owner: &'a AgentId,
    lease_until: Timestamp,
    expired: bool,
}

#[derive(Serialize)]
struct TickRow {
    tick: u64,
    at: String,
    subject: String,
    /// "signed by NAME (SHA256:…)" or "unsigned" for a human act.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let (snap, now, tip_tick) = match &args.at {
        None => (tx::load(ctx)?, ctx.now, None),
        Some(rev) => {
            let tip = history::tip(ctx)?;
            let entry = history::resolve(ctx, rev)?;
            let at = match rev {
                Rev::Time(t) => *t,
                _ => Timestamp::from_unix(entry.time),
            };
            (history::load(ctx, &entry)?, at, Some(tip.tick))
        }
    };
    let state = &snap.state;
    let counts = counts(state, now);
    let mut claims: Vec<ClaimRow> = state
        .todos
        .values()
        .filter_map(|t| {
            let c = t.claim.as_ref()?;
            Some(ClaimRow {
                todo: &t.id,
                title: &t.title,
                owner: &c.owner,
                lease_until: c.lease_until,
                expired: t.live_claim(now, state.meta.settings.clock_skew).is_none(),
            })
        })
        .collect();
    claims.sort_by(|a, b| (a.owner, a.lease_until).cmp(&(b.owner, b.lease_until)));
    let claims_total = claims.len();
    claims.truncate(MAX_CLAIMS);
    let signers = AllowedSigners::load(ctx)?;
    let recent = ctx
        .store()?
        .first_parents(snap.tip.commit, RECENT)?
        .into_iter()
        .map(|e| TickRow {
            tick: message::tick_of(&e.message).unwrap_or(0),
            at: Timestamp::from_unix(e.time).to_string(),
            subject: e.message.lines().next().unwrap_or_default().to_owned(),
            signature: message::parse(&e.message)
                .ok()
                .and_then(|p| trust::history_note(&p.op, &signers)),
        })
        .collect();
    if !signers.enforced() {
        unsigned_hint_once(ctx);
    }
    let mut open: Vec<&Gate> = state.gates.values().filter(|g| g.is_open()).collect();
    open.sort_by_key(|g| (!g.kind.human_only(), g.opened_at, g.id.clone()));
    let wire = Wire {
        gates: open.iter().map(|g| GateRef::of(g)).collect(),
        state_ref: ctx.state_ref(),
        tick: snap.tip.tick,
        commit: snap.tip.commit.to_string(),
        as_of: args.at.is_some().then_some(now),
        tip_tick,
        goals: state
            .goals
            .values()
            .map(|g| GoalRow {
                id: &g.id,
                status: g.status.as_str(),
                objective: &g.objective,
            })
            .collect(),
        agents: state
            .agents
            .values()
            .filter(|a| a.status == AgentStatus::Active)
            .count(),
        counts,
        claims,
        claims_total,
        quota: state
            .goals
            .values()
            .filter(|g| g.status == crate::model::GoalStatus::Active)
            .flat_map(|g| {
                state
                    .agents
                    .values()
                    .filter(|a| a.status == AgentStatus::Active)
                    .map(move |a| (g, a))
            })
            .map(|(g, a)| {
                let s = crate::op::turn::slots(state, &a.id, g, now);
                QuotaRow {
                    agent: &a.id,
                    goal: &g.id,
                    used: s.used,
                    slots: s.slots,
                    window: s.window.to_string(),
                }
            })
            .collect(),
        recent,
    };
    ctx.out.emit(&wire, || human(&wire, now))?;
    Ok(Exit::Ok)
}

fn counts(state: &State, now: Timestamp) -> Counts {
    let mut c = Counts::default();
    let agents: Vec<_> = state
        .agents
        .values()
        .filter(|a| a.status == AgentStatus::Active)
        .collect();
    let scoped = rules::Scoped::of(state);
    for t in state.todos.values() {
        match t.status {
            TodoStatus::Open => {
                // An `after` no longer in the live set was archived: done.
                let deps_done = t.after.iter().all(|a| {
                    state
                        .todos
                        .get(a)
                        .is_none_or(|x| x.status == TodoStatus::Done)
                });
                if deps_done {
                    c.open += 1
                } else {
                    c.waiting += 1
                }
            }
            TodoStatus::Claimed => c.claimed += 1,
            TodoStatus::Blocked => c.blocked += 1,
            TodoStatus::Deferred => c.deferred += 1,
            TodoStatus::Done => c.done += 1,
        }
        if agents
            .iter()
            .any(|a| rules::ready_with(state, t, a, now, &scoped).is_ok())
        {
            c.ready += 1;
        }
    }
    c
}

fn human(w: &Wire, now: Timestamp) -> String {
    let mut s = format!("loopx  {}  tick {}", w.state_ref, w.tick);
    if let (Some(at), Some(tip)) = (w.as_of, w.tip_tick) {
        s.push_str(&format!(", as of {at} (the tip is tick {tip})"));
    }
    s.push('\n');
    let (human, other): (Vec<&GateRef>, Vec<&GateRef>) = w.gates.iter().partition(|g| g.human_only);
    if !human.is_empty() {
        s.push_str("waiting on a human:\n");
        for g in human {
            s.push_str(&format!("  {}\n", g.line()));
        }
    }
    if !other.is_empty() {
        s.push_str("open decisions:\n");
        for g in other {
            s.push_str(&format!("  {}\n", g.line()));
        }
    }
    if w.goals.is_empty() {
        s.push_str("No goals yet: add one with `loopx goal add ID --objective TEXT`.\n");
    }
    for g in &w.goals {
        s.push_str(&format!("goal {} ({}): {}\n", g.id, g.status, g.objective));
    }
    let c = &w.counts;
    s.push_str(&format!(
        "todos: {} ready, {} open, {} waiting, {} claimed, {} blocked, {} deferred, {} done; {} agent{}\n",
        c.ready,
        c.open,
        c.waiting,
        c.claimed,
        c.blocked,
        c.deferred,
        c.done,
        w.agents,
        if w.agents == 1 { "" } else { "s" }
    ));
    if !w.claims.is_empty() {
        s.push_str("claims:\n");
        for r in &w.claims {
            let left = if r.expired {
                "lease expired".to_owned()
            } else {
                format!("{} left", r.lease_until.since(now))
            };
            s.push_str(&format!(
                "  {}  {}  {}  ({left})\n",
                r.owner,
                r.todo,
                crate::term::line(r.title)
            ));
        }
        if w.claims_total > w.claims.len() {
            s.push_str(&format!(
                "  … and {} more\n",
                w.claims_total - w.claims.len()
            ));
        }
    }
    let goals: Vec<&GoalId> = {
        let mut g: Vec<&GoalId> = w.quota.iter().map(|q| q.goal).collect();
        g.dedup();
        g
    };
    for goal in goals {
        let rows: Vec<&QuotaRow> = w.quota.iter().filter(|q| q.goal == goal).collect();
        if let Some(first) = rows.first() {
            let used: Vec<String> = rows
                .iter()
                .map(|q| format!("{} {}/{}", q.agent, q.used, q.slots))
                .collect();
            s.push_str(&format!(
                "quota {goal} per {}: {}\n",
                first.window,
                used.join(", ")
            ));
        }
    }
    s.push_str("recent:\n");
    for r in &w.recent {
        match &r.signature {
            Some(note) => s.push_str(&format!(
                "  {:>4}  {}  {}  [{note}]\n",
                r.tick, r.at, r.subject
            )),
            None => s.push_str(&format!("  {:>4}  {}  {}\n", r.tick, r.at, r.subject)),
        }
    }
    s
}

/// Says once per clone that human acts are not signed here, and how to
/// turn signing on.
fn unsigned_hint_once(ctx: &Ctx) {
    let Ok(store) = ctx.store() else { return };
    let marker = store.common_dir().join("loopx").join("unsigned-hint-shown");
    if marker.exists() {
        return;
    }
    ctx.out.hint(
        "human acts here are unsigned: this machine trusts no signer, so anything that runs as you can answer a gate; to require signatures, `loopx signer announce NAME --key ~/.ssh/id_ed25519.pub`, then `loopx signer trust NAME`, and sign with `git config gpg.format ssh` and `git config user.signingKey ~/.ssh/id_ed25519.pub` (docs/gates.md)",
    );
    let _ = std::fs::create_dir_all(marker.parent().expect("has a parent"))
        .and_then(|()| std::fs::write(&marker, b"shown\n"));
}
