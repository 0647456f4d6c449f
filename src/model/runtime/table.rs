//! The table: one [`Spec`] per runtime, in the order of [`Runtime::ALL`].

use super::{Event, Mcp, Plugin, ProjectTrust, Rule, Runtime, Settings, Shape, Spec, Trust};
use super::{UsageFrom, Wire};

const CLAUDE_EVENTS: &[(&str, Event)] = &[
    ("SessionStart", Event::Start),
    ("UserPromptSubmit", Event::Prompt),
    ("PreToolUse", Event::Tool),
    ("Stop", Event::Stop),
    ("SessionEnd", Event::End),
    ("PreCompact", Event::PreCompact),
    ("StopFailure", Event::LimitReached),
];

/// The events loopx's own OpenCode plugin and Pi extension send, in Claude
/// Code's names: the first five of [`CLAUDE_EVENTS`] (OpenCode's plugin sends
/// the first four; it has no session end).
pub(super) const PLUGIN_EVENTS: &[(&str, Event)] = CLAUDE_EVENTS.split_at(5).0;

/// The names of [`PLUGIN_EVENTS`], in its order.
pub(super) const PLUGIN_EVENT_NAMES: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "Stop",
    "SessionEnd",
];

/// Claude Code's shell tool, and Codex's under the same hook.
const CLAUDE_SHELL: &[&str] = &["Bash", "shell", "exec_command", "local_shell"];

const BASE: Spec = Spec {
    runtime: Runtime::Custom,
    name: "",
    title: "",
    aliases: &[],
    stored_since: Some(1),
    identity: None,
    events: &[],
    known_events: &[],
    wire: Wire::None,
    shell_tools: None,
    settings: None,
    plugin: None,
    shims: &[],
    rule: None,
    mcp: None,
    trust: None,
    project_trust: None,
    usage: UsageFrom::Nothing,
    stop_ends_turn: false,
    shell_has_session: true,
    env_file: None,
    login_shell: false,
};

