"""A fake model API on loopback for the runtime smoke test.

Usage: python fake_model.py PORTFILE LOG

Serves Anthropic's Messages API (POST /v1/messages, streaming or not, and
/v1/messages/count_tokens: Claude Code, Pi), OpenAI's Responses API (POST
/v1/responses, streaming: Codex) and Google's Gemini API (POST
/v1beta/models/M:generateContent, :streamGenerateContent, :countTokens:
Gemini CLI). Every request body is appended to LOG as one JSON line. The
model's script, for a conversation that offers a shell tool: where loopx's
brief names a todo to claim, run the brief's claim command, then say "done";
else run `cargo publish`; with that tool's result in the conversation, run
`loopx quota should-run` (as the conversation says to run loopx:
`LOOPX_AGENT=ID loopx` where loopx's brief asks for it), so that the agent's
own loopx command shows which agent it acts as; with both results, say
"done". Any other request
(titles, summaries) gets "ok", or JSON where JSON is asked for.
"""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PUBLISH = "cargo publish"


def step(body, results):
    """The shell command the script runs after `results` tool results, or
    None when it is done. Where loopx's brief names a todo to claim, the
    script claims it with the brief's own command, and stops."""
    text = json.dumps(body)
    claim = re.search(r"`((?:LOOPX_AGENT=[A-Za-z0-9_.-]+ )?loopx todo claim t-[0-9a-f]+)`", text)
    if claim:
        return claim.group(1) if results == 0 else None
    if results == 0:
        return PUBLISH
    if results == 1:
        named = re.search(r"`(LOOPX_AGENT=[A-Za-z0-9_.-]+ )loopx ", text)
        return (named.group(1) if named else "") + "loopx quota should-run"
    return None


def tool_results_anthropic(body):
    return sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
               for c in m["content"] if c.get("type") == "tool_result")


def anthropic_events(body):
    tools = [t.get("name") for t in body.get("tools", [])]
    usage = {"input_tokens": 10, "output_tokens": 5}
    yield "message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}
    # Claude Code's shell is `Bash`, Pi's `bash` (which takes no description).
    shell = next((t for t in ("Bash", "bash") if t in tools), None)
    results = tool_results_anthropic(body)
    command = step(body, results) if shell else None
    if command:
        yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": f"toolu_fake{results}", "name": shell, "input": {}}}
        args = {"command": command}
        if shell == "Bash":
            args["description"] = "Run a command"
        args = json.dumps(args)
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "input_json_delta", "partial_json": args}}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        stop = "tool_use"
    else:
        text = "done" if results else "ok"
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": text}}
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


def responses_events(body):
    items = body.get("input", [])
    results = sum(1 for i in items if isinstance(i, dict)
                  and i.get("type") in ("function_call_output", "custom_tool_call_output"))
    answered = results > 0
    tools = {t.get("name") or t.get("type"): t for t in body.get("tools", [])}
    shell = "shell" in tools or "exec_command" in tools or "shell_command" in tools
    command = step(body, results) if shell else None
    if command:
        if "exec_command" in tools:
            name, args = "exec_command", {"cmd": command}
        elif "shell_command" in tools:
            name, args = "shell_command", {"command": command}
        else:
            name, args = "shell", {"command": ["bash", "-lc", command]}
        item = {"type": "function_call", "id": f"fc_fake{results}", "call_id": f"call_fake{results}",
                "name": name, "arguments": json.dumps(args), "status": "completed"}
    else:
        item = {"type": "message", "id": "msg_fake1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "done" if answered else "ok", "annotations": []}]}
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


def gemini_response(body):
    """One GenerateContentResponse: the shell call, "done" after its result,
    a JSON answer where the CLI asks for JSON (its model router and
    next-speaker check), else "ok"."""
    contents = body.get("contents", [])
    results = sum(1 for c in contents for p in c.get("parts", []) if "functionResponse" in p)
    answered = results > 0
    names = [f.get("name") for t in body.get("tools", []) for f in t.get("functionDeclarations", [])]
    config = body.get("generationConfig") or body.get("config") or {}
    command = step(body, results) if "run_shell_command" in names else None
    if command:
        parts = [{"functionCall": {"name": "run_shell_command",
                                   "args": {"command": command, "description": "Run a command"}}}]
    elif config.get("responseMimeType") == "application/json":
        # The CLI's model router and next-speaker check.
        parts = [{"text": json.dumps({"reasoning": "scripted", "model_choice": "flash",
                                      "complexity_reasoning": "scripted", "complexity_score": 1,
                                      "next_speaker": "user"})}]
    else:
        parts = [{"text": "done" if answered else "ok"}]
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "fake"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": self.path, "body": raw.decode("utf-8", "replace")}) + "\n")
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
                return self._sse(anthropic_events(body))
            return self._json(anthropic_message(body))
        if path.endswith("/responses"):
            return self._sse(responses_events(body))
        if path.endswith(":countTokens"):
            return self._json({"totalTokens": 10})
        if path.endswith(":streamGenerateContent"):
            data = f"data: {json.dumps(gemini_response(body))}\r\n\r\n".encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            return self.wfile.write(data)
        if path.endswith(":generateContent"):
            return self._json(gemini_response(body))
        self._json({"error": {"type": "not_found", "message": path}}, 404)


if __name__ == "__main__":
    portfile, LOG = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()
