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
// session.created: the brief, as context that asks for no reply.
await hooks.event({ event: { type: "session.created", properties: { info: { id: session } } } });
if (said.length !== 1 || !said[0].noReply || !said[0].text.startsWith("loopx: you are agent opencode-"))
  fail("session.created did not give the brief as context");
const agent = /you are agent (opencode-[0-9a-f]{8})/.exec(said[0].text)[1];

// shell.env: the agent's own shells carry the session, so `loopx` derives
// the same agent.
const output = { env: {} };
await hooks["shell.env"]({ sessionID: session, cwd: repo }, output);
if (output.env.OPENCODE_SESSION_ID !== session) fail("shell.env did not set OPENCODE_SESSION_ID");
const claimed = JSON.parse(loopx(["--json", "todo", "claim", todo], output.env));
if (claimed.todo.owner !== agent) fail(`the claim went to ${claimed.todo.owner}, not ${agent}`);

// session.idle while holding the claim: a prompt to keep going.
await hooks.event({ event: { type: "session.idle", properties: { sessionID: session } } });
const idle = said.at(-1);
if (idle.noReply !== false || !idle.text.includes("you still hold")) fail("session.idle did not keep it going");

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

// chat.message: what changed since the last prompt (the gate), as context.
const before = said.length;
await hooks["chat.message"]({ sessionID: session }, { message: {}, parts: [] });
await hooks["chat.message"]({ sessionID: session }, { message: {}, parts: [] });
const news = said.slice(before);
if (news.length !== 0 && !(news.every((s) => s.noReply) && news.some((s) => s.text.includes("since your last prompt"))))
  fail("chat.message said something that is not the delta");
console.log(JSON.stringify({ agent, said: said.length, denied: true }));
