"""loopx mcp against the official MCP Python SDK, in both eras.

Usage: python conformance.py LOOPX REPO WORKDIR

REPO is a loopx repository with a goal and the agents `agent-a` and
`agent-b` registered, and two open todos. For each mode of `mcp.Client`
("legacy": the initialize handshake; "auto": server/discover and the
stateless 2026-07-28 protocol) it lists the tools, checks every input schema
against JSON Schema 2020-12, and calls every tool through a whole turn.
Every line exchanged is logged (tee.py) and validated against the official
JSON schema of the protocol version in use (tests/mcp/schema/). Exits 1 with
the reasons when anything fails.
"""

import asyncio
import warnings
import json
import os
import sys
from pathlib import Path

import jsonschema
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
SCHEMAS = {
    v: json.loads((HERE / "schema" / f"{v}.json").read_text())
    for v in ("2025-11-25", "2026-07-28")
}
RESULT_OF = {
    "initialize": "InitializeResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "ping": "EmptyResult",
}
TOOLS = {
    "should_run", "todo_claim", "todo_renew", "todo_update", "todo_done",
    "todo_release", "todo_handoff", "settle", "evidence_add", "evidence_run",
    "gate_open", "gate_list", "gate_show", "gate_answer", "refresh_state",
    "spend_slot", "status",
}
failures: list[str] = []
# ping is deprecated in 2026-07-28; the legacy run still sends it.
warnings.filterwarnings("ignore", message="ping is removed")


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def validator(version: str, name: str) -> jsonschema.Draft202012Validator:
    root = dict(SCHEMAS[version])
    root["$ref"] = f"#/$defs/{name}"
    return jsonschema.Draft202012Validator(root)


def validate(version: str, name: str, doc: object, where: str) -> None:
    for e in validator(version, name).iter_errors(doc):
        failures.append(f"{where}: not a {name} of {version}: {e.message} at {list(e.absolute_path)}")


class ToolError(Exception):
    pass


def doc(result) -> dict:
    if result.is_error:
        raise ToolError(f"tool error: {result.content}")
    return result.structured_content or {}


async def turn(client: Client, mode: str) -> None:
    listed = await client.list_tools()
    names = {t.name for t in listed.tools}
    check(names == TOOLS, f"{mode}: tools are {sorted(names)}")
    for t in listed.tools:
        try:
            jsonschema.Draft202012Validator.check_schema(t.input_schema)
        except jsonschema.SchemaError as e:
            failures.append(f"{mode}: {t.name}'s input schema: {e.message}")
    schemas = {t.name: t.input_schema for t in listed.tools}

    async def call(name: str, args: dict):
        for e in jsonschema.Draft202012Validator(schemas[name]).iter_errors(args):
            failures.append(f"{mode}: {name} arguments {args}: {e.message}")
        return await client.call_tool(name, args)

    if mode == "legacy":
        await client.send_ping()  # removed in 2026-07-28
    go = doc(await call("should_run", {}))
    token = go.get("turn_token")
    check(bool(token), f"{mode}: should_run gave no turn_token: {go}")
    claim = doc(await call("todo_claim", {"next": True}))
    todo = claim["todo"]["id"]
    epoch = claim["todo"]["epoch"]
    doc(await call("todo_renew", {"id": todo, "epoch": epoch, "ttl": "30m"}))
    ran = doc(await call("evidence_run", {"todo": todo, "command": ["sh", "-c", "echo ok"]}))
    check(ran.get("passed") is True, f"{mode}: evidence_run: {ran}")
    doc(await call("evidence_add", {"summary": "read the diff", "todo": todo, "kind": "review"}))
    doc(await call("todo_update", {"id": todo, "note": "half way"}))
    doc(await call("settle", {"turn_token": token, "todo": todo, "outcome": "advanced", "note": "step"}))
    dry = doc(await call("spend_slot", {"turn_token": token, "dry_run": True}))
    check(dry.get("already") is True, f"{mode}: spend_slot after settle: {dry}")
    doc(await call("todo_handoff", {"id": todo, "to": "agent-b", "note": "yours"}))
    doc(await call("todo_release", {"id": todo, "agent": "agent-b"}))
    doc(await call("todo_claim", {"id": todo}))
    done = doc(await call("todo_done", {"id": todo, "note": "finished"}))
    check(done["todo"]["status"] == "done", f"{mode}: todo_done: {done}")
    gate = doc(await call("gate_open", {"question": f"Publish ({mode})?", "kind": "publish", "blocks": f"todo:{todo}"}))["gate"]["id"]
    listed_gates = doc(await call("gate_list", {"open": True}))
    check(gate in json.dumps(listed_gates), f"{mode}: gate_list: {listed_gates}")
    doc(await call("gate_show", {"id": gate}))
    refused = await call("gate_answer", {"id": gate, "choice": "approve"})
    check(refused.is_error, f"{mode}: an agent answered a publish gate")
    doc(await call("refresh_state", {"outcome": "unchanged", "dry_run": True}))
    doc(await call("status", {}))
    # A call that leaves out a required argument is a tool error in words.
    missing = await client.call_tool("gate_show", {})
    check(missing.is_error and "id is required" in str(missing.content), f"{mode}: {missing}")


def validate_log(log: Path, version: str, mode: str) -> int:
    methods: dict[object, str] = {}
    count = 0
    for raw in log.read_text().splitlines():
        entry = json.loads(raw)
        msg = json.loads(entry["line"])
        count += 1
        where = f"{mode} {entry['dir']} {entry['line'][:120]}"
        validate(version, "JSONRPCMessage", msg, where)
        if entry["dir"] == "c2s":
            if "method" in msg and "id" in msg:
                methods[msg["id"]] = msg["method"]
            continue
        method = methods.get(msg.get("id"))
        if "result" in msg and method in RESULT_OF:
            name = RESULT_OF[method]
            if version == "2026-07-28" and name == "EmptyResult":
                name = "Result"
            validate(version, name, msg["result"], where)
        if "error" in msg:
            validate(version, "JSONRPCErrorResponse", msg, where)
    return count


async def main() -> int:
    loopx, repo, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    for mode, version in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
        log = work / f"{mode}.jsonl"
        log.unlink(missing_ok=True)
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(HERE / "tee.py"), str(log), loopx, "mcp"],
            cwd=repo,
            env={k: v for k, v in os.environ.items()} | {"LOOPX_AGENT": "agent-a"},
        )
        try:
            async with Client(params, mode=mode) as client:
                check(client.protocol_version == version, f"{mode}: negotiated {client.protocol_version}")
                info = client.server_info
                check(info is not None and info.name == "loopx", f"{mode}: server info {info}")
                await turn(client, mode)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            failures.append(f"{mode}: {type(e).__name__}: {e}")
        n = validate_log(log, version, mode)
        check(n > 40, f"{mode}: only {n} messages logged")
        print(f"{mode}: {n} messages valid under {version}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
