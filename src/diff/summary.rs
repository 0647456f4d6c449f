//! The semantic summary of what changed between two states: one line per
//! entity that changed, in a fixed order, so `log -p`, `show` and `diff`
//! read alike.

use std::fmt::Write as _;

use serde::Serialize;

use crate::model::{
    Agent, AgentId, Entities, Gate, GateStatus, Goal, Meta, State, Todo, TodoStatus,
    quota::{Ledger, Spend},
};
use crate::time::Timestamp;

/// What kind of entity a summary item is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Entity {
    Settings,
    Goal,
    Agent,
    Todo,
    Gate,
    Quota,
}

impl Entity {
    pub fn as_str(self) -> &'static str {
        match self {
            Entity::Settings => "settings",
            Entity::Goal => "goal",
            Entity::Agent => "agent",
            Entity::Todo => "todo",
            Entity::Gate => "gate",
            Entity::Quota => "quota",
        }
    }
}

/// What happened to an entity between the two states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum What {
    Added,
    Registered,
    Changed,
    Removed,
    Reopened,
    Claimed,
    Renewed,
    Stolen,
    Released,
    Done,
    Updated,
    Archived,
    Opened,
    Answered,
    Withdrawn,
    Refreshed,
    Spent,
    Voided,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::Added => "added",
            What::Registered => "registered",
            What::Changed => "changed",
            What::Removed => "removed",
            What::Reopened => "reopened",
            What::Claimed => "claimed",
            What::Renewed => "renewed",
            What::Stolen => "stolen",
            What::Released => "released",
            What::Done => "done",
            What::Updated => "updated",
            What::Archived => "archived",
            What::Opened => "opened",
            What::Answered => "answered",
            What::Withdrawn => "withdrawn",
            What::Refreshed => "refreshed",
            What::Spent => "spent",
            What::Voided => "voided",
        }
    }
}

/// One line of the semantic summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    pub entity: Entity,
    pub id: String,
    pub change: What,
    /// A todo's title or a goal's objective.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The claim's owner after a claim, renew or steal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<AgentId>,
    /// Who held the claim before a steal or release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_owner: Option<AgentId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<Timestamp>,
    /// What else changed, in words: `status open → blocked`, `+1 note`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl Item {
    fn new(entity: Entity, id: impl Into<String>, change: What) -> Self {
        Item {
            entity,
            id: id.into(),
            change,
            title: None,
            owner: None,
            previous_owner: None,
            lease_until: None,
            details: Vec::new(),
        }
    }

    fn titled(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    /// One line for people: `claimed    todo t-3fa9c2d1 "Write the parser" by agent-a until …`.
    pub fn human(&self) -> String {
        let mut s = format!(
            "{:<10} {} {}",
            self.change.as_str(),
            self.entity.as_str(),
            self.id
        );
        if let Some(t) = &self.title {
            let _ = write!(s, " \"{t}\"");
        }
        match (&self.owner, &self.previous_owner) {
            (Some(o), Some(p)) => {
                let _ = write!(s, " by {o} from {p}");
            }
            (Some(o), None) => {
                let _ = write!(s, " by {o}");
            }
            (None, Some(p)) => {
                let _ = write!(s, " (held by {p})");
            }
            (None, None) => {}
        }
        if let Some(until) = self.lease_until {
            let _ = write!(s, " until {until}");
        }
        if !self.details.is_empty() {
            let _ = write!(s, ": {}", self.details.join(", "));
        }
        s
    }
}

/// What changed from state `a` to state `b`, entity by entity: settings,
/// then goals, agents and todos, each in id order.
pub fn summary(a: &State, b: &State) -> Vec<Item> {
    let mut out = Vec::new();
    settings(&a.meta, &b.meta, &mut out);
    each(&a.goals, &b.goals, &mut out, |id, old, new, out| {
        goal(id.as_str(), old, new, out)
    });
    each(&a.agents, &b.agents, &mut out, |id, old, new, out| {
        agent(id.as_str(), old, new, out)
    });
    each(&a.todos, &b.todos, &mut out, |_, old, new, out| {
        todo(old, new, out)
    });
    each(&a.gates, &b.gates, &mut out, |_, old, new, out| {
        gate(old, new, out)
    });
    each(&a.quota, &b.quota, &mut out, |id, old, new, out| {
        quota(id.as_str(), old, new, out)
    });
    out
}

