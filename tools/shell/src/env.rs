//! The environment a command runs in: the server's own, minus credentials, plus settings that
//! keep non-interactive programs from waiting on a terminal (pagers, editors, prompts) or
//! painting colour codes into what the model reads.

use crate::config::ShellConfig;
use std::ffi::OsString;

/// Set for every command, last, so neither the inherited environment nor the configuration can
/// turn a pager or a credential prompt back on.
pub const FIXED: [(&str, &str); 6] = [
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Whether a variable's name matches one of the scrub patterns (case-insensitive substring).
pub fn is_scrubbed(name: &str, patterns: &[String]) -> bool {
    let upper = name.to_ascii_uppercase();
    patterns.iter().any(|p| !p.is_empty() && upper.contains(&p.to_ascii_uppercase()))
}

/// The environment of one command, built from `base` (the server's environment).
pub fn command_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    config: &ShellConfig,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(name, _)| match name.to_str() {
            Some(name) => !is_scrubbed(name, &config.scrub),
            // A name that is not UTF-8 cannot be checked against the patterns: drop it.
            None => false,
        })
        .collect();
    let mut set = |name: &str, value: &str| {
        env.retain(|(n, _)| n != name);
        env.push((name.into(), value.into()));
    };
    for (name, value) in &config.env {
        set(name, value);
    }
    for (name, value) in FIXED {
        set(name, value);
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_scrubbed_and_pagers_disabled() {
        let base = [("OPENAI_API_KEY", "x"), ("GH_TOKEN", "y"), ("HOME", "/h"), ("PAGER", "less")]
            .map(|(a, b)| (OsString::from(a), OsString::from(b)));
        let env = command_env(base, &ShellConfig::default());
        let names: Vec<_> = env.iter().map(|(n, _)| n.to_string_lossy().into_owned()).collect();
        assert!(!names.iter().any(|n| n == "OPENAI_API_KEY" || n == "GH_TOKEN"));
        assert!(names.contains(&"HOME".to_owned()));
        let pager = env.iter().find(|(n, _)| n == "PAGER").map(|(_, v)| v.clone());
        assert_eq!(pager, Some(OsString::from("cat")));
        assert!(env.iter().any(|(n, v)| n == "GIT_TERMINAL_PROMPT" && v == "0"));
    }

    #[test]
    fn scrub_patterns_are_case_insensitive_substrings() {
        let patterns = vec!["secret".to_owned()];
        assert!(is_scrubbed("MY_SECRET_X", &patterns));
        assert!(is_scrubbed("client_secret", &patterns));
        assert!(!is_scrubbed("PATH", &patterns));
    }
}
