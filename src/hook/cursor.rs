//! Cursor's hook wire format: stdin carries `conversation_id` (the session),
//! `workspace_roots`, and per event `prompt`, `command` with `cwd`
//! (beforeShellExecution), `status` and `loop_count` (stop); stdout is JSON
//! or empty, never plain text. Answers: sessionStart `additional_context`
//! (and `env` for later shell commands), beforeShellExecution `permission:
//! "deny"` with messages for the user and the agent, stop
//! `followup_message`. beforeSubmitPrompt gets nothing: Cursor reads only
//! `continue` and `user_message` there, so context for the agent would be
//! dropped (hooks/README.md's matrix).

use serde_json::{Value, json};

use super::{Answer, Event, Input, text};

pub fn input(event: Event, v: &Value) -> Input {
    let roots = v
        .get("workspace_roots")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    // beforeShellExecution is about a shell command only.
    let (command, command_error) = match event {
        Event::Tool => super::split(super::command(v.get("command"))),
        _ => (None, None),
    };
    Input {
        session: text(v, "conversation_id").or_else(|| text(v, "session_id")),
        cwd: text(v, "cwd").or(roots),
        prompt: text(v, "prompt"),
        tool: (event == Event::Tool).then(|| "shell".to_owned()),
        command,
        command_error,
        stop_active: false,
        stop_aborted: text(v, "status").is_some_and(|s| s != "completed"),
        source: None,
        reason: text(v, "reason"),
        transcript: None,
        error_type: None,
        error_text: None,
        pid: None,
        paths: Vec::new(),
    }
}

pub fn answer(event: Event, answer: &Answer) -> Option<Value> {
    match (event, answer) {
        (Event::Start, Answer::Context { text, agent }) => Some(match agent {
            Some(a) => json!({"additional_context": text, "env": {"LOOPX_AGENT": a}}),
            None => json!({"additional_context": text}),
        }),
        (Event::Tool, Answer::Deny(reason)) => Some(json!({
            "permission": "deny",
            "user_message": reason,
            "agent_message": reason,
        })),
        (Event::Stop, Answer::Continue(msg)) => Some(json!({"followup_message": msg})),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_and_stop_payloads_normalise() {
        let v = json!({
            "hook_event_name": "beforeShellExecution",
            "conversation_id": "c0ffee-12",
            "workspace_roots": ["/w"],
            "command": "npm publish",
            "cwd": "/w/pkg",
        });
        let i = input(Event::Tool, &v);
        assert_eq!(i.session.as_deref(), Some("c0ffee-12"));
        assert_eq!(i.cwd.as_deref(), Some("/w/pkg"));
        assert_eq!(i.command.as_deref(), Some("npm publish"));
        let stop = input(
            Event::Stop,
            &json!({"conversation_id": "c", "status": "aborted", "loop_count": 0, "workspace_roots": ["/w"]}),
        );
        assert!(stop.stop_aborted);
        assert_eq!(stop.cwd.as_deref(), Some("/w"));
    }
}
