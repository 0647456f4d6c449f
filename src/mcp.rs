//! The MCP server behind `loopx mcp`, as a pure request → response function:
//! newline-delimited JSON-RPC 2.0, the classic handshake (`initialize`,
//! `tools/list`, `tools/call`, `ping`) and the stateless 2026 revision
//! (`server/discover`, the protocol version in each request's `_meta`).
//!
//! Hand-written on serde_json rather than an SDK: five methods do not need
//! an async runtime, and the SDKs (rmcp) bring tokio and proc macros into a
//! binary whose commands take milliseconds. Each tool is a loopx command;
//! [`Runner`] runs it (`cmd/mcp.rs` spawns `loopx --json …`), so a tool's
//! answer is the CLI's answer, byte for byte.

use serde_json::{Map, Value, json};

/// Protocol versions with the `initialize` handshake, newest first.
pub const CLASSIC: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Stateless protocol versions: no `initialize`; each request names its
/// version in `_meta`.
pub const STATELESS: &[&str] = &["2026-07-28"];
/// Where a stateless request names its protocol version.
pub const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

const INSTRUCTIONS: &str = "loopx keeps this project's goals, todos, gates and quota. A turn: should_run, todo_claim, work, todo_update or evidence_add, refresh_state, spend_slot. Human-only gates (permission, publish, production, spend) are answered by people, never by you.";

/// Runs one loopx command (the argv after `loopx --json`) and returns its
/// JSON document, and whether the command failed.
pub trait Runner {
    fn run(&self, argv: &[String]) -> Result<(Value, bool), String>;
}

/// How a tool property becomes command-line words.
#[derive(Clone, Copy)]
enum Arg {
    /// The first positional argument.
    Positional,
    /// `--flag=VALUE`.
    Flag(&'static str),
    /// `--flag` when true.
    Switch(&'static str),
    /// `--flag=V` for each item.
    Repeat(&'static str),
    /// The global `--agent=VALUE`.
    Agent,
}

/// A property of a tool's input.
struct Prop {
    name: &'static str,
    ty: &'static str,
    desc: &'static str,
    choices: &'static [&'static str],
    required: bool,
    arg: Arg,
}

const fn prop(name: &'static str, ty: &'static str, desc: &'static str, arg: Arg) -> Prop {
    Prop {
        name,
        ty,
        desc,
        choices: &[],
        required: false,
        arg,
    }
}

const fn req(p: Prop) -> Prop {
    Prop {
        required: true,
        ..p
    }
}

const fn one_of(p: Prop, choices: &'static [&'static str]) -> Prop {
    Prop { choices, ..p }
}

const AGENT: Prop = prop(
    "agent",
    "string",
    "Your agent id [default: LOOPX_AGENT or the runtime session]",
    Arg::Agent,
);
const GOAL: Prop = prop(
    "goal",
    "string",
    "Goal id [default: the only active goal]",
    Arg::Flag("--goal"),
);

/// A tool: a loopx command with typed arguments.
pub struct Tool {
    pub name: &'static str,
    description: &'static str,
    command: &'static [&'static str],
    props: &'static [Prop],
}

