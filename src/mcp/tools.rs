//! The tools `loopx mcp` serves: one per loopx command of an agent's turn,
//! each a table row that says how its JSON arguments become the command's
//! words (`mcp/args.rs`). Argument names are the CLI's JSON keys
//! (`turn_token`, `epoch`, `next_action`), so what one tool returns feeds
//! the next as it is.

pub use super::args::{AGENT, Tool};
use super::args::{Arg, Prop, TURN_TOKEN, Ty, one_of, prop, req};

const GOAL: Prop = prop(
    "goal",
    Ty::Str,
    "Goal id [default: for an agent, the goal of its pick among those it may work on]",
    Arg::Flag("--goal"),
);
const TODO_ID: Prop = req(prop(
    "id",
    Ty::Str,
    "Todo id or unique prefix",
    Arg::Positional,
));
const EPOCH: Prop = prop(
    "epoch",
    Ty::Int,
    "The epoch your claim returned: refused if the todo changed hands since",
    Arg::Flag("--epoch"),
);
const TTL: Prop = prop(
    "ttl",
    Ty::Str,
    "Lease length, e.g. 45m [default: the state's lease]",
    Arg::Flag("--ttl"),
);
const SYNC: Prop = prop(
    "sync",
    Ty::Bool,
    "Sync with the remote first",
    Arg::Switch("--sync"),
);
const TURN: Prop = prop(
    TURN_TOKEN,
    Ty::Str,
    "turn_token from should_run",
    Arg::Flag("--turn"),
);
const OUTCOME: Prop = req(one_of(
    prop(
        "outcome",
        Ty::Str,
        "How the turn ended",
        Arg::Flag("--outcome"),
    ),
    &["advanced", "unchanged", "blocked"],
));
const NEXT_ACTION: Prop = prop(
    "next_action",
    Ty::Str,
    "What the next turn does first",
    Arg::Flag("--next-action"),
);
const SET_STATUS: Prop = one_of(
    prop(
        "status",
        Ty::Str,
        "New status (gives the claim up)",
        Arg::Flag("--status"),
    ),
    &["open", "blocked", "deferred"],
);
const TIMEOUT: Prop = prop(
    "timeout",
    Ty::Str,
    "How long the command may run, e.g. 5m [default: 10m]",
    Arg::Flag("--timeout"),
);
const EVIDENCE_KINDS: &[&str] = &["test", "build", "bench", "review", "note", "artifact"];
const USAGE: Prop = prop(
    "usage",
    Ty::Str,
    "The turn's usage as a JSON object with any of input_tokens, output_tokens, cached_input_tokens, cost_usd, model, runtime",
    Arg::Flag("--usage"),
);
const DRY_RUN: Prop = prop(
    "dry_run",
    Ty::Bool,
    "Check and answer, write nothing",
    Arg::Switch("--dry-run"),
);

