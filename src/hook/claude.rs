//! Claude Code's hook wire format, which Codex adopted: stdin carries
//! `session_id`, `cwd`, and per event `source`, `prompt`, `tool_name` with
//! `tool_input`, `stop_hook_active`, `reason`; answers go in
//! `hookSpecificOutput` (context, a tool denial) or top-level
//! `decision: "block"` with a `reason` (Stop).
//!
//! Neither runtime lets PreCompact add context (Codex rejects any
//! `hookSpecificOutput` there), so PreCompact answers nothing: the
//! SessionStart that follows a compaction re-sends the brief.

use serde_json::{Value, json};

use super::{Answer, Event};

pub fn answer(event: Event, answer: &Answer) -> Option<Value> {
    match (event, answer) {
        (Event::Start, Answer::Context { text, .. }) => {
            Some(super::specific_context("SessionStart", text))
        }
        (Event::Prompt, Answer::Context { text, .. }) => {
            Some(super::specific_context("UserPromptSubmit", text))
        }
        (Event::Tool, Answer::Deny(reason)) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })),
        (Event::Stop, Answer::Continue(reason)) => Some(json!({
            "decision": "block",
            "reason": reason,
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pre_tool_use_payload_normalises() {
        let v = json!({
            "session_id": "1A2B3C4D-5e6f",
            "cwd": "/repo",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "cargo publish", "description": "ship"},
        });
        let i = crate::hook::common_input(&v);
        assert_eq!(i.session.as_deref(), Some("1A2B3C4D-5e6f"));
        assert_eq!(i.tool.as_deref(), Some("Bash"));
        assert_eq!(i.command.as_deref(), Some("cargo publish"));
        assert!(!i.stop_active);
    }

    #[test]
    fn answers_in_claude_json() {
        let deny = answer(Event::Tool, &Answer::Deny("no".into())).unwrap();
        assert_eq!(
            deny.to_string(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
        let stop = answer(Event::Stop, &Answer::Continue("go on".into())).unwrap();
        assert_eq!(stop.to_string(), r#"{"decision":"block","reason":"go on"}"#);
        let ctx = Answer::Context {
            text: "brief".into(),
            agent: None,
        };
        assert_eq!(answer(Event::PreCompact, &ctx), None);
        assert_eq!(answer(Event::Stop, &ctx), None);
    }
}
