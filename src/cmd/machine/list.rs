//! `loopx machine list`: the machines in the state, and who may act for
//! which agent.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Actor, AgentStatus};
use crate::time::Timestamp;
use crate::trust::{self, machine};

/// List the machines, whom each may act for, and agents no machine covers
#[derive(clap::Args, Debug)]
pub struct Args {}

#[derive(Serialize)]
struct Wire {
    /// The signing policy: `off`, `humans` or `all`.
    signatures: &'static str,
    /// This clone's machine key's fingerprint, if it has one.
    this_machine: Option<String>,
    machines: Vec<Row>,
    /// Active agents no admitted machine may act for.
    uncovered: Vec<String>,
}

#[derive(Serialize)]
struct Row {
    name: String,
    fingerprint: String,
    status: &'static str,
    agents: Vec<String>,
    proposed_by: Actor,
    proposed_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    admitted_by: Option<Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_by: Option<Actor>,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let state = &snap.state;
    let this_machine = machine::load(ctx.store()?.common_dir())?
        .map(|k| trust::fingerprint(&machine::public_line(&k)).unwrap_or_default());
    let machines: Vec<Row> = state
        .machines
        .values()
        .map(|m| Row {
            name: m.name.to_string(),
            fingerprint: trust::fingerprint(&m.key).unwrap_or_default(),
            status: super::status(m),
            agents: m.agents.clone(),
            proposed_by: m.proposed_by.clone(),
            proposed_at: m.proposed_at,
            admitted_by: m.admitted_by.clone(),
            revoked_by: m.revoked_by.clone(),
        })
        .collect();
    let uncovered: Vec<String> = state
        .agents
        .values()
        .filter(|a| a.status == AgentStatus::Active)
        .filter(|a| !state.machines.values().any(|m| m.may_act_for(&a.id)))
        .map(|a| a.id.to_string())
        .collect();
    let wire = Wire {
        signatures: state.meta.settings.signatures.as_str(),
        this_machine,
        machines,
        uncovered,
    };
    ctx.out.emit(&wire, || {
        let mut out = String::new();
        for m in &wire.machines {
            let here = if wire.this_machine.as_deref() == Some(m.fingerprint.as_str()) {
                " (this clone)"
            } else {
                ""
            };
            out.push_str(&format!(
                "{} {} {}{here}: {}\n",
                m.name,
                m.status,
                m.fingerprint,
                if m.agents.is_empty() {
                    "acts for no agent".to_owned()
                } else {
                    format!("acts for {}", m.agents.join(", "))
                }
            ));
        }
        if wire.machines.is_empty() {
            out.push_str("No machines yet: `loopx machine setup` on each clone proposes one.\n");
        }
        if !wire.uncovered.is_empty() {
            out.push_str(&format!(
                "No admitted machine may act for: {}\n",
                wire.uncovered.join(", ")
            ));
        }
        out.push_str(&format!("Signing policy: {}", wire.signatures));
        out
    })?;
    Ok(Exit::Ok)
}
