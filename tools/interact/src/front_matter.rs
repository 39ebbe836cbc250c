//! A skill file's front matter: the YAML mapping between a first line `---` and the next `---`
//! line, read the way a YAML 1.2 parser reads the small mappings skill files hold. What the
//! mapping's keys say about the skill is decided in `skill.rs`; here only the YAML: top-level
//! `key: value` entries whose values are plain, quoted or block scalars (typed by the core
//! schema: `true`, `12`, `~` are not strings), or nested collections (kept only as "not a
//! scalar"). Text a YAML parser refuses (a plain value holding `: `, a duplicate key, a bad
//! escape) is refused here too, so a skill is skipped exactly when the reference skips it.

/// A top-level value, as far as skill discovery needs to know it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Number(f64),
    Str(String),
    /// A sequence or a mapping.
    Collection,
}

/// The front matter's YAML text and the text after its closing line, or `None` when the file
/// has no front matter (its first line is not exactly `---`, or nothing closes it).
pub(crate) fn split(text: &str) -> Option<(&str, &str)> {
    let first_end = text.find('\n')?;
    if strip_cr(&text[..first_end]) != "---" {
        return None;
    }
    let mut start = first_end + 1;
    loop {
        let end = text[start..].find('\n').map(|i| start + i);
        let line = strip_cr(&text[start..end.unwrap_or(text.len())]);
        if line == "---" {
            let body = end.map_or("", |e| &text[e + 1..]);
            return Some((&text[first_end + 1..start], body));
        }
        start = end? + 1;
    }
}

fn strip_cr(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// The entries of a YAML mapping, in order; `Err` when the text is not one (a scalar, a
/// sequence, nothing at all) or does not parse.
pub(crate) fn parse_mapping(yaml: &str) -> Result<Vec<(String, Node)>, String> {
    // The text's last line break ends its last line; it does not start another.
    let lines: Vec<&str> =
        yaml.strip_suffix('\n').unwrap_or(yaml).split('\n').map(strip_cr).collect();
    let mut entries: Vec<(String, Node)> = Vec::new();
    let mut base: Option<usize> = None;
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        at += 1;
        if is_blank(line) || is_comment(line) {
            continue;
        }
        if line.starts_with('\t') {
            return Err("tabs cannot indent YAML".to_owned());
        }
        let own = indent(line);
        let base = *base.get_or_insert(own);
        if own != base {
            return Err(format!("unexpected indentation: {line:?}"));
        }
        let (key, rest) = split_key(line.trim_start())?;
        // The lines that belong to this entry's value: more indented ones, blank ones, and the
        // items of a sequence written at the key's own indentation (`key:` then `- item`).
        let bare = rest.is_empty() || rest.starts_with('#');
        let belongs = |line: &str| {
            let item = line.trim_start() == "-" || line.trim_start().starts_with("- ");
            is_blank(line) || indent(line) > base || (bare && indent(line) == base && item)
        };
        let from = at;
        while at < lines.len() && belongs(lines[at]) {
            at += 1;
        }
        let node = value(rest, &lines[from..at], base)?;
        if entries.iter().any(|(k, _)| *k == key) {
            return Err(format!("map keys must be unique: {key:?}"));
        }
        entries.push((key, node));
    }
    if entries.is_empty() {
        return Err("the front matter is not a mapping".to_owned());
    }
    Ok(entries)
}

