//! Where a language server runs in an execution world, it sees the workspace under the world's
//! root (`/workspace`, `/srv/repo`) while the editor and every card name this machine's root.
//! [`UriMap`] rewrites one into the other in each message body, both ways: `file://` URIs and
//! plain paths (`rootPath`) that start with a root, at a path boundary only (so `/repo2` is not
//! taken for `/repo`).

/// The two spellings of the workspace root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriMap {
    /// This machine's root (absolute path) and its `file:` URI.
    pub local_path: String,
    pub local_uri: String,
    /// The world's root (absolute path) and its `file:` URI.
    pub remote_path: String,
    pub remote_uri: String,
}

impl UriMap {
    /// For the roots `local` and `remote`, absolute paths; `None` when they are the same.
    pub fn new(local: &str, remote: &str) -> Option<UriMap> {
        let local = local.trim_end_matches('/');
        let remote = remote.trim_end_matches('/');
        if local == remote {
            return None;
        }
        Some(UriMap {
            local_path: local.to_owned(),
            local_uri: format!("file://{}", encode_path(local)),
            remote_path: remote.to_owned(),
            remote_uri: format!("file://{}", encode_path(remote)),
        })
    }

    /// A body on its way to the server.
    pub fn outgoing(&self, body: Vec<u8>) -> Vec<u8> {
        let body = replace_prefixed(body, &self.local_uri, &self.remote_uri);
        replace_prefixed(body, &self.local_path, &self.remote_path)
    }

    /// A body from the server.
    pub fn incoming(&self, body: Vec<u8>) -> Vec<u8> {
        let body = replace_prefixed(body, &self.remote_uri, &self.local_uri);
        replace_prefixed(body, &self.remote_path, &self.local_path)
    }
}

/// The path as a URI path: every byte but unreserved characters and `/` percent-encoded, as
/// `file:` URIs of the servers are written.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char);
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Replaces every JSON string that starts with `from` (right after its opening quote) followed
/// by `/`, `"` or the end of the string, with `to` in its place.
fn replace_prefixed(body: Vec<u8>, from: &str, to: &str) -> Vec<u8> {
    let needle = format!("\"{from}");
    let needle = needle.as_bytes();
    if !body.windows(needle.len()).any(|w| w == needle) {
        return body;
    }
    let mut out = Vec::with_capacity(body.len() + 64);
    let mut rest = body.as_slice();
    while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
        let after = rest.get(at + needle.len()).copied();
        out.extend_from_slice(&rest[..at]);
        if matches!(after, Some(b'/' | b'"')) {
            out.push(b'"');
            out.extend_from_slice(to.as_bytes());
        } else {
            out.extend_from_slice(needle);
        }
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_paths_under_the_root_are_mapped_both_ways_and_nothing_else() {
        let map = UriMap::new("/home/me/my repo", "/workspace").unwrap();
        let sent = br#"{"rootUri":"file:///home/me/my%20repo","rootPath":"/home/me/my repo","a":"file:///home/me/my%20repo/src/a.c","b":"file:///home/me/my%20repo2/x","c":"see /home/me/my repo"}"#;
        let out = String::from_utf8(map.outgoing(sent.to_vec())).unwrap();
        assert_eq!(
            out,
            r#"{"rootUri":"file:///workspace","rootPath":"/workspace","a":"file:///workspace/src/a.c","b":"file:///home/me/my%20repo2/x","c":"see /home/me/my repo"}"#
        );
        let back = String::from_utf8(map.incoming(out.into_bytes())).unwrap();
        assert_eq!(back.as_bytes(), sent);
        assert_eq!(UriMap::new("/same", "/same/"), None);
    }
}
