//! What each hook event decides, from the state, the session's record and
//! the time: the brief at a session's start, the delta at a prompt, "keep
//! going" at a stop, the turn a session's end records, the park a usage
//! limit asks for. Pure: the front end (`cmd/hook.rs`) loads the state,
//! writes the ticks and the session file, and prints.

use super::session::{Seen, Session};
use super::{Answer, Event, Input, view};
use crate::model::{AgentId, AgentStatus, Goal, GoalId, Outcome, State, Todo, TodoId, TodoStatus};
use crate::op::turn::ready::ReadyList;
use crate::op::turn::{self, new_token, reason_message};
use crate::op::{Change, RefreshState, brief, rules, short};
use crate::time::Timestamp;

#[cfg(test)]
mod tests;

/// Context for the model, as the acting agent.
pub fn context(agent: &AgentId, text: String) -> Answer {
    Answer::Context {
        text: text.trim_end().to_owned(),
        agent: Some(agent.to_string()),
    }
}

/// The answer to a retired agent's session start.
pub fn retired(agent: &AgentId) -> Answer {
    context(
        agent,
        format!(
            "loopx: you are agent {agent}, which a human retired: take no loopx work in this session."
        ),
    )
}

/// The answer to a session start when no goal can be picked: the refusal's
/// message and hint.
pub fn no_goal(agent: &AgentId, message: &str, hint: Option<&str>) -> Answer {
    let hint = hint.map(|h| format!(" ({h})")).unwrap_or_default();
    context(
        agent,
        format!("loopx: you are agent {agent}. {message}{hint}."),
    )
}

/// The session's record at its start (also resume, clear and compaction):
/// a resumed or compacted session keeps when it started and what was seen
/// then; every start resets the stop count and is a nudge.
pub fn open(
    s: &mut Session,
    state: &State,
    agent: &AgentId,
    input: &Input,
    now: Timestamp,
    process: Option<(u32, u64)>,
) {
    let keep = matches!(input.source.as_deref(), Some("resume" | "compact"));
    if !keep || s.started.is_none() {
        s.started = Some(now);
        s.at_start = Some(Seen::of(state, agent));
    }
    s.continuations = 0;
    s.nudge(state, agent, now);
    s.agent = Some(agent.to_string());
    s.ended = false;
    if let Some((pid, start)) = process {
        s.pid = Some(pid);
        s.pid_start = Some(start);
    }
}

/// What the brief at a session's start is made of, besides the state.
pub struct Start<'a> {
    pub agent: &'a AgentId,
    pub goal: &'a Goal,
    /// The state's tip commit, for the turn token.
    pub tip: &'a str,
    pub now: Timestamp,
    /// The runtime's name, as the continued session's runtime.
    pub runtime: &'a str,
    /// The session continues an earlier one's agent.
    pub continued: bool,
    /// Why the brief is not the hub's state (the sync at the start failed).
    pub offline: Option<&'a str>,
    /// The hub the clone shares its state through.
    pub hub: Option<&'a str>,
    /// How the agent's shell calls loopx.
    pub lx: &'a str,
    /// The worktrees the agent's claims own on this clone: todo, folder,
    /// branch.
    pub worktrees: &'a [(TodoId, std::path::PathBuf, String)],
    /// Whether its next claim takes a worktree (`loopx.worktree`).
    pub worktree_next: bool,
}

/// The brief at a session's start: who the agent is, the state that
/// concerns it, and the next step (the claim to go on with, the todo to
/// claim, or a stand-down with the reason).
pub fn brief(state: &State, st: &Start) -> String {
    let d = turn::decide(state, st.agent, st.goal, st.now);
    let b = brief::build(
        state,
        st.agent,
        st.goal,
        st.now,
        since(state, st.agent),
        None,
    );
    brief_of(state, st, d, &b, None)
}

