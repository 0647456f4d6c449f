//! `loopx mcp` spawned as a real process and driven over pipes: both
//! handshakes, `tools/list`, tool calls whose answers match the CLI's, a
//! whole turn, who the calls act as, and the size limits.

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
        Self::start_with(env, env.command())
    }

    /// Starts `loopx mcp` from a prepared command (extra environment).
    fn start_with(_env: &TestEnv, mut command: std::process::Command) -> Server {
        let mut child = command
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
            "todo_renew",
            "todo_update",
            "todo_done",
            "todo_release",
            "todo_handoff",
            "settle",
            "evidence_add",
            "evidence_run",
            "gate_open",
            "gate_list",
            "gate_show",
            "gate_answer",
            "refresh_state",
            "spend_slot",
            "status"
        ]
    );
    assert_eq!(
        list["result"]["tools"][3]["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Todo id or unique prefix"},
                "epoch": {"type": "integer", "minimum": 0, "description": "The epoch your claim returned: refused if the todo changed hands since"},
                "note": {"type": "string", "description": "What happened"},
                "status": {"type": "string", "enum": ["open", "blocked", "deferred"], "description": "New status (gives the claim up)"},
                "agent": {"type": "string", "description": "Your agent id [default: the server's: --agent, LOOPX_AGENT or the runtime session]"}
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
    let bad = s.ask(call(
        7,
        "spend_slot",
        json!({"turn": 7, "agent": "agent-a"}),
    ));
    assert_eq!(bad["result"]["isError"], true);
    assert_eq!(
        bad["result"]["content"][0]["text"],
        "invalid arguments: turn_token must be a string"
    );
    // Required arguments are told in words, not with clap's usage text.
    let empty = s.ask(call(9, "todo_claim", json!({"agent": "agent-a"})));
    assert_eq!(empty["result"]["isError"], true);
    assert_eq!(
        empty["result"]["content"][0]["text"],
        "invalid arguments: todo_claim needs id or next"
    );
    let clap = s.ask(call(
        10,
        "todo_renew",
        json!({"id": t, "ttl": "soon", "agent": "agent-a"}),
    ));
    let text = clap["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("invalid arguments: todo_renew: invalid value 'soon' for ttl"),
        "{text}"
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
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 17);
    assert_eq!(list["result"]["ttlMs"], 3_600_000);
    assert_eq!(list["result"]["cacheScope"], "public");
    assert_eq!(
        list["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "loopx"
    );
    assert_eq!(found["result"]["cacheScope"], "public");
    assert!(found["result"].get("serverInfo").is_none());
    let status = s.ask(
        json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {
        "_meta": meta, "name": "status", "arguments": {"agent": "agent-a"}}}),
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

/// Sends a line of raw text and reads the line that answers it.
fn raw(s: &mut Server, line: &[u8]) -> Value {
    s.stdin.write_all(line).expect("write");
    s.stdin.write_all(b"\n").expect("write");
    s.stdin.flush().expect("flush");
    let mut answer = String::new();
    s.stdout.read_line(&mut answer).expect("read a response");
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

fn doc(v: &Value) -> &Value {
    assert_eq!(v["result"]["isError"], false, "{v}");
    &v["result"]["structuredContent"]
}

#[test]
fn a_whole_turn_over_mcp_with_the_cli_json_keys() {
    let env = TestEnv::with_board();
    let t1 = env.add("Write the parser", &["--priority", "P1", "--", "true"]);
    let t2 = env.add("Write the lexer", &["--priority", "P2"]);
    let before = env.ticks();
    let mut c = env.command();
    c.env("LOOPX_AGENT", "agent-a");
    let mut s = Server::start_with(&env, c);
    let go = s.ask(call(1, "should_run", json!({})));
    let token = doc(&go)["turn_token"]
        .as_str()
        .expect("a turn token")
        .to_owned();
    let claim = s.ask(call(2, "todo_claim", json!({"next": true})));
    assert_eq!(doc(&claim)["todo"]["id"], t1.as_str());
    assert_eq!(doc(&claim)["todo"]["owner"], "agent-a");
    let epoch = doc(&claim)["todo"]["epoch"].clone();
    let renew = s.ask(call(
        3,
        "todo_renew",
        json!({"id": t1, "epoch": epoch, "ttl": "30m"}),
    ));
    assert_eq!(doc(&renew)["todo"]["owner"], "agent-a");
    let ran = s.ask(call(
        4,
        "evidence_run",
        json!({"todo": t1, "command": ["sh", "-c", "echo parsed; exit 0"]}),
    ));
    assert_eq!(doc(&ran)["passed"], true, "{ran}");
    let noted = s.ask(call(
        5,
        "todo_update",
        json!({"id": t1, "note": "half way"}),
    ));
    assert_eq!(doc(&noted)["todo"]["status"], "claimed");
    let done = s.ask(call(
        6,
        "todo_done",
        json!({"id": t1, "epoch": epoch, "note": "parsed"}),
    ));
    assert_eq!(doc(&done)["todo"]["status"], "done");
    // The second todo: claimed, then the turn settles on it with the token
    // under its old name.
    doc(&s.ask(call(7, "todo_claim", json!({"id": t2}))));
    let settled = s.ask(call(
        8,
        "settle",
        json!({"turn": token, "todo": t2, "outcome": "advanced", "note": "lexer started",
               "next_action": "finish the lexer", "command": ["true"]}),
    ));
    doc(&settled);
    let again = s.ask(call(
        9,
        "spend_slot",
        json!({"turn_token": token, "dry_run": true}),
    ));
    assert_eq!(
        doc(&again)["already"],
        true,
        "settle spent the slot: {again}"
    );
    // Handoff to agent-b, who releases it.
    let handed = s.ask(call(
        10,
        "todo_handoff",
        json!({"id": t2, "to": "agent-b", "note": "yours now"}),
    ));
    assert_eq!(doc(&handed)["todo"]["owner"], "agent-b");
    let released = s.ask(call(
        11,
        "todo_release",
        json!({"id": t2, "agent": "agent-b"}),
    ));
    assert_eq!(doc(&released)["todo"]["status"], "open");
    // Gates: a publish gate is opened, listed, shown, and its answer by an
    // agent is refused as on the command line; a decision gate is answered.
    let publish = s.ask(call(
        12,
        "gate_open",
        json!({"question": "Publish 1.0?", "kind": "publish"}),
    ));
    let g = doc(&publish)["gate"]["id"]
        .as_str()
        .expect("a gate id")
        .to_owned();
    let listed = s.ask(call(13, "gate_list", json!({"open": true})));
    assert!(doc(&listed).to_string().contains(&g), "{listed}");
    let shown = s.ask(call(14, "gate_show", json!({"id": g})));
    assert_eq!(doc(&shown)["question"], "Publish 1.0?");
    let answer = s.ask(call(
        15,
        "gate_answer",
        json!({"id": g, "choice": "approve"}),
    ));
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(
        answer["result"]["structuredContent"]["error"]["code"],
        "humans-only"
    );
    let decision = s.ask(call(
        16,
        "gate_open",
        json!({"question": "Hand-written lexer?", "options": ["yes", "no"], "blocks": format!("todo:{t2}")}),
    ));
    let d = doc(&decision)["gate"]["id"].as_str().unwrap().to_owned();
    let answered = s.ask(call(
        17,
        "gate_answer",
        json!({"id": d, "choice": "yes", "agent": "agent-b"}),
    ));
    doc(&answered);
    let brief = s.ask(call(
        18,
        "refresh_state",
        json!({"outcome": "unchanged", "dry_run": true}),
    ));
    doc(&brief);
    assert_eq!(s.finish(), "");
    let n = format!("-{}", env.ticks() - before);
    let authors = env.git(&["log", &n, "--format=%an", "refs/loopx/state"]);
    assert!(
        authors.lines().all(|a| a.starts_with("agent-")),
        "every call acted as an agent: {authors}"
    );
}

#[test]
fn a_call_without_an_agent_is_refused_and_never_acts_as_the_human() {
    let env = TestEnv::with_board();
    let before = env.tip();
    let mut s = Server::start(&env);
    let v = s.ask(call(
        1,
        "gate_open",
        json!({"question": "Ship?", "kind": "publish"}),
    ));
    assert_eq!(v["result"]["isError"], true);
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("loopx mcp acts only for an agent"), "{text}");
    assert!(text.contains("loopx mcp --agent ID"), "{text}");
    let v = s.ask(call(2, "status", json!({})));
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(s.finish(), "");
    assert_eq!(env.tip(), before, "nothing was written");
    // `--agent` at start names the agent for every call.
    let mut c = env.command();
    c.args(["--agent", "agent-b"]);
    let mut s = Server::start_with(&env, c);
    let v = s.ask(call(3, "gate_open", json!({"question": "Ship?"})));
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(s.finish(), "");
    assert_eq!(
        env.git(&["log", "-1", "--format=%an", "refs/loopx/state"]),
        "agent-b\n"
    );
}

#[test]
fn large_messages_are_refused_and_large_arguments_pass() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let mut c = env.command();
    c.env("LOOPX_AGENT", "agent-a");
    let mut s = Server::start_with(&env, c);
    // A line over 8 MiB: a JSON-RPC error, and the server reads on.
    let mut huge = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 9 << 20));
    huge.extend(br#""}}"#);
    let v = raw(&mut s, &huge);
    assert_eq!(v["error"]["code"], -32600);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("8 MiB"),
        "{v}"
    );
    assert_eq!(
        s.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))["result"],
        json!({})
    );
    // One argument over the kernel's 128 KiB limit for a single argv string
    // reaches the command (argv would fail with "Argument list too long").
    let note = "n".repeat(200 * 1024);
    let v = s.ask(call(3, "todo_update", json!({"id": t, "note": note})));
    let answer = &v["result"]["structuredContent"];
    assert!(answer.is_object(), "loopx answered in JSON: {v}");
    if v["result"]["isError"] == false {
        let shown = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
        assert!(shown.to_string().contains(&note[..1000]));
    } else {
        // A size limit on notes is a refusal from loopx itself, in words.
        assert_eq!(answer["error"]["exit"], 2, "{v}");
        assert_eq!(answer["error"]["code"], "too-long", "{v}");
    }
    // Batches get one array of answers; a wrong version is an error.
    let batch = raw(
        &mut s,
        br#"[{"jsonrpc":"2.0","id":"x","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
    );
    assert_eq!(batch, json!([{"jsonrpc": "2.0", "id": "x", "result": {}}]));
    let old = raw(&mut s, br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#);
    assert_eq!(old["error"]["code"], -32600);
    assert_eq!(s.finish(), "");
}
