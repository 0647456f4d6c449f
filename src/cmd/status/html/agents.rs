//! The page's sections about who works and what it costs: money (usage and
//! budgets), agents, and the timeline of recent ticks.

use super::*;
use crate::model::usage::Spent;

/// Money: spend against every budget of every active goal (the goal's and
/// each agent's), the tripped ones marked; and what each goal and agent
/// spent in the last day where no budget watches it.
pub(super) fn money(h: &mut String, view: &View, b: &Board) {
    h.push_str("<section id=\"money\">\n<h2>Money</h2>\n");
    let rows = money_rows(view, b);
    if rows.is_empty() {
        h.push_str("<p class=\"mute\">No spend recorded and no budget set (<code>loopx goal set G --budget-usd 20</code>).</p>\n");
    } else {
        money_table(h, &rows);
    }
    h.push_str("</section>\n");
}

/// The money table of `rows` ([`money_rows`]).
pub(in crate::cmd::status) fn money_table(h: &mut String, rows: &[String]) {
    h.push_str("<div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th scope=\"col\">Who</th><th scope=\"col\">Spent</th><th scope=\"col\">Tokens</th><th scope=\"col\">Budget</th><th scope=\"col\">Window</th><th scope=\"col\">State</th></tr></thead>\n<tbody>\n");
    for r in rows {
        h.push_str(r);
        h.push('\n');
    }
    h.push_str("</tbody></table></div>\n");
}

/// [`money`]'s rows: each budget, then the spend of the last day where no
/// budget watches.
pub(in crate::cmd::status) fn money_rows(view: &View, b: &Board) -> Vec<String> {
    let state = &view.snap.state;
    let mut rows = Vec::new();
    for (goal, st) in &b.budgets {
        let scope = match &st.scope {
            usage::Scope::Goal => format!("goal {}", esc(goal.as_str())),
            usage::Scope::Agent(a) => format!("{} on {}", agent_link(a), esc(goal.as_str())),
        };
        let limit = match (st.budget.usd, st.budget.tokens) {
            (Some(u), Some(t)) => format!("{u}, {} tokens", human_count(t)),
            (Some(u), None) => u.to_string(),
            (None, Some(t)) => format!("{} tokens", human_count(t)),
            (None, None) => String::new(),
        };
        let state_cell = if st.reached() {
            "<span class=\"bad\" data-tripped=\"1\">tripped</span>".to_owned()
        } else {
            "<span class=\"passed\">under</span>".to_owned()
        };
        rows.push(format!(
            "<tr data-budget=\"{}\"><td>{scope}</td><td class=\"num\" data-label=\"spent\" data-usd=\"{}\">{}</td><td class=\"num\" data-label=\"tokens\">{}</td><td class=\"num\" data-label=\"budget\">{limit}</td><td class=\"nw\" data-label=\"window\">{}</td><td data-label=\"state\">{state_cell}</td></tr>",
            if st.reached() { "tripped" } else { "ok" },
            st.spent.usd.dollars(),
            dollars(&st.spent),
            human_count(st.spent.tokens),
            st.budget.window,
        ));
    }
    // Scopes no budget watches: what they spent in the last day.
    for g in state
        .goals
        .values()
        .filter(|g| g.status == crate::model::GoalStatus::Active)
    {
        let scopes = std::iter::once(usage::Scope::Goal).chain(
            b.agents
                .iter()
                .map(|a| usage::Scope::Agent(a.agent.id.clone())),
        );
        for scope in scopes {
            let watched = b
                .budgets
                .iter()
                .any(|(id, st)| *id == &g.id && st.scope == scope);
            if watched {
                continue;
            }
            let spent = usage::spent(state, &g.id, &scope, BUDGET_WINDOW, b.now);
            if spent.tokens == 0 && spent.usd.dollars() == 0.0 {
                continue;
            }
            let who = match &scope {
                usage::Scope::Goal => format!("goal {}", esc(g.id.as_str())),
                usage::Scope::Agent(a) => format!("{} on {}", agent_link(a), esc(g.id.as_str())),
            };
            rows.push(format!(
                "<tr data-budget=\"none\"><td>{who}</td><td class=\"num\" data-label=\"spent\" data-usd=\"{}\">{}</td><td class=\"num\" data-label=\"tokens\">{}</td><td class=\"mute\" data-label=\"budget\">none</td><td class=\"nw\" data-label=\"window\">{BUDGET_WINDOW}</td><td></td></tr>",
                spent.usd.dollars(),
                dollars(&spent),
                human_count(spent.tokens),
            ));
        }
    }
    rows
}

/// Dollars spent, `(est.)` when some were priced from tokens, and what
/// they cannot count: `$3.20 plus 2 turns unpriced (model …)`, or only
/// that when nothing was priced (never "$0.00" beside tokens).
fn dollars(s: &Spent) -> String {
    let est = if s.estimated { " (est.)" } else { "" };
    match s.unpriced_note() {
        None => format!("{}{est}", s.usd),
        Some(n) if s.usd.0 == 0 => format!(
            "<span class=\"bad\" data-unpriced=\"{}\">{}</span>",
            s.unpriced,
            esc(&n["plus ".len()..])
        ),
        Some(n) => format!(
            "<span class=\"nw\">{}{est}</span> <span class=\"bad\" data-unpriced=\"{}\">{}</span>",
            s.usd,
            s.unpriced,
            esc(&n)
        ),
    }
}

