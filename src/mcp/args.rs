//! How a tool's JSON arguments become a loopx command line: the property
//! types ([`Prop`]: its JSON type, choices, whether required, and how it
//! maps to words), the tool's input schema for `tools/list`, and errors in
//! the tool's own words. The tools themselves are the table in
//! [`super::tools`].

use serde_json::{Map, Value, json};

/// How a tool property becomes command-line words.
#[derive(Clone, Copy)]
pub(super) enum Arg {
    /// A positional argument, in table order.
    Positional,
    /// `--flag=VALUE`.
    Flag(&'static str),
    /// `--flag` when true.
    Switch(&'static str),
    /// `--on` when true, `--off` when false.
    Toggle(&'static str, &'static str),
    /// `--flag=V` for each item.
    Repeat(&'static str),
    /// The items after `--`: a command and its arguments.
    Trailing,
}

/// The JSON type of a property.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    Str,
    Bool,
    Int,
    List,
}

impl Ty {
    fn schema(self) -> &'static str {
        match self {
            Ty::Str => "string",
            Ty::Bool => "boolean",
            Ty::Int => "integer",
            Ty::List => "array",
        }
    }

    /// What a value of this type is, in words, for an error.
    fn words(self) -> &'static str {
        match self {
            Ty::Str => "a string",
            Ty::Bool => "true or false",
            Ty::Int => "a whole number (0 or more)",
            Ty::List => "a list of strings",
        }
    }
}

/// A property of a tool's input.
pub(super) struct Prop {
    pub(super) name: &'static str,
    pub(super) ty: Ty,
    pub(super) desc: &'static str,
    pub(super) choices: &'static [&'static str],
    pub(super) required: bool,
    pub(super) arg: Arg,
}

pub(super) const fn prop(name: &'static str, ty: Ty, desc: &'static str, arg: Arg) -> Prop {
    Prop {
        name,
        ty,
        desc,
        choices: &[],
        required: false,
        arg,
    }
}

pub(super) const fn req(p: Prop) -> Prop {
    Prop {
        required: true,
        ..p
    }
}

pub(super) const fn one_of(p: Prop, choices: &'static [&'static str]) -> Prop {
    Prop { choices, ..p }
}

/// The property every tool has: who acts. The server fills it in from its
/// own identity when a call leaves it out.
pub const AGENT: &str = "agent";
/// The turn token's name in `should_run`'s answer, and its older name.
pub(super) const TURN_TOKEN: &str = "turn_token";
const TURN_ALIAS: &str = "turn";

/// A tool: a loopx command with typed arguments.
pub struct Tool {
    pub name: &'static str,
    pub(super) description: &'static str,
    pub(super) command: &'static [&'static str],
    pub(super) props: &'static [Prop],
    /// At least one of these must be given (clap's `required_unless`).
    pub(super) needs_one_of: &'static [&'static str],
}

impl Tool {
    fn takes_turn(&self) -> bool {
        self.props.iter().any(|p| p.name == TURN_TOKEN)
    }

