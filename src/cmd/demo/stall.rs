//! The demo's act about spend: an agent whose turns claim progress but
//! change nothing is stopped at its third turn (docs/turn.md, "Stalled").

use anyhow::{Context, Result};

use super::Demo;

impl Demo {
    /// Act `n`: `builder` settles three turns on the benchmark it won, each
    /// "advanced", each with the same passing check and no change to the
    /// code; the third opens a human-only gate, and should-run says stalled
    /// until Ada answers.
    pub(super) fn stall_act(&mut self, n: u32, bench: &str) -> Result<()> {
        self.act(
            n,
            "an agent that makes no progress",
            "`builder` works on the benchmark it won. Each turn it says it advanced,\n\
             but the code, the todo and the checks that passed stay the same. loopx\n\
             compares each turn's fingerprint of those, not the agent's words: the\n\
             third such turn opens a spend gate only a human may answer, and from then\n\
             should-run says `stalled`, so no more turns are spent.",
        );
        // The tip's commit id, and so each turn token, now follows from
        // Ada's signatures with a key made fresh each run: with a fixed
        // clock the tokens are shown as <turn N>, so the output repeats.
        if self.clock.is_some() {
            self.turns = Some(Vec::new());
        }
        for _ in 0..3 {
            let token = self.turn("machine-a", "builder", false)?;
            let check = ["--", "test", "-f", "README.md"];
            let settle = Self::advanced(&token, bench, &check);
            self.loopx("machine-a", Some("builder"), &settle, &[0])?;
        }
        self.loopx("machine-a", Some("builder"), &["quota", "should-run"], &[3])?;
        let gate = self
            .gate_on(bench)?
            .context("the third turn opened no gate")?;
        self.answer(&gate, "continue", "profile first, then measure")?;
        self.loopx("machine-a", Some("builder"), &["quota", "should-run"], &[0])?;
        self.loopx("machine-a", None, &["sync"], &[0])?;
        Ok(())
    }

    /// Notes the turn tokens in a command's output, when they are masked.
    pub(super) fn learn_turns(&mut self, stdout: &str) {
        let Some(turns) = &mut self.turns else {
            return;
        };
        for word in stdout.split(|c: char| c.is_whitespace() || c == '"') {
            let parts: Vec<&str> = word.split(':').collect();
            if let ["lxt1", _, _, hex, _] = parts.as_slice()
                && !turns.iter().any(|t| t == hex)
            {
                turns.push((*hex).to_owned());
            }
        }
    }

    /// The open gate on `todo`, read quietly from `gate list --json`.
    fn gate_on(&self, todo: &str) -> Result<Option<String>> {
        let mut c = std::process::Command::new(&self.exe);
        c.args(["gate", "list", "--open", "--json"])
            .current_dir(self.machine("machine-a"));
        self.isolate(&mut c);
        let out = c.output().context("running loopx gate list")?;
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).context("reading gate list's JSON")?;
        Ok(v["gates"].as_array().and_then(|gates| {
            gates
                .iter()
                .find(|g| g["blocks"] == format!("todo:{todo}"))
                .and_then(|g| g["id"].as_str())
                .map(str::to_owned)
        }))
    }
}
