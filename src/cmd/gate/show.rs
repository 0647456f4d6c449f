//! `loopx gate show`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Gate;
use crate::trust::{self, AllowedSigners, SignatureWire};

/// Show one gate with its answer
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The gate's id or a unique prefix
    id: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(flatten)]
    gate: &'a Gate,
    human_only: bool,
    /// The signature of the answer or withdrawal, when the gate is closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    closed_signature: Option<SignatureWire>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let id = snap.state.resolve_gate(&args.id)?;
    let g = &snap.state.gates[&id];
    let signers = AllowedSigners::load(ctx.repo()?)?;
    let closed = g
        .answer
        .as_ref()
        .map(|a| a.signature.as_deref())
        .or_else(|| g.withdrawn.as_ref().map(|w| w.signature.as_deref()));
    let wire = Wire {
        gate: g,
        human_only: g.kind.human_only(),
        closed_signature: closed.map(|sig| SignatureWire::of(sig, &signers)),
    };
    ctx.out.emit(&wire, || {
        let who = if g.kind.human_only() { "a human" } else { "a human or an agent" };
        let mut s = format!(
            "{}  {} gate on {} ({}), goal {}\n\"{}\"\noptions: {}\nopened {} by {}; answered by {who}",
            g.id,
            g.kind.as_str(),
            g.blocks,
            g.status.as_str(),
            g.goal,
            g.question,
            g.options.join(", "),
            g.opened_at,
            g.opened_by.name()
        );
        if let Some(a) = &g.answer {
            s.push_str(&format!(
                "\nanswer: {} by {} at {}, {}",
                a.choice,
                a.by.name(),
                a.at,
                trust::describe(a.signature.as_deref(), &signers)
            ));
            if let Some(n) = &a.note {
                s.push_str(&format!("\nnote: {n}"));
            }
        }
        if let Some(w) = &g.withdrawn {
            s.push_str(&format!(
                "\nwithdrawn by {} at {}, {}",
                w.by.name(),
                w.at,
                trust::describe(w.signature.as_deref(), &signers)
            ));
        }
        s
    })?;
    Ok(Exit::Ok)
}