/// [`brief()`] from the state cache's head (`state`: every claimed todo,
/// every other entity whole) and the agent's ready list on the goal
/// (`crate::op::turn::ready`), as `should-run` answers: None when they
/// cannot prove the whole state's brief (then the caller reads it whole).
pub fn brief_from_ready(state: &State, st: &Start, list: &ReadyList) -> Option<String> {
    let (agent, goal, now) = (st.agent, st.goal, st.now);
    let d = match turn::decide_from_claims(state, agent, goal, now) {
        Ok(d) => d,
        Err(p) => p
            .finish_from_ready(state, agent, goal, now, Some(list))
            .ok()?,
    };
    let b = brief::from_ready(state, agent, goal, now, since(state, agent), list)?;
    Some(brief_of(state, st, d, &b, Some(list)))
}

/// When the agent's previous turn ended.
fn since(state: &State, agent: &AgentId) -> Option<Timestamp> {
    state
        .agents
        .get(agent)
        .and_then(|a| a.last_turn.as_ref())
        .map(|t| t.at)
}

/// The brief's text from the decision `d` and the brief `b`; the todo it
/// names is looked up in `state`, else in `list`.
fn brief_of(
    state: &State,
    st: &Start,
    mut d: turn::Decision,
    b: &brief::Brief,
    list: Option<&ReadyList>,
) -> String {
    let (agent, goal, lx) = (st.agent, st.goal, st.lx);
    // The earlier session's end recorded an unchanged turn; this session
    // is what its "resume" asked for, not a retry of the same turn.
    if st.continued && d.skip == Some(turn::Reason::NoChange) {
        d.skip = None;
    }
    let mut text = format!("loopx: you are agent {agent}.\n");
    if let Some(why) = st.offline {
        text.push_str(&format!("{why}\n"));
    }
    text.push_str(&b.human());
    if st.continued {
        text.push_str(&format!(
            "This session continues {agent}, the agent of an earlier {} session in this clone that has ended: its claims are yours.\n",
            st.runtime
        ));
    }
    if let Some(hub) = st.hub {
        text.push_str(&format!(
            "This clone shares its state through {hub}: `{lx} todo claim`, `{lx} todo done` and `{lx} settle` sync with it by themselves, so they are safe across machines; never pass --no-sync. A claim that exits 4 lost to another agent (maybe on another machine): run `{lx} quota should-run` again.\n"
        ));
    }
    match (&d.skip, &d.todo) {
        (Some(r), _) => text.push_str(&format!(
            "Stand down ({}): {}. Take no loopx work until that changes; the user's own requests come first.\n",
            r.code(),
            reason_message(r, agent, &goal.id)
        )),
        (None, Some((id, own))) => {
            let listed = || list.and_then(|l| l.todos.iter().find(|t| &t.id == id));
            let todo = state.todos.get(id).or_else(listed);
            let title = short(&todo.expect("the decision names a todo of the state").title);
            let token = new_token(agent, &goal.id, st.tip, st.now);
            if *own {
                text.push_str(&format!("Next: go on with your claim {id} \"{title}\".\n"));
            } else {
                text.push_str(&format!(
                    "Next: claim {id} \"{title}\" with `{lx} todo claim {id}`.\n"
                ));
            }
            match st.worktrees.iter().find(|(t, _, _)| t == id).filter(|_| *own) {
                Some((_, path, branch)) => text.push_str(&format!(
                    "Work in its worktree {} (branch {branch}), not in this checkout: `cd {}` before shell tools, and edit files only under it. Commit your work there before `{lx} todo done` or `settle --done`: they refuse while files are not committed.\n",
                    path.display(),
                    path.display()
                )),
                None if st.worktree_next && !*own => text.push_str(
                    "Another session works in this checkout: the claim gives you a worktree of your own; work where it says, and commit there before marking the todo done.\n",
                ),
                None => {}
            }
            text.push_str(&format!(
                "Turn token: {token}. End the turn with `{lx} settle --turn {token} --todo {id} --outcome advanced|blocked|unchanged [--done] [-- CHECK]`.\n"
            ));
        }
        (None, None) => {}
    }
    text
}

