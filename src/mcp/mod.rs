//! The MCP server behind `loopx mcp`, as a pure request → response function:
//! newline-delimited JSON-RPC 2.0, the classic handshake (`initialize`,
//! `tools/list`, `tools/call`, `ping`) and the stateless 2026 revision
//! (`server/discover`, the protocol version in each request's `_meta`).
//!
//! Hand-written on serde_json rather than an SDK: five methods do not need
//! an async runtime, and the SDKs (rmcp) bring tokio and proc macros into a
//! binary whose commands take milliseconds. Each tool is a loopx command
//! ([`tools`]); a [`Runner`] runs it (`cmd/mcp.rs` runs a child `loopx`
//! that reads the command line from its stdin), so a tool's answer is the
//! CLI's answer, byte for byte.
//!
//! Every call acts as an agent: the `agent` argument, else the server's own
//! identity ([`Server::agent`]). With neither the call is refused: an MCP
//! call never acts as the human whose git identity the server runs under.

mod args;
pub mod tools;

use serde_json::{Map, Value, json};

pub use tools::{TOOLS, Tool};

/// Protocol versions with the `initialize` handshake, newest first.
pub const CLASSIC: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Stateless protocol versions: no `initialize`; each request names its
/// version in `_meta`.
pub const STATELESS: &[&str] = &["2026-07-28"];
/// Where a stateless request names its protocol version.
pub const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// Where a stateless result names the server.
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
/// The largest message `loopx mcp` reads; a longer line is answered with
/// an error and skipped.
pub const MAX_MESSAGE: usize = 8 << 20;
/// How long a client may cache the tool list and discovery (they change
/// only with the binary).
const TTL_MS: u64 = 3_600_000;

const INSTRUCTIONS: &str = "loopx keeps this project's goals, todos, gates and quota. A turn: should_run (gives turn_token), todo_claim, work, evidence_run or evidence_add, then settle (or todo_done/todo_update, refresh_state, spend_slot). Human-only gates (permission, publish, production, spend) are answered by people, never by you.";

/// Runs one loopx command (the argv after `loopx --json`) and returns its
/// JSON document, and whether the command failed.
pub trait Runner {
    fn run(&self, argv: &[String]) -> Result<(Value, bool), String>;
    /// Parses a whole command line (`loopx --json …`) as the loopx that
    /// runs it would, so a bad argument is explained before anything runs.
    /// The caller supplies the parser: this layer sits below the commands
    /// and the command line.
    fn parse(&self, words: &[String]) -> Result<(), clap::Error>;
}

/// What answers requests: the runner of tools and who the calls act as.
pub struct Server<'a> {
    pub runner: &'a dyn Runner,
    /// The agent calls act as when they name none: `--agent`, `LOOPX_AGENT`
    /// or the runtime session the server started in.
    pub agent: Option<String>,
}

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The answer to a line longer than [`MAX_MESSAGE`].
pub fn too_large() -> Value {
    error(
        Value::Null,
        INVALID_REQUEST,
        &format!(
            "message too large: loopx mcp reads messages of at most {} MiB",
            MAX_MESSAGE >> 20
        ),
        None,
    )
}

impl Server<'_> {
    /// Answers one line of input: a response (an array for a batch), or
    /// None when nothing is owed (notifications, responses).
    pub fn handle(&self, line: &str) -> Option<Value> {
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Some(error(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                    None,
                ));
            }
        };
        match msg {
            // JSON-RPC 2.0 batches: one array of the answers owed, none if
            // only notifications; an empty batch is itself invalid.
            Value::Array(items) if items.is_empty() => Some(error(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: an empty batch",
                None,
            )),
            Value::Array(items) => {
                let answers: Vec<Value> = items.iter().filter_map(|m| self.one(m)).collect();
                (!answers.is_empty()).then_some(Value::Array(answers))
            }
            msg => self.one(&msg),
        }
    }

    fn one(&self, msg: &Value) -> Option<Value> {
        let Value::Object(obj) = msg else {
            return Some(error(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: a message is a JSON object",
                None,
            ));
        };
        let id = obj.get("id").cloned();
        let bad_id = id
            .as_ref()
            .is_some_and(|i| !(i.is_string() || i.is_i64() || i.is_u64() || i.is_null()));
        let invalid = |why: &str| {
            let id = if bad_id { None } else { id.clone() };
            Some(error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                &format!("invalid request: {why}"),
                None,
            ))
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return invalid("\"jsonrpc\" must be \"2.0\"");
        }
        if bad_id {
            return invalid("an id is a string or an integer");
        }
        let Some(method) = obj.get("method") else {
            // A response from the client: nothing is owed. Junk with an id
            // is answered.
            return match (&id, obj.get("result").or(obj.get("error"))) {
                (Some(_), None) => invalid("no method"),
                _ => None,
            };
        };
        let Some(method) = method.as_str() else {
            return invalid("the method is a string");
        };
        // A notification (no id) is never answered.
        let id = id?;
        let params = obj.get("params").cloned().unwrap_or(Value::Null);
        if !(params.is_object() || params.is_null()) {
            return Some(error(id, INVALID_PARAMS, "params must be an object", None));
        }
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
                UNSUPPORTED_PROTOCOL_VERSION,
                &format!("unsupported protocol version {v}"),
                Some(json!({"supported": supported(), "requested": v})),
            ));
        }
        let modern = stateless.is_some_and(|v| STATELESS.contains(&v));
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
                "instructions": INSTRUCTIONS,
                "cacheScope": "public",
                "ttlMs": TTL_MS,
            })),
            "ping" => Ok(json!({})),
            "tools/list" => {
                let mut r = json!({"tools": TOOLS.iter().map(Tool::describe).collect::<Vec<_>>()});
                if modern {
                    // The same for every caller, and changes only with the binary.
                    r["cacheScope"] = json!("public");
                    r["ttlMs"] = json!(TTL_MS);
                }
                Ok(r)
            }
            "tools/call" => self.call(&params),
            other => Err((METHOD_NOT_FOUND, format!("method not found: {other}"))),
        };
        Some(match result {
            Ok(mut r) => {
                if modern || method == "server/discover" {
                    r["resultType"] = json!("complete");
                    r["_meta"] = json!({ SERVER_INFO_META: server_info() });
                }
                json!({"jsonrpc": "2.0", "id": id, "result": r})
            }
            Err((code, message)) => error(id, code, &message, None),
        })
    }

    fn call(&self, params: &Value) -> Result<Value, (i64, String)> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let tool = tools::find(name).ok_or_else(|| {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            (
                INVALID_PARAMS,
                format!("unknown tool {name:?}; the tools are {}", names.join(", ")),
            )
        })?;
        let mut args = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Ok(failed("arguments must be an object".to_owned())),
        };
        let agent = match args.remove(tools::AGENT) {
            Some(Value::String(a)) => a,
            None | Some(Value::Null) => match &self.agent {
                Some(a) => a.clone(),
                None => return Ok(failed(no_agent())),
            },
            Some(_) => return Ok(failed("agent must be a string".to_owned())),
        };
        let argv = match tool.argv(&args, &agent) {
            Ok(a) => a,
            Err(e) => return Ok(failed(format!("invalid arguments: {e}"))),
        };
        let words: Vec<String> = ["loopx", "--json"]
            .map(String::from)
            .into_iter()
            .chain(argv.iter().cloned())
            .collect();
        if let Err(e) = self.runner.parse(&words) {
            return Ok(failed(format!(
                "invalid arguments: {}",
                tool.explain(&e.to_string())
            )));
        }
        Ok(match self.runner.run(&argv) {
            Ok((doc, is_error)) => json!({
                "content": [{"type": "text", "text": doc.to_string()}],
                "structuredContent": doc,
                "isError": is_error,
            }),
            Err(e) => failed(e),
        })
    }
}

