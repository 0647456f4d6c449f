//! A remote's URL as it may be shown and sent: git's `insteadOf` rules
//! applied, credentials taken out.
//!
//! The rule, one for every URL: over HTTP(S) and FTP(S) the whole user
//! part goes (`https://user:token@host/x` and `https://token@host/x`
//! become `https://host/x`: a token is as often written as the user as
//! the password). Over ssh (`ssh://`, `git+ssh://`, `ssh+git://` and
//! the scp-like `user@host:path`) the user stays (it names the account,
//! such as `git@`, and is no secret) and only a password goes
//! (`ssh://user:pw@host/x` becomes `ssh://user@host/x`). Paths and
//! `file://` URLs are left as they are.

use std::path::Path;

use super::output;

/// `url` without its credentials (see the module's rule).
pub fn strip_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // A path, or scp-like `user@host:path`, which has no password.
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let (user, host) = (&authority[..at], &authority[at + 1..]);
    let ssh = matches!(
        scheme.to_ascii_lowercase().as_str(),
        "ssh" | "git+ssh" | "ssh+git"
    );
    if ssh {
        let name = user.split_once(':').map_or(user, |(name, _)| name);
        format!("{scheme}://{name}@{host}{tail}")
    } else {
        format!("{scheme}://{host}{tail}")
    }
}

/// Where `remote` fetches from, `insteadOf` rules applied as git applies
/// them, credentials taken out; None when the repository has no such
/// remote.
pub fn remote_url(git_dir: &Path, remote: &str) -> Option<String> {
    let configured = super::config_values(git_dir, &format!("remote.{remote}.url")).ok()?;
    configured.first()?;
    let url = output(git_dir, &["ls-remote", "--get-url", remote]).ok()?;
    let url = url.trim();
    (!url.is_empty()).then(|| strip_credentials(url))
}

#[cfg(test)]
mod tests {
    use super::strip_credentials as s;

    #[test]
    fn http_loses_its_whole_user_part_and_ssh_keeps_its_user() {
        for (given, shown) in [
            (
                "https://user:token@host/org/web.git",
                "https://host/org/web.git",
            ),
            (
                "https://ghp_secret@host/org/web.git",
                "https://host/org/web.git",
            ),
            ("http://u:p@host:8080/x?y=1", "http://host:8080/x?y=1"),
            ("https://host/org/web.git", "https://host/org/web.git"),
            ("ssh://git@host/org/web.git", "ssh://git@host/org/web.git"),
            ("ssh://git:hunter2@host:22/x", "ssh://git@host:22/x"),
            ("git+ssh://ada:pw@host/x", "git+ssh://ada@host/x"),
            ("git@github.com:org/web.git", "git@github.com:org/web.git"),
            ("/srv/git/web.git", "/srv/git/web.git"),
            ("file:///srv/git/web.git", "file:///srv/git/web.git"),
            // An @ in the path is not a user part.
            ("https://host/a@b", "https://host/a@b"),
        ] {
            assert_eq!(s(given), shown, "{given}");
        }
    }
}
