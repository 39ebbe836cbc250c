//! Caps of the file tools (the documented defaults; configurable through `[limits]`).

/// Caps shared by the file tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsLimits {
    /// Default and maximum `limit` of read.
    pub read_limit: u64,
    /// Byte budget of one read window (UTF-8 bytes).
    pub read_max_bytes: u64,
    /// Longest line read shows before truncating it (UTF-16 code units).
    pub read_max_line_length: u64,
    pub glob_max_results: u64,
    pub grep_max_matches: u64,
    /// Preview length of one grep line (UTF-8 bytes).
    pub grep_max_line_bytes: u64,
    /// Bound on the compact-JSON size of search meta.
    pub search_meta_max_bytes: u64,
    /// Round-robin sampling of over-cap glob results across top-level entries.
    pub glob_sample_over_cap: bool,
}

impl Default for FsLimits {
    fn default() -> Self {
        FsLimits {
            read_limit: 2000,
            read_max_bytes: 51_200,
            read_max_line_length: 2000,
            glob_max_results: 100,
            grep_max_matches: 250,
            grep_max_line_bytes: 2000,
            search_meta_max_bytes: 65_536,
            glob_sample_over_cap: true,
        }
    }
}

/// `[limits]`: the file tools' caps, every key optional.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSection {
    read_limit: Option<u64>,
    read_max_bytes: Option<u64>,
    read_max_line_length: Option<u64>,
    glob_max_results: Option<u64>,
    grep_max_matches: Option<u64>,
    grep_max_line_bytes: Option<u64>,
    search_meta_max_bytes: Option<u64>,
    glob_sample_over_cap: Option<bool>,
}

impl toolhost_contract::config::Section for LimitsSection {
    type Settings = FsLimits;

    fn apply(self, limits: &mut FsLimits, _layer: &mut toolhost_contract::config::Layer<'_>) {
        macro_rules! set {
            ($($field:ident),*) => {
                $(if let Some(v) = self.$field {
                    limits.$field = v;
                })*
            };
        }
        set!(
            read_limit,
            read_max_bytes,
            read_max_line_length,
            glob_max_results,
            grep_max_matches,
            grep_max_line_bytes,
            search_meta_max_bytes,
            glob_sample_over_cap
        );
    }

    /// Every cap may be lowered, never raised above what is configured (a workspace could
    /// otherwise make one call return, and hold in memory, as much as it likes);
    /// `glob_sample_over_cap` only chooses which of the capped results are shown, so it stays.
    fn restrict_untrusted(&mut self, applied: &FsLimits) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        macro_rules! cap {
            ($($field:ident),*) => {
                $(dropped.cap(concat!("limits.", stringify!($field)), &mut self.$field, applied.$field);)*
            };
        }
        cap!(
            read_limit,
            read_max_bytes,
            read_max_line_length,
            glob_max_results,
            grep_max_matches,
            grep_max_line_bytes,
            search_meta_max_bytes
        );
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::config::Section;

    #[test]
    fn an_untrusted_source_may_lower_the_file_caps_but_not_raise_them() {
        let mut section = LimitsSection {
            read_limit: Some(10),
            read_max_bytes: Some(1_000_000),
            read_max_line_length: Some(2000),
            glob_max_results: Some(5),
            grep_max_matches: Some(9999),
            grep_max_line_bytes: Some(10),
            search_meta_max_bytes: Some(100_000),
            glob_sample_over_cap: Some(false),
        };
        let dropped = section.restrict_untrusted(&FsLimits::default());
        assert_eq!(
            dropped,
            ["limits.read_max_bytes/limits.grep_max_matches/limits.search_meta_max_bytes"]
        );
        assert_eq!(section.read_limit, Some(10));
        assert_eq!(section.read_max_line_length, Some(2000), "equal to the cap: unchanged");
        assert_eq!(section.glob_max_results, Some(5));
        assert_eq!(section.grep_max_line_bytes, Some(10));
        assert_eq!(section.glob_sample_over_cap, Some(false));
        assert_eq!(
            (section.read_max_bytes, section.grep_max_matches, section.search_meta_max_bytes),
            (None, None, None)
        );
    }
}
