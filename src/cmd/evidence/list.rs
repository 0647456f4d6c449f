//! `loopx evidence list`.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Evidence;

/// List evidence, newest first
///
/// A record is stale once HEAD has moved past the commit it was taken at.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only records for this todo
    #[arg(long, value_name = "T")]
    todo: Option<String>,
    /// Only stale records
    #[arg(long)]
    stale: bool,
    /// At most this many records
    #[arg(short = 'n', long, value_name = "N")]
    limit: Option<usize>,
}

#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    evidence: &'a Evidence,
    passed: bool,
    stale: bool,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<&'a str>,
    evidence: Vec<Row<'a>>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let snap = tx::load(ctx)?;
    let todo = args
        .todo
        .as_deref()
        .map(|t| snap.state.resolve_todo(t))
        .transpose()?;
    let all = crate::history::evidence_at(ctx.repo()?, snap.tip.tree)?;
    let head = ctx.store()?.head();
    let mut rows: Vec<Row> = all
        .iter()
        .rev()
        .filter(|e| todo.as_ref().is_none_or(|t| e.todo.as_ref() == Some(t)))
        .map(|e| Row {
            evidence: e,
            passed: e.passed(),
            stale: is_stale(e, head.as_deref()),
        })
        .filter(|r| !args.stale || r.stale)
        .collect();
    if let Some(n) = args.limit {
        rows.truncate(n);
    }
    let wire = Wire {
        head: head.as_deref(),
        evidence: rows,
    };
    ctx.out.emit(&wire, || {
        if wire.evidence.is_empty() {
            return "No evidence.".to_owned();
        }
        wire.evidence
            .iter()
            .map(|r| {
                let e = r.evidence;
                let result = match &e.run {
                    Some(run) if run.passed() => "passed".to_owned(),
                    Some(run) => format!("failed ({})", run.outcome()),
                    None => "recorded".to_owned(),
                };
                let on = e.todo.as_ref().map(|t| format!(" {t}")).unwrap_or_default();
                let stale = if r.stale { "  [stale]" } else { "" };
                format!(
                    "{}  {}  {:8} {}{on}  {}  \"{}\"{stale}",
                    e.id,
                    e.at,
                    e.kind.as_str(),
                    result,
                    e.by.name(),
                    e.summary
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(Exit::Ok)
}

/// Taken at a commit HEAD has since moved away from.
fn is_stale(e: &Evidence, head: Option<&str>) -> bool {
    match (&e.code, head) {
        (Some(code), Some(now)) => code.head.as_deref() != Some(now),
        _ => false,
    }
}
