//! `loopx evidence run`: run a command and record how it went.

use anyhow::Result;
use serde::Serialize;

use super::target;
use crate::cmd::TickWire;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Evidence, EvidenceKind};
use crate::service::evidence::code_now;
use crate::time::Span;

/// Run a command (no shell) and record it as evidence; exit 0 if it passed, 3 if not
///
/// Records argv, exit status, duration, the SHA-256 of the whole output and
/// its last 4 KiB, with common secret patterns redacted (in the argv, the
/// summary and the output, whose digest is then of the redacted text). At
/// the timeout the command's whole process group is ended. A failing
/// command is evidence, not a loopx error: it is recorded, and loopx exits
/// 3. For a command whose output may hold secrets no pattern knows, use
/// `--no-output`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The todo it is for
    #[arg(long, value_name = "T")]
    todo: Option<String>,
    /// The goal it is for [default: the todo's goal, or the only active goal]
    #[arg(long, value_name = "G")]
    goal: Option<String>,
    /// test, build, bench, review, note or artifact
    #[arg(long, value_name = "KIND", default_value = "test")]
    kind: EvidenceKind,
    /// What it shows [default: the command line]
    #[arg(long, value_name = "TEXT")]
    summary: Option<String>,
    /// How long the command may run
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    timeout: Span,
    /// Keep no output tail (the hash is still recorded)
    #[arg(long)]
    no_output: bool,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    passed: bool,
    evidence: &'a Evidence,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    // Check the target and the summary before running anything, so a typo
    // costs no run.
    if let Some(s) = &args.summary {
        crate::op::limits::summary(s)?;
    }
    {
        let snap = tx::load(ctx)?;
        target(ctx, &snap.state, args.todo.as_deref(), args.goal.as_deref())?;
    }
    let code = code_now(ctx.store().ok());
    let mut record = crate::cmd::run_command(ctx, &args.command, &ctx.cwd, args.timeout);
    if args.no_output {
        record.output_tail.clear();
    }
    // The default summary (the command line, redacted like the argv)
    // shortened to fit the summary limit; `record` redacts every summary.
    let summary = match &args.summary {
        Some(s) => s.clone(),
        None => crate::op::limits::fit(&record.argv.join(" "), 200),
    };
    let done = super::record(
        ctx,
        (args.todo.as_deref(), args.goal.as_deref()),
        args.kind,
        &summary,
        code,
        Some(record.clone()),
        None,
    )?;
    let e = super::recorded(&done);
    let passed = record.passed();
    ctx.out.emit(
        &Wire {
            passed,
            evidence: e,
            tick: TickWire::of(&done),
        },
        || {
            let verdict = if passed { "Passed" } else { "Failed" };
            let mut s = format!(
                "{verdict}: `{}` ({}, {} ms); recorded {}.",
                record.argv.join(" "),
                record.outcome(),
                record.duration_ms,
                e.id
            );
            if !passed && !record.output_tail.is_empty() {
                for line in record.last_lines(10) {
                    s.push_str(&format!("\n  {line}"));
                }
            }
            s
        },
    )?;
    Ok(if passed { Exit::Ok } else { Exit::Refused })
}
