//! Write-scope globs and whether two of them can match the same path.
//!
//! A scope is a path pattern: `*` matches within one path segment, `**`
//! across segments, `?` one character other than `/`. A pattern without
//! wildcards names a file or a whole directory (`src/parser` covers
//! `src/parser/lexer.rs`), and a trailing `/` means the directory. Two scopes
//! overlap when some path matches both; that is decided exactly, by a search
//! over pairs of pattern positions.

use std::collections::{HashSet, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Lit(char),
    /// `?`: one character, not `/`.
    One,
    /// `*`: any run of characters without `/`.
    Star,
    /// `**`: any run of characters.
    Any,
}

/// Which characters a token can consume.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Exactly(char),
    NotSlash,
    All,
}

impl Tok {
    fn class(self) -> Class {
        match self {
            Tok::Lit(c) => Class::Exactly(c),
            Tok::One | Tok::Star => Class::NotSlash,
            Tok::Any => Class::All,
        }
    }

    fn repeats(self) -> bool {
        matches!(self, Tok::Star | Tok::Any)
    }
}

fn meet(a: Class, b: Class) -> bool {
    match (a, b) {
        (Class::Exactly(x), Class::Exactly(y)) => x == y,
        (Class::Exactly(c), Class::NotSlash) | (Class::NotSlash, Class::Exactly(c)) => c != '/',
        _ => true,
    }
}

fn tokens(pattern: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push(Tok::Any);
            }
            '*' => out.push(Tok::Star),
            '?' => out.push(Tok::One),
            c => out.push(Lit(c)),
        }
    }
    out
}

use Tok::Lit;

/// The patterns a scope stands for: a wildcard-free path also covers
/// everything below it.
fn expand(scope: &str) -> Vec<Vec<Tok>> {
    let s = scope.trim().trim_start_matches("./");
    if s.contains(['*', '?']) {
        return vec![tokens(s)];
    }
    let dir = s.trim_end_matches('/');
    vec![tokens(dir), tokens(&format!("{dir}/**"))]
}

fn intersect(a: &[Tok], b: &[Tok]) -> bool {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(0usize, 0usize)]);
    while let Some((i, j)) = queue.pop_front() {
        if !seen.insert((i, j)) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        // A repeating token may match nothing.
        if i < a.len() && a[i].repeats() {
            queue.push_back((i + 1, j));
        }
        if j < b.len() && b[j].repeats() {
            queue.push_back((i, j + 1));
        }
        // Both consume one common character.
        if i < a.len() && j < b.len() && meet(a[i].class(), b[j].class()) {
            let ni = if a[i].repeats() { i } else { i + 1 };
            let nj = if b[j].repeats() { j } else { j + 1 };
            queue.push_back((ni, nj));
        }
    }
    false
}

/// Whether some path matches both scopes.
pub fn overlap(a: &str, b: &str) -> bool {
    expand(a)
        .iter()
        .any(|pa| expand(b).iter().any(|pb| intersect(pa, pb)))
}

/// The first pair of overlapping scopes between two lists.
pub fn first_overlap<'a>(a: &'a [String], b: &'a [String]) -> Option<(&'a str, &'a str)> {
    a.iter().find_map(|x| {
        b.iter()
            .find(|y| overlap(x, y))
            .map(|y| (x.as_str(), y.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::overlap;

    #[test]
    fn overlapping_scopes() {
        for (a, b) in [
            ("src/**", "src/parser/lexer.rs"),
            ("src/parser", "src/parser/lexer.rs"),
            ("src/parser/", "src/parser/x/y.rs"),
            ("src/*.rs", "src/lib.rs"),
            ("src/*.rs", "src/m?in.rs"),
            ("**/*.md", "docs/guide.md"),
            ("docs/**", "**/*.md"),
            ("a/*/c", "a/b/*"),
            ("./src/lib.rs", "src/lib.rs"),
        ] {
            assert!(overlap(a, b), "{a} ∩ {b}");
            assert!(overlap(b, a), "{b} ∩ {a}");
        }
    }

    #[test]
    fn disjoint_scopes() {
        for (a, b) in [
            ("src/**", "docs/**"),
            ("src/*.rs", "src/*.md"),
            ("src/*.rs", "src/parser/lexer.rs"),
            ("src/parser", "src/parsers"),
            ("a/?", "a/bc"),
            ("docs/*.md", "docs/api/x.md"),
        ] {
            assert!(!overlap(a, b), "{a} ∩ {b}");
            assert!(!overlap(b, a), "{b} ∩ {a}");
        }
    }
}