/// The tools `loopx mcp` serves: the whole turn, the board and gates.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "should_run",
        description: "Should you run a turn now, and on what? Read-only. Gives the todo, the gates that concern you, slots left and a turn_token.",
        command: &["quota", "should-run"],
        props: &[GOAL, SYNC],
        needs_one_of: &[],
    },
    Tool {
        name: "todo_claim",
        description: "Claim a todo by id (renews your own claim), or with next=true the best ready one. Returns the todo and its epoch.",
        command: &["todo", "claim"],
        props: &[
            prop("id", Ty::Str, "Todo id or unique prefix", Arg::Positional),
            prop(
                "next",
                Ty::Bool,
                "Pick the best ready todo",
                Arg::Switch("--next"),
            ),
            prop(
                "goal",
                Ty::Str,
                "With next: only this goal",
                Arg::Flag("--goal"),
            ),
            TTL,
            prop(
                "sync",
                Ty::Bool,
                "Count the claim only once the remote accepts it [default: once the clone has a hub]",
                Arg::Toggle("--sync", "--no-sync"),
            ),
        ],
        needs_one_of: &["id", "next"],
    },
    Tool {
        name: "todo_renew",
        description: "Extend the lease on your claim.",
        command: &["todo", "renew"],
        props: &[TODO_ID, EPOCH, TTL],
        needs_one_of: &[],
    },
    Tool {
        name: "todo_update",
        description: "Note progress on your claim, or set it open, blocked or deferred (which gives it up).",
        command: &["todo", "update"],
        props: &[
            TODO_ID,
            EPOCH,
            prop("note", Ty::Str, "What happened", Arg::Flag("--note")),
            SET_STATUS,
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "todo_done",
        description: "Mark your claimed todo done. Its validation command runs first; a failing one refuses.",
        command: &["todo", "done"],
        props: &[
            TODO_ID,
            EPOCH,
            prop("note", Ty::Str, "What was done", Arg::Flag("--note")),
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "todo_release",
        description: "Give your claim up: the todo is open again for anyone.",
        command: &["todo", "release"],
        props: &[TODO_ID, EPOCH],
        needs_one_of: &[],
    },
    Tool {
        name: "todo_handoff",
        description: "Hand your claim to another agent, with a note of what it needs to know.",
        command: &["todo", "handoff"],
        props: &[
            TODO_ID,
            EPOCH,
            req(prop(
                "to",
                Ty::Str,
                "The agent that takes it over",
                Arg::Flag("--to"),
            )),
            req(prop(
                "note",
                Ty::Str,
                "What the new owner needs to know",
                Arg::Flag("--note"),
            )),
            TTL,
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "settle",
        description: "End a turn in one tick: run and record a check, update or finish the todo, record the outcome, spend the slot.",
        command: &["settle"],
        props: &[
            req(TURN),
            req(prop(
                "todo",
                Ty::Str,
                "The todo the turn worked on",
                Arg::Flag("--todo"),
            )),
            OUTCOME,
            prop(
                "done",
                Ty::Bool,
                "Mark the todo done (its validation runs first)",
                Arg::Switch("--done"),
            ),
            SET_STATUS,
            prop("note", Ty::Str, "A note on the todo", Arg::Flag("--note")),
            NEXT_ACTION,
            TIMEOUT,
            SYNC,
            USAGE,
            prop(
                "command",
                Ty::List,
                "A check to run and record: the program and its arguments",
                Arg::Trailing,
            ),
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "evidence_add",
        description: "Record evidence of what was checked or reviewed.",
        command: &["evidence", "add"],
        props: &[
            req(prop(
                "summary",
                Ty::Str,
                "What it shows, in a line",
                Arg::Flag("--summary"),
            )),
            prop("todo", Ty::Str, "The todo it is for", Arg::Flag("--todo")),
            GOAL,
            one_of(
                prop(
                    "kind",
                    Ty::Str,
                    "Kind [default: note, or artifact with artifact]",
                    Arg::Flag("--kind"),
                ),
                EVIDENCE_KINDS,
            ),
            prop(
                "artifact",
                Ty::Str,
                "A file it points at, hashed now",
                Arg::Flag("--artifact"),
            ),
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "evidence_run",
        description: "Run a command and record its outcome, exit code and output tail as evidence.",
        command: &["evidence", "run"],
        props: &[
            req(prop(
                "command",
                Ty::List,
                "The program and its arguments",
                Arg::Trailing,
            )),
            prop("todo", Ty::Str, "The todo it is for", Arg::Flag("--todo")),
            GOAL,
            one_of(
                prop("kind", Ty::Str, "Kind [default: test]", Arg::Flag("--kind")),
                EVIDENCE_KINDS,
            ),
            prop(
                "summary",
                Ty::Str,
                "What it shows [default: the command line]",
                Arg::Flag("--summary"),
            ),
            TIMEOUT,
            prop(
                "no_output",
                Ty::Bool,
                "Keep no output tail (the hash is still recorded)",
                Arg::Switch("--no-output"),
            ),
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "gate_open",
        description: "Ask a question that blocks a scope until answered. permission, publish, production and spend gates are answered by humans only.",
        command: &["gate", "open"],
        props: &[
            req(prop(
                "question",
                Ty::Str,
                "Concrete, answerable by an option",
                Arg::Flag("--question"),
            )),
            one_of(
                prop(
                    "kind",
                    Ty::Str,
                    "Kind [default: decision]",
                    Arg::Flag("--kind"),
                ),
                &["decision", "permission", "publish", "production", "spend"],
            ),
            prop(
                "blocks",
                Ty::Str,
                "goal, agent:ID or todo:ID [default: goal]",
                Arg::Flag("--blocks"),
            ),
            prop(
                "options",
                Ty::List,
                "Answers to choose from [default: approve, reject]",
                Arg::Repeat("--option"),
            ),
            GOAL,
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "gate_list",
        description: "List gates, newest first.",
        command: &["gate", "list"],
        props: &[prop(
            "open",
            Ty::Bool,
            "Only open gates",
            Arg::Switch("--open"),
        )],
        needs_one_of: &[],
    },
    Tool {
        name: "gate_show",
        description: "Show one gate: its question, options, what it blocks and its answer.",
        command: &["gate", "show"],
        props: &[req(prop(
            "id",
            Ty::Str,
            "Gate id or unique prefix",
            Arg::Positional,
        ))],
        needs_one_of: &[],
    },
    Tool {
        name: "gate_answer",
        description: "Answer a decision gate. Human-only kinds (permission, publish, production, spend) are refused.",
        command: &["gate", "answer"],
        props: &[
            req(prop(
                "id",
                Ty::Str,
                "Gate id or unique prefix",
                Arg::Positional,
            )),
            req(prop(
                "choice",
                Ty::Str,
                "One of the gate's options",
                Arg::Flag("--choice"),
            )),
            prop("note", Ty::Str, "Why, for the record", Arg::Flag("--note")),
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "refresh_state",
        description: "End your turn: record how it went; returns the next turn's brief.",
        command: &["refresh-state"],
        props: &[
            OUTCOME,
            NEXT_ACTION,
            prop(
                "todo",
                Ty::Str,
                "The todo the turn was about",
                Arg::Flag("--todo"),
            ),
            TURN,
            GOAL,
            prop(
                "dry_run",
                Ty::Bool,
                "Print the brief, write nothing",
                Arg::Switch("--dry-run"),
            ),
        ],
        needs_one_of: &[],
    },
    Tool {
        name: "spend_slot",
        description: "Spend one quota slot for a turn_token, after a writeback (todo_update, evidence_add, refresh_state advanced|blocked).",
        command: &["quota", "spend-slot"],
        props: &[req(TURN), DRY_RUN, USAGE],
        needs_one_of: &[],
    },
    Tool {
        name: "status",
        description: "The board: gates waiting on humans, goals, claims, quota, recent ticks.",
        command: &["status"],
        props: &[],
        needs_one_of: &[],
    },
];

/// The tool of that name.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::{Map, Value, json};

    fn argv(tool: &str, args: Value) -> Result<Vec<String>, String> {
        let Value::Object(m) = args else {
            panic!("an object")
        };
        find(tool).expect("a tool").argv(&m, "agent-a")
    }

    /// Every tool, with every property given, parses with the real clap
    /// parser into the command it names.
    #[test]
    fn every_tool_argv_parses_with_the_real_parser() {
        for t in TOOLS {
            let mut full = Map::new();
            for p in t.props {
                let v = match (p.ty, p.choices.first()) {
                    (Ty::Str, Some(c)) => json!(c),
                    (Ty::Str, None) if p.name.contains("ttl") || p.name == "timeout" => {
                        json!("5m")
                    }
                    (Ty::Str, None) if p.name == "blocks" => json!("goal"),
                    (Ty::Str, None) => json!("x-1"),
                    (Ty::Bool, _) => json!(true),
                    (Ty::Int, _) => json!(3),
                    (Ty::List, _) => json!(["echo", "--flag", "a b"]),
                };
                full.insert(p.name.to_owned(), v);
            }
            // Flags that exclude each other in the CLI.
            if t.name == "todo_claim" {
                full.remove("id");
            }
            if t.name == "settle" {
                full.remove("status");
            }
            let minimal: Map<String, Value> = t
                .props
                .iter()
                .filter(|p| p.required)
                .map(|p| (p.name.to_owned(), full[p.name].clone()))
                .chain(
                    t.needs_one_of
                        .iter()
                        .find_map(|n| Some(((*n).to_owned(), full.get(*n)?.clone()))),
                )
                .collect();
            for args in [full, minimal] {
                let argv = t.argv(&args, "agent-a").unwrap_or_else(|e| panic!("{e}"));
                let words = std::iter::once("loopx".to_owned()).chain(argv.iter().cloned());
                let words: Vec<String> = words.collect();
                if let Err(e) = crate::cli::Cli::try_parse_from(&words) {
                    panic!("{}: {argv:?} does not parse: {e}", t.name);
                }
                // The check the server makes agrees with the real parser.
                if let Err(e) = crate::cmd::parse(&words) {
                    panic!("{}: {argv:?} does not parse in cmd::parse: {e}", t.name);
                }
                assert_eq!(argv[0], "--agent=agent-a");
                assert_eq!(&argv[1..=t.command.len()], t.command, "{}", t.name);
            }
        }
    }

    #[test]
    fn arguments_become_words_and_bad_ones_are_refused_in_words() {
        assert_eq!(
            argv(
                "todo_update",
                json!({"id": "t-1", "note": "-half way", "status": "blocked", "epoch": 2})
            )
            .unwrap(),
            [
                "--agent=agent-a",
                "todo",
                "update",
                "t-1",
                "--epoch=2",
                "--note=-half way",
                "--status=blocked"
            ]
        );
        assert_eq!(
            argv(
                "evidence_run",
                json!({"command": ["cargo", "test", "--", "-q"]})
            )
            .unwrap(),
            [
                "--agent=agent-a",
                "evidence",
                "run",
                "--",
                "cargo",
                "test",
                "--",
                "-q"
            ]
        );
        assert_eq!(
            argv("spend_slot", json!({"turn": "tok"})).unwrap(),
            ["--agent=agent-a", "quota", "spend-slot", "--turn=tok"]
        );
        let err = |tool, args| argv(tool, args).unwrap_err();
        assert_eq!(err("todo_claim", json!({})), "todo_claim needs id or next");
        assert_eq!(
            err("todo_update", json!({"status": "done"})),
            "id is required: Todo id or unique prefix"
        );
        assert_eq!(
            err("gate_open", json!({"question": "q", "options": "yes"})),
            "options must be a list of strings"
        );
        assert_eq!(
            err("todo_done", json!({"id": "t-1", "epoch": -1})),
            "epoch must be a whole number (0 or more)"
        );
        assert_eq!(
            err("spend_slot", json!({"turn": "a", "turn_token": "b"})),
            "give turn_token or turn (its old name), not both"
        );
        assert!(err("status", json!({"x": 1})).contains("status takes none"));
        assert_eq!(
            err("evidence_run", json!({"command": []})),
            "command must name a program to run"
        );
    }

    #[test]
    fn clap_errors_are_told_with_the_tool_argument_names() {
        let t = find("todo_renew").unwrap();
        let argv = t
            .argv(
                &json!({"id": "t-1", "ttl": "soon"})
                    .as_object()
                    .unwrap()
                    .clone(),
                "a",
            )
            .unwrap();
        let words: Vec<String> = std::iter::once("loopx".to_owned()).chain(argv).collect();
        let e = crate::cmd::parse(&words).unwrap_err().to_string();
        let real = crate::cli::Cli::try_parse_from(&words)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e, real,
            "cmd::parse explains a bad argument as the real parser does"
        );
        let said = t.explain(&e);
        assert!(
            said.starts_with("todo_renew: invalid value 'soon' for ttl"),
            "{said}"
        );
    }

    #[test]
    fn every_schema_is_closed_and_every_description_short() {
        for t in TOOLS {
            let d = t.describe();
            assert_eq!(
                d["inputSchema"]["additionalProperties"], false,
                "{}",
                t.name
            );
            assert!(t.description.len() <= 160, "{}", t.name);
            for r in d["inputSchema"]["required"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert!(
                    d["inputSchema"]["properties"]
                        .get(r.as_str().unwrap())
                        .is_some()
                );
            }
        }
    }
}
