//! `loopx quota status`: slots used and left, per agent and goal.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::cmd::wire::BudgetWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::usage::{Usd, human_count};
use crate::model::{AgentId, AgentStatus, GoalId, GoalStatus, quota::Spend};
use crate::op::{park, turn, usage};
use crate::time::Timestamp;

/// Show slots used and left per agent and goal, with the spends in the window
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this agent
    #[arg(long, value_name = "A")]
    agent: Option<String>,
}

#[derive(Serialize)]
struct Row<'a> {
    agent: &'a AgentId,
    goal: &'a GoalId,
    used: u32,
    slots: u32,
    left: u32,
    window: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    frees_at: Option<Timestamp>,
    /// Parked (`quota park`): until when, and whether the time passed and a
    /// human's go is awaited.
    #[serde(skip_serializing_if = "Option::is_none")]
    parked: Option<ParkWire>,
    spends: Vec<&'a Spend>,
    /// Usage recorded in the goal's longest window, and the budgets.
    usage: UsageWire,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    budget: Vec<BudgetWire>,
}

#[derive(Serialize)]
struct UsageWire {
    turns: usize,
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    cost_usd: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
}

#[derive(Serialize)]
struct ParkWire {
    until: Timestamp,
    /// `waiting` until the time, then `awaiting-go`.
    state: &'static str,
}

#[derive(Serialize)]
struct Wire<'a> {
    quota: Vec<Row<'a>>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let only = args
        .agent
        .as_deref()
        .map(|a| state.agent(a).map(|a| a.id.clone()))
        .transpose()?;
    let mut rows = Vec::new();
    for a in state
        .agents
        .values()
        .filter(|a| a.status == AgentStatus::Active)
    {
        if only.as_ref().is_some_and(|o| *o != a.id) {
            continue;
        }
        for g in state
            .goals
            .values()
            .filter(|g| g.status != GoalStatus::Done)
        {
            let s = turn::slots(state, &a.id, g, ctx.now);
            let spends = state
                .quota
                .get(&a.id)
                .map(|l| l.spends.iter().filter(|x| x.goal == g.id).collect())
                .unwrap_or_default();
            let entries: Vec<_> = state
                .quota
                .get(&a.id)
                .map(|l| l.usage.iter().filter(|e| e.goal == g.id).collect())
                .unwrap_or_default();
            let usage = UsageWire {
                turns: entries.len(),
                input_tokens: entries.iter().map(|e| e.usage.input_tokens).sum(),
                output_tokens: entries.iter().map(|e| e.usage.output_tokens).sum(),
                cached_input_tokens: entries.iter().map(|e| e.usage.cached_input_tokens).sum(),
                cost_usd: Usd(entries
                    .iter()
                    .filter_map(|e| e.usage.cost_usd)
                    .map(|c| c.0)
                    .sum())
                .dollars(),
                estimated: entries.iter().any(|e| e.usage.estimated),
            };
            let budget = usage::standings(state, g, Some(&a.id), ctx.now)
                .iter()
                .map(|st| BudgetWire::of(&g.id, st))
                .collect();
            let parked = match park::standing(state, a, g, ctx.now) {
                park::Standing::Free => None,
                park::Standing::Waiting { until, .. } => Some(ParkWire {
                    until,
                    state: "waiting",
                }),
                park::Standing::NeedsGo { until, .. } => Some(ParkWire {
                    until,
                    state: "awaiting-go",
                }),
            };
            rows.push(Row {
                agent: &a.id,
                goal: &g.id,
                used: s.used,
                slots: s.slots,
                left: s.left(),
                window: s.window.to_string(),
                frees_at: s.frees_at,
                parked,
                spends,
                usage,
                budget,
            });
        }
    }
    let wire = Wire { quota: rows };
    ctx.out.emit(&wire, || {
        if wire.quota.is_empty() {
            return "No agents or goals yet.".to_owned();
        }
        wire.quota
            .iter()
            .map(|r| {
                let frees = r
                    .frees_at
                    .map(|t| format!(", next frees at {t}"))
                    .unwrap_or_default();
                let voided = r.spends.iter().filter(|s| s.void.is_some()).count();
                let voided = if voided > 0 {
                    format!(", {voided} voided")
                } else {
                    String::new()
                };
                let parked = match &r.parked {
                    Some(p) if p.state == "waiting" => format!(", parked until {}", p.until),
                    Some(p) => format!(", parked until {}: awaiting a human's go", p.until),
                    None => String::new(),
                };
                let mut line = format!(
                    "{}  {}  {} of {} used per {}{frees}{voided}{parked}",
                    r.agent, r.goal, r.used, r.slots, r.window
                );
                if r.usage.turns > 0 {
                    let est = if r.usage.estimated { " (est.)" } else { "" };
                    line.push_str(&format!(
                        "\n  usage: {} in, {} out, {}{est} over {} turns",
                        human_count(r.usage.input_tokens),
                        human_count(r.usage.output_tokens),
                        Usd::from_dollars(r.usage.cost_usd).unwrap_or_default(),
                        r.usage.turns
                    ));
                }
                for b in &r.budget {
                    line.push_str(&format!("\n  budget {}", b.human()));
                }
                line
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(Exit::Ok)
}
