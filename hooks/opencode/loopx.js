// loopx-managed plugin: `loopx hooks uninstall --runtime opencode` removes it.
//
// Wires OpenCode to loopx, as the JSON hooks do for the other runtimes:
// every event below runs `loopx hook opencode EVENT` with a JSON payload on
// stdin (Claude Code's shape) and acts on its JSON answer.
//
//   session.created      -> SessionStart      the brief, as context
//   chat.message         -> UserPromptSubmit  what changed since the last prompt
//   tool.execute.before  -> PreToolUse        bash only: denies what an open
//                                              human-only gate covers (throws)
//   session.idle         -> Stop              "keep going" while a claim is
//                                              held; else records the turn's end
//   shell.env            sets OPENCODE_SESSION_ID, so that the agent's own
//                        `loopx` commands act as the same agent (opencode-<8>)
//
// Context goes in as a message that asks for no reply; a "keep going" as a
// prompt. A loopx that is missing or fails changes nothing: OpenCode goes on.

import { spawn } from "node:child_process";

// `loopx hooks install` writes the absolute path of the loopx it ran.
const LOOPX = "loopx";

/** Runs `loopx hook opencode EVENT`; resolves to its JSON answer, or null. */
export function hook(event, payload, cwd) {
  return new Promise((resolve) => {
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
    child.stdin.end(JSON.stringify({ hook_event_name: event, cwd, ...payload }));
  });
}

export const LoopxPlugin = async ({ client, directory }) => {
  const say = async (sessionID, text, noReply) => {
    try {
      await client.session.prompt({
        path: { id: sessionID },
        body: { noReply, parts: [{ type: "text", text }] },
      });
    } catch {
      // The session may be gone; loopx's answer is advice, not a must.
    }
  };
  const context = (answer) => answer?.hookSpecificOutput?.additionalContext;
  return {
    "shell.env": async (input, output) => {
      if (input?.sessionID) output.env.OPENCODE_SESSION_ID = input.sessionID;
    },
    "chat.message": async (input) => {
      const id = input?.sessionID;
      if (!id) return;
      const text = context(await hook("UserPromptSubmit", { session_id: id }, directory));
      if (text) await say(id, text, true);
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
      if (event?.type === "session.created") {
        const id = event.properties?.info?.id;
        if (!id || event.properties?.info?.parentID) return;
        const text = context(
          await hook("SessionStart", { session_id: id, source: "startup" }, directory),
        );
        if (text) await say(id, text, true);
      } else if (event?.type === "session.idle") {
        const id = event.properties?.sessionID;
        if (!id) return;
        const answer = await hook("Stop", { session_id: id }, directory);
        if (answer?.decision === "block" && answer.reason) await say(id, answer.reason, false);
      }
    },
  };
};