/// A prompt is submitted: what changed since the previous one (None:
/// nothing, or the session's first prompt). The record keeps this prompt's
/// view, and the prompt is a nudge.
pub fn prompt(
    s: &mut Session,
    state: &State,
    agent: &AgentId,
    goal: Option<&Goal>,
    now: Timestamp,
) -> Option<String> {
    let fresh = view::view(state, agent, goal, now);
    let lines = match &s.view {
        Some(old) => view::delta(old, &fresh, state, agent),
        None => Vec::new(),
    };
    s.view = Some(fresh);
    s.continuations = 0;
    s.nudge(state, agent, now);
    if lines.is_empty() {
        return None;
    }
    let mut text = "loopx: since your last prompt:".to_owned();
    for l in lines {
        text.push_str(&format!("\n- {l}"));
    }
    Some(text)
}

/// Whether a stop may be answered with "keep going" at all, before the
/// state is read: the runtime's loop guard is not set and fewer than `max`
/// continuations were given since the last prompt.
pub fn may_continue(input: &Input, s: &Session, max: u32) -> bool {
    !(input.stop_active || input.stop_aborted) && s.continuations < max
}

/// The agent wants to stop: "keep going" while it holds its goal's claim
/// that `should-run` would offer it (so quota remains and no gate blocks
/// it), unless it said why it stops (a blocked or unchanged turn since the
/// last nudge). A continuation counts, and is a nudge.
pub fn stop(
    s: &mut Session,
    state: &State,
    agent: &AgentId,
    goal: Option<&Goal>,
    tip: &str,
    now: Timestamp,
    lx: &str,
) -> Option<String> {
    let a = state.agents.get(agent)?;
    // The agent closed its turn as blocked or unchanged since it was last
    // prompted or nudged: it has said why it stops.
    if let Some(t) = &a.last_turn
        && t.outcome != Outcome::Advanced
        && Seen::newer_turn(t, s.nudged, s.at_nudge.as_ref())
    {
        return None;
    }
    let goal = goal?;
    let d = turn::decide(state, agent, goal, now);
    let (None, Some((id, true)), Some(slots)) = (&d.skip, &d.todo, d.slots) else {
        return None;
    };
    let t = &state.todos[id];
    let left = t
        .claim
        .as_ref()
        .filter(|c| c.lease_until > now)
        .map(|c| format!(", lease {} left", c.lease_until.since(now)))
        .unwrap_or_default();
    let token = new_token(agent, &goal.id, tip, now);
    s.continuations += 1;
    s.nudge(state, agent, now);
    Some(format!(
        "loopx: you still hold {id} \"{}\"{left}, and {} of {} slots remain: keep working on it. Record each step with `{lx} settle --turn {token} --todo {id} --outcome advanced [--done] [-- CHECK]`. To stop instead, say why with `{lx} refresh-state --outcome blocked --todo {id} --next-action TEXT`, or give it up with `{lx} todo update {id} --status open`.",
        short(&t.title),
        slots.left(),
        slots.slots
    ))
}

/// The agent's claims, in the order it would pick them.
pub fn claims<'a>(state: &'a State, agent: &AgentId) -> Vec<&'a Todo> {
    let mut claims: Vec<_> = state
        .todos
        .values()
        .filter(|t| t.status == TodoStatus::Claimed && t.owner() == Some(agent))
        .collect();
    claims.sort_by(|x, y| rules::pick_order(x, y));
    claims
}

/// What a session's end (or a stop that ends the turn) does.
pub struct Ending<'a> {
    /// The turn to record, when the agent did loopx work and recorded none.
    pub record: Option<Change>,
    /// What the agent keeps (nothing is released).
    pub claims: Vec<&'a Todo>,
}