fn gate(a: Option<&Gate>, b: Option<&Gate>, out: &mut Vec<Item>) {
    let Some(g) = b.or(a) else { return };
    let was = a.map(|g| g.status);
    let what = match (was, b.map(|g| g.status)) {
        (None, Some(GateStatus::Open)) => What::Opened,
        (_, Some(GateStatus::Answered)) if was != Some(GateStatus::Answered) => What::Answered,
        (_, Some(GateStatus::Withdrawn)) if was != Some(GateStatus::Withdrawn) => What::Withdrawn,
        (_, None) => What::Removed,
        _ => What::Changed,
    };
    let mut item = Item::new(Entity::Gate, g.id.as_str(), what).titled(&g.question);
    match (what, &g.answer) {
        (What::Answered, Some(ans)) => {
            item.details
                .push(format!("{} by {}", ans.choice, ans.by.name()));
        }
        (What::Opened, _) => {
            item.details
                .push(format!("{} on {}", g.kind.as_str(), g.blocks));
        }
        _ => {}
    }
    // Opened and answered between the two states: say both.
    if was.is_none() && what != What::Opened && what != What::Removed {
        item.details.insert(0, "opened".to_owned());
    }
    out.push(item);
}

fn quota(agent: &str, a: Option<&Ledger>, b: Option<&Ledger>, out: &mut Vec<Item>) {
    let old: Vec<&Spend> = a.map(|l| l.spends.iter().collect()).unwrap_or_default();
    for s in b.map(|l| l.spends.as_slice()).unwrap_or_default() {
        match old.iter().find(|o| o.turn == s.turn) {
            None => {
                let mut item = Item::new(Entity::Quota, agent, What::Spent);
                item.details.push(format!("turn {} on {}", s.turn, s.goal));
                if s.void.is_some() {
                    item.details.push("voided".to_owned());
                }
                out.push(item);
            }
            Some(o) if o.void.is_none() && s.void.is_some() => {
                let mut item = Item::new(Entity::Quota, agent, What::Voided);
                item.details.push(format!("turn {}", s.turn));
                if let Some(v) = &s.void {
                    item.details.push(v.reason.clone());
                }
                out.push(item);
            }
            Some(_) => {}
        }
    }
}

/// Calls `f` with both sides of every key present in either map, in key
/// order; `new` is `None` for a removed entity.
fn each<K: Ord, V: PartialEq>(
    a: &Entities<K, V>,
    b: &Entities<K, V>,
    out: &mut Vec<Item>,
    mut f: impl FnMut(&K, Option<&V>, Option<&V>, &mut Vec<Item>),
) {
    for k in a.changed(b) {
        let (old, new) = (a.get(k), b.get(k));
        if old != new {
            f(k, old, new, out);
        }
    }
}

fn settings(a: &Meta, b: &Meta, out: &mut Vec<Item>) {
    let mut details = Vec::new();
    changed(&mut details, "format", &a.format, &b.format);
    changed(&mut details, "lease", &a.settings.lease, &b.settings.lease);
    changed(
        &mut details,
        "clock_skew",
        &a.settings.clock_skew,
        &b.settings.clock_skew,
    );
    let stuck = |m: &Meta| {
        m.settings
            .stuck_after
            .map_or_else(|| "half the lease".to_owned(), |s| s.to_string())
    };
    changed(&mut details, "stuck_after", &stuck(a), &stuck(b));
    if !details.is_empty() {
        let mut item = Item::new(Entity::Settings, "loopx.toml", What::Changed);
        item.details = details;
        out.push(item);
    }
}

