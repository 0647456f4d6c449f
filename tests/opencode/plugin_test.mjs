// Drives loopx's OpenCode plugin (as `hooks install --runtime opencode`
// placed it) the way OpenCode calls a plugin, with a stand-in for OpenCode's
// client that records what the plugin says. The plugin runs the real loopx.
//
// Usage: node plugin_test.mjs PLUGIN REPO TODO
// Exits 1 with the reason when a check fails.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [plugin, repo, todo] = process.argv.slice(2);
const mod = await import(pathToFileURL(plugin).href);
const said = [];
const client = {
  session: {
    prompt: async ({ path, body }) => {
      said.push({ id: path.id, noReply: body.noReply, text: body.parts.map((p) => p.text).join("") });
    },
  },
};
const hooks = await mod.LoopxPlugin({ client, directory: repo });
const fail = (why) => {
  console.error(`FAIL ${why}\n${JSON.stringify(said, null, 1)}`);
  process.exit(1);
};
// The loopx the installed plugin runs.
const program = JSON.parse(/const LOOPX = (".*");/.exec(readFileSync(plugin, "utf8"))[1]);
const loopx = (args, env) =>
  execFileSync(program, args, { cwd: repo, env: { ...process.env, ...env } }).toString();

const session = "ses_4b1d2c3e9f8a7b6c5d4e3f2a1b";
// OpenCode calls every exported function as a plugin: only the plugin.
const exported = Object.keys(mod);
if (exported.length !== 1 || exported[0] !== "LoopxPlugin") fail(`the file exports ${exported.join(", ")}`);
// The first prompt: the brief, then the prompt's delta, both in the system
// prompt of the next model request (OpenCode awaits both hooks).
const system = async () => {
  const output = { system: ["You are opencode."] };
  await hooks["experimental.chat.system.transform"]({ sessionID: session, model: {} }, output);
  return output.system.slice(1);
};
if ((await system()).length !== 0) fail("a session with no prompt yet got context");
await hooks["chat.message"]({ sessionID: session }, { message: {}, parts: [{ type: "text", text: "Go on." }] });
const first = await system();
if (first.length !== 1 || !first[0].startsWith("loopx: you are agent opencode-"))
  fail(`the first prompt did not put the brief in the system prompt: ${JSON.stringify(first)}`);
const agent = /you are agent (opencode-[0-9a-f]{8})/.exec(first[0])[1];
if (said.length !== 0) fail("the brief was sent as a message (that runs chat.message again)");

// shell.env: the agent's own shells carry the session, so `loopx` derives
// the same agent.
const output = { env: {} };
await hooks["shell.env"]({ sessionID: session, cwd: repo }, output);
if (output.env.OPENCODE_SESSION_ID !== session) fail("shell.env did not set OPENCODE_SESSION_ID");
const claimed = JSON.parse(loopx(["--json", "todo", "claim", todo], output.env));
if (claimed.todo.owner !== agent) fail(`the claim went to ${claimed.todo.owner}, not ${agent}`);

// session.idle while holding the claim: a prompt to keep going, which is
// loopx's own and runs no UserPromptSubmit when OpenCode hands it back.
await hooks.event({ event: { type: "session.idle", properties: { sessionID: session } } });
const idle = said.at(-1);
if (!idle || idle.noReply || !idle.text.includes("you still hold")) fail("session.idle did not keep it going");
await hooks["chat.message"]({ sessionID: session }, { message: {}, parts: [{ type: "text", text: idle.text }] });

// tool.execute.before: an open publish gate denies `cargo publish` (the
// plugin throws), and lets `ls` through.
loopx(["gate", "open", "--question", "Publish 1.0?", "--kind", "publish"], {});
let denied = null;
try {
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: session, callID: "c1" }, { args: { command: "cargo publish" } });
} catch (e) {
  denied = e.message;
}
if (!denied || !denied.includes("waits on gate")) fail(`cargo publish was not denied (${denied})`);
await hooks["tool.execute.before"]({ tool: "bash", sessionID: session, callID: "c2" }, { args: { command: "ls" } });
await hooks["tool.execute.before"]({ tool: "read", sessionID: session, callID: "c3" }, { args: { filePath: "x" } });

// chat.message: what changed since the last prompt (the gate), as context
// in the system prompt; nothing is sent as a message.
const before = said.length;
await hooks["chat.message"]({ sessionID: session }, { message: {}, parts: [{ type: "text", text: "And?" }] });
const now = await system();
if (said.length !== before) fail("chat.message sent a message");
if (now[0] !== first[0] || !(now[1] ?? "").includes("since your last prompt"))
  fail(`chat.message did not add the delta: ${JSON.stringify(now)}`);
console.log(JSON.stringify({ agent, said: said.length, denied: true }));
