// loopx-managed extension: `loopx hooks uninstall --runtime pi` removes it.
//
// Wires Pi (@mariozechner/pi-coding-agent) to loopx, as the JSON hooks do
// for the other runtimes: each event below runs `loopx hook pi EVENT` with
// a JSON payload on stdin (Claude Code's shape) and acts on its answer.
//
//   session_start       -> SessionStart      the brief, asked for at once and
//                                            added to the first prompt
//   before_agent_start  -> UserPromptSubmit  the brief (first prompt), then
//                                            what changed since the last one,
//                                            as a message before the model
//                                            request
//   tool_call (bash)    -> PreToolUse        with --guard: blocks what an open
//                                            human-only gate covers, with
//                                            loopx's reason
//   agent_end           -> Stop              "keep going" while a claim is
//                                            held (a follow-up prompt, when
//                                            Pi stays up: interactive, RPC);
//                                            else records the end of the
//                                            turn; the usage Pi reported
//   session_shutdown    -> SessionEnd        records the end of the session
//   session_compact     -> SessionStart      the brief again (source
//                                            "compact"), with the next prompt
//
// It also sets PI_SESSION_ID for the agent's bash commands, so that its
// own `loopx` commands act as the same agent (pi-<8 hex digits>). Calls
// run one at a time, in order; each is cut at 15 s. A loopx that is
// missing or fails changes nothing: Pi goes on. Plain JavaScript (Pi loads
// .ts through jiti), and the default export is all Pi loads.

import { spawn } from "node:child_process";

// `loopx hooks install` writes the absolute path of the loopx it ran, and
// whether to guard bash (`--guard`).
const LOOPX = "loopx";
const GUARD = false;

/** Runs `loopx hook pi EVENT`; resolves to its JSON answer, or null. */
function hook(event, payload, cwd) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(LOOPX, ["hook", "pi", event], {
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

/** The text loopx adds as context, if any. */
function context(answer) {
  const text = answer?.hookSpecificOutput?.additionalContext;
  return typeof text === "string" && text ? text : null;
}

/** The usage of an assistant message, as Pi reports it. */
function usageOf(message) {
  const u = message?.role === "assistant" ? message.usage : null;
  if (!u) return null;
  return {
    model: message.model,
    provider: message.provider,
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    cost: u.cost?.total,
  };
}

export default function loopx(pi) {
  let session = null;
  let cwd = process.cwd();
  let brief = null;
  let continuing = false;
  // Usage of the assistant messages not reported yet.
  let usage = [];
  // One loopx call at a time, in order: the end of a session waits for
  // the end of its last turn.
  let queue = Promise.resolve();
  const call = (event, payload) => {
    const next = queue.then(() =>
      hook(event, { session_id: session, ...payload }, cwd),
    );
    queue = next.catch(() => null);
    return next;
  };
  const takeUsage = () => {
    const u = usage;
    usage = [];
    return u;
  };

  pi.on("session_start", async (event, ctx) => {
    cwd = ctx.cwd ?? cwd;
    session = ctx.sessionManager?.getSessionId?.() ?? null;
    if (!session) return;
    process.env.PI_SESSION_ID = session;
    const source = event?.reason === "resume" || event?.reason === "reload" ? "resume" : "startup";
    brief = call("SessionStart", { source });
  });

  // A compaction may summarise the brief away: send it again.
  pi.on("session_compact", async () => {
    if (!session) return;
    brief = call("SessionStart", { source: "compact" });
  });

  pi.on("before_agent_start", async (event) => {
    if (!session) return;
    let text = null;
    if (brief) {
      text = context(await brief);
      brief = null;
    } else if (continuing) {
      // loopx's own "keep going": not a prompt of the user's.
      continuing = false;
    } else {
      text = context(await call("UserPromptSubmit", { prompt: event?.prompt ?? "" }));
    }
    if (!text) return;
    return { message: { customType: "loopx", content: text, display: true } };
  });

  // Without the guard there is no handler at all: Pi then runs each tool
  // call without waiting on extensions.
  if (GUARD) {
    pi.on("tool_call", async (event) => {
      if (event?.toolName !== "bash") return;
      const answer = await call("PreToolUse", {
        tool_name: "bash",
        tool_input: { command: event.input?.command ?? "" },
      });
      const out = answer?.hookSpecificOutput;
      if (out?.permissionDecision === "deny") {
        return { block: true, reason: out.permissionDecisionReason || "loopx: denied" };
      }
    });
  }

  pi.on("message_end", async (event) => {
    const u = usageOf(event?.message);
    if (u) usage.push(u);
  });

  pi.on("agent_end", async (_event, ctx) => {
    if (!session) return;
    const answer = await call("Stop", { usage: takeUsage() });
    // Print mode ends when the prompt is answered: a follow-up would
    // outlive the session, so only a session that stays continues.
    if (answer?.decision === "block" && answer.reason && ctx?.hasUI) {
      continuing = true;
      try {
        pi.sendUserMessage(answer.reason, { deliverAs: "followUp" });
      } catch {
        continuing = false;
      }
    }
  });

  pi.on("session_shutdown", async (event) => {
    if (!session) return;
    await call("SessionEnd", { reason: event?.reason ?? "quit", usage: takeUsage() });
  });
}
