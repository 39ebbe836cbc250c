//! Bounds on what compiling a caller's pattern may cost.
//!
//! A pattern is parsed into a syntax tree and compiled into automata before any file is read, and
//! both grow with the pattern: a 10 MiB grep pattern took the server from 13 MiB to over 1 GiB,
//! most of it kept afterwards. So every pattern the search compiles — grep's regex, grep's
//! `include`, the glob — is refused over [`MAX_PATTERN_BYTES`] before it is parsed, and the regex
//! engine is held to [`REGEX_SIZE_LIMIT`] for the compiled program (a short pattern such as
//! `\w{1000}{1000}` expands past it) and to [`REGEX_DFA_SIZE_LIMIT`] for the lazy DFA's cache,
//! which grows while searching, once per searching thread (past it the cache is cleared and the
//! search goes on, slower). Globs are compiled by `globset` under its own fixed limits (10 MiB
//! each), so for them the length cap is the bound.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};

use super::{SearchError, SearchTool};

/// The longest pattern, `include` or glob accepted, in bytes. Far above any hand-written pattern
/// (a few hundred alternated identifiers fit), far below what makes parsing costly: the syntax
/// tree of a pattern this long stays within a few MiB.
pub const MAX_PATTERN_BYTES: usize = 64 * 1024;

/// The largest compiled regex (the NFA the engines are built from), in bytes. The regex crate's
/// own default is 10 MiB and ripgrep's 100 MiB; this leaves room for large alternations while
/// keeping a refused pattern's cost small.
pub const REGEX_SIZE_LIMIT: usize = 16 * 1024 * 1024;

/// The lazy DFA's cache per searching thread, in bytes (ripgrep's default is 1000 MiB: a few
/// threads could hold gigabytes for one pathological pattern).
pub const REGEX_DFA_SIZE_LIMIT: usize = 16 * 1024 * 1024;

/// Which argument a pattern came from, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternArg {
    /// The `pattern` argument (grep's regex, glob's glob).
    Pattern,
    /// grep's `include` glob.
    Include,
}

impl PatternArg {
    /// The argument's name as the model writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pattern => "pattern",
            Self::Include => "include",
        }
    }
}

/// Refuses a pattern longer than [`MAX_PATTERN_BYTES`], before anything parses it.
pub(super) fn check_length(
    tool: SearchTool,
    arg: PatternArg,
    pattern: &str,
) -> Result<(), SearchError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(SearchError::PatternTooLong {
            tool,
            arg,
            bytes: pattern.len(),
            limit: MAX_PATTERN_BYTES,
        });
    }
    Ok(())
}

/// grep's matcher for `pattern`: ripgrep's default settings under this module's bounds.
pub(super) fn regex_matcher(pattern: &str) -> Result<RegexMatcher, SearchError> {
    let tool = SearchTool::Grep;
    check_length(tool, PatternArg::Pattern, pattern)?;
    RegexMatcherBuilder::new()
        // Same matcher settings as ripgrep's defaults; the line terminator also enables the
        // searcher's whole-buffer fast path instead of line-by-line matching.
        .multi_line(true)
        .octal(false)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build(pattern)
        .map_err(|err| {
            // grep-regex reports errors against its wrapped pattern (`(?:…)`); parse the
            // original so the message points into what the model wrote, as ripgrep does.
            match regex_syntax::Parser::new().parse(pattern) {
                Err(original) => SearchError::InvalidPattern(tool, original.to_string()),
                // The pattern parses, so compiling it failed: only the size limit refuses a
                // pattern that parses (grep-regex keeps no other kind for it).
                Ok(_) if is_size_limit(&err) => {
                    SearchError::CompiledTooLarge { tool, limit: REGEX_SIZE_LIMIT }
                }
                Ok(_) => SearchError::InvalidPattern(tool, err.to_string()),
            }
        })
}

/// Whether grep-regex refused the pattern for its compiled size. Its error keeps only a message
/// for that case, so the message it is known to build is matched.
fn is_size_limit(err: &grep_regex::Error) -> bool {
    matches!(err.kind(), grep_regex::ErrorKind::Regex(message)
        if message.starts_with("compiled regex exceeds size limit"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_patterns_are_refused_before_parsing() {
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        let err = regex_matcher(&long).unwrap_err();
        assert_eq!(err.code(), "SEARCH_PATTERN_TOO_LARGE");
        assert_eq!(
            err.to_string(),
            format!(
                "grep pattern is {} bytes, over the limit of 65536 bytes; use a shorter pattern",
                MAX_PATTERN_BYTES + 1
            )
        );
        assert!(regex_matcher(&"a".repeat(MAX_PATTERN_BYTES)).is_ok());
    }

    #[test]
    fn patterns_that_compile_too_large_are_refused() {
        let err = regex_matcher(r"\w{1000}{1000}").unwrap_err();
        assert_eq!(err.code(), "SEARCH_PATTERN_TOO_LARGE");
        assert_eq!(
            err.to_string(),
            "grep pattern compiles to more than the regex engine's limit of 16777216 bytes; \
             use a simpler pattern (fewer or smaller repetitions and alternations)"
        );
    }

    #[test]
    fn long_globs_and_includes_are_refused() {
        let long = "*".repeat(MAX_PATTERN_BYTES + 1);
        let workdir = std::path::Path::new("/");
        let err = super::super::glob_overrides(workdir, &long).unwrap_err();
        assert_eq!(err.code(), "SEARCH_PATTERN_TOO_LARGE");
        assert_eq!(
            err.to_string(),
            "glob pattern is 65537 bytes, over the limit of 65536 bytes; use a shorter pattern"
        );
        let err = super::super::include_overrides(workdir, &long).unwrap_err();
        assert_eq!(
            err.to_string(),
            "grep include is 65537 bytes, over the limit of 65536 bytes; use a shorter include"
        );
    }

    #[test]
    fn syntax_errors_keep_their_code() {
        let err = regex_matcher("(unclosed").unwrap_err();
        assert_eq!(err.code(), "SEARCH_INVALID_PATTERN");
    }
}