/// The session ends (`session_ends`), or a stop ends the turn: when the
/// agent holds a claim or wrote back, and recorded no turn since (since
/// the session started; at a stop, since the last nudge, when there was
/// one), the turn to record: `advanced` if it wrote back, else
/// `unchanged`, with "resume" its first claim. `fallback` is the goal to
/// record on without a claim. None for an agent that is not active here.
pub fn end<'a>(
    s: &Session,
    session_ends: bool,
    state: &'a State,
    agent: &AgentId,
    fallback: Option<GoalId>,
    reason: Option<&str>,
) -> Option<Ending<'a>> {
    let a = state
        .agents
        .get(agent)
        .filter(|a| a.status == AgentStatus::Active)?;
    let claims = claims(state, agent);
    let (from, base) = if !session_ends && s.nudged > s.started {
        (s.nudged, s.at_nudge.as_ref())
    } else {
        (s.started, s.at_start.as_ref())
    };
    let recorded = a
        .last_turn
        .as_ref()
        .is_some_and(|t| Seen::newer_turn(t, from, base));
    let wrote = a
        .last_writeback
        .is_some_and(|w| Seen::newer_writeback(w, from, base));
    let goal = match claims.first() {
        Some(t) => Some(t.goal.clone()),
        None => fallback,
    };
    let record = match goal {
        Some(goal) if !recorded && (wrote || !claims.is_empty()) => {
            let why = reason
                .map(|r| format!(" (the session ended: {r})"))
                .unwrap_or_default();
            Some(Change::RefreshState(RefreshState {
                goal,
                outcome: if wrote {
                    Outcome::Advanced
                } else {
                    Outcome::Unchanged
                },
                turn: None,
                todo: claims.first().map(|t| t.id.clone()),
                next_action: claims
                    .first()
                    .map(|t| format!("resume {} \"{}\"{why}", t.id, short(&t.title))),
                // A session's end is not a turn: no fingerprint.
                progress: None,
            }))
        }
        _ => None,
    };
    Some(Ending { record, claims })
}

/// The stderr line for each claim the agent keeps at its session's end.
pub fn kept(agent: &AgentId, claims: &[&Todo]) -> Vec<String> {
    claims
        .iter()
        .map(|t| {
            let until = t.lease_until().map(|u| u.to_string()).unwrap_or_default();
            format!(
                "loopx: {agent} keeps {} \"{}\" until {until}; nothing was released, so it shows stuck until a session continues the agent or the lease runs out (`loopx todo release {}` gives it up).",
                t.id,
                short(&t.title),
                t.id
            )
        })
        .collect()
}

/// The goal a session's usage is recorded on: its first claim's, else
/// `fallback`.
pub fn usage_goal(state: &State, agent: &AgentId) -> Option<GoalId> {
    state
        .todos
        .values()
        .filter(|t| t.status == TodoStatus::Claimed && t.owner() == Some(agent))
        .map(|t| t.goal.clone())
        .next()
}

/// A usage limit (`StopFailure` with `rate_limit`): until when to park and
/// the reason to record, from the runtime's words. The words are not
/// trusted for more than a park can hold (a reset "in 9999 hours" parks
/// for the longest park); one line of at most 300 characters, without
/// control characters, reaches the shared state. None for other errors.
pub fn limit(input: &Input, now: Timestamp) -> Option<(Timestamp, String)> {
    if input.error_type.as_deref() != Some("rate_limit") {
        return None;
    }
    let text = input.error_text.as_deref().unwrap_or("usage limit reached");
    let until = super::limit::reset_time(text, now)
        .unwrap_or_else(|| now.plus(super::limit::FALLBACK))
        .min(now.plus(crate::op::park::LONGEST));
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let reason: String = one_line
        .chars()
        .filter(|c| !c.is_control())
        .take(300)
        .collect();
    Some((until, reason))
}

/// Gemini CLI gives the session id to hooks only: its shell tool sets
/// `GEMINI_CLI` but no `GEMINI_SESSION_ID`, so a bare `loopx` run by the
/// agent cannot tell which agent it is and refuses (Gemini CLI 0.61.0, seen
/// in the runtime smoke test). The commands loopx gives such an agent name
/// it, `LOOPX_AGENT=<id> loopx …`, and the brief says so.
pub fn name_the_agent(answer: Answer, event: Event, agent: &AgentId) -> Answer {
    let named = |text: String| text.replace("`loopx ", &format!("`LOOPX_AGENT={agent} loopx "));
    match answer {
        Answer::Context { text, agent: a } if event == Event::Start => Answer::Context {
            text: format!(
                "{}\nGemini CLI's shell does not say which session runs it: run loopx as `LOOPX_AGENT={agent} loopx …`.",
                named(text)
            ),
            agent: a,
        },
        Answer::Context { text, agent: a } => Answer::Context {
            text: named(text),
            agent: a,
        },
        Answer::Continue(text) => Answer::Continue(named(text)),
        other => other,
    }
}
