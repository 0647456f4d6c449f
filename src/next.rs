//! What a refusal suggests doing next, as data. The rules (`op`, `model`)
//! name the action ([`Next::ReadyTodos`], [`Next::ShowGate`] …) and never
//! spell a command; each front end spells it its own way when the hint is
//! shown: [`Next::cli`] for the command line (`loopx todo list --ready`).
//!
//! A [`Hint`] is prose with a slot ([`N`]) for each next step, so the
//! sentence reads the same whichever front end fills the slots.

use std::fmt;

/// The slot for a next step inside hint text: `format!("pick another with
/// {N}")`. A control character, so it never occurs in real text.
pub const N: &str = "\u{1f}";

/// One thing a person or agent can do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// See the live todos.
    Todos,
    /// See the todos ready to claim.
    ReadyTodos,
    /// See every todo, done and archived too.
    AllTodos,
    ShowTodo(String),
    ClaimTodo(String),
    /// Mark a todo done (running its validation); `None`: the one at hand.
    FinishTodo(Option<String>),
    /// Free a claim from its owner (a human act).
    ForceRelease(String),
    /// Reopen a done, blocked or deferred todo (`ID` when any).
    ReopenTodo(String),
    /// Set a todo's status back to open.
    OpenTodo(String),
    /// Record progress on one's own claim.
    UpdateTodo,
    AddTodo,
    /// Add a todo whose validation is a command.
    AddTodoWithCheck,
    /// Ask whether to run, and get a turn token.
    ShouldRun,
    /// An agent's spends.
    QuotaOf(String),
    RunEvidence,
    AddEvidence,
    /// Record that a turn advanced or is blocked.
    RefreshState,
    AddGoal,
    ListGoals,
    /// Change a goal.
    SetGoal(String),
    /// Make a goal active again (`ID` when any).
    ResumeGoal(String),
    ListGates,
    ShowGate(String),
    /// Answer or withdraw a gate: (verb, gate).
    CloseGate(String, String),
    /// Register an agent (`None`: the caller's own).
    RegisterAgent(Option<String>),
    ListAgents,
    /// List entities of a kind (`todo`, `gate`, …).
    List(String),
    Doctor,
    /// Trust an announced signer's key on this machine.
    TrustSigner(String),
    /// Announce one's own key, signed with it: name.
    AnnounceSigner(String),
    /// Approve a signer's pending new key (a signed human act).
    ApproveSigner(String),
    /// Reclaim a signing key as one's own signer: name.
    ReclaimSigner(String),
    /// Vouch for a todo's validation (a signed human act).
    TrustTodo(String),
    /// Make and propose this clone's machine key (`Some`: under a new name).
    SetupMachine(Option<String>),
    /// Admit a machine for agents (a signed human act): name, fingerprint.
    AdmitMachine(String, String),
    /// Raise a budget of a goal (a human act): the goal, the new dollar
    /// limit, the new token limit, and the agent whose budget it is.
    RaiseBudget {
        goal: String,
        usd: Option<u64>,
        tokens: Option<u64>,
        agent: Option<String>,
    },
}

impl Next {
    /// The command line's spelling, in backticks.
    pub fn cli(&self) -> String {
        format!("`{}`", self.command())
    }

