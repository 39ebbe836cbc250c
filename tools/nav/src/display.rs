//! How the `lsp` tool names a location's file (docs/tools.md, lsp): `file:` URIs become
//! paths relative to the resolved workspace URI (`.` for the root itself), paths outside it stay
//! absolute; non-`file:` or unparsable URIs, paths with a NUL or an encoded separator stay
//! verbatim. A workspace URI with a host or a `/X:` drive selects Windows rules (output with `/`,
//! case-insensitive comparison).

use toolhost_contract::lsp::percent_decode;

struct FileUri {
    /// The decoded path with `/` separators (`/a/b`, `C:/a`, `//host/share/a`).
    path: String,
    windows: bool,
}

fn parse(uri: &str, windows_hint: Option<bool>) -> Option<FileUri> {
    let scheme = uri.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = &uri[7..];
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, raw_path) = match rest.find('/') {
        Some(idx) => (&rest[..idx], &rest[idx..]),
        None => (rest, ""),
    };
    let lower = raw_path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") {
        return None;
    }
    let decoded = String::from_utf8(percent_decode(raw_path)?).ok()?;
    if decoded.contains('\0') {
        return None;
    }
    let host = !authority.is_empty() && !authority.eq_ignore_ascii_case("localhost");
    let bytes = decoded.as_bytes();
    let drive =
        bytes.len() >= 3 && bytes[0] == b'/' && bytes[1].is_ascii_alphabetic() && bytes[2] == b':';
    let windows = windows_hint.unwrap_or(host || drive);
    let path = if host {
        if !windows {
            return None;
        }
        format!("//{authority}{decoded}")
    } else if windows && drive {
        decoded[1..].to_owned()
    } else {
        decoded
    };
    let path = if windows { path.replace('\\', "/") } else { path };
    if path.is_empty() {
        return None;
    }
    Some(FileUri { path, windows })
}

fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".").collect()
}

/// The display form of `uri` relative to `workspace_uri`.
pub fn display_uri(uri: &str, workspace_uri: &str) -> String {
    let Some(workspace) = parse(workspace_uri, None) else { return uri.to_owned() };
    let Some(target) = parse(uri, Some(workspace.windows)) else { return uri.to_owned() };
    let root = components(&workspace.path);
    let path = components(&target.path);
    let same =
        |a: &str, b: &str| if workspace.windows { a.eq_ignore_ascii_case(b) } else { a == b };
    let prefix = path.len() >= root.len() && root.iter().zip(&path).all(|(a, b)| same(a, b));
    let unc = |p: &str| p.starts_with("//");
    if prefix && unc(&workspace.path) == unc(&target.path) {
        let rest = &path[root.len()..];
        if rest.is_empty() { ".".to_owned() } else { rest.join("/") }
    } else {
        target.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_paths() {
        let ws = "file:///home/u/proj";
        assert_eq!(display_uri("file:///home/u/proj/src/a.ts", ws), "src/a.ts");
        assert_eq!(display_uri("file:///home/u/proj", ws), ".");
        assert_eq!(display_uri("file:///home/u/other/b.ts", ws), "/home/u/other/b.ts");
        assert_eq!(display_uri("file:///home/u/project/x", ws), "/home/u/project/x");
        assert_eq!(display_uri("file:///home/u/proj/a%20b.c", ws), "a b.c");
        assert_eq!(display_uri("untitled:Untitled-1", ws), "untitled:Untitled-1");
        assert_eq!(display_uri("file:///home/u/proj/a%2Fb", ws), "file:///home/u/proj/a%2Fb");
        assert_eq!(display_uri("file:///home/u/proj/a%00b", ws), "file:///home/u/proj/a%00b");
        assert_eq!(display_uri("file:///home/u/proj/%zz", ws), "file:///home/u/proj/%zz");
        assert_eq!(display_uri("file://host/share/x", ws), "file://host/share/x");
    }

    #[test]
    fn windows_paths() {
        let ws = "file:///C:/Users/u/proj";
        assert_eq!(display_uri("file:///c:/users/u/proj/src/a.ts", ws), "src/a.ts");
        assert_eq!(display_uri("file:///D:/x/b.ts", ws), "D:/x/b.ts");
        let unc = "file://server/share/proj";
        assert_eq!(display_uri("file://server/share/proj/a.c", unc), "a.c");
        assert_eq!(display_uri("file://server/share/other.c", unc), "//server/share/other.c");
    }
}