/// The tools `loopx mcp` serves: the turn, the board and gates.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "should_run",
        description: "Should you run a turn now, and on what? Read-only. Gives the todo, the gates that concern you, slots left and a turn token.",
        command: &["quota", "should-run"],
        props: &[GOAL, AGENT],
    },
    Tool {
        name: "todo_claim",
        description: "Claim a todo (renews your own claim), or with next=true the best ready one.",
        command: &["todo", "claim"],
        props: &[
            prop("id", "string", "Todo id or unique prefix", Arg::Positional),
            prop(
                "next",
                "boolean",
                "Pick the best ready todo",
                Arg::Switch("--next"),
            ),
            prop(
                "goal",
                "string",
                "With next: only this goal",
                Arg::Flag("--goal"),
            ),
            prop(
                "ttl",
                "string",
                "Lease length, e.g. 45m",
                Arg::Flag("--ttl"),
            ),
            AGENT,
        ],
    },
    Tool {
        name: "todo_update",
        description: "Note progress on your claim, or set it open, blocked or deferred (which gives it up).",
        command: &["todo", "update"],
        props: &[
            req(prop(
                "id",
                "string",
                "Todo id or unique prefix",
                Arg::Positional,
            )),
            prop("note", "string", "What happened", Arg::Flag("--note")),
            one_of(
                prop("status", "string", "New status", Arg::Flag("--status")),
                &["open", "blocked", "deferred"],
            ),
            AGENT,
        ],
    },
    Tool {
        name: "evidence_add",
        description: "Record evidence of what was checked or reviewed.",
        command: &["evidence", "add"],
        props: &[
            req(prop(
                "summary",
                "string",
                "What it shows, in a line",
                Arg::Flag("--summary"),
            )),
            prop("todo", "string", "The todo it is for", Arg::Flag("--todo")),
            GOAL,
            one_of(
                prop(
                    "kind",
                    "string",
                    "Kind [default: note]",
                    Arg::Flag("--kind"),
                ),
                &["test", "build", "bench", "review", "note"],
            ),
            AGENT,
        ],
    },
    Tool {
        name: "refresh_state",
        description: "End your turn: record how it went; returns the next turn's brief.",
        command: &["refresh-state"],
        props: &[
            req(one_of(
                prop(
                    "outcome",
                    "string",
                    "How the turn ended",
                    Arg::Flag("--outcome"),
                ),
                &["advanced", "unchanged", "blocked"],
            )),
            prop(
                "next_action",
                "string",
                "What the next turn does first",
                Arg::Flag("--next-action"),
            ),
            prop(
                "todo",
                "string",
                "The todo the turn was about",
                Arg::Flag("--todo"),
            ),
            prop(
                "turn",
                "string",
                "Turn token from should_run",
                Arg::Flag("--turn"),
            ),
            GOAL,
            prop(
                "dry_run",
                "boolean",
                "Print the brief, write nothing",
                Arg::Switch("--dry-run"),
            ),
            AGENT,
        ],
    },
    Tool {
        name: "spend_slot",
        description: "Spend one quota slot for a turn token, after a writeback (todo_update, evidence_add, refresh_state advanced|blocked).",
        command: &["quota", "spend-slot"],
        props: &[
            req(prop(
                "turn",
                "string",
                "Turn token from should_run",
                Arg::Flag("--turn"),
            )),
            prop(
                "dry_run",
                "boolean",
                "Check without writing",
                Arg::Switch("--dry-run"),
            ),
            AGENT,
        ],
    },
    Tool {
        name: "status",
        description: "The board: gates waiting on humans, goals, claims, quota, recent ticks.",
        command: &["status"],
        props: &[],
    },
    Tool {
        name: "gate_open",
        description: "Ask a question that blocks a scope until answered. permission, publish, production and spend gates are answered by humans only.",
        command: &["gate", "open"],
        props: &[
            req(prop(
                "question",
                "string",
                "Concrete, answerable by an option",
                Arg::Flag("--question"),
            )),
            one_of(
                prop(
                    "kind",
                    "string",
                    "Kind [default: decision]",
                    Arg::Flag("--kind"),
                ),
                &["decision", "permission", "publish", "production", "spend"],
            ),
            prop(
                "blocks",
                "string",
                "goal, agent:ID or todo:ID [default: goal]",
                Arg::Flag("--blocks"),
            ),
            prop(
                "options",
                "array",
                "Answers to choose from [default: approve, reject]",
                Arg::Repeat("--option"),
            ),
            GOAL,
            AGENT,
        ],
    },
];

impl Tool {
    /// The tool as `tools/list` shows it.
    pub fn describe(&self) -> Value {
        let mut props = Map::new();
        for p in self.props {
            let mut s = Map::new();
            s.insert("type".into(), p.ty.into());
            if p.ty == "array" {
                s.insert("items".into(), json!({"type": "string"}));
            }
            if !p.choices.is_empty() {
                s.insert("enum".into(), json!(p.choices));
            }
            s.insert("description".into(), p.desc.into());
            props.insert(p.name.into(), Value::Object(s));
        }
        let required: Vec<&str> = self
            .props
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name)
            .collect();
        let mut schema =
            json!({"type": "object", "properties": props, "additionalProperties": false});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        json!({"name": self.name, "description": self.description, "inputSchema": schema})
    }

    /// The command line for `args`, checked against the schema.
    pub fn argv(&self, args: &Map<String, Value>) -> Result<Vec<String>, String> {
        for key in args.keys() {
            if !self.props.iter().any(|p| p.name == key) {
                return Err(format!("unknown argument {key:?}"));
            }
        }
        let mut globals = Vec::new();
        let mut argv: Vec<String> = self.command.iter().map(|s| (*s).to_owned()).collect();
        for p in self.props {
            let Some(v) = args.get(p.name).filter(|v| !v.is_null()) else {
                if p.required {
                    return Err(format!("{} is required", p.name));
                }
                continue;
            };
            match (p.ty, v) {
                ("string", Value::String(s)) => {
                    if !p.choices.is_empty() && !p.choices.contains(&s.as_str()) {
                        return Err(format!(
                            "{} must be one of {}",
                            p.name,
                            p.choices.join(", ")
                        ));
                    }
                    match p.arg {
                        Arg::Positional if s.starts_with('-') || s.is_empty() => {
                            return Err(format!("{} {s:?} is not an id", p.name));
                        }
                        Arg::Positional => argv.push(s.clone()),
                        Arg::Flag(f) => argv.push(format!("{f}={s}")),
                        Arg::Agent => globals.push(format!("--agent={s}")),
                        Arg::Switch(_) | Arg::Repeat(_) => {}
                    }
                }
                ("boolean", Value::Bool(b)) => {
                    if let (true, Arg::Switch(f)) = (b, p.arg) {
                        argv.push(f.to_owned());
                    }
                }
                ("array", Value::Array(items)) => {
                    for i in items {
                        let (Some(s), Arg::Repeat(f)) = (i.as_str(), p.arg) else {
                            return Err(format!("{} must be a list of strings", p.name));
                        };
                        argv.push(format!("{f}={s}"));
                    }
                }
                (ty, _) => return Err(format!("{} must be a {ty}", p.name)),
            }
        }
        globals.extend(argv);
        Ok(globals)
    }
}