fn goal(id: &str, a: Option<&Goal>, b: Option<&Goal>, out: &mut Vec<Item>) {
    match (a, b) {
        (None, Some(g)) => out.push(Item::new(Entity::Goal, id, What::Added).titled(&g.objective)),
        (Some(g), None) => {
            out.push(Item::new(Entity::Goal, id, What::Removed).titled(&g.objective));
        }
        (Some(a), Some(b)) => {
            let mut d = Vec::new();
            if a.objective != b.objective {
                d.push("objective".to_owned());
            }
            changed(&mut d, "status", &a.status.as_str(), &b.status.as_str());
            if a.scope != b.scope {
                d.push("scope".to_owned());
            }
            if a.guards != b.guards {
                d.push("guards".to_owned());
            }
            changed(&mut d, "quota slots", &a.quota.slots, &b.quota.slots);
            changed(&mut d, "quota window", &a.quota.window, &b.quota.window);
            let lease = |g: &Goal| {
                g.lease
                    .map_or_else(|| "the team's".to_owned(), |l| l.to_string())
            };
            changed(&mut d, "lease", &lease(a), &lease(b));
            if !d.is_empty() {
                let mut item = Item::new(Entity::Goal, id, What::Changed).titled(&b.objective);
                item.details = d;
                out.push(item);
            }
        }
        (None, None) => {}
    }
}

fn agent(id: &str, a: Option<&Agent>, b: Option<&Agent>, out: &mut Vec<Item>) {
    match (a, b) {
        (None, Some(g)) => {
            let mut item = Item::new(Entity::Agent, id, What::Registered);
            item.details.push(g.runtime.as_str().to_owned());
            if !g.capabilities.is_empty() {
                item.details
                    .push(format!("capabilities {}", g.capabilities.join(" ")));
            }
            out.push(item);
        }
        (Some(_), None) => out.push(Item::new(Entity::Agent, id, What::Removed)),
        (Some(a), Some(b)) => {
            let mut d = Vec::new();
            changed(&mut d, "runtime", &a.runtime.as_str(), &b.runtime.as_str());
            if a.capabilities != b.capabilities {
                d.push(format!(
                    "capabilities [{}] → [{}]",
                    a.capabilities.join(" "),
                    b.capabilities.join(" ")
                ));
            }
            changed(&mut d, "status", &a.status.as_str(), &b.status.as_str());
            if !d.is_empty() {
                let mut item = Item::new(Entity::Agent, id, What::Changed);
                item.details = d;
                out.push(item);
            }
            if a.last_turn != b.last_turn
                && let Some(t) = &b.last_turn
            {
                let mut item = Item::new(Entity::Agent, id, What::Refreshed);
                item.details.push(t.outcome.as_str().to_owned());
                if let Some(n) = &t.next_action {
                    item.details.push(format!("next: {n}"));
                }
                out.push(item);
            }
        }
        (None, None) => {}
    }
}