    /// The command line's spelling, bare: what a page or a JSON field
    /// shows to copy.
    pub fn command(&self) -> String {
        match self {
            Next::Todos => "loopx todo list".to_owned(),
            Next::ReadyTodos => "loopx todo list --ready".to_owned(),
            Next::AllTodos => "loopx todo list --all".to_owned(),
            Next::ShowTodo(id) => format!("loopx todo show {id}"),
            Next::ClaimTodo(id) => format!("loopx todo claim {id}"),
            Next::FinishTodo(None) => "loopx todo done".to_owned(),
            Next::FinishTodo(Some(id)) => format!("loopx todo done {id}"),
            Next::ForceRelease(id) => format!("loopx todo release {id} --force"),
            Next::ReopenTodo(id) => format!("loopx todo reopen {id}"),
            Next::OpenTodo(id) => format!("loopx todo update {id} --status open"),
            Next::UpdateTodo => "loopx todo update".to_owned(),
            Next::AddTodo => "loopx todo add".to_owned(),
            Next::AddTodoWithCheck => "loopx todo add TITLE -- cargo test".to_owned(),
            Next::ShouldRun => "loopx quota should-run".to_owned(),
            Next::QuotaOf(agent) => format!("loopx quota status --agent {agent}"),
            Next::RunEvidence => "loopx evidence run".to_owned(),
            Next::AddEvidence => "loopx evidence add".to_owned(),
            Next::RefreshState => "loopx refresh-state --outcome advanced|blocked".to_owned(),
            Next::AddGoal => "loopx goal add ID --objective TEXT".to_owned(),
            Next::ListGoals => "loopx goal list".to_owned(),
            Next::SetGoal(id) => format!("loopx goal set {id} …"),
            Next::ResumeGoal(id) => format!("loopx goal set {id} --status active"),
            Next::ListGates => "loopx gate list".to_owned(),
            Next::ShowGate(id) => format!("loopx gate show {id}"),
            Next::CloseGate(verb, id) if verb == "answer" => {
                format!("loopx gate answer {id} --choice CHOICE")
            }
            Next::CloseGate(verb, id) => format!("loopx gate {verb} {id}"),
            Next::RegisterAgent(None) => "loopx agent register".to_owned(),
            Next::RegisterAgent(Some(id)) => format!("loopx agent register {id}"),
            Next::ListAgents => "loopx agent list".to_owned(),
            Next::List(kind) => format!("loopx {kind} list"),
            Next::Doctor => "loopx doctor".to_owned(),
            Next::TrustSigner(name) => format!("loopx signer trust {name}"),
            Next::AnnounceSigner(name) => format!("loopx signer announce {name} --key FILE.pub"),
            Next::ApproveSigner(name) => {
                format!("loopx signer approve {name} --fingerprint SHA256:…")
            }
            Next::ReclaimSigner(name) => {
                format!("loopx signer reclaim {name} --key FILE.pub")
            }
            Next::TrustTodo(id) => format!("loopx todo trust {id}"),
            Next::SetupMachine(None) => "loopx machine setup".to_owned(),
            Next::SetupMachine(Some(name)) => format!("loopx machine setup --name {name}"),
            Next::AdmitMachine(name, fp) => {
                format!("loopx machine admit {name} --fingerprint {fp} --for PATTERN")
            }
            Next::RaiseBudget {
                goal,
                usd,
                tokens,
                agent,
            } => {
                let mut cmd = format!("loopx goal set {goal}");
                if let Some(u) = usd {
                    cmd.push_str(&format!(" --budget-usd {u}"));
                }
                if let Some(t) = tokens {
                    cmd.push_str(&format!(" --budget-tokens {t}"));
                }
                if let Some(a) = agent {
                    cmd.push_str(&format!(" --budget-agent {a}"));
                }
                cmd
            }
        }
    }
}

/// A hint: prose with a slot ([`N`]) for each next step, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    text: String,
    next: Vec<Next>,
}

impl Hint {
    /// `text` with one [`N`] slot per step of `next`, in order.
    pub fn new(text: impl Into<String>, next: impl IntoIterator<Item = Next>) -> Hint {
        let hint = Hint {
            text: text.into(),
            next: next.into_iter().collect(),
        };
        debug_assert_eq!(
            hint.text.matches(N).count(),
            hint.next.len(),
            "one slot per next step: {:?}",
            hint.text
        );
        hint
    }

    /// The hint with each slot filled by `spell`.
    pub fn render(&self, spell: impl Fn(&Next) -> String) -> String {
        let mut out = String::with_capacity(self.text.len() + 32 * self.next.len());
        let mut steps = self.next.iter();
        let mut parts = self.text.split(N);
        if let Some(first) = parts.next() {
            out.push_str(first);
        }
        for part in parts {
            if let Some(step) = steps.next() {
                out.push_str(&spell(step));
            }
            out.push_str(part);
        }
        out
    }
}

/// As the command line shows it.
impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Next::cli))
    }
}

impl From<String> for Hint {
    fn from(text: String) -> Hint {
        Hint {
            text,
            next: Vec::new(),
        }
    }
}

impl From<&str> for Hint {
    fn from(text: &str) -> Hint {
        Hint::from(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_filled_in_order() {
        let h = Hint::new(
            format!("wait for {N}, or pick other work with {N}"),
            [Next::ShowGate("g-1".into()), Next::ReadyTodos],
        );
        assert_eq!(
            h.to_string(),
            "wait for `loopx gate show g-1`, or pick other work with `loopx todo list --ready`"
        );
        assert_eq!(
            h.render(|_| "X".into()),
            "wait for X, or pick other work with X"
        );
        assert_eq!(Hint::from("plain").to_string(), "plain");
    }
}
