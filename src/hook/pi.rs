//! Pi's hook payloads, as loopx's extension (`hooks/pi/loopx.ts`) sends
//! them: Claude Code's shape (`session_id`, `cwd`, `prompt`, `tool_name`
//! with `tool_input`, `reason`), answered in Claude Code's JSON, plus at
//! Stop and SessionEnd a `usage` list: one entry per assistant message Pi
//! reported since the last call, with Pi's own figures (`input` without
//! the cache, `cacheRead`, `cacheWrite`, `output`, and `cost`, the dollars
//! Pi computed from its model table).

use serde_json::Value;

use super::usage::count;
use crate::model::usage::{Usage, Usd};

/// The usage in a Pi payload: one [`Usage`] per model, each message's
/// figures added up. Entries that are not objects, and a `usage` that is
/// not a list, count as nothing. loopx's input counts the cache too; its
/// cached input is the cache reads. A cost of 0 is Pi not knowing the
/// model's price (a custom model): left out, so that loopx prices it.
pub fn usage(payload: &Value) -> Vec<Usage> {
    let Some(list) = payload.get("usage").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out: Vec<Usage> = Vec::new();
    for m in list.iter().filter(|m| m.is_object()) {
        let read = count(m.get("cacheRead"));
        let written = count(m.get("cacheWrite"));
        let model = m
            .get("model")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| crate::op::limits::fit(s, 100));
        let cost = m
            .get("cost")
            .and_then(Value::as_f64)
            .filter(|c| *c > 0.0)
            .and_then(Usd::from_dollars);
        let u = Usage {
            input_tokens: count(m.get("input"))
                .saturating_add(read)
                .saturating_add(written),
            output_tokens: count(m.get("output")),
            cached_input_tokens: read,
            cost_usd: cost,
            estimated: false,
            model,
            runtime: Some("pi".to_owned()),
        };
        if u.is_empty() {
            continue;
        }
        match out.iter_mut().find(|o| o.model == u.model) {
            Some(o) => {
                o.input_tokens = o.input_tokens.saturating_add(u.input_tokens);
                o.output_tokens = o.output_tokens.saturating_add(u.output_tokens);
                o.cached_input_tokens = o.cached_input_tokens.saturating_add(u.cached_input_tokens);
                // A model's messages are priced alike: all reported, or
                // none (then loopx prices the sum).
                o.cost_usd = match (o.cost_usd, u.cost_usd) {
                    (Some(a), Some(b)) => Some(a.saturating_add(b)),
                    _ => None,
                };
            }
            None => out.push(u),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stop_payload_normalises_and_its_usage_adds_up_per_model() {
        let v = json!({
            "hook_event_name": "Stop", "session_id": "019a3f0e-7c1d-7b2a-9e3f-5a6b7c8d9e0f",
            "cwd": "/repo",
            "usage": [
                {"model": "claude-sonnet-4-5", "provider": "anthropic", "input": 100, "output": 20,
                 "cacheRead": 1000, "cacheWrite": 50, "cost": 0.0125},
                {"model": "claude-sonnet-4-5", "provider": "anthropic", "input": 10, "output": 5,
                 "cacheRead": 0, "cacheWrite": 0, "cost": 0.001},
                {"model": "local", "provider": "ollama", "input": 7, "output": 3, "cost": 0},
                {"model": "local", "input": -4, "output": "many"},
                "junk",
            ],
        });
        let i = crate::hook::common_input(&v);
        assert_eq!(
            i.session.as_deref(),
            Some("019a3f0e-7c1d-7b2a-9e3f-5a6b7c8d9e0f")
        );
        let u = usage(&v);
        assert_eq!(u.len(), 2);
        assert_eq!(u[0].model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(u[0].input_tokens, 1160);
        assert_eq!(u[0].cached_input_tokens, 1000);
        assert_eq!(u[0].output_tokens, 25);
        assert_eq!(u[0].cost_usd, Some(Usd(13_500)));
        assert_eq!(u[0].runtime.as_deref(), Some("pi"));
        // A custom model Pi cannot price: no dollars, so loopx prices it.
        assert_eq!(u[1].model.as_deref(), Some("local"));
        assert_eq!((u[1].input_tokens, u[1].output_tokens), (7, 3));
        assert_eq!(u[1].cost_usd, None);
        assert!(usage(&json!({"usage": {"input": 1}})).is_empty());
        assert!(usage(&json!({})).is_empty());
    }
}