/// A todo's lifecycle between two states. A new todo is compared with a
/// fresh one (open, unclaimed, epoch 0, no notes), so a todo added and
/// claimed in between reads "added", then "claimed".
fn todo(a: Option<&Todo>, b: Option<&Todo>, out: &mut Vec<Item>) {
    let b = match (a, b) {
        (Some(a), None) => {
            // Only done todos leave the live set, into the archive.
            let what = if a.status == TodoStatus::Done {
                What::Archived
            } else {
                What::Removed
            };
            out.push(Item::new(Entity::Todo, a.id.as_str(), what).titled(&a.title));
            return;
        }
        (_, Some(b)) => b,
        (None, None) => return,
    };
    let fresh;
    let added = a.is_none();
    let a = match a {
        Some(a) => a,
        None => {
            fresh = Todo {
                status: TodoStatus::Open,
                claim: None,
                epoch: 0,
                done_at: None,
                notes: Vec::new(),
                ..b.clone()
            };
            let mut line = Item::new(Entity::Todo, b.id.as_str(), What::Added).titled(&b.title);
            line.details.push(b.priority.to_string());
            out.push(line);
            &fresh
        }
    };
    let item = |what: What| Item::new(Entity::Todo, b.id.as_str(), what).titled(&b.title);
    let start = out.len();
    let done = a.status != TodoStatus::Done && b.status == TodoStatus::Done;
    let reopened = a.status == TodoStatus::Done && b.status != TodoStatus::Done;
    if reopened {
        out.push(item(What::Reopened));
    }
    let lease = b.claim.as_ref().map(|c| c.lease_until);
    let mut claimed = false;
    let mut released = false;
    match (a.owner(), b.owner()) {
        (None, Some(to)) => {
            claimed = true;
            out.push(Item {
                owner: Some(to.clone()),
                lease_until: lease,
                ..item(What::Claimed)
            });
        }
        (Some(from), None) if !done => {
            released = true;
            out.push(Item {
                previous_owner: Some(from.clone()),
                ..item(What::Released)
            });
        }
        (Some(from), Some(to)) if from != to => {
            claimed = true;
            out.push(Item {
                owner: Some(to.clone()),
                previous_owner: Some(from.clone()),
                lease_until: lease,
                ..item(What::Stolen)
            });
        }
        (Some(_), Some(to)) => {
            let what = if a.epoch != b.epoch {
                Some(What::Claimed)
            } else if a.claim.as_ref().map(|c| c.lease_until) != lease {
                Some(What::Renewed)
            } else {
                None
            };
            if let Some(what) = what {
                claimed = true;
                out.push(Item {
                    owner: Some(to.clone()),
                    lease_until: lease,
                    ..item(what)
                });
            }
        }
        _ => {}
    }
    if done {
        out.push(item(What::Done));
    }
    // Everything the lifecycle above does not explain.
    let explained = match b.status {
        TodoStatus::Done => done,
        TodoStatus::Claimed => claimed,
        TodoStatus::Open => released || reopened,
        TodoStatus::Blocked | TodoStatus::Deferred => false,
    };
    let mut d = Vec::new();
    if a.status != b.status && !explained {
        d.push(format!("status {} → {}", a.status, b.status));
    }
    if a.title != b.title {
        d.push("title".to_owned());
    }
    changed(&mut d, "priority", &a.priority, &b.priority);
    changed(&mut d, "goal", &a.goal, &b.goal);
    if a.after != b.after {
        d.push("after".to_owned());
    }
    if a.capabilities != b.capabilities {
        d.push("capabilities".to_owned());
    }
    if a.scope != b.scope {
        d.push("scope".to_owned());
    }
    let notes = if a.notes == b.notes {
        None
    } else {
        let (sign, n) = if b.notes.len() >= a.notes.len() {
            ('+', b.notes.len() - a.notes.len())
        } else {
            ('-', a.notes.len() - b.notes.len())
        };
        Some(match n {
            0 => "notes".to_owned(),
            1 => format!("{sign}1 note"),
            n => format!("{sign}{n} notes"),
        })
    };
    // Notes alone ride on the line they came with (an added todo's first
    // note, a done note, a steal's note); anything else is an update.
    let rides = out.len() > start || added;
    match (d.is_empty(), notes) {
        (true, None) => {}
        (true, Some(n)) if rides => {
            if let Some(last) = out.last_mut() {
                last.details.push(n);
            }
        }
        (_, notes) => {
            d.extend(notes);
            out.push(Item {
                details: d,
                ..item(What::Updated)
            });
        }
    }
}