/// `key: rest` of a mapping line (the key plain or quoted).
fn split_key(line: &str) -> Result<(String, &str), String> {
    let not_mapping = || format!("not a mapping entry: {line:?}");
    if line.starts_with(['"', '\'']) {
        let (key, after) = quoted(line)?;
        let rest = after.trim_start().strip_prefix(':').ok_or_else(not_mapping)?;
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            return Err(not_mapping());
        }
        return Ok((key, rest.trim_start()));
    }
    // A sequence item, a complex key, a flow collection, an alias, a block scalar: not a
    // `key: value` line.
    let indicator = line.starts_with(['?', '[', '{', '&', '*', '!', '|', '>', '%', '@', '`']);
    if indicator || line == "-" || line.starts_with("- ") {
        return Err(not_mapping());
    }
    let mut search = 0;
    while let Some(found) = line[search..].find(':') {
        let colon = search + found;
        let after = &line[colon + 1..];
        if after.is_empty() || after.starts_with([' ', '\t']) {
            let key = line[..colon].trim_end();
            if key.is_empty() || key.contains(" #") {
                return Err(not_mapping());
            }
            return Ok((key.to_owned(), after.trim_start()));
        }
        search = colon + 1;
    }
    Err(not_mapping())
}

/// The value whose first line's text after `key:` is `rest` and whose further lines are
/// `more` (indented beyond `base`, or blank).
fn value(rest: &str, more: &[&str], base: usize) -> Result<Node, String> {
    let rest = rest.trim_end();
    let (rest, tag) = properties(rest)?;
    let node = if rest.is_empty() || rest.starts_with('#') {
        nested(more)?
    } else if rest.starts_with(['|', '>']) {
        Node::Str(block(rest, more, base)?)
    } else if rest.starts_with(['"', '\'']) {
        let mut text = rest.to_owned();
        for line in more {
            text.push('\n');
            text.push_str(line);
        }
        let (string, after) = quoted(&text)?;
        let after = after.trim();
        if !(after.is_empty() || after.starts_with('#')) {
            return Err(format!("text after a quoted value: {after:?}"));
        }
        Node::Str(string)
    } else if rest.starts_with(['[', '{']) {
        Node::Collection
    } else if rest.starts_with(['*', '@', '`']) || rest.starts_with("- ") || rest == "-" {
        return Err(format!("unsupported value: {rest:?}"));
    } else {
        resolve(plain(rest, more)?)
    };
    Ok(match (tag, node) {
        (Some("!!str"), Node::Null) => Node::Str(String::new()),
        (Some("!!str"), Node::Bool(b)) => Node::Str(b.to_string()),
        (Some("!!str"), Node::Number(_)) => Node::Str(plain(rest, more)?),
        (_, node) => node,
    })
}

/// Strips an anchor (`&a`) and a tag (`!!str`) from the front of a value.
fn properties(mut rest: &str) -> Result<(&str, Option<&str>), String> {
    let mut tag = None;
    loop {
        if let Some(anchor) = rest.strip_prefix('&') {
            let end = anchor.find([' ', '\t']).unwrap_or(anchor.len());
            rest = anchor[end..].trim_start();
        } else if rest.starts_with('!') {
            let end = rest.find([' ', '\t']).unwrap_or(rest.len());
            tag = Some(&rest[..end]);
            rest = rest[end..].trim_start();
        } else {
            return Ok((rest, tag));
        }
    }
}

/// A value on the lines below its key: a sequence, a mapping, a multi-line plain scalar, or
/// nothing (null).
fn nested(more: &[&str]) -> Result<Node, String> {
    let Some(first) = more.iter().find(|l| !is_blank(l) && !is_comment(l)) else {
        return Ok(Node::Null);
    };
    let first = first.trim();
    if first == "-" || first.starts_with("- ") || split_key(first).is_ok() {
        return Ok(Node::Collection);
    }
    Ok(resolve(plain("", more)?))
}

