// Drives loopx's Pi extension (as `hooks install --runtime pi --guard`
// placed it) the way Pi calls an extension: its default export gets a
// stand-in for Pi's `ExtensionAPI` that records the handlers and what the
// extension sends, and each event is fired with the context Pi passes. The
// extension runs the real loopx. (Pi loads the .ts file through jiti; it is
// plain JavaScript, so Node imports a copy of it as a module.)
//
// Usage: node extension_test.mjs EXTENSION REPO TODO [unguarded]
// With `unguarded` (an install without --guard) it checks only that the
// extension does not listen to tool_call. Exits 1 with the reason when a
// check fails.

import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [extension, repo, todo, mode] = process.argv.slice(2);
const copy = join(mkdtempSync(join(tmpdir(), "loopx-pi-")), "loopx.mjs");
copyFileSync(extension, copy);
const mod = await import(pathToFileURL(copy).href);
const fail = (why) => {
  console.error(`FAIL ${why}\n${JSON.stringify(sent, null, 1)}`);
  process.exit(1);
};
if (Object.keys(mod).join() !== "default") fail(`the extension exports ${Object.keys(mod)}, not only its default`);

const handlers = new Map();
const sent = [];
const pi = {
  on: (event, handler) => handlers.set(event, handler),
  sendUserMessage: (text, options) => sent.push({ text, deliverAs: options?.deliverAs }),
};
await mod.default(pi);
if (mode === "unguarded") {
  if (handlers.has("tool_call")) fail("installed without --guard, it still listens to tool_call");
  console.log(JSON.stringify({ unguarded: true }));
  process.exit(0);
}
const fire = (event, payload, ctx) => handlers.get(event)?.({ type: event, ...payload }, ctx);

// The loopx the installed extension runs.
const program = JSON.parse(/const LOOPX = (".*");/.exec(readFileSync(extension, "utf8"))[1]);
const loopx = (args, env) =>
  execFileSync(program, args, { cwd: repo, env: { ...process.env, ...env } }).toString();

const session = "019a3f0e-7c1d-7b2a-9e3f-5a6b7c8d9e0f";
const ctx = (hasUI) => ({ cwd: repo, hasUI, sessionManager: { getSessionId: () => session } });
const interactive = ctx(true);
const print = ctx(false);

// session_start, then the first prompt: the brief, as a message Pi adds
// before the model request.
await fire("session_start", { reason: "startup" }, interactive);
if (process.env.PI_SESSION_ID !== session) fail("session_start did not set PI_SESSION_ID for bash");
const first = await fire("before_agent_start", { prompt: "Work on the goal." }, interactive);
const brief = first?.message?.content ?? "";
if (first?.message?.customType !== "loopx" || !brief.startsWith("loopx: you are agent pi-"))
  fail(`before_agent_start did not add the brief: ${JSON.stringify(first)}`);
const agent = /you are agent (pi-[0-9a-f]{8})/.exec(brief)[1];

// The agent's own bash (PI_SESSION_ID) acts as the same agent.
const claimed = JSON.parse(loopx(["--json", "todo", "claim", todo], { PI_SESSION_ID: session }));
if (claimed.todo.owner !== agent) fail(`the claim went to ${claimed.todo.owner}, not ${agent}`);

// A reply with usage, then agent_end while the claim is held: the usage is
// recorded, and an interactive Pi is asked to keep going (a follow-up).
await fire("message_end", {
  message: {
    role: "assistant", model: "claude-sonnet-4-5", provider: "anthropic",
    usage: { input: 100, output: 20, cacheRead: 1000, cacheWrite: 0, totalTokens: 1120,
             cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.0125 } },
  },
}, interactive);
await fire("message_end", { message: { role: "user", content: "hi" } }, interactive);
await fire("agent_end", { messages: [] }, interactive);
if (sent.length !== 1 || sent[0].deliverAs !== "followUp" || !sent[0].text.includes(`you still hold ${todo}`))
  fail("agent_end did not keep it going");
if (!loopx(["log"], {}).includes(`usage pi-`)) fail("the usage Pi reported was not recorded");
// That follow-up is loopx's, not the user's: nothing is added to it.
const cont = await fire("before_agent_start", { prompt: sent[0].text }, interactive);
if (cont !== undefined) fail(`loopx's own follow-up got context: ${JSON.stringify(cont)}`);

// tool_call: an open publish gate blocks `cargo publish` with loopx's
// reason (naming the gate, for a human); `ls` and other tools go on.
const gate = JSON.parse(loopx(["--json", "gate", "open", "--question", "Publish 1.0?", "--kind", "publish"], {})).gate.id;
const blocked = await fire("tool_call", { toolName: "bash", toolCallId: "c1", input: { command: "cargo publish" } }, interactive);
if (blocked?.block !== true || !blocked.reason.includes(`waits on gate ${gate} (publish)`) || !blocked.reason.includes("Only a human can answer it"))
  fail(`cargo publish was not blocked: ${JSON.stringify(blocked)}`);
const ls = await fire("tool_call", { toolName: "bash", toolCallId: "c2", input: { command: "ls" } }, interactive);
const read = await fire("tool_call", { toolName: "read", toolCallId: "c3", input: { path: "x" } }, interactive);
if (ls !== undefined || read !== undefined) fail(`a harmless tool call was blocked: ${JSON.stringify([ls, read])}`);

// A prompt of the user's: what changed since the last one (the gate).
const next = await fire("before_agent_start", { prompt: "Go on." }, interactive);
if (!next?.message?.content?.includes("since your last prompt")) fail(`no delta on the next prompt: ${JSON.stringify(next)}`);

// After a compaction, the next prompt gets the brief again.
await fire("session_compact", { fromExtension: false }, interactive);
const again = await fire("before_agent_start", { prompt: "Continue." }, interactive);
if (!again?.message?.content?.startsWith(`loopx: you are agent ${agent}.`)) fail(`no brief after compaction: ${JSON.stringify(again)}`);

// Print mode ends with the prompt: agent_end asks nothing more of it, and
// session_shutdown records the end of the turn the agent left open.
await fire("agent_end", { messages: [] }, print);
if (sent.length !== 1) fail("print mode was asked to keep going");
await fire("session_shutdown", { reason: "quit" }, print);
const log = loopx(["log"], {});
if (!new RegExp(`turn\\.refresh +refresh ${agent} unchanged: next resume ${todo}`).test(log))
  fail(`the end of the session was not recorded:\n${log}`);
console.log(JSON.stringify({ agent, sent: sent.length, blocked: true }));