pub(super) fn agents(h: &mut String, view: &View, b: &Board) {
    let state = &view.snap.state;
    h.push_str("<section id=\"agents\">\n<h2>Agents</h2>\n");
    if b.agents.is_empty() {
        h.push_str("<p class=\"mute\">No active agents.</p>\n</section>\n");
        return;
    }
    h.push_str("<div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th scope=\"col\">Agent</th><th scope=\"col\">Holds</th><th scope=\"col\">Last heard</th><th scope=\"col\">Last turn</th><th scope=\"col\">Slots</th><th scope=\"col\">Spent (1d)</th></tr></thead>\n<tbody>\n");
    // Agents of runtime sessions that ended (no claim, nothing for an hour)
    // are listed apart, below the ones that matter.
    let (idle, live): (Vec<_>, Vec<_>) = b.agents.iter().partition(|a| a.idle_session(b.now));
    for a in live {
        let holds: Vec<String> = a.holds.iter().map(|t| todo_link(t)).collect();
        let mut heard = ago(a.last_seen, b.now);
        if a.quiet {
            heard.push_str(" <span class=\"tag\">quiet</span>");
        }
        if let Some(p) = &a.agent.parked {
            let _ = write!(
                heard,
                " <span class=\"mute\">parked until <time>{}</time></span>",
                p.until
            );
        }
        let turn = match &a.agent.last_turn {
            Some(t) => format!(
                "{} on {} <time>{}</time>",
                t.outcome.as_str(),
                esc(t.goal.as_str()),
                t.at
            ),
            None => String::new(),
        };
        let slots: Vec<String> = b
            .quota
            .iter()
            .filter(|q| q.agent == &a.agent.id)
            .map(|q| {
                format!(
                    "<span class=\"nw\">{}: {}/{} per {}</span>",
                    esc(q.goal.id.as_str()),
                    q.slots.used,
                    q.slots.slots,
                    q.slots.window
                )
            })
            .collect();
        let spent: Vec<String> = b
            .quota
            .iter()
            .filter(|q| q.agent == &a.agent.id)
            .filter_map(|q| {
                let s = usage::spent(
                    state,
                    &q.goal.id,
                    &usage::Scope::Agent(a.agent.id.clone()),
                    BUDGET_WINDOW,
                    b.now,
                );
                (s.tokens > 0 || s.usd.dollars() > 0.0).then(|| {
                    format!(
                        "<span class=\"nw\">{}:</span> {}",
                        esc(q.goal.id.as_str()),
                        dollars(&s)
                    )
                })
            })
            .collect();
        let _ = writeln!(
            h,
            "<tr id=\"agent-{id}\"{quiet}><th scope=\"row\"><span class=\"nw\">{id}</span> <span class=\"mute nw\">{rt}</span></th><td data-label=\"holds\">{}</td><td data-label=\"last heard\">{heard}</td><td data-label=\"last turn\">{turn}</td><td data-label=\"slots\">{}</td><td data-label=\"spent (1d)\">{}</td></tr>",
            holds.join("<br>"),
            slots.join("<br>"),
            spent.join("<br>"),
            id = esc(a.agent.id.as_str()),
            rt = a.agent.runtime.as_str(),
            quiet = if a.quiet { " data-quiet=\"1\"" } else { "" },
        );
    }
    h.push_str("</tbody></table></div>\n");
    if !idle.is_empty() {
        let ids: Vec<String> = idle
            .iter()
            .map(|a| {
                format!(
                    "<span class=\"nw\" id=\"agent-{id}\">{id}</span>",
                    id = esc(a.agent.id.as_str())
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"mute\" id=\"idle-session-agents\">Idle session agents (no claim, nothing for an hour): {}</p>",
            ids.join(", ")
        );
    }
    h.push_str("</section>\n");
}

pub(super) fn timeline(h: &mut String, b: &Board, day: &[Timestamp]) {
    h.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let hours = board::per_hour(day, b.now);
    let max = hours.iter().copied().max().unwrap_or(0).max(1);
    let total: u32 = hours.iter().sum();
    let _ = write!(
        h,
        "<figure><svg viewBox=\"0 0 240 60\" width=\"480\" height=\"120\" role=\"img\" aria-label=\"{total} ticks over the last 24 hours, per hour\">"
    );
    for (i, n) in hours.iter().enumerate() {
        let height = (*n as f64 / max as f64 * 48.0).round();
        let _ = write!(
            h,
            "<rect x=\"{}\" y=\"{}\" width=\"8\" height=\"{height}\"><title>{n} ticks, {} h ago</title></rect>",
            i * 10 + 1,
            50.0 - height,
            23 - i
        );
    }
    let _ = writeln!(
        h,
        "<text x=\"1\" y=\"59\">-24h</text><text x=\"218\" y=\"59\">now</text></svg><figcaption class=\"mute\">{total} ticks in the last 24 hours, per hour (at most {max} in an hour)</figcaption></figure>"
    );
    let _ = writeln!(
        h,
        "<details id=\"ticks\" open><summary>The last {} ticks</summary>",
        b.ticks.len()
    );
    h.push_str("<div class=\"scroll\"><table class=\"stack ticks\">\n<thead><tr><th scope=\"col\">Tick</th><th scope=\"col\">When</th><th scope=\"col\">Who</th><th scope=\"col\">What</th></tr></thead>\n<tbody>\n");
    for t in b.ticks {
        let mark = if t.failed { "✗ failed: " } else { "" };
        let signed = match &t.signature {
            Some(s) => format!(" <span class=\"mute\">[{}]</span>", esc(s)),
            None => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr{}><td class=\"num\">{}</td><td><time>{}</time></td><td class=\"nw\">{}</td><td>{mark}{}{signed}</td></tr>",
            if t.failed { " class=\"failed\"" } else { "" },
            t.tick,
            t.at,
            esc(&t.actor),
            esc(&t.subject),
        );
    }
    h.push_str("</tbody></table></div>\n</details>\n</section>\n");
}