/// A plain (unquoted) scalar: its first line `first` and its continuation lines, folded (a
/// line break is a space, each blank line a newline). A comment ends it; `: ` inside it is
/// an error, as in YAML (a mapping cannot start inside a plain value).
fn plain(first: &str, more: &[&str]) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    let mut blank_run = 0usize;
    let mut ended = false;
    for line in std::iter::once(first).chain(more.iter().copied()) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            if !parts.is_empty() {
                blank_run += 1;
            }
            continue;
        }
        if ended || trimmed.starts_with('#') {
            if !trimmed.starts_with('#') {
                return Err(format!("text after a comment: {trimmed:?}"));
            }
            ended = true;
            continue;
        }
        let (text, comment) = match trimmed.find(" #").or_else(|| trimmed.find("\t#")) {
            Some(at) => (trimmed[..at].trim_end(), true),
            None => (trimmed, false),
        };
        if text.contains(": ") || text.contains(":\t") || text.ends_with(':') {
            return Err(format!("a mapping cannot start inside a plain value: {text:?}"));
        }
        let joined = match (parts.is_empty(), blank_run) {
            (true, _) => text.to_owned(),
            (false, 0) => format!(" {text}"),
            (false, n) => format!("{}{text}", "\n".repeat(n)),
        };
        parts.push(joined);
        blank_run = 0;
        ended = comment;
    }
    Ok(parts.concat())
}

