//! `loopx mcp`: a stdio MCP server. Reads one JSON-RPC message per line on
//! stdin, answers one per line on stdout, logs on stderr; [`crate::mcp`]
//! holds the protocol. Each tool call runs `loopx --json …` as a child
//! process in the server's directory and environment, so a tool answers
//! exactly what the command line answers, and a failing command cannot
//! write stray bytes into the protocol stream.

use std::io::BufRead;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::Exit;
use crate::mcp::{self, Runner};
use crate::output::Format;

/// Serve the turn as MCP tools over stdio (newline-delimited JSON-RPC)
///
/// Tools: should_run, todo_claim, todo_update, evidence_add, refresh_state,
/// spend_slot, status, gate_open. Answers the classic handshake
/// (initialize) and the stateless one (server/discover). Register it with
/// your runtime as the command `loopx mcp`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    // MCP speaks JSON-RPC on stdout whatever --format says.
    let out = crate::output::Out::new(Format::Json, true);
    let runner = Child {
        exe: std::env::current_exe().context("finding the loopx binary")?,
        cwd: ctx.cwd.clone(),
    };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = mcp::handle(&line, &runner) {
            out.json_line(&reply)?;
        }
    }
    Ok(Exit::Ok)
}

/// Runs tools as `loopx --json ARGV` child processes in the server's
/// directory (`-C`, else its current directory).
struct Child {
    exe: std::path::PathBuf,
    cwd: std::path::PathBuf,
}

impl Runner for Child {
    fn run(&self, argv: &[String]) -> Result<(Value, bool), String> {
        let out = Command::new(&self.exe)
            .arg("--json")
            .args(argv)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("cannot run loopx: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str::<Value>(stdout.trim()) {
            Ok(doc) => {
                let failed = doc.get("error").is_some();
                Ok((doc, failed))
            }
            Err(_) => Err(format!(
                "loopx {} exited {} without a JSON answer: {}",
                argv.join(" "),
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}
