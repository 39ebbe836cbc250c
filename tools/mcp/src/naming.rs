//! Public names of bridged tools: `mcp__<server>__<raw>`, made safe for every model API.
//!
//! Model APIs accept tool names of `[A-Za-z0-9_-]{1,64}`. Every other character becomes `_`; when
//! that changed anything, or the name is longer than 64, the name is cut to 51 characters and
//! `_` plus the first 12 hex digits of `sha256(server + "\0" + raw)` is appended, so two raw
//! names that sanitize alike still get distinct public names. Calls always use the raw name.

use sha2::{Digest, Sha256};

/// The longest public name model APIs accept.
pub const MAX_NAME_LEN: usize = 64;
/// Where a sanitized or over-long name is cut before its hash suffix.
const CUT_LEN: usize = 51;

/// Whether `name` is a valid server name (`[A-Za-z0-9_-]{1,32}`).
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(allowed)
}

/// A server name made of any name (a client's label such as `py tools`): every character
/// [`valid_server_name`] refuses becomes `_`, cut at 32. Valid unless `name` is empty.
pub fn server_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii() && allowed(c as u8) { c } else { '_' }).take(32).collect()
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The registry name of the tool `raw` of the server `server`.
pub fn public_name(server: &str, raw: &str) -> String {
    let joined = format!("mcp__{server}__{raw}");
    let sanitized: String =
        joined.chars().map(|c| if c.is_ascii() && allowed(c as u8) { c } else { '_' }).collect();
    if sanitized == joined && sanitized.len() <= MAX_NAME_LEN {
        return sanitized;
    }
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0u8]);
    hasher.update(raw.as_bytes());
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    // Every character of `sanitized` is ASCII, so cutting at a byte index is a char boundary.
    let cut = &sanitized[..sanitized.len().min(CUT_LEN)];
    format!("{cut}_{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_label_becomes_a_valid_server_name() {
        assert_eq!(server_name("py tools"), "py_tools");
        assert_eq!(server_name("café-2"), "caf_-2");
        assert_eq!(server_name(""), "");
        assert_eq!(server_name(&"x".repeat(40)).len(), 32);
        for name in ["py tools", "café-2", "ok_name"] {
            assert!(valid_server_name(&server_name(name)));
        }
    }

    #[test]
    fn plain_names_pass_through() {
        assert_eq!(public_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(public_name("fs", "read-file_2"), "mcp__fs__read-file_2");
    }

    #[test]
    fn changed_names_get_the_hash_suffix() {
        let name = public_name("fs", "read.file");
        let digest = Sha256::digest(b"fs\0read.file");
        let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        assert_eq!(name, format!("mcp__fs__read_file_{hex}"));
        // Two raw names that sanitize alike stay distinct.
        assert_ne!(public_name("fs", "a.b"), public_name("fs", "a/b"));
    }

    #[test]
    fn long_names_are_cut_to_51_and_suffixed() {
        let raw = "x".repeat(80);
        let name = public_name("server", &raw);
        assert_eq!(name.len(), 51 + 1 + 12);
        assert!(name.starts_with("mcp__server__xxx"));
        assert!(name.bytes().all(allowed));
        // Exactly 64 stays as it is.
        let raw = "y".repeat(64 - "mcp__s__".len());
        assert_eq!(public_name("s", &raw).len(), 64);
        assert_eq!(public_name("s", &raw), format!("mcp__s__{raw}"));
    }

    #[test]
    fn non_ascii_characters_are_replaced() {
        let name = public_name("s", "café");
        assert!(name.starts_with("mcp__s__caf__") || name.starts_with("mcp__s__caf_"));
        assert!(name.bytes().all(allowed));
    }

    #[test]
    fn server_names_follow_the_rule() {
        assert!(valid_server_name("everything"));
        assert!(valid_server_name("my-server_2"));
        assert!(!valid_server_name(""));
        assert!(!valid_server_name("has space"));
        assert!(!valid_server_name(&"a".repeat(33)));
    }
}
