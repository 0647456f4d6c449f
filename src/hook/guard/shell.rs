//! A shell command as the guard reads it: split into simple commands
//! outside quotes, each into words, with leading assignments and wrappers
//! (`sudo`, `env`, `nohup`, `npx`, …) skipped.

/// Splits a shell command into simple commands, outside quotes.
pub(super) fn segments(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == '\\' && q == '"' {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '\\' => {
                    cur.push(c);
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                }
                ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' => {
                    out.push(std::mem::take(&mut cur));
                }
                '$' if chars.peek() == Some(&'(') => {
                    out.push(std::mem::take(&mut cur));
                }
                _ => cur.push(c),
            },
        }
    }
    out.push(cur);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// Splits a simple command into words, removing quotes.
pub(super) fn words(segment: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some('\'') if c == '\'' => quote = None,
            Some('"') if c == '"' => quote = None,
            Some('"') if c == '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            Some(_) => cur.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                    in_word = true;
                }
                c if c.is_whitespace() => {
                    if in_word {
                        out.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                }
                _ => {
                    cur.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Drops `VAR=value` words and wrappers that run the rest as a command.
pub(super) fn strip_wrappers(words: &[String]) -> &[String] {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let name = w.rsplit('/').next().unwrap_or(w);
        if is_assignment(w) {
            i += 1;
            continue;
        }
        match name {
            "sudo" | "doas" | "env" | "time" | "nohup" | "command" | "exec" | "nice" | "xargs"
            | "npx" | "pnpx" | "bunx" | "timeout" | "stdbuf" | "caffeinate" => {
                i += 1;
                // Their own flags and values (`-u root`, `-n 10`, a timeout).
                while i < words.len() {
                    let a = words[i].as_str();
                    if a.starts_with('-') {
                        i += 1;
                        if matches!(a, "-u" | "-g" | "-n" | "-s" | "-k" | "-C" | "-I") {
                            i += 1;
                        }
                    } else if is_assignment(a)
                        || (name == "timeout"
                            && a.chars().next().is_some_and(|c| c.is_ascii_digit()))
                    {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "uv" | "poetry" | "pipenv" | "pdm" | "rye"
                if words.get(i + 1).is_some_and(|s| s == "run") =>
            {
                i += 2
            }
            "bundle" if words.get(i + 1).is_some_and(|s| s == "exec") => i += 2,
            _ => break,
        }
    }
    &words[i.min(words.len())..]
}

pub(super) fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((k, _)) => {
            !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}
