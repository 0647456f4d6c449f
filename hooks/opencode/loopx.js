// loopx-managed plugin: `loopx hooks uninstall --runtime opencode` removes it.
//
// Wires OpenCode to loopx, as the JSON hooks do for the other runtimes:
// every event below runs `loopx hook opencode EVENT` with a JSON payload on
// stdin (Claude Code's shape) and acts on its JSON answer.
//
//   chat.message          -> SessionStart      the brief, on a session's first
//                                              prompt (OpenCode awaits this
//                                              hook before the model request)
//                         -> UserPromptSubmit  what changed since the last
//                                              prompt, once per prompt
//   experimental.chat.system.transform         puts both into the system
//                                              prompt of every model request
//   tool.execute.before   -> PreToolUse        bash only: denies what an open
//                                              human-only gate covers (throws)
//   session.idle          -> Stop              "keep going" while a claim is
//                                              held; else records the turn's end
//   shell.env             sets OPENCODE_SESSION_ID, so that the agent's own
//                         `loopx` commands act as the same agent
//
// OpenCode calls every function this file exports as a plugin: it exports
// the plugin and nothing else. It imports only Node's own modules, so it
// does not need `@opencode-ai/plugin` (OpenCode still installs that package
// into each config folder at start: `loopx hooks install --runtime opencode`
// says how). A loopx that is missing or fails changes nothing: OpenCode
// goes on.

import { spawn } from "node:child_process";

// `loopx hooks install` writes the absolute path of the loopx it ran.
const LOOPX = "loopx";

/** Runs `loopx hook opencode EVENT`; resolves to its JSON answer, or null. */
const hook = (event, payload, cwd) =>
  new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(LOOPX, ["hook", "opencode", event], {
        cwd,
        stdio: ["pipe", "pipe", "ignore"],
      });
    } catch {
      resolve(null);
      return;
    }
    const timer = setTimeout(() => child.kill(), 15000);
    child.on("error", () => {
      clearTimeout(timer);
      resolve(null);
    });
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(out.trim() ? JSON.parse(out) : null);
      } catch {
        resolve(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(
      JSON.stringify({ hook_event_name: event, cwd, pid: process.pid, ...payload }),
    );
  });

const context = (answer) => answer?.hookSpecificOutput?.additionalContext;

export const LoopxPlugin = async ({ client, directory }) => {
  // Per session: the brief (from its first prompt), the latest delta, and
  // the prompts loopx itself sent (a Stop's "keep going"), which are not
  // the user's and run no UserPromptSubmit.
  const sessions = new Map();
  const of = (id) => {
    let s = sessions.get(id);
    if (!s) {
      s = { brief: null, started: false, delta: null, ours: new Set() };
      sessions.set(id, s);
    }
    return s;
  };
  return {
    "shell.env": async (input, output) => {
      if (input?.sessionID) output.env.OPENCODE_SESSION_ID = input.sessionID;
    },
    "chat.message": async (input, output) => {
      const id = input?.sessionID;
      if (!id) return;
      const s = of(id);
      const text = (output?.parts ?? [])
        .filter((p) => p?.type === "text")
        .map((p) => p.text)
        .join("");
      if (s.ours.delete(text)) return;
      if (!s.started) {
        s.started = true;
        s.brief = context(
          await hook("SessionStart", { session_id: id, source: "startup" }, directory),
        );
      }
      s.delta = context(await hook("UserPromptSubmit", { session_id: id, prompt: text }, directory));
    },
    "experimental.chat.system.transform": async (input, output) => {
      const s = input?.sessionID && sessions.get(input.sessionID);
      if (!s || !Array.isArray(output?.system)) return;
      for (const text of [s.brief, s.delta]) if (text) output.system.push(text);
    },
    "tool.execute.before": async (input, output) => {
      if (input?.tool !== "bash") return;
      const answer = await hook(
        "PreToolUse",
        {
          session_id: input.sessionID,
          tool_name: "Bash",
          tool_input: { command: output?.args?.command ?? "" },
        },
        directory,
      );
      const out = answer?.hookSpecificOutput;
      if (out?.permissionDecision === "deny") {
        throw new Error(out.permissionDecisionReason || "loopx: denied");
      }
    },
    event: async ({ event }) => {
      if (event?.type !== "session.idle") return;
      const id = event.properties?.sessionID;
      if (!id || !sessions.get(id)?.started) return;
      const answer = await hook("Stop", { session_id: id }, directory);
      if (answer?.decision !== "block" || !answer.reason) return;
      of(id).ours.add(answer.reason);
      try {
        await client.session.prompt({
          path: { id },
          body: { parts: [{ type: "text", text: answer.reason }] },
        });
      } catch {
        // The session may be gone; loopx's answer is advice, not a must.
      }
    },
  };
};
