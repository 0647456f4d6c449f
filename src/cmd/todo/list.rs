//! `loopx todo list`.

use anyhow::Result;
use serde::Serialize;

use super::TodoRef;
use crate::cmd::pick_goal;
use crate::cmd::tx;
use crate::ctx::{Caller, Ctx};
use crate::error::{Code, Exit, Refusal};
use crate::model::{AgentStatus, GoalId, Priority, State, Todo, TodoStatus};
use crate::op::rules;

/// List todos, most urgent first
///
/// By default every todo that is not done. --ready lists what the acting
/// agent could claim now; for a human, what some registered agent could
/// claim.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only todos that are ready to claim
    #[arg(long)]
    ready: bool,
    /// Only the acting agent's claims
    #[arg(long)]
    mine: bool,
    /// Only todos with this status (can be repeated)
    #[arg(long, value_name = "S")]
    status: Vec<TodoStatus>,
    /// Only this goal's todos
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// Include done and archived todos
    #[arg(long)]
    all: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    todo: TodoRef<'a>,
    priority: Priority,
    goal: &'a GoalId,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    archived: bool,
}

#[derive(Serialize)]
struct Wire<'a> {
    todos: Vec<Row<'a>>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let goal = match &args.goal {
        Some(g) => Some(pick_goal(ctx, state, Some(g))?),
        None => None,
    };
    let agent = match ctx.caller() {
        Caller::Agent(id) if args.ready || args.mine => Some(rules::registered(state, id)?),
        _ if args.mine => {
            return Err(Refusal::usage(
                Code::AgentsOnly,
                "--mine lists an agent's claims, and no agent is acting",
            )
            .with_hint("pass --agent ID or set LOOPX_AGENT")
            .into());
        }
        _ => None,
    };
    let scoped = rules::Scoped::of(state);
    let mut todos: Vec<&Todo> = state
        .todos
        .values()
        .filter(|t| goal.as_ref().is_none_or(|g| &t.goal == g))
        .filter(|t| {
            if args.status.is_empty() {
                args.all || t.status != TodoStatus::Done
            } else {
                args.status.contains(&t.status)
            }
        })
        .filter(|t| !args.mine || agent.is_some_and(|a| t.owner() == Some(&a.id)))
        .filter(|t| !args.ready || ready_for_someone(state, t, agent, &scoped, ctx))
        .collect();
    todos.sort_by(|a, b| rules::pick_order(a, b));
    // The archive is read only when asked for: it can be far larger than the
    // live state.
    let wants_done = args.status.is_empty() || args.status.contains(&TodoStatus::Done);
    let archive = if args.all && wants_done && !args.ready && !args.mine {
        tx::load_archive(ctx, &snap)?
    } else {
        Default::default()
    };
    let mut archived: Vec<&Todo> = archive
        .values()
        .filter(|t| goal.as_ref().is_none_or(|g| &t.goal == g))
        .collect();
    archived.sort_by(|a, b| rules::pick_order(a, b));
    fn row(t: &Todo, archived: bool) -> Row<'_> {
        Row {
            todo: TodoRef::of(t),
            priority: t.priority,
            goal: &t.goal,
            archived,
        }
    }
    let wire = Wire {
        todos: todos
            .iter()
            .map(|t| row(t, false))
            .chain(archived.iter().map(|t| row(t, true)))
            .collect(),
    };
    ctx.out.emit(&wire, || {
        table(&wire.todos, args.ready && state.agents.is_empty())
    })?;
    Ok(Exit::Ok)
}

/// For an agent, ready for it; for a human, ready for some registered agent.
fn ready_for_someone(
    state: &State,
    t: &Todo,
    agent: Option<&crate::model::Agent>,
    scoped: &rules::Scoped,
    ctx: &Ctx,
) -> bool {
    match agent {
        Some(a) => rules::ready_with(state, t, a, ctx.now, scoped).is_ok(),
        None => state
            .agents
            .values()
            .filter(|a| a.status == AgentStatus::Active)
            .any(|a| rules::ready_with(state, t, a, ctx.now, scoped).is_ok()),
    }
}

fn table(rows: &[Row], no_agents: bool) -> String {
    if rows.is_empty() {
        return if no_agents {
            "No todos are ready: no agent is registered yet (`loopx agent register ID`).".to_owned()
        } else {
            "No todos.".to_owned()
        };
    }
    rows.iter()
        .map(|r| {
            let owner = r.todo.owner.map_or("-", |o| o.as_str());
            let status = if r.archived {
                "archived"
            } else {
                r.todo.status
            };
            format!(
                "{}  {}  {:8}  {:12}  {}",
                r.todo.id,
                r.priority,
                status,
                owner,
                crate::term::line(r.todo.title)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
