//! `loopx mcp`: a stdio MCP server. Reads one JSON-RPC message per line on
//! stdin (at most 8 MiB each), answers one per line on stdout, logs on
//! stderr; [`crate::mcp`] holds the protocol. Each tool call runs a child
//! `loopx mcp --exec` in the server's directory and environment and hands it
//! the command line on stdin, as JSON: a tool answers exactly what the
//! command line answers, arguments of any size pass (argv would stop at the
//! kernel's limit), and a failing command cannot write stray bytes into the
//! protocol stream.

use std::io::{BufRead, Read, Write};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::ctx::{Caller, Ctx};
use crate::error::Exit;
use crate::mcp::{self, MAX_MESSAGE, Runner, Server};
use crate::output::{Format, Out};

/// Serve the turn as MCP tools over stdio (newline-delimited JSON-RPC)
///
/// Tools: should_run, todo_claim, todo_renew, todo_update, todo_done,
/// todo_release, todo_handoff, settle, evidence_add, evidence_run,
/// gate_open, gate_list, gate_show, gate_answer, refresh_state, spend_slot,
/// status. Answers the classic handshake (initialize) and the stateless one
/// (server/discover). Every call acts as an agent: its `agent` argument,
/// else the server's (--agent, LOOPX_AGENT or the agent runtime's session);
/// a call with neither is refused. Register it with your runtime as the
/// command `loopx mcp`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run one tool's command: its argv as a JSON array of strings on stdin
    #[arg(long, hide = true)]
    pub exec: bool,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    // MCP speaks JSON-RPC on stdout whatever --format says.
    let out = Out::new(Format::Json, true);
    let agent = match ctx.caller() {
        Caller::Agent(id) => Some(id.as_str().to_owned()),
        Caller::UnknownAgent { runtime, marker } => {
            out.status(&format!(
                "loopx mcp: {marker} says this runs under {runtime}, but its session id is not set; calls must name their agent (or start with --agent ID)"
            ));
            None
        }
        Caller::Human => None,
    };
    let runner = Child {
        exe: std::env::current_exe().context("finding the loopx binary")?,
        cwd: ctx.cwd.clone(),
    };
    let server = Server {
        runner: &runner,
        agent,
    };
    let mut stdin = std::io::stdin().lock();
    while let Some(line) = read_message(&mut stdin).context("reading stdin")? {
        let reply = match line {
            Message::Line(line) => {
                let line = String::from_utf8_lossy(&line);
                if line.trim().is_empty() {
                    continue;
                }
                server.handle(&line)
            }
            Message::TooLarge => Some(mcp::too_large()),
        };
        if let Some(reply) = reply {
            out.json_line(&reply)?;
        }
    }
    Ok(Exit::Ok)
}

/// One line of input, or the news that it was too long (and was skipped).
enum Message {
    Line(Vec<u8>),
    TooLarge,
}

/// Reads up to the next newline, keeping at most [`MAX_MESSAGE`] bytes:
/// a longer line is read to its end and dropped. None at end of input.
fn read_message(input: &mut impl BufRead) -> std::io::Result<Option<Message>> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(match (over, line.is_empty()) {
                (true, _) => Some(Message::TooLarge),
                (false, true) => None,
                (false, false) => Some(Message::Line(line)),
            });
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        if !over {
            if line.len() + chunk.len() > MAX_MESSAGE {
                over = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let ended = done > chunk.len();
        input.consume(done);
        if ended {
            return Ok(Some(if over {
                Message::TooLarge
            } else {
                Message::Line(line)
            }));
        }
    }
}

/// `loopx mcp --exec`: reads an argv (a JSON array of strings) on stdin
/// and returns the command line `loopx --json ARGV`, which `lib` runs in
/// this process through the real parser (or the exit status of a bad
/// input, said on stderr).
pub fn exec() -> Result<Vec<std::ffi::OsString>, ExitCode> {
    let mut input = String::new();
    let argv: Result<Vec<String>, String> = std::io::stdin()
        .lock()
        .take(MAX_MESSAGE as u64 + 1)
        .read_to_string(&mut input)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&input).map_err(|e| e.to_string()));
    match argv {
        Ok(argv) => {
            let words = ["loopx", "--json"].map(std::ffi::OsString::from);
            Ok(words
                .into_iter()
                .chain(argv.into_iter().map(Into::into))
                .collect())
        }
        Err(e) => {
            Out::new(Format::Human, true).status(&format!(
                "loopx mcp --exec: stdin is not a JSON list of strings: {e}"
            ));
            Err(ExitCode::from(Exit::Usage.code()))
        }
    }
}

/// Runs tools as child `loopx mcp --exec` processes in the server's
/// directory (`-C`, else its current directory).
struct Child {
    exe: std::path::PathBuf,
    cwd: std::path::PathBuf,
}

impl Runner for Child {
    fn parse(&self, words: &[String]) -> Result<(), clap::Error> {
        crate::cmd::parse(words)
    }

    fn run(&self, argv: &[String]) -> Result<(Value, bool), String> {
        let mut child = Command::new(&self.exe)
            .args(["mcp", "--exec"])
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run loopx: {e}"))?;
        let words = serde_json::to_vec(argv).expect("strings serialize");
        let mut stdin = child.stdin.take().expect("piped");
        // Written from a thread: a child that answers before reading all of
        // a large argument must not deadlock the server.
        let writer = std::thread::spawn(move || stdin.write_all(&words));
        let out = child
            .wait_with_output()
            .map_err(|e| format!("cannot run loopx: {e}"))?;
        let _ = writer.join();
        let stdout = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str::<Value>(stdout.trim()) {
            Ok(doc) => {
                let failed = doc.get("error").is_some();
                Ok((doc, failed))
            }
            Err(_) => Err(format!(
                "loopx exited {} without a JSON answer: {}",
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(input: &[u8]) -> Vec<Option<usize>> {
        let mut r = std::io::BufReader::with_capacity(7, input);
        let mut out = Vec::new();
        while let Some(m) = read_message(&mut r).unwrap() {
            out.push(match m {
                Message::Line(l) => Some(l.len()),
                Message::TooLarge => None,
            });
        }
        out
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_and_reading_goes_on() {
        let mut input = b"{}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_MESSAGE + 1));
        input.extend(b"\nabc\nlast");
        assert_eq!(messages(&input), [Some(2), None, Some(3), Some(4)]);
        let mut exact = vec![b'y'; MAX_MESSAGE];
        exact.push(b'\n');
        assert_eq!(messages(&exact), [Some(MAX_MESSAGE)]);
    }
}
