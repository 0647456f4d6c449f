"""A scripted model for the whole-loop test (tests/runtimes/loop.sh).

Usage: python loop_model.py PORTFILE LOG

Serves Anthropic's Messages API (Claude Code, OpenCode) and OpenAI's
Responses API (Codex) on loopback, and plays an agent that does exactly
what loopx tells it, read from the request it receives, never from this
script:

- the brief (the text from "loopx: you are agent" on, wherever the runtime
  put it: a system prompt, a context message) names the next todo, the
  command that claims it and the command that ends the turn;
- a claim that fails sends it to the instruction block's protocol
  (`quota should-run --json`, whose todo and turn token it then uses);
- the work of a todo is its title (each todo's title is a shell command);
- "Stand down" in the brief, or a skip from should-run, ends the session.

A prompt holding "PUBLISH-NOW" first tries `cargo publish` and
`git push --force`, which the guard must deny. The loopx program is the one
the brief names. Knobs for what the hooks and the brief do not do yet (see
loop.sh): LOOP_AFTER_SETTLE, a command run after a settle (`loopx sync`
today).

Every request body is appended to LOG as one JSON line, with the command
the model chose.
"""

import json
import os
import re
import shlex
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BRIEF = "loopx: you are agent "
AFTER_SETTLE = os.environ.get("LOOP_AFTER_SETTLE", "")


