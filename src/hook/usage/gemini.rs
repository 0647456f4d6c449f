//! Gemini CLI's usage: the JSON of `gemini -p --output-format json`, whose
//! `stats.models` holds one entry per model used with its `tokens`:
//! `prompt` (all input, cached included), `cached`, `candidates` (output)
//! and `thoughts` (thinking, billed as output). No dollars: each model is
//! priced from the table.

use serde_json::Value;

use super::count;
use crate::model::usage::Usage;

/// One [`Usage`] per model of a Gemini CLI run.
pub fn output(text: &str) -> Result<Vec<Usage>, String> {
    let doc: Value = serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "not Gemini CLI JSON ({e}): expected the output of `gemini -p --output-format json`"
        )
    })?;
    let models = doc
        .pointer("/stats/models")
        .and_then(Value::as_object)
        .ok_or("the Gemini CLI output has no `stats.models`")?;
    Ok(models
        .iter()
        .filter_map(|(name, m)| {
            let t = m.get("tokens")?;
            let input = count(t.get("prompt"));
            Some(Usage {
                input_tokens: input,
                cached_input_tokens: count(t.get("cached")).min(input),
                output_tokens: count(t.get("candidates")) + count(t.get("thoughts")),
                cost_usd: None,
                estimated: false,
                model: Some(name.clone()),
                runtime: Some("gemini".to_owned()),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand from the documented shape of `gemini -p
    /// --output-format json`.
    const RUN: &str = r#"{
  "response": "I added the missing test.",
  "stats": {
    "models": {
      "gemini-2.5-pro": {
        "api": {"totalRequests": 3, "totalErrors": 0, "totalLatencyMs": 9120},
        "tokens": {"prompt": 18211, "candidates": 612, "total": 19401, "cached": 12000, "thoughts": 578, "tool": 0}
      },
      "gemini-2.5-flash": {
        "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 800},
        "tokens": {"prompt": 2100, "candidates": 40, "total": 2140, "cached": 0, "thoughts": 0, "tool": 0}
      }
    },
    "tools": {"totalCalls": 2, "totalSuccess": 2, "totalFail": 0},
    "files": {"totalLinesAdded": 14, "totalLinesRemoved": 2}
  }
}"#;

    #[test]
    fn each_model_is_read_apart() {
        let v = output(RUN).unwrap();
        assert_eq!(v.len(), 2);
        let pro = v
            .iter()
            .find(|u| u.model.as_deref() == Some("gemini-2.5-pro"))
            .unwrap();
        assert_eq!(pro.input_tokens, 18_211);
        assert_eq!(pro.cached_input_tokens, 12_000);
        assert_eq!(pro.output_tokens, 612 + 578);
        assert!(output("{\"response\":\"hi\"}").is_err());
        assert!(output("[").is_err());
    }
}
