//! What several commands print the same way (not a command): the JSON
//! shapes of a todo, a gate, a stuck claim and a reached budget, a sync's report in
//! words, and HTML escaping. Commands import this module and `cmd/mod.rs`,
//! never one another.

use serde::Serialize;

use crate::diff::Tone;
use crate::history::FileDiff;
use crate::model::{AgentId, Gate, GateId, GoalId, TodoId};
use crate::sync::{self, Outcome, Report};
use crate::term::{Colour, Painted};
use crate::time::Timestamp;

/// A stuck claim, as `status --json` and `digest --json` show it.
#[derive(Serialize)]
pub struct StuckRow<'a> {
    pub todo: &'a TodoId,
    /// The todo's title, for the screen (the JSON names the todo only).
    #[serde(skip)]
    pub title: &'a str,
    pub owner: &'a AgentId,
    /// `session-ended`, `session-died` (on the holder's clone) or `silent`.
    pub why: &'static str,
    /// The holder's last tick the state shows.
    pub last_heard: Timestamp,
    /// When the lease frees it by itself.
    pub frees_at: Timestamp,
    /// The human command that frees it now.
    pub free_now: String,
    /// Why, when the lease frees it and what frees it now, in one line.
    #[serde(skip)]
    pub line: String,
}

impl<'a> StuckRow<'a> {
    pub fn of(s: &crate::op::stuck::Stuck<'a>) -> StuckRow<'a> {
        StuckRow {
            todo: &s.todo.id,
            title: &s.todo.title,
            owner: s.owner,
            why: s.why.code(),
            last_heard: s.last_heard,
            frees_at: s.frees_at,
            free_now: s.free_now(),
            line: s.line(),
        }
    }
}

/// A todo as the tick commands report it.
#[derive(Serialize)]
pub struct TodoRef<'a> {
    pub id: &'a TodoId,
    pub title: &'a str,
    pub status: &'static str,
    pub epoch: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<&'a AgentId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<Timestamp>,
}

impl<'a> TodoRef<'a> {
    pub fn of(t: &'a crate::model::Todo) -> Self {
        TodoRef {
            id: &t.id,
            title: &t.title,
            status: t.status.as_str(),
            epoch: t.epoch,
            owner: t.owner(),
            lease_until: t.lease_until(),
        }
    }
}

/// A gate as lists and tick commands report it.
#[derive(Serialize)]
pub struct GateRef<'a> {
    pub id: &'a GateId,
    pub goal: &'a GoalId,
    pub kind: &'static str,
    pub human_only: bool,
    pub blocks: String,
    pub status: &'static str,
    pub question: &'a str,
    pub options: &'a [String],
    pub opened_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<&'a str>,
    /// An open budget gate's other way out: the command that raises the
    /// budget past the spend (which answers the gate `raised` by itself),
    /// or, once the budget was raised, `gate answer G raised`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raise: Option<String>,
    /// The budget was raised already: `raise` answers the gate `raised`.
    #[serde(skip)]
    pub raised: bool,
}

impl<'a> GateRef<'a> {
    pub fn of(g: &'a Gate) -> Self {
        GateRef {
            id: &g.id,
            goal: &g.goal,
            kind: g.kind.as_str(),
            human_only: g.kind.human_only(),
            blocks: g.blocks.to_string(),
            status: g.status.as_str(),
            question: &g.question,
            options: &g.options,
            opened_at: g.opened_at,
            choice: g.answer.as_ref().map(|a| a.choice.as_str()),
            raise: None,
            raised: false,
        }
    }

    /// [`GateRef::of`], with an open budget gate's [`GateRef::raise`]
    /// judged against `state` at `now`.
    pub fn with_raise(g: &'a Gate, state: &crate::model::State, now: Timestamp) -> Self {
        let raise = raise_command(g, state, now);
        GateRef {
            raised: raise.as_ref().is_some_and(|r| !r.0),
            raise: raise.map(|r| r.1),
            ..GateRef::of(g)
        }
    }

    /// One line: `g-1a2b3c4d  permission on goal  "May I push?"  (approve | reject)`.
    pub fn line(&self) -> String {
        let tail = match self.choice {
            Some(c) => format!("answered {c}"),
            None if self.status == "withdrawn" => "withdrawn".to_owned(),
            None => self.options.join(" | "),
        };
        // One line, whatever an older tick let the question hold.
        format!(
            "{}  {} on {}  \"{}\"  ({})",
            self.id,
            self.kind,
            self.blocks,
            crate::term::line(self.question),
            crate::term::line(&tail)
        )
    }
}

/// The command that lets an open budget gate go: raise the budget (a
/// suggested figure), or once it was raised, answer `raised`. None for
/// any other gate. The flag: the budget is still reached (the command
/// raises it).
pub fn raise_command(
    g: &Gate,
    state: &crate::model::State,
    now: Timestamp,
) -> Option<(bool, String)> {
    if !g.is_open() {
        return None;
    }
    let st = crate::op::usage::gate_standing(state, g, now)?;
    Some(if st.reached() {
        (true, crate::op::usage::raise(&g.goal, &st).command())
    } else {
        (
            false,
            crate::notify::answer_command(g, crate::op::usage::RAISED),
        )
    })
}

