//! The layering rules of docs/design.md, checked against the source: the
//! arrows point down (`cli → cmd → tx → op → model`, `tx → store`), the
//! store knows neither op nor model, gix lives only in `store.rs`, the
//! system git is started only from `git.rs`, commands reach the state only
//! through `tx` and `history`, and the rules never spell a CLI command (they
//! name a [`Next`](crate::next::Next) step). A test, so a change that breaks a rule
//! fails the suite instead of waiting for review.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("src is readable") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// Every source file as (path relative to src, text without the
    /// `#[cfg(test)]` tail, where tests may reach anywhere).
    fn files() -> Vec<(String, String)> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = Vec::new();
        sources(&src, &mut paths);
        paths
            .into_iter()
            .map(|p| {
                let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(&p).unwrap();
                let code = match text.find("#[cfg(test)]") {
                    Some(i) => text[..i].to_owned(),
                    None => text,
                };
                (rel, code)
            })
            .filter(|(rel, _)| !rel.ends_with("tests.rs") && !rel.contains("/tests/"))
            .collect()
    }

    fn offenders(in_files: impl Fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
        let mut bad = Vec::new();
        for (rel, code) in files() {
            if !in_files(&rel) {
                continue;
            }
            for n in needles {
                if code.contains(n) {
                    bad.push(format!("{rel}: {n}"));
                }
            }
        }
        bad
    }

    #[test]
    fn op_and_model_know_nothing_of_git_or_commands() {
        let bad = offenders(
            |f| f.starts_with("op/") || f.starts_with("model/"),
            &[
                "crate::store",
                "crate::tx",
                "crate::git",
                "crate::ctx",
                "crate::cmd",
                "crate::cli",
                "crate::sync",
                "crate::history",
                "gix::",
            ],
        );
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn the_layers_below_the_commands_take_the_repository_not_the_context() {
        // `Ctx` (environment, caller, output) stops at the front ends; sync
        // and verify take a `Repo` and explicit values, and never print.
        let bad = offenders(
            |f| f.starts_with("sync/") || f == "verify.rs" || f == "repo.rs",
            &[
                "crate::ctx",
                "Ctx",
                "crate::output",
                "println!",
                "eprintln!",
            ],
        );
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn the_store_knows_neither_op_nor_model() {
        let bad = offenders(|f| f.starts_with("store/"), &["crate::op", "crate::model"]);
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn gix_only_in_the_store() {
        let bad = offenders(|f| !f.starts_with("store/"), &["gix::", "use gix"]);
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn the_system_git_only_from_git_rs() {
        let bad = offenders(|f| f != "git.rs", &["Command::new(\"git\")"]);
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn rules_name_next_steps_and_never_spell_commands() {
        // Hints in op and model name a `Next` step; the front ends spell it.
        let bad = offenders(
            |f| f.starts_with("op/") || f.starts_with("model/"),
            &["`loopx ", "run `loopx", "with `loopx"],
        );
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn commands_do_not_import_the_command_line() {
        let bad = offenders(|f| f.starts_with("cmd/"), &["crate::cli"]);
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn commands_reach_the_state_through_tx_and_history() {
        let state_calls: Vec<String> = [
            "tip(",
            "resolve(",
            "read_files(",
            "read_files_under(",
            "read_file(",
            "write_commit(",
            "cas(",
            "cas_ref(",
            "history(",
            "entry(",
            "diff_trees(",
            "message(",
            "first_parents(",
            "commit_by_prefix(",
            "merge_base(",
            "is_ancestor(",
        ]
        .iter()
        .map(|m| format!("store()?.{m}"))
        .collect();
        let needles: Vec<&str> = state_calls.iter().map(String::as_str).collect();
        let bad = offenders(|f| f.starts_with("cmd/"), &needles);
        assert!(bad.is_empty(), "{bad:#?}");
    }
}
