//! Gemini CLI's hook wire format: stdin carries `session_id`, `cwd`, and per
//! event `source`, `prompt`, `tool_name` with `tool_input`,
//! `stop_hook_active` (AfterAgent), `reason`; stdout is JSON only. Answers:
//! `hookSpecificOutput.additionalContext` on SessionStart and BeforeAgent,
//! `decision: "deny"` with a `reason` on BeforeTool (the tool is refused)
//! and on AfterAgent (the reason becomes the next prompt).

use serde_json::{Value, json};

use super::{Answer, Event};

pub fn answer(event: Event, answer: &Answer) -> Option<Value> {
    match (event, answer) {
        (Event::Start, Answer::Context { text, .. }) => {
            Some(super::specific_context("SessionStart", text))
        }
        (Event::Prompt, Answer::Context { text, .. }) => {
            Some(super::specific_context("BeforeAgent", text))
        }
        (Event::Tool, Answer::Deny(reason)) | (Event::Stop, Answer::Continue(reason)) => {
            Some(json!({"decision": "deny", "reason": reason}))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_tool_normalises_and_denies() {
        let v = json!({
            "session_id": "g-77", "cwd": "/r", "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command", "tool_input": {"command": "kubectl apply -f x"},
        });
        let i = crate::hook::common_input(&v);
        assert_eq!(i.command.as_deref(), Some("kubectl apply -f x"));
        assert!(super::super::Runtime::Gemini.is_shell(i.tool.as_deref().unwrap()));
        let a = answer(Event::Tool, &Answer::Deny("wait".into())).unwrap();
        assert_eq!(a.to_string(), r#"{"decision":"deny","reason":"wait"}"#);
    }
}