/// A reached budget: its scope, limits, what was spent and its window.
#[derive(Serialize)]
pub struct BudgetWire {
    scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    spent_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_usd: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
    spent_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<u64>,
    window: String,
    /// Turns in the window whose dollars nothing could price: their tokens
    /// count, the dollars leave them out.
    #[serde(skip_serializing_if = "is_zero")]
    unpriced_turns: u64,
    /// Their models, each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unpriced_models: Vec<String>,
    /// With a dollar budget: what a human may run to raise it (the dollar
    /// figure is a suggestion: twice the budget, or more than spent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raise: Option<String>,
    /// `plus 2 turns unpriced (model …)`, for the screen.
    #[serde(skip)]
    unpriced: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl BudgetWire {
    pub fn of(goal: &GoalId, st: &crate::op::usage::Standing) -> Self {
        BudgetWire {
            unpriced_turns: st.spent.unpriced,
            unpriced_models: st.spent.unpriced_models.clone(),
            raise: st
                .reached()
                .then(|| crate::op::usage::raise(goal, st).command()),
            unpriced: st.spent.unpriced_note(),
            scope: st.scope.blocks().to_string(),
            spent_usd: st.budget.usd.map(|_| st.spent.usd.dollars()),
            budget_usd: st.budget.usd.map(|u| u.dollars()),
            estimated: st.budget.usd.is_some() && st.spent.estimated,
            spent_tokens: st.spent.tokens,
            budget_tokens: st.budget.tokens,
            window: st.budget.window.to_string(),
        }
    }

    /// `goal: $1.10 (est.) of $1.00, 242k of 1M tokens spent per 1d`.
    pub fn human(&self) -> String {
        let d = |x: f64| crate::model::usage::Usd::from_dollars(x).unwrap_or_default();
        let mut parts = Vec::new();
        if let (Some(s), Some(u)) = (self.spent_usd, self.budget_usd) {
            let est = if self.estimated { " (est.)" } else { "" };
            parts.push(format!("{}{est} of {}", d(s), d(u)));
        }
        if let Some(t) = self.budget_tokens {
            parts.push(format!(
                "{} of {} tokens",
                crate::model::usage::human_count(self.spent_tokens),
                crate::model::usage::human_count(t)
            ));
        }
        let mut line = format!(
            "{}: {} spent per {}",
            self.scope,
            parts.join(", "),
            self.window
        );
        if let Some(n) = &self.unpriced {
            line.push_str(&format!(", {n}"));
        }
        line
    }
}

/// The human summary of a sync, for `loopx sync` and the commands that sync
/// around their own work.
pub fn human(r: &Report) -> String {
    let mut s = match r.outcome {
        Outcome::UpToDate => format!("Up to date with {} (tick {}).", r.remote, r.tick),
        Outcome::Adopted => format!(
            "Adopted {}'s state: pulled {}, now at tick {}; the local state before it is kept at {}.",
            r.remote,
            match r.pulled {
                1 => "1 tick".to_owned(),
                n => format!("{n} ticks"),
            },
            r.tick,
            r.backup.as_deref().unwrap_or("a backup ref")
        ),
        _ => {
            // "Pulled 3 ticks, pushed 2, replayed 2, rejected 1": only the
            // first count names its unit.
            let mut parts: Vec<(&str, usize)> = Vec::new();
            if r.pulled > 0 || r.outcome == Outcome::Pulled {
                parts.push(("pulled", r.pulled));
            }
            if r.pushed > 0 || r.outcome == Outcome::Pushed {
                parts.push(("pushed", r.pushed));
            }
            if r.outcome == Outcome::Replayed {
                parts.push(("replayed", r.replayed));
                parts.push(("rejected", r.rejected.len()));
            }
            let line: Vec<String> = parts
                .iter()
                .enumerate()
                .map(|(i, (verb, n))| match i {
                    0 => {
                        let unit = if *n == 1 { "tick" } else { "ticks" };
                        let mut v = (*verb).to_owned();
                        v[..1].make_ascii_uppercase();
                        format!("{v} {n} {unit}")
                    }
                    _ => format!("{verb} {n}"),
                })
                .collect();
            format!("{} ({}, tick {}).", line.join(", "), r.remote, r.tick)
        }
    };
    for x in &r.rejected {
        s.push_str(&rejected_line(x));
        match &x.evidence {
            Some(e) => s.push_str(&format!(" (recorded as {e})")),
            None => s.push_str(" (not recorded: the state has no goal)"),
        }
    }
    s
}

/// One op a sync or a redate could not replay, as a line of its report.
pub fn rejected_line(x: &sync::Rejected) -> String {
    format!(
        "\nRejected {} {} by {}: {}",
        x.kind,
        x.todo.as_ref().map_or(x.op.as_str(), |t| t.as_str()),
        x.actor.name(),
        x.reason
    )
}

/// The only way state text enters the page: `&`, `<`, `>`, `"` and `'`
/// become character references, so the text is inert in element content
/// and in quoted attribute values alike.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A file's unified diff as `log -p`, `show` and `diff -p` print it: each
/// line escaped, then coloured by its tone (when colour is on).
pub fn paint_diff(p: &mut Painted, file: &FileDiff) {
    for (tone, line) in &file.lines {
        let colour = match tone {
            Tone::Header => Some(Colour::Bold),
            Tone::Hunk => Some(Colour::Cyan),
            Tone::Delete => Some(Colour::Red),
            Tone::Insert => Some(Colour::Green),
            Tone::Context => None,
        };
        p.line(colour, line);
    }
}
