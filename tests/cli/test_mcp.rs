//! `loopx mcp` spawned as a real process and driven over pipes: both
//! handshakes, `tools/list`, and tool calls whose answers match the CLI's.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

use crate::common::TestEnv;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts `loopx mcp` in the repository, at the clock's next time.
    fn start(env: &TestEnv) -> Server {
        let mut child = env
            .command()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("loopx mcp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Server {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").expect("write a request");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and reads the one line that answers it.
    fn ask(&mut self, msg: Value) -> Value {
        self.send(&msg);
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read a response");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not one JSON line ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], msg["id"], "{v}");
        v
    }

    /// Closes stdin and returns what the server wrote on stderr.
    fn finish(self) -> String {
        let Server {
            child,
            stdin,
            stdout,
        } = self;
        drop(stdin);
        let rest: Vec<String> = stdout.lines().map(|l| l.expect("line")).collect();
        assert!(rest.is_empty(), "no stray stdout: {rest:?}");
        let out = child.wait_with_output().expect("loopx mcp exits");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[test]
fn the_classic_handshake_and_should_run_as_the_cli_answers_it() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    let at = env.now();
    let mut s = Server::start(&env);
    let init = s.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        init["result"]["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "loopx");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(
        s.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))["result"],
        json!({})
    );

    let list = s.ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "should_run",
            "todo_claim",
            "todo_update",
            "evidence_add",
            "refresh_state",
            "spend_slot",
            "status",
            "gate_open"
        ]
    );
    assert_eq!(
        list["result"]["tools"][2]["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Todo id or unique prefix"},
                "note": {"type": "string", "description": "What happened"},
                "status": {"type": "string", "enum": ["open", "blocked", "deferred"], "description": "New status"},
                "agent": {"type": "string", "description": "Your agent id [default: LOOPX_AGENT or the runtime session]"}
            },
            "additionalProperties": false,
            "required": ["id"]
        })
    );

    let answer = s.ask(call(4, "should_run", json!({"agent": "agent-a"})));
    let cli = env
        .command()
        .env("LOOPX_NOW", &at)
        .env("LOOPX_AGENT", "agent-a")
        .args(["quota", "should-run", "--json"])
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(answer["result"]["structuredContent"], cli);
    assert_eq!(answer["result"]["isError"], false);
    assert_eq!(
        answer["result"]["content"][0],
        json!({"type": "text", "text": cli.to_string()})
    );
    assert_eq!(cli["todo"]["id"], t.as_str());

    // A write goes through too; a refusal is a tool error, not a protocol one.
    let claim = s.ask(call(5, "todo_claim", json!({"id": t, "agent": "agent-a"})));
    assert_eq!(
        claim["result"]["structuredContent"]["todo"]["owner"],
        "agent-a"
    );
    let refused = s.ask(call(6, "todo_claim", json!({"id": t, "agent": "agent-b"})));
    assert_eq!(refused["result"]["isError"], true);
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"],
        "claimed"
    );
    let bad = s.ask(call(7, "spend_slot", json!({"turn": 7})));
    assert_eq!(bad["result"]["isError"], true);
    assert_eq!(
        bad["result"]["content"][0]["text"],
        "invalid arguments: turn must be a string"
    );
    let unknown = s.ask(call(8, "rm_rf", json!({})));
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(s.finish(), "");
}

#[test]
fn the_stateless_handshake_discovers_and_versions_each_request() {
    let env = TestEnv::with_board();
    let mut s = Server::start(&env);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let found = s.ask(json!({"jsonrpc": "2.0", "id": "a", "method": "server/discover", "params": {"_meta": meta}}));
    assert_eq!(
        found["result"]["supportedVersions"],
        json!([
            "2026-07-28",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(found["result"]["resultType"], "complete");
    let list = s.ask(
        json!({"jsonrpc": "2.0", "id": "b", "method": "tools/list", "params": {"_meta": meta}}),
    );
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 8);
    assert_eq!(list["result"]["ttlMs"], 3_600_000);
    let status = s.ask(
        json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {
        "_meta": meta, "name": "status", "arguments": {}}}),
    );
    assert_eq!(status["result"]["isError"], false);
    assert_eq!(status["result"]["resultType"], "complete");
    let old = s.ask(
        json!({"jsonrpc": "2.0", "id": "d", "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2031-01-01"}}}),
    );
    assert_eq!(old["error"]["code"], -32022);
    assert_eq!(old["error"]["data"]["requested"], "2031-01-01");
    let junk = s.ask(json!({"jsonrpc": "2.0", "id": "e", "method": "prompts/list"}));
    assert_eq!(junk["error"]["code"], -32601);
    assert_eq!(s.finish(), "");
}