def strings(v):
    """Every string in a JSON value, in order."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from strings(x)


def find_brief(body):
    for s in strings(body):
        i = s.find(BRIEF)
        if i >= 0:
            return s[i:]
    return None


def parse_brief(brief):
    """What the brief says to do: (loopx program, todo, title, own, token, settle template), or None."""
    if brief is None or "\nStand down" in brief:
        return None
    own = re.search(r'Next: go on with your claim (t-[0-9a-f]+) "([^"]*)"', brief)
    new = re.search(r'Next: claim (t-[0-9a-f]+) "([^"]*)" with `([^`]*)`', brief)
    settle = re.search(r"Turn token: (\S+)\. End the turn with `([^`]*)`", brief)
    if not settle or not (own or new):
        return None
    template = settle.group(2)
    program = template.split(" settle ")[0]
    todo, title = (own or new).group(1), (own or new).group(2)
    return {"program": program, "todo": todo, "title": title, "own": bool(own),
            "claim": new.group(3) if new else None, "token": settle.group(1), "settle": template}


def settle_command(template, token, todo):
    cmd = template.replace("advanced|blocked|unchanged", "advanced").replace("[--done]", "--done")
    cmd = cmd.replace(" [-- CHECK]", "")
    cmd = re.sub(r"--turn \S+", f"--turn {token}", cmd)
    return re.sub(r"--todo \S+", f"--todo {todo}", cmd)


def plan(body, prompt, history):
    """The next shell command, or None to end the turn. `history` is the list
    of (command, output) pairs the conversation holds, in order."""
    done = [c for c, _ in history]
    if "PUBLISH-NOW" in prompt:
        for attempt in ("cargo publish", "git push --force"):
            if attempt not in done:
                return attempt
    b = parse_brief(find_brief(body))
    if b is None:
        return None
    lx = b["program"]
    todo, title, token = b["todo"], b["title"], b["token"]
    phase = "work" if b["own"] else "claim"
    claim = b["claim"]
    for cmd, out in history:
        if cmd in ("cargo publish", "git push --force"):
            continue
        if phase == "claim" and cmd == claim:
            phase = "work" if re.search(r"^Claimed t-", out, re.M) else "ask"
        elif phase == "ask" and cmd.endswith("quota should-run --json"):
            try:
                answer = json.loads(out[out.index("{"):out.rindex("}") + 1])
            except ValueError:
                return None
            if answer.get("decision") != "run":
                return None
            todo, title = answer["todo"]["id"], answer["todo"]["title"]
            token = answer["turn_token"]
            claim = f"{lx} todo claim {todo}"
            phase = "work" if answer["todo"].get("own") else "claim"
        elif phase == "work" and cmd == title:
            phase = "settle"
        elif phase == "settle" and " settle " in cmd:
            phase = "after" if AFTER_SETTLE else "end"
        elif phase == "after":
            phase = "end"
    if phase == "claim":
        return claim
    if phase == "ask":
        return f"{lx} quota should-run --json"
    if phase == "work":
        return title
    if phase == "settle":
        return settle_command(b["settle"], token, todo)
    if phase == "after":
        return AFTER_SETTLE.replace("LOOPX", lx)
    return None


def text_of(content):
    if isinstance(content, str):
        return content
    return "".join(strings(content))


# Anthropic's Messages API (Claude Code's `Bash`, OpenCode's `bash`).

def anthropic_turn(body):
    tools = [t.get("name") for t in body.get("tools", [])]
    shell = "Bash" if "Bash" in tools else "bash" if "bash" in tools else None
    if shell is None:
        return None, None
    calls, results, prompt = {}, {}, ""
    for m in body.get("messages", []):
        content = m.get("content")
        if m.get("role") == "user" and not prompt:
            prompt = text_of(content)
        if not isinstance(content, list):
            continue
        for c in content:
            if c.get("type") == "tool_use":
                calls[c["id"]] = (c.get("input") or {}).get("command", "")
            elif c.get("type") == "tool_result":
                results[c.get("tool_use_id")] = text_of(c.get("content"))
    history = [(calls[i], results.get(i, "")) for i in calls]
    return shell, plan(body, prompt, history)


def anthropic_events(body):
    shell, command = anthropic_turn(body)
    log_choice(body, command)
    usage = {"input_tokens": 10, "output_tokens": 5}
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}
    if command:
        n = sum(1 for m in body.get("messages", []) for c in (m.get("content") or [])
                if isinstance(c, dict) and c.get("type") == "tool_use")
        yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": f"toolu_{n:04d}", "name": shell, "input": {}}}
        args = json.dumps({"command": command, "description": "loopx step"})
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "input_json_delta", "partial_json": args}}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        stop = "tool_use"
    else:
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": "done" if shell else "ok"}}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        stop = "end_turn"
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(body):
    content, stop = [], "end_turn"
    for _, e in anthropic_events(body):
        if e["type"] == "content_block_start":
            content.append(dict(e["content_block"]))
        elif e["type"] == "content_block_delta":
            d = e["delta"]
            if d["type"] == "text_delta":
                content[-1]["text"] += d["text"]
            else:
                content[-1]["input"] = json.loads(d["partial_json"])
        elif e["type"] == "message_delta":
            stop = e["delta"]["stop_reason"]
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


# OpenAI's Responses API (Codex).

def responses_turn(body):
    tools = {t.get("name") or t.get("type") for t in body.get("tools", [])}
    shell = next((n for n in ("exec_command", "shell_command", "shell") if n in tools), None)
    if shell is None:
        return None, None
    calls, results, prompt = {}, {}, ""
    for i in body.get("input", []):
        if not isinstance(i, dict):
            continue
        if i.get("type") == "message" and i.get("role") == "user" and "PUBLISH-NOW" in text_of(i.get("content")):
            prompt = "PUBLISH-NOW"
        if i.get("type") == "function_call":
            try:
                a = json.loads(i.get("arguments") or "{}")
            except ValueError:
                a = {}
            cmd = a.get("cmd") or a.get("command") or ""
            if isinstance(cmd, list):
                cmd = cmd[-1] if cmd else ""
            calls[i.get("call_id")] = cmd
        elif i.get("type") == "function_call_output":
            results[i.get("call_id")] = text_of(i.get("output"))
    history = [(calls[c], results.get(c, "")) for c in calls]
    return shell, plan(body, prompt, history)


def responses_events(body):
    shell, command = responses_turn(body)
    log_choice(body, command)
    if command:
        n = sum(1 for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "function_call")
        if shell == "exec_command":
            args = {"cmd": command}
        elif shell == "shell_command":
            args = {"command": command}
        else:
            args = {"command": ["bash", "-lc", command]}
        item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": shell,
                "arguments": json.dumps(args), "status": "completed"}
    else:
        item = {"type": "message", "id": "msg_fake1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "done" if shell else "ok", "annotations": []}]}
    response = {"id": "resp_fake", "object": "response", "created_at": 0, "status": "in_progress",
                "model": body.get("model", "fake"), "output": []}
    yield "response.created", {"type": "response.created", "sequence_number": 0, "response": response}
    yield "response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                         "output_index": 0, "item": item}
    yield "response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2,
                                        "output_index": 0, "item": item}
    done = dict(response, status="completed", output=[item],
                usage={"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                       "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})
    yield "response.completed", {"type": "response.completed", "sequence_number": 3, "response": done}


def log_choice(body, command):
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"tools": bool(body.get("tools")), "brief": find_brief(body) is not None,
                            "command": command, "body": body}) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def _json(self, doc, code=200):
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events):
        chunks = b"".join(f"event: {name}\ndata: {json.dumps(e)}\n\n".encode() for name, e in events)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(chunks)))
        self.end_headers()
        self.wfile.write(chunks)

    def do_GET(self):
        self._body()
        if self.path.rstrip("/").endswith("/models"):
            return self._json({"data": [], "models": []})
        self._json({})

    def do_POST(self):
        body = self._body()
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            return self._json({"input_tokens": 10})
        if path.endswith("/messages"):
            if body.get("stream"):
                return self._sse(list(anthropic_events(body)))
            return self._json(anthropic_message(body))
        if path.endswith("/responses"):
            return self._sse(list(responses_events(body)))
        self._json({"error": {"type": "not_found", "message": path}}, 404)


if __name__ == "__main__":
    portfile, LOG = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()