    /// The tool as `tools/list` shows it.
    pub fn describe(&self) -> Value {
        let mut props = Map::new();
        let mut describe = |name: &str, ty: Ty, choices: &[&str], desc: &str| {
            let mut s = Map::new();
            s.insert("type".into(), ty.schema().into());
            if ty == Ty::List {
                s.insert("items".into(), json!({"type": "string"}));
            }
            if ty == Ty::Int {
                s.insert("minimum".into(), json!(0));
            }
            if !choices.is_empty() {
                s.insert("enum".into(), json!(choices));
            }
            s.insert("description".into(), desc.into());
            props.insert(name.into(), Value::Object(s));
        };
        for p in self.props {
            describe(p.name, p.ty, p.choices, p.desc);
        }
        if self.takes_turn() {
            describe(TURN_ALIAS, Ty::Str, &[], "Old name of turn_token");
        }
        describe(
            AGENT,
            Ty::Str,
            &[],
            "Your agent id [default: the server's: --agent, LOOPX_AGENT or the runtime session]",
        );
        let required: Vec<&str> = self
            .props
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name)
            .collect();
        let mut schema =
            json!({"type": "object", "properties": props, "additionalProperties": false});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        json!({"name": self.name, "description": self.description, "inputSchema": schema})
    }

    /// The command line for `args` (after `loopx --agent=AGENT`), checked
    /// against the schema, with errors in words. `agent` is the caller; the
    /// `agent` argument, if any, has been taken out by the server.
    pub fn argv(&self, args: &Map<String, Value>, agent: &str) -> Result<Vec<String>, String> {
        let mut args = args.clone();
        if self.takes_turn()
            && let Some(old) = args.remove(TURN_ALIAS)
        {
            if args.contains_key(TURN_TOKEN) {
                return Err("give turn_token or turn (its old name), not both".to_owned());
            }
            args.insert(TURN_TOKEN.to_owned(), old);
        }
        for key in args.keys() {
            if !self.props.iter().any(|p| p.name == key) {
                let known: Vec<&str> = self.props.iter().map(|p| p.name).collect();
                return Err(if known.is_empty() {
                    format!("unknown argument {key:?}: {} takes none", self.name)
                } else {
                    format!(
                        "unknown argument {key:?}; {} takes {}",
                        self.name,
                        known.join(", ")
                    )
                });
            }
        }
        if !self.needs_one_of.is_empty()
            && !self.needs_one_of.iter().any(|n| {
                args.get(*n)
                    .is_some_and(|v| !v.is_null() && v != &json!(false))
            })
        {
            return Err(format!(
                "{} needs {}",
                self.name,
                self.needs_one_of.join(" or ")
            ));
        }
        let mut argv = vec![format!("--agent={agent}")];
        argv.extend(self.command.iter().map(|s| (*s).to_owned()));
        let mut trailing = Vec::new();
        for p in self.props {
            let Some(v) = args.get(p.name).filter(|v| !v.is_null()) else {
                if p.required {
                    return Err(format!("{} is required: {}", p.name, p.desc));
                }
                continue;
            };
            let wrong = || format!("{} must be {}", p.name, p.ty.words());
            match (p.ty, v) {
                (Ty::Str, Value::String(s)) => {
                    if !p.choices.is_empty() && !p.choices.contains(&s.as_str()) {
                        return Err(format!(
                            "{} must be one of {}",
                            p.name,
                            p.choices.join(", ")
                        ));
                    }
                    match p.arg {
                        Arg::Positional if s.starts_with('-') || s.is_empty() => {
                            return Err(format!("{} {s:?} is not an id", p.name));
                        }
                        Arg::Positional => argv.push(s.clone()),
                        Arg::Flag(f) => argv.push(format!("{f}={s}")),
                        _ => unreachable!("string properties are positional or flags"),
                    }
                }
                (Ty::Int, Value::Number(n)) => {
                    let (Some(n), Arg::Flag(f)) = (n.as_u64(), p.arg) else {
                        return Err(wrong());
                    };
                    argv.push(format!("{f}={n}"));
                }
                (Ty::Bool, Value::Bool(b)) => match (p.arg, b) {
                    (Arg::Switch(f), true) | (Arg::Toggle(f, _), true) => argv.push(f.to_owned()),
                    (Arg::Toggle(_, f), false) => argv.push(f.to_owned()),
                    _ => {}
                },
                (Ty::List, Value::Array(items)) => {
                    let items: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    if items.len() != v.as_array().map_or(0, Vec::len) {
                        return Err(wrong());
                    }
                    match p.arg {
                        Arg::Repeat(f) => argv.extend(items.iter().map(|s| format!("{f}={s}"))),
                        Arg::Trailing if items.is_empty() && p.required => {
                            return Err(format!("{} must name a program to run", p.name));
                        }
                        Arg::Trailing => trailing.extend(items.iter().map(|s| (*s).to_owned())),
                        _ => unreachable!("list properties repeat or trail"),
                    }
                }
                _ => return Err(wrong()),
            }
        }
        if !trailing.is_empty() {
            argv.push("--".to_owned());
            argv.extend(trailing);
        }
        Ok(argv)
    }

    /// A clap error for this tool's argv, in the tool's words: flags become
    /// the argument names the call used.
    pub fn explain(&self, clap_message: &str) -> String {
        let first = clap_message
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ");
        let mut text = first.to_owned();
        for p in self.props {
            let flag = match p.arg {
                Arg::Flag(f) | Arg::Switch(f) | Arg::Repeat(f) | Arg::Toggle(f, _) => f,
                Arg::Positional | Arg::Trailing => continue,
            };
            // `'--ttl <DURATION>'` and `'--ttl'` both become `ttl`.
            while let Some(start) = text.find(&format!("'{flag}")) {
                let end = text[start + 1..]
                    .find('\'')
                    .map_or(text.len(), |e| start + e + 2);
                text.replace_range(start..end, p.name);
            }
        }
        format!("{}: {text}", self.name)
    }
}