fn changed<T: PartialEq + std::fmt::Display>(d: &mut Vec<String>, what: &str, a: &T, b: &T) {
    if a != b {
        d.push(format!("{what} {a} → {b}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Actor, AgentStatus, Claim, GoalId, GoalStatus, Note, Priority, Runtime, TodoId,
    };

    fn at(min: i64) -> Timestamp {
        Timestamp::from_unix(1_796_029_200 + min * 60)
    }

    fn agent_id(s: &str) -> AgentId {
        AgentId::new(s).unwrap()
    }

    fn human() -> Actor {
        Actor::Human {
            name: "Ada".into(),
            email: "ada@example.com".into(),
        }
    }

    fn todo(hex: &str, title: &str) -> Todo {
        Todo {
            id: TodoId::from_hex(hex),
            goal: GoalId::new("main").unwrap(),
            title: title.into(),
            priority: Priority::DEFAULT,
            status: TodoStatus::Open,
            after: Vec::new(),
            capabilities: Vec::new(),
            scope: Vec::new(),
            validate: None,
            validate_from: None,
            epoch: 0,
            created_at: at(0),
            created_by: human(),
            updated_at: at(0),
            done_at: None,
            claim: None,
            notes: Vec::new(),
            last_evidence: None,
        }
    }

    fn claimed(mut t: Todo, owner: &str, epoch: u64, until: i64) -> Todo {
        t.status = TodoStatus::Claimed;
        t.epoch = epoch;
        t.claim = Some(Claim {
            owner: agent_id(owner),
            since: at(1),
            lease_until: at(until),
        });
        t
    }

    fn note(mut t: Todo, text: &str) -> Todo {
        t.notes.push(Note {
            at: at(2),
            by: human(),
            text: text.into(),
        });
        t
    }

    fn with(todos: &[&Todo]) -> State {
        let mut s = State::default();
        for t in todos {
            s.todos.insert(t.id.clone(), (*t).clone());
        }
        s
    }

    fn lines(a: &State, b: &State) -> Vec<String> {
        summary(a, b).iter().map(Item::human).collect()
    }

    #[test]
    fn identical_states_have_no_summary() {
        let t = todo("aaaa0001", "A");
        assert!(summary(&with(&[&t]), &with(&[&t])).is_empty());
    }

    #[test]
    fn a_claim_a_renew_a_steal_and_a_release() {
        let open = todo("aaaa0001", "Write the parser");
        let mine = claimed(open.clone(), "agent-a", 1, 45);
        let renewed = claimed(open.clone(), "agent-a", 1, 90);
        let stolen = note(
            claimed(open.clone(), "agent-b", 2, 120),
            "stole the expired lease of agent-a",
        );
        assert_eq!(
            lines(&with(&[&open]), &with(&[&mine])),
            [
                "claimed    todo t-aaaa0001 \"Write the parser\" by agent-a until 2026-11-30T09:45:00Z"
            ]
        );
        assert_eq!(
            lines(&with(&[&mine]), &with(&[&renewed])),
            [
                "renewed    todo t-aaaa0001 \"Write the parser\" by agent-a until 2026-11-30T10:30:00Z"
            ]
        );
        assert_eq!(
            lines(&with(&[&renewed]), &with(&[&stolen])),
            [
                "stolen     todo t-aaaa0001 \"Write the parser\" by agent-b from agent-a until 2026-11-30T11:00:00Z: +1 note"
            ]
        );
        assert_eq!(
            lines(&with(&[&mine]), &with(&[&open])),
            ["released   todo t-aaaa0001 \"Write the parser\" (held by agent-a)"]
        );
        // Released and claimed again by the same agent: a new epoch.
        let again = claimed(open.clone(), "agent-a", 2, 45);
        assert_eq!(
            summary(&with(&[&mine]), &with(&[&again]))[0].change,
            What::Claimed
        );
    }

    #[test]
    fn done_reopened_and_updated() {
        let open = todo("aaaa0001", "A");
        let mine = claimed(open.clone(), "agent-a", 1, 45);
        let mut done = note(open.clone(), "all green");
        done.status = TodoStatus::Done;
        done.epoch = 1;
        done.done_at = Some(at(3));
        // Done clears the claim without a "released" line; its note rides along.
        assert_eq!(
            lines(&with(&[&mine]), &with(&[&done])),
            ["done       todo t-aaaa0001 \"A\": +1 note"]
        );
        let mut reopened = done.clone();
        reopened.status = TodoStatus::Open;
        reopened.done_at = None;
        assert_eq!(
            lines(&with(&[&done]), &with(&[&reopened])),
            ["reopened   todo t-aaaa0001 \"A\""]
        );
        let mut blocked = note(mine.clone(), "waiting for review");
        blocked.status = TodoStatus::Blocked;
        blocked.claim = None;
        blocked.priority = "P0".parse().unwrap();
        assert_eq!(
            lines(&with(&[&mine]), &with(&[&blocked])),
            [
                "released   todo t-aaaa0001 \"A\" (held by agent-a)",
                "updated    todo t-aaaa0001 \"A\": status claimed → blocked, priority P2 → P0, +1 note",
            ]
        );
        let noted = note(open.clone(), "just a note");
        assert_eq!(
            lines(&with(&[&open]), &with(&[&noted])),
            ["updated    todo t-aaaa0001 \"A\": +1 note"]
        );
    }

    #[test]
    fn added_todos_show_what_happened_since() {
        let b = todo("bbbb0002", "B");
        let c = claimed(note(todo("cccc0003", "C"), "first"), "agent-a", 1, 45);
        assert_eq!(
            lines(&State::default(), &with(&[&b, &c])),
            [
                "added      todo t-bbbb0002 \"B\": P2",
                "added      todo t-cccc0003 \"C\": P2",
                "claimed    todo t-cccc0003 \"C\" by agent-a until 2026-11-30T09:45:00Z: +1 note",
            ]
        );
        let with_note = note(todo("dddd0004", "D"), "why");
        assert_eq!(
            lines(&State::default(), &with(&[&with_note])),
            ["added      todo t-dddd0004 \"D\": P2, +1 note"]
        );
        assert_eq!(
            lines(&with(&[&b]), &State::default()),
            ["removed    todo t-bbbb0002 \"B\""]
        );
    }

    #[test]
    fn goals_agents_and_settings() {
        let mut a = State::default();
        let mut b = State::default();
        let goal = Goal {
            id: GoalId::new("main").unwrap(),
            objective: "Ship it".into(),
            status: GoalStatus::Active,
            scope: Vec::new(),
            guards: Vec::new(),
            quota: Default::default(),
            budget: Default::default(),
            auto_resume: false,
            lease: None,
            stall_after: crate::model::goal::STALL_AFTER,
            created_at: at(0),
            created_by: human(),
            updated_at: at(0),
        };
        let agent = Agent {
            id: agent_id("agent-a"),
            runtime: Runtime::Custom,
            status: AgentStatus::Active,
            capabilities: vec!["rust".into()],
            registered_at: at(0),
            registered_by: human(),
            last_writeback: None,
            last_turn: None,
            parked: None,
            progress: None,
            goals: Vec::new(),
        };
        b.goals.insert(goal.id.clone(), goal.clone());
        b.agents.insert(agent.id.clone(), agent.clone());
        assert_eq!(
            lines(&a, &b),
            [
                "added      goal main \"Ship it\"",
                "registered agent agent-a: custom, capabilities rust",
            ]
        );
        a = b.clone();
        let g = b.goals.get_mut(&goal.id).unwrap();
        g.status = GoalStatus::Paused;
        g.quota.slots = 10;
        g.updated_at = at(5);
        let ag = b.agents.get_mut(&agent.id).unwrap();
        ag.runtime = Runtime::ClaudeCode;
        b.meta.settings.lease = crate::time::Span::hours(1);
        assert_eq!(
            lines(&a, &b),
            [
                "changed    settings loopx.toml: lease 45m → 1h",
                "changed    goal main \"Ship it\": status active → paused, quota slots 48 → 10",
                "changed    agent agent-a: runtime custom → claude-code",
            ]
        );
    }
}
