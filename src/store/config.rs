//! The repository's git configuration and the identities it names.

use gix::bstr::ByteSlice;

use super::{Person, Store};

impl Store {
    /// A git config value as a string.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// Every value of a multi-valued git config key (`remote.<r>.fetch`),
    /// as read when the store was opened.
    pub fn config_values(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .strings(key)
            .unwrap_or_default()
            .iter()
            .map(|v| v.to_str_lossy().into_owned())
            .collect()
    }

    /// A git config value set in the repository's own or the user's global
    /// config only: never the system's, the environment's or `-c`.
    pub fn config_local_or_global(&self, key: &str) -> Option<String> {
        use gix::config::Source;
        self.repo
            .config_snapshot()
            .string_filter(key, |m| {
                matches!(
                    m.source,
                    Source::Local | Source::Worktree | Source::User | Source::Git
                )
            })
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// A git config value as a boolean.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        self.repo.config_snapshot().boolean(key)
    }

    /// The user's configured identity (`user.name`/`user.email`, or the
    /// `GIT_AUTHOR_*` environment), if complete.
    pub fn user(&self) -> Option<Person> {
        self.identity("author")
    }

    /// The configured committer, if complete.
    pub fn committer(&self) -> Option<Person> {
        self.identity("committer")
    }

    /// A name and email as gix's `Repository::author()`/`committer()`
    /// resolve them (`GIT_AUTHOR_*`/`GIT_COMMITTER_*`, then `author.*`/
    /// `committer.*`, then `user.*`, then `EMAIL`, then gix's fallbacks;
    /// name and email independently), read from the same resolved config
    /// but without their timestamp: computing that makes gix ask for the
    /// local time zone, and jiff then lists the whole zoneinfo database,
    /// about a fifth of a tick's instructions. loopx writes its own times.
    fn identity(&self, role: &str) -> Option<Person> {
        let config = self.repo.config_snapshot();
        let first = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| config.string(*k))
                .map(|v| v.to_str_lossy().trim().to_owned())
        };
        let name = first(&[
            &format!("{role}.name"),
            "user.name",
            &format!("gitoxide.{role}.nameFallback"),
        ])?;
        let email = first(&[
            &format!("{role}.email"),
            "user.email",
            "gitoxide.user.emailFallback",
            &format!("gitoxide.{role}.emailFallback"),
        ])?;
        (!name.is_empty() && !email.is_empty()).then_some(Person { name, email })
    }
}