/// Answers one line of input: a response, or None for a notification.
pub fn handle(line: &str, runner: &dyn Runner) -> Option<Value> {
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(error(
                Value::Null,
                -32700,
                &format!("parse error: {e}"),
                None,
            ));
        }
    };
    let id = msg.get("id").cloned();
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        // A response from the client, or junk: answer junk only if it has an id.
        return match (&id, msg.get("result").or(msg.get("error"))) {
            (Some(id), None) => Some(error(id.clone(), -32600, "invalid request", None)),
            _ => None,
        };
    };
    let id = id?;
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let stateless = params
        .get("_meta")
        .and_then(|m| m.get(VERSION_META))
        .and_then(Value::as_str);
    if let Some(v) = stateless
        && !STATELESS.contains(&v)
        && !CLASSIC.contains(&v)
    {
        return Some(error(
            id,
            -32022,
            &format!("unsupported protocol version {v}"),
            Some(json!({"supported": supported(), "requested": v})),
        ));
    }
    let result = match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = asked.filter(|v| CLASSIC.contains(v)).unwrap_or(CLASSIC[0]);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }))
        }
        "server/discover" => Ok(json!({
            "supportedVersions": supported(),
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        })),
        "ping" => Ok(json!({})),
        "tools/list" => {
            let mut r = json!({"tools": TOOLS.iter().map(Tool::describe).collect::<Vec<_>>()});
            if stateless.is_some() {
                // The tool list changes only with the binary.
                r["ttlMs"] = json!(3_600_000);
            }
            Ok(r)
        }
        "tools/call" => call(&params, runner),
        other => Err((-32601, format!("method not found: {other}"))),
    };
    Some(match result {
        Ok(mut r) => {
            if stateless.is_some() {
                r["resultType"] = json!("complete");
            }
            json!({"jsonrpc": "2.0", "id": id, "result": r})
        }
        Err((code, message)) => error(id, code, &message, None),
    })
}

fn call(params: &Value, runner: &dyn Runner) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let tool = TOOLS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| (-32602, format!("unknown tool {name:?}")))?;
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => return Ok(failed("arguments must be an object".to_owned())),
    };
    let argv = match tool.argv(args) {
        Ok(a) => a,
        Err(e) => return Ok(failed(format!("invalid arguments: {e}"))),
    };
    Ok(match runner.run(&argv) {
        Ok((doc, is_error)) => json!({
            "content": [{"type": "text", "text": doc.to_string()}],
            "structuredContent": doc,
            "isError": is_error,
        }),
        Err(e) => failed(e),
    })
}

fn failed(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn supported() -> Vec<&'static str> {
    STATELESS.iter().chain(CLASSIC).copied().collect()
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

fn server_info() -> Value {
    json!({"name": "loopx", "version": env!("CARGO_PKG_VERSION")})
}

fn error(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut e = json!({"code": code, "message": message});
    if let Some(d) = data {
        e["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": e})
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;
    impl Runner for Echo {
        fn run(&self, argv: &[String]) -> Result<(Value, bool), String> {
            Ok((json!({"argv": argv}), false))
        }
    }

    fn ask(line: &str) -> Value {
        handle(line, &Echo).expect("a response")
    }

    #[test]
    fn tool_arguments_become_flags_and_are_checked() {
        let v = ask(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"todo_update","arguments":{"id":"t-1","note":"-half way","status":"blocked","agent":"a"}}}"#,
        );
        assert_eq!(
            v["result"]["structuredContent"]["argv"],
            json!([
                "--agent=a",
                "todo",
                "update",
                "t-1",
                "--note=-half way",
                "--status=blocked"
            ])
        );
        let bad = ask(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"todo_update","arguments":{"status":"done"}}}"#,
        );
        assert_eq!(bad["result"]["isError"], true);
        assert_eq!(
            bad["result"]["content"][0]["text"],
            "invalid arguments: id is required"
        );
    }

    #[test]
    fn protocol_errors_and_notifications() {
        assert_eq!(ask("{oops")["error"]["code"], -32700);
        assert_eq!(
            ask(r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#)["error"]["code"],
            -32601
        );
        assert!(
            handle(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                &Echo
            )
            .is_none()
        );
        let v = ask(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}"#,
        );
        assert_eq!(v["error"]["code"], -32022);
    }

    #[test]
    fn every_schema_is_closed_and_every_description_short() {
        for t in TOOLS {
            let d = t.describe();
            assert_eq!(
                d["inputSchema"]["additionalProperties"], false,
                "{}",
                t.name
            );
            assert!(t.description.len() <= 160, "{}", t.name);
        }
    }
}
