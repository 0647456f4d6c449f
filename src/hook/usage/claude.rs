//! Claude Code's usage: the result JSON of a headless run, and the session
//! transcript a hook reads at Stop.
//!
//! Claude's `usage` counts `input_tokens` without the cache:
//! `cache_creation_input_tokens` (written to the cache) and
//! `cache_read_input_tokens` (read from it) come on top. loopx's input is
//! all three; its cached input is the cache reads.

use std::collections::BTreeMap;

use serde_json::Value;

use super::count;
use crate::model::usage::{Usage, Usd};

const RUNTIME: &str = "claude-code";

/// One Claude `usage` object, mapped to loopx's figures.
fn tokens(u: &Value, model: Option<&str>) -> Usage {
    let read = count(u.get("cache_read_input_tokens"));
    let written = count(u.get("cache_creation_input_tokens"));
    Usage {
        input_tokens: count(u.get("input_tokens")) + read + written,
        output_tokens: count(u.get("output_tokens")),
        cached_input_tokens: read,
        cost_usd: None,
        estimated: false,
        model: model.map(str::to_owned),
        runtime: Some(RUNTIME.to_owned()),
    }
}

/// The result of `claude -p --output-format json` (one object), or the
/// `result` line of `--output-format stream-json` (the last one wins):
/// `total_cost_usd` is the dollars Claude Code reported, `usage` the
/// tokens, `modelUsage` the models used.
pub fn result(text: &str) -> Result<Vec<Usage>, String> {
    let doc = match serde_json::from_str::<Value>(text.trim()) {
        Ok(v) => v,
        Err(_) => text
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("type").and_then(Value::as_str) == Some("result"))
            .ok_or("no Claude Code result JSON: expected the output of `claude -p --output-format json`")?,
    };
    let usage = doc
        .get("usage")
        .filter(|u| u.is_object())
        .ok_or("the Claude Code result has no `usage` object")?;
    let model = doc
        .get("modelUsage")
        .and_then(Value::as_object)
        .and_then(|m| {
            m.iter()
                .max_by(|a, b| {
                    let cost = |v: &Value| v.get("costUSD").and_then(Value::as_f64).unwrap_or(0.0);
                    cost(a.1).total_cmp(&cost(b.1))
                })
                .map(|(k, _)| k.clone())
        });
    let mut u = tokens(usage, model.as_deref());
    u.cost_usd = doc
        .get("total_cost_usd")
        .and_then(Value::as_f64)
        .and_then(Usd::from_dollars);
    Ok(vec![u])
}

/// The usage of the assistant messages in a transcript's JSON Lines
/// (`{"type":"assistant","message":{"id","model","usage"}}`), one
/// [`Usage`] per model. A message written over several lines (one per
/// content block) repeats its id: each figure keeps its maximum, so it
/// counts once. Lines that do not parse (a line still being written) are
/// skipped.
pub fn transcript(text: &str) -> Vec<Usage> {
    let mut messages: BTreeMap<String, Usage> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        let Some(msg) = v.get("message") else {
            continue;
        };
        let Some(usage) = msg.get("usage").filter(|u| u.is_object()) else {
            continue;
        };
        let id = msg
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("line {n}"), str::to_owned);
        let u = tokens(usage, msg.get("model").and_then(Value::as_str));
        match messages.get_mut(&id) {
            Some(m) => {
                m.absorb(&u);
            }
            None => {
                order.push(id.clone());
                messages.insert(id, u);
            }
        }
    }
    let mut by_model: Vec<Usage> = Vec::new();
    for id in order {
        let u = messages.remove(&id).expect("inserted above");
        match by_model.iter_mut().find(|m| m.model == u.model) {
            Some(m) => {
                m.input_tokens += u.input_tokens;
                m.output_tokens += u.output_tokens;
                m.cached_input_tokens += u.cached_input_tokens;
            }
            None => by_model.push(u),
        }
    }
    by_model
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand from the documented shape of `claude -p
    /// --output-format json`.
    const RESULT: &str = r#"{
  "type": "result",
  "subtype": "success",
  "is_error": false,
  "duration_ms": 48211,
  "num_turns": 7,
  "result": "The parser now handles nested blocks.",
  "session_id": "5b1e7c1a-3f0e-4c52-9f3e-6a1d2b7c9e10",
  "total_cost_usd": 0.1834,
  "usage": {
    "input_tokens": 42,
    "cache_creation_input_tokens": 9120,
    "cache_read_input_tokens": 131072,
    "output_tokens": 2210,
    "server_tool_use": {"web_search_requests": 0},
    "service_tier": "standard"
  },
  "modelUsage": {
    "claude-haiku-4-5-20251001": {"inputTokens": 900, "outputTokens": 40, "costUSD": 0.0011},
    "claude-sonnet-4-5-20250929": {"inputTokens": 42, "outputTokens": 2210, "costUSD": 0.1823}
  }
}"#;

    #[test]
    fn a_result_gives_its_dollars_and_all_input() {
        let u = result(RESULT).unwrap();
        assert_eq!(u.len(), 1);
        let u = &u[0];
        assert_eq!(u.input_tokens, 42 + 9120 + 131_072);
        assert_eq!(u.cached_input_tokens, 131_072);
        assert_eq!(u.output_tokens, 2210);
        assert_eq!(u.cost_usd, Some(Usd(183_400)));
        assert!(!u.estimated);
        assert_eq!(u.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert_eq!(u.runtime.as_deref(), Some("claude-code"));
    }

    #[test]
    fn a_stream_json_run_is_read_from_its_result_line() {
        let stream = format!(
            "{}\n{}\n{}\n",
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5-20250929"}"#,
            r#"{"type":"assistant","message":{"id":"msg_01","usage":{"input_tokens":5,"output_tokens":9}}}"#,
            RESULT.replace('\n', "")
        );
        assert_eq!(result(&stream).unwrap()[0].cost_usd, Some(Usd(183_400)));
        assert!(result("{\"type\":\"system\"}").is_err());
        assert!(result("not json").is_err());
    }

    #[test]
    fn a_transcript_counts_each_message_once_per_model() {
        // Two lines of one message (two content blocks, the usage repeated
        // and growing), one of another, a user line, and a torn last line.
        let t = [
            r#"{"type":"user","message":{"role":"user","content":"go on"},"uuid":"u1"}"#,
            r#"{"type":"assistant","message":{"id":"msg_A","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"thinking"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":5}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_A","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":80}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_B","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":4,"cache_read_input_tokens":3210,"output_tokens":20}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_C","model":"claude-haiku-4-5-20251001","usage":{"input_tokens":300,"output_tokens":12}}}"#,
            r#"{"type":"assistant","message":{"id":"msg_D","usa"#,
        ]
        .join("\n");
        let v = transcript(&t);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert_eq!(v[0].input_tokens, (10 + 200 + 3000) + (4 + 3210));
        assert_eq!(v[0].cached_input_tokens, 3000 + 3210);
        assert_eq!(v[0].output_tokens, 80 + 20);
        assert_eq!(v[1].input_tokens, 300);
        assert_eq!(v[1].cost_usd, None);
    }
}