/// A plain scalar typed by YAML 1.2's core schema.
fn resolve(text: String) -> Node {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Node::Null,
        "true" | "True" | "TRUE" => return Node::Bool(true),
        "false" | "False" | "FALSE" => return Node::Bool(false),
        ".nan" | ".NaN" | ".NAN" => return Node::Number(f64::NAN),
        _ => {}
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(&text);
    let negative = text.starts_with('-');
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return Node::Number(if negative { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    let radix = |digits: &str, radix: u32| {
        (!digits.is_empty() && digits.chars().all(|c| c.is_digit(radix)))
            .then(|| u128::from_str_radix(digits, radix).map_or(f64::INFINITY, |n| n as f64))
    };
    if let Some(n) = text.strip_prefix("0x").and_then(|d| radix(d, 16)) {
        return Node::Number(n);
    }
    if let Some(n) = text.strip_prefix("0o").and_then(|d| radix(d, 8)) {
        return Node::Number(n);
    }
    if is_decimal(unsigned)
        && let Ok(n) = text.parse::<f64>()
    {
        return Node::Number(n);
    }
    Node::Str(text)
}

/// `[0-9]+`, `[0-9]+.[0-9]*`, `.[0-9]+`, each with an optional exponent.
fn is_decimal(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (digits(whole) && (fraction.is_empty() || digits(fraction)))
                || (whole.is_empty() && digits(fraction))
        }
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// A block scalar (`|` literal, `>` folded, with an optional chomping `-`/`+` and indentation
/// digit) whose header is `header` and whose lines are `more`.
fn block(header: &str, more: &[&str], base: usize) -> Result<String, String> {
    let header = header.split(" #").next().unwrap_or(header).trim_end();
    let literal = header.starts_with('|');
    let mut chomp = ' ';
    let mut explicit: Option<usize> = None;
    for c in header[1..].chars() {
        match c {
            '-' | '+' if chomp == ' ' => chomp = c,
            '1'..='9' if explicit.is_none() => explicit = c.to_digit(10).map(|d| d as usize),
            _ => return Err(format!("bad block scalar header: {header:?}")),
        }
    }
    let width = match explicit {
        Some(d) => base + d,
        None => more.iter().find(|l| !is_blank(l)).map_or(base + 1, |l| indent(l)),
    };
    let mut lines: Vec<&str> = Vec::new();
    for line in more {
        if is_blank(line) && indent(line) <= width {
            lines.push("");
        } else if indent(line) < width {
            return Err(format!("a block scalar line is indented less than its first: {line:?}"));
        } else {
            lines.push(&line[width..]);
        }
    }
    let trailing = lines.iter().rev().take_while(|l| l.is_empty()).count();
    let content = &lines[..lines.len() - trailing];
    let mut text = if literal { content.join("\n") } else { fold(content) };
    if content.is_empty() {
        text.clear();
    }
    match chomp {
        '-' => {}
        '+' => {
            let breaks = if content.is_empty() { trailing } else { trailing + 1 };
            text.push_str(&"\n".repeat(breaks));
        }
        _ if !content.is_empty() => text.push('\n'),
        _ => {}
    }
    Ok(text)
}

/// Folded block lines: a break between two lines of text is a space, blank lines are
/// newlines, and more-indented lines keep their breaks.
fn fold(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut blanks = 0usize;
    let mut previous_more: Option<bool> = None;
    for line in lines {
        if line.is_empty() {
            blanks += 1;
            continue;
        }
        let more = line.starts_with([' ', '\t']);
        match previous_more {
            None => out.push_str(&"\n".repeat(blanks)),
            Some(prev) if prev || more => out.push_str(&"\n".repeat(blanks + 1)),
            Some(_) if blanks == 0 => out.push(' '),
            Some(_) => out.push_str(&"\n".repeat(blanks)),
        }
        out.push_str(line);
        previous_more = Some(more);
        blanks = 0;
    }
    out
}

/// A quoted scalar at the start of `text` (`"…"` with escapes, or `'…'` with `''`), folded
/// across lines; returns it and the text after the closing quote.
fn quoted(text: &str) -> Result<(String, &str), String> {
    let double = text.starts_with('"');
    let quote = if double { '"' } else { '\'' };
    let mut out = String::new();
    // Whitespace seen on the current line, kept only if the line continues.
    let mut pending = String::new();
    let mut chars = text.char_indices().skip(1).peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c == quote => {
                if !double && chars.peek().is_some_and(|&(_, n)| n == '\'') {
                    chars.next();
                    out.push_str(&pending);
                    pending.clear();
                    out.push('\'');
                    continue;
                }
                out.push_str(&pending);
                return Ok((out, &text[at + 1..]));
            }
            '\n' => {
                // A line break folds: trailing spaces go, a single break is a space, each
                // further (blank) line a newline.
                pending.clear();
                let mut breaks = 0;
                let mut skip = 0;
                for n in text[at + 1..].chars() {
                    match n {
                        ' ' | '\t' | '\r' => skip += 1,
                        '\n' => {
                            breaks += 1;
                            skip += 1;
                        }
                        _ => break,
                    }
                }
                for _ in 0..skip {
                    chars.next();
                }
                if breaks == 0 {
                    out.push(' ');
                } else {
                    out.push_str(&"\n".repeat(breaks));
                }
            }
            ' ' | '\t' => pending.push(c),
            '\\' if double => {
                out.push_str(&pending);
                pending.clear();
                let (_, e) = chars.next().ok_or("an escape at the end of the text")?;
                match e {
                    '0' => out.push('\0'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    't' | '\t' => out.push('\t'),
                    'n' => out.push('\n'),
                    'v' => out.push('\u{b}'),
                    'f' => out.push('\u{c}'),
                    'r' => out.push('\r'),
                    'e' => out.push('\u{1b}'),
                    ' ' => out.push(' '),
                    '"' => out.push('"'),
                    '/' => out.push('/'),
                    '\\' => out.push('\\'),
                    'N' => out.push('\u{85}'),
                    '_' => out.push('\u{a0}'),
                    'L' => out.push('\u{2028}'),
                    'P' => out.push('\u{2029}'),
                    'x' | 'u' | 'U' => {
                        let len = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String =
                            (0..len).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == len)
                            .ok_or_else(|| format!("bad escape \\{e}{hex}"))?;
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    '\n' => {
                        // An escaped line break joins the lines without a space.
                        while chars.peek().is_some_and(|&(_, n)| n == ' ' || n == '\t') {
                            chars.next();
                        }
                    }
                    other => return Err(format!("bad escape \\{other}")),
                }
            }
            c => {
                out.push_str(&pending);
                pending.clear();
                out.push(c);
            }
        }
    }
    Err("a quoted value is not closed".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(yaml: &str) -> Result<Node, String> {
        parse_mapping(yaml).map(|mut e| e.remove(0).1)
    }

    fn text(s: &str) -> Result<Node, String> {
        Ok(Node::Str(s.to_owned()))
    }

    #[test]
    fn front_matter_is_the_text_between_two_dash_lines() {
        assert_eq!(split("---\na: 1\n---\nbody\n"), Some(("a: 1\n", "body\n")));
        assert_eq!(split("---\r\na: 1\r\n---\r\nbody"), Some(("a: 1\r\n", "body")));
        assert_eq!(split("---\na: 1\n---"), Some(("a: 1\n", "")));
        assert_eq!(split("---\n---\n"), Some(("", "")));
        assert_eq!(split("--- \na: 1\n---\n"), None);
        assert_eq!(split("\u{feff}---\na: 1\n---\n"), None);
        assert_eq!(split("---\na: 1\n"), None);
        assert_eq!(split("---"), None);
        assert_eq!(split("---\na: 1\n----\n"), None);
    }

    #[test]
    fn plain_scalars_are_typed_by_the_core_schema() {
        assert_eq!(one("a: hello world"), text("hello world"));
        assert_eq!(one("a: true"), Ok(Node::Bool(true)));
        assert_eq!(one("a: yes"), text("yes"));
        assert_eq!(one("a: 12"), Ok(Node::Number(12.0)));
        assert_eq!(one("a: 1.5e3"), Ok(Node::Number(1500.0)));
        assert_eq!(one("a: 0x1F"), Ok(Node::Number(31.0)));
        assert_eq!(one("a: 1.2.3"), text("1.2.3"));
        assert_eq!(one("a: ~"), Ok(Node::Null));
        assert_eq!(one("a:"), Ok(Node::Null));
        assert_eq!(one("a: x # note"), text("x"));
        assert_eq!(one("a: x#y"), text("x#y"));
        assert_eq!(one("a: http://x.y/z"), text("http://x.y/z"));
        assert_eq!(one("a: one\n  two\n\n  three"), text("one two\nthree"));
        assert!(one("a: use it: always").is_err());
        assert!(one("a: x\na: y").is_err());
    }

    #[test]
    fn quoted_and_block_scalars() {
        assert_eq!(one("a: \"say \\\"hi\\\": \\u00e9\""), text("say \"hi\": é"));
        assert_eq!(one("a: 'it''s: fine'"), text("it's: fine"));
        assert_eq!(one("a: \"one\n  two\""), text("one two"));
        assert_eq!(one("a: 'true'"), text("true"));
        assert_eq!(one("a: \"\""), text(""));
        assert!(one("a: \"\\q\"").is_err());
        assert!(one("a: \"open").is_err());
        assert_eq!(one("a: >\n  one\n  two\n\n  three\n"), text("one two\nthree\n"));
        assert_eq!(one("a: |\n  one\n  two\n"), text("one\ntwo\n"));
        assert_eq!(one("a: |-\n  one\n   two\n\n"), text("one\n two"));
        assert_eq!(one("a: >+\n  one\n\n"), text("one\n\n"));
        assert_eq!(one("a: !!str 12"), text("12"));
    }

    #[test]
    fn collections_and_what_is_not_a_mapping() {
        assert_eq!(one("a:\n  b: 1"), Ok(Node::Collection));
        assert_eq!(one("a:\n  - x\n  - y"), Ok(Node::Collection));
        assert_eq!(one("a: [x, y]"), Ok(Node::Collection));
        let entries = parse_mapping("tags:\n- x\n- y\nname: n\n").unwrap();
        assert_eq!(entries[0], ("tags".to_owned(), Node::Collection));
        assert_eq!(entries[1], ("name".to_owned(), Node::Str("n".to_owned())));
        let entries = parse_mapping("# c\nname: x\nmeta:\n  k: v\ndescription: d\n").unwrap();
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "meta", "description"]);
        assert!(parse_mapping("").is_err());
        assert!(parse_mapping("# only a comment\n").is_err());
        assert!(parse_mapping("just text\n").is_err());
        assert!(parse_mapping("- a\n- b\n").is_err());
        assert_eq!(one("\"quoted key\": v"), text("v"));
    }
}