/// Why a call without an agent is refused, and how to name one.
fn no_agent() -> String {
    "loopx mcp acts only for an agent, and none is named: pass \"agent\": \"YOUR-ID\" in the call, or start the server as `loopx mcp --agent ID` (or with LOOPX_AGENT set, or from an agent runtime that sets its session id); register the id with `loopx agent register ID`".to_owned()
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
        fn parse(&self, words: &[String]) -> Result<(), clap::Error> {
            crate::cmd::parse(words)
        }
    }

    fn server(agent: Option<&str>) -> Server<'static> {
        Server {
            runner: &Echo,
            agent: agent.map(str::to_owned),
        }
    }

    fn ask(line: &str) -> Value {
        server(Some("agent-a")).handle(line).expect("a response")
    }

    #[test]
    fn calls_act_as_the_named_agent_or_the_server_agent_or_are_refused() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{}}}"#;
        let v = ask(call);
        assert_eq!(
            v["result"]["structuredContent"]["argv"],
            json!(["--agent=agent-a", "status"])
        );
        let named = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{"agent":"b"}}}"#;
        assert_eq!(
            server(None).handle(named).unwrap()["result"]["structuredContent"]["argv"],
            json!(["--agent=b", "status"])
        );
        let v = server(None).handle(call).unwrap();
        assert_eq!(v["result"]["isError"], true);
        assert!(
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("loopx mcp --agent ID"),
            "{v}"
        );
    }

    #[test]
    fn protocol_errors_batches_and_notifications() {
        assert_eq!(ask("{oops")["error"]["code"], PARSE_ERROR);
        assert_eq!(
            ask(r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#)["error"]["code"],
            METHOD_NOT_FOUND
        );
        let old = ask(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!(old["error"]["code"], INVALID_REQUEST);
        assert_eq!(old["id"], 7);
        assert_eq!(
            ask(r#"{"id":8,"method":"ping"}"#)["error"]["code"],
            INVALID_REQUEST
        );
        assert_eq!(ask("[]")["error"]["code"], INVALID_REQUEST);
        assert_eq!(ask("3")["error"]["code"], INVALID_REQUEST);
        let batch = ask(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#,
        );
        assert_eq!(batch[0]["result"], json!({}));
        assert_eq!(batch[1]["error"]["code"], METHOD_NOT_FOUND);
        assert_eq!(batch.as_array().unwrap().len(), 2);
        assert!(
            server(None)
                .handle(r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#)
                .is_none()
        );
        assert!(
            server(None)
                .handle(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                .is_none()
        );
        let v = ask(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}"#,
        );
        assert_eq!(v["error"]["code"], UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(v["error"]["data"]["requested"], "2099-01-01");
    }

    #[test]
    fn the_2026_era_results_carry_cache_hints_and_server_info_in_meta() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let list = ask(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{meta}}}}}"#
        ));
        let r = &list["result"];
        assert_eq!(r["cacheScope"], "public");
        assert_eq!(r["ttlMs"], TTL_MS);
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"][SERVER_INFO_META]["name"], "loopx");
        let d = ask(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{{{meta}}}}}"#
        ));
        let r = &d["result"];
        assert_eq!(r["cacheScope"], "public");
        assert_eq!(r["ttlMs"], TTL_MS);
        assert!(r.get("serverInfo").is_none());
        assert_eq!(r["_meta"][SERVER_INFO_META]["name"], "loopx");
        // The classic era keeps its shape.
        let classic = ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
        assert!(classic["result"].get("cacheScope").is_none());
        assert!(classic["result"].get("_meta").is_none());
    }
}
