//! `loopx gate open`: ask a concrete question that blocks one scope.

use anyhow::Result;

use crate::cmd::tx;
use crate::cmd::{pick_goal, slug};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::{AgentId, Blocks, GateId, GateKind, State, id::RANDOM_HEX};
use crate::op::{Change, GateOpen};

/// Open a gate: a question that blocks a scope until it is answered; prints its id
///
/// The scope is the goal (the default), one agent (`agent:ID`) or one todo
/// (`todo:ID`); everything outside it goes on. Kinds permission, publish,
/// production and spend can be answered only by a human.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The question, concrete enough to answer with one of the options
    #[arg(long, value_name = "TEXT")]
    question: String,
    /// The goal it belongs to [default: the todo's goal, or the only active goal]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// An answer to choose from (can be repeated) [default: approve, reject]
    #[arg(long = "option", value_name = "CHOICE")]
    options: Vec<String>,
    /// What it blocks: goal, agent:ID or todo:ID
    #[arg(long, value_name = "SCOPE", default_value = "goal")]
    blocks: String,
    /// decision, permission, publish, production or spend
    #[arg(long, value_name = "KIND", default_value = "decision")]
    kind: GateKind,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let done = tx::start(ctx)?.run(|state| {
        let blocks = parse_blocks(state, &args.blocks)?;
        let goal = match (&args.goal, &blocks) {
            (None, Blocks::Todo(t)) => state.todos[t].goal.clone(),
            (flag, _) => pick_goal(ctx, state, flag.as_deref())?,
        };
        let options = if args.options.is_empty() {
            vec!["approve".to_owned(), "reject".to_owned()]
        } else {
            args.options.clone()
        };
        let gate = loop {
            let id = GateId::from_hex(&ctx.ids.hex(RANDOM_HEX, args.question.as_bytes()));
            if !state.gates.contains_key(&id) {
                break id;
            }
        };
        Ok(tx::op(
            ctx,
            Change::GateOpen(GateOpen {
                gate,
                goal,
                question: args.question.clone(),
                options,
                kind: args.kind,
                blocks,
            }),
        )?)
    })?;
    let g = super::emit(ctx, &done, |g| g.id.to_string())?;
    ctx.out.status(&format!(
        "Opened {} ({} on {}): \"{}\".",
        g.id,
        g.kind.as_str(),
        g.blocks,
        g.question
    ));
    Ok(Exit::Ok)
}

/// `goal`, `agent:ID` or `todo:ID` (a todo prefix is resolved).
fn parse_blocks(state: &State, s: &str) -> Result<Blocks, Refusal> {
    let s = s.trim();
    if s == "goal" {
        return Ok(Blocks::Goal);
    }
    match s.split_once(':') {
        Some(("agent", id)) => Ok(Blocks::Agent(slug("agent", id, AgentId::new)?)),
        Some(("todo", id)) => Ok(Blocks::Todo(state.resolve_todo(id)?)),
        _ => Err(Refusal::usage(
            Code::BadScope,
            format!("{s:?} is not a gate scope: use goal, agent:ID or todo:ID"),
        )),
    }
}
