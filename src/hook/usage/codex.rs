//! Codex's usage: the JSON Lines of `codex exec --json`. Each
//! `turn.completed` event carries the turn's `usage` (`input_tokens`, of
//! which `cached_input_tokens` were cached, and `output_tokens`); a run
//! with several turns reports each, and they add up. The events name no
//! model and no dollars: the model comes from `--usage-model`, and the
//! price from the table.

use serde_json::Value;

use super::count;
use crate::model::usage::Usage;

/// Adds up the `turn.completed` usage of a `codex exec --json` run.
pub fn exec_json(text: &str) -> Result<Vec<Usage>, String> {
    let mut u = Usage {
        runtime: Some("codex".to_owned()),
        ..Usage::default()
    };
    let mut turns = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("turn.completed") {
            continue;
        }
        let Some(usage) = v.get("usage") else {
            continue;
        };
        turns += 1;
        u.input_tokens += count(usage.get("input_tokens"));
        u.cached_input_tokens += count(usage.get("cached_input_tokens"));
        u.output_tokens += count(usage.get("output_tokens"));
    }
    if turns == 0 {
        return Err(
            "no `turn.completed` event with usage: expected the output of `codex exec --json`"
                .to_owned(),
        );
    }
    u.cached_input_tokens = u.cached_input_tokens.min(u.input_tokens);
    Ok(vec![u])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand from the documented event shapes of `codex exec
    /// --json`.
    const RUN: &str = r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"bash -lc ls","aggregated_output":"src\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Done."}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":0,"output_tokens":50}}
"#;

    #[test]
    fn every_completed_turn_adds_up() {
        let u = &exec_json(RUN).unwrap()[0];
        assert_eq!(u.input_tokens, 25_763);
        assert_eq!(u.cached_input_tokens, 24_448);
        assert_eq!(u.output_tokens, 172);
        assert_eq!(u.cost_usd, None);
        assert_eq!(u.model, None);
        assert_eq!(u.runtime.as_deref(), Some("codex"));
    }

    #[test]
    fn a_run_that_never_completed_a_turn_is_refused() {
        let e = exec_json(
            "{\"type\":\"thread.started\",\"thread_id\":\"x\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"quota\"}}\n",
        )
        .unwrap_err();
        assert!(e.contains("turn.completed"), "{e}");
    }
}