/// The table, in the order `Runtime::ALL` lists them (and the caller rule
/// tries their markers).
pub const SPECS: [Spec; 8] = [
    Spec {
        runtime: Runtime::ClaudeCode,
        name: "claude-code",
        title: "Claude Code",
        aliases: &["claude"],
        identity: Some((
            &[
                "CLAUDECODE",
                "CLAUDE_CODE_ENTRYPOINT",
                "CLAUDE_CODE_SESSION_ID",
            ],
            "CLAUDE_CODE_SESSION_ID",
        )),
        events: CLAUDE_EVENTS,
        known_events: &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "PostToolUseFailure",
            "Notification",
            "Stop",
            "StopFailure",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "SessionEnd",
        ],
        wire: Wire::Claude,
        shell_tools: Some(CLAUDE_SHELL),
        settings: Some(Settings {
            path: ".claude/settings.json",
            shape: Shape::Grouped,
            template: include_str!("../../../hooks/claude/settings.fragment.json"),
            guard_event: "PreToolUse",
            timeouts: &[],
        }),
        trust: Some(Trust::same(
            "Claude Code reads hooks at session start: restart it or review them in /hooks, and accept the workspace trust prompt",
        )),
        usage: UsageFrom::Transcript,
        env_file: Some("CLAUDE_ENV_FILE"),
        ..BASE
    },
    Spec {
        runtime: Runtime::Codex,
        name: "codex",
        title: "Codex",
        identity: Some((&["CODEX_THREAD_ID", "CODEX_SANDBOX"], "CODEX_THREAD_ID")),
        events: CLAUDE_EVENTS,
        known_events: &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
            "StopFailure",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "SessionEnd",
        ],
        wire: Wire::Claude,
        shell_tools: Some(CLAUDE_SHELL),
        settings: Some(Settings {
            path: ".codex/hooks.json",
            shape: Shape::Grouped,
            template: include_str!("../../../hooks/codex/hooks.json"),
            guard_event: "PreToolUse",
            timeouts: &[(
                "SessionEnd",
                3.0,
                "Codex cuts a SessionEnd hook to 3 s and warns on every run",
            )],
        }),
        mcp: Some(Mcp {
            path: ".codex/config.toml",
            fragment: include_str!("../../../hooks/codex/config.fragment.toml"),
        }),
        trust: Some(Trust {
            project: "Codex runs project hooks only in a trusted project, and each hook only once approved in /hooks (again after every change)",
            user: "approve the hooks in Codex's /hooks (again after every change)",
        }),
        project_trust: Some(ProjectTrust {
            home_var: "CODEX_HOME",
            home: ".codex",
            file: "config.toml",
            hint: "Codex runs no hooks in a project it does not trust, and it does not trust {project}: start `codex` there once and accept the trust prompt; for unattended runs use `codex exec --trust …` (or add `[projects.\"{project}\"]` with `trust_level = \"trusted\"` to Codex's config.toml)",
        }),
        login_shell: true,
        ..BASE
    },
    Spec {
        runtime: Runtime::Cursor,
        name: "cursor",
        title: "Cursor",
        identity: Some((
            &["CURSOR_AGENT", "CURSOR_CONVERSATION_ID"],
            "CURSOR_CONVERSATION_ID",
        )),
        events: &[
            ("sessionStart", Event::Start),
            ("beforeSubmitPrompt", Event::Prompt),
            ("beforeShellExecution", Event::Tool),
            ("stop", Event::Stop),
            ("sessionEnd", Event::End),
        ],
        known_events: &[
            "sessionStart",
            "sessionEnd",
            "beforeSubmitPrompt",
            "beforeShellExecution",
            "afterShellExecution",
            "beforeMCPExecution",
            "afterMCPExecution",
            "beforeReadFile",
            "afterFileEdit",
            "preToolUse",
            "postToolUse",
            "subagentStart",
            "subagentStop",
            "preCompact",
            "afterAgentResponse",
            "afterAgentThought",
            "stop",
        ],
        wire: Wire::Cursor,
        settings: Some(Settings {
            path: ".cursor/hooks.json",
            shape: Shape::Flat,
            template: include_str!("../../../hooks/cursor/hooks.json"),
            guard_event: "beforeShellExecution",
            timeouts: &[],
        }),
        rule: Some(Rule {
            path: ".cursor/rules/loopx.mdc",
            text: include_str!("../../../hooks/cursor/rules/loopx.mdc"),
            marker: "---\ndescription: Work in bounded loopx turns",
        }),
        trust: Some(Trust::same(
            "Cursor reloads hooks.json on save: check the Hooks tab of its settings for errors",
        )),
        ..BASE
    },
    Spec {
        runtime: Runtime::Gemini,
        name: "gemini",
        title: "Gemini CLI",
        identity: Some((&["GEMINI_CLI", "GEMINI_SESSION_ID"], "GEMINI_SESSION_ID")),
        events: &[
            ("SessionStart", Event::Start),
            ("BeforeAgent", Event::Prompt),
            ("BeforeTool", Event::Tool),
            ("AfterAgent", Event::Stop),
            ("SessionEnd", Event::End),
        ],
        known_events: &[
            "SessionStart",
            "SessionEnd",
            "BeforeAgent",
            "AfterAgent",
            "BeforeModel",
            "AfterModel",
            "BeforeToolSelection",
            "BeforeTool",
            "AfterTool",
            "PreCompress",
            "Notification",
        ],
        wire: Wire::Gemini,
        shell_tools: Some(&["run_shell_command"]),
        settings: Some(Settings {
            path: ".gemini/settings.json",
            shape: Shape::Grouped,
            template: include_str!("../../../hooks/gemini/settings.fragment.json"),
            guard_event: "BeforeTool",
            timeouts: &[],
        }),
        trust: Some(Trust {
            project: "Gemini CLI ignores .gemini/settings.json in an untrusted folder: trust this folder when it asks; a headless run (gemini -p) needs GEMINI_CLI_TRUST_WORKSPACE=true in its environment (--skip-trust does not load the folder's hooks in 0.61)",
            user: "Gemini CLI runs hooks since v0.27; check them with /hooks",
        }),
        stop_ends_turn: true,
        shell_has_session: false,
        ..BASE
    },
    Spec {
        runtime: Runtime::Custom,
        name: "custom",
        title: "custom",
        ..BASE
    },
    Spec {
        runtime: Runtime::OpenCode,
        name: "opencode",
        title: "OpenCode",
        stored_since: Some(4),
        // Set by loopx's plugin (`shell.env`).
        identity: Some((&["OPENCODE_SESSION_ID"], "OPENCODE_SESSION_ID")),
        // The plugin's names for chat.message (a first one, then every
        // one), tool.execute.before and session.idle.
        events: PLUGIN_EVENTS.split_at(4).0,
        known_events: PLUGIN_EVENT_NAMES.split_at(4).0,
        wire: Wire::Claude,
        shell_tools: Some(CLAUDE_SHELL),
        plugin: Some(Plugin {
            project: ".opencode/plugins/loopx.js",
            user: ".config/opencode/plugins/loopx.js",
            kind: "plugin",
            template: include_str!("../../../hooks/opencode/loopx.js"),
            marker: "// loopx-managed plugin",
            wires: &[
                ("chat.message", false),
                ("experimental.chat.system.transform", false),
                ("tool.execute.before", false),
                ("session.idle", false),
            ],
            guard_wire: "tool.execute.before",
            dependency: Some("@opencode-ai/plugin"),
        }),
        trust: Some(Trust::same(
            "OpenCode loads plugins when it starts: restart it after installing or changing the plugin",
        )),
        stop_ends_turn: true,
        ..BASE
    },
    Spec {
        runtime: Runtime::Pi,
        name: "pi",
        title: "Pi",
        stored_since: Some(4),
        // Set by loopx's extension for the agent's bash commands.
        identity: Some((&["PI_SESSION_ID"], "PI_SESSION_ID")),
        // The extension's names for session_start, before_agent_start,
        // tool_call, agent_end and session_shutdown.
        events: PLUGIN_EVENTS,
        known_events: PLUGIN_EVENT_NAMES,
        wire: Wire::Claude,
        shell_tools: Some(&["bash"]),
        // Pi's default agent directory for a user; one moved with
        // PI_CODING_AGENT_DIR is not followed.
        plugin: Some(Plugin {
            project: ".pi/extensions/loopx.ts",
            user: ".pi/agent/extensions/loopx.ts",
            kind: "extension",
            template: include_str!("../../../hooks/pi/loopx.ts"),
            marker: "// loopx-managed extension",
            wires: &[
                ("session_start", false),
                ("before_agent_start", false),
                ("tool_call", true),
                ("agent_end", false),
                ("session_shutdown", false),
                ("session_compact", false),
            ],
            guard_wire: "tool_call",
            dependency: None,
        }),
        trust: Some(Trust::same(
            "Pi loads extensions when it starts: restart it (or /reload) after installing or changing the extension",
        )),
        usage: UsageFrom::Payload,
        stop_ends_turn: true,
        ..BASE
    },
    Spec {
        runtime: Runtime::Git,
        name: "git",
        title: "git",
        stored_since: None,
        events: &[
            ("pre-push", Event::PrePush),
            ("post-merge", Event::PostMerge),
        ],
        known_events: &["pre-push", "post-merge"],
        shims: &[
            ("pre-push", include_str!("../../../hooks/git/pre-push")),
            ("post-merge", include_str!("../../../hooks/git/post-merge")),
        ],
        ..BASE
    },
];
