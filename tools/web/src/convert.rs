//! Turning fetched bytes into text the model reads: what kind of content it is (HTML, text or
//! binary), its character set, HTML → GitHub-flavoured markdown, and cuts counted in UTF-16 units
//! (docs/tools.md states the caps in those units).

use encoding_rs::Encoding;

/// What the response holds, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    /// Anything else, a missing header included: `web_fetch` refuses it unread.
    Binary,
}

/// The media type without parameters, lower-cased.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_lowercase()
}

/// Classifies by media type: HTML and XHTML are HTML; any `text/*`, JSON, XML and their `+json`
/// and `+xml` kinds are text; everything else — no content type at all included — is refused.
pub fn kind_of(content_type: Option<&str>) -> Kind {
    let media = media_type(content_type.unwrap_or(""));
    match media.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        m if m.starts_with("text/") => Kind::Text,
        "application/json" | "application/xml" => Kind::Text,
        m if m.ends_with("+json") || m.ends_with("+xml") => Kind::Text,
        _ => Kind::Binary,
    }
}

/// The `charset` parameter of a content type.
fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim().eq_ignore_ascii_case("charset").then(|| value.trim().trim_matches('"'))
    })
}

/// A `<meta charset>` or `<meta http-equiv content="…charset=…">` in the first 1024 bytes.
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&head[..head.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'', ' ']);
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))?;
    Encoding::for_label(&rest.as_bytes()[..end])
}

/// Decodes `bytes`: a BOM wins, then the header's charset, then (HTML) a meta charset, then
/// UTF-8. Undecodable bytes become U+FFFD rather than failing the fetch.
pub fn decode(bytes: &[u8], content_type: Option<&str>, kind: Kind) -> String {
    let declared =
        content_type.and_then(charset_param).and_then(|l| Encoding::for_label(l.as_bytes()));
    let sniffed = if kind == Kind::Html { meta_charset(bytes) } else { None };
    let encoding = declared.or(sniffed).unwrap_or(encoding_rs::UTF_8);
    // `decode` honours a BOM over the given encoding.
    let (text, _, _) = encoding.decode(bytes);
    text.into_owned()
}

/// UTF-16 length (the unit the caps count in).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `text` within `max` UTF-16 units, never splitting a character.
pub fn cut_utf16(text: &str, max: usize) -> &str {
    let mut units = 0;
    for (at, ch) in text.char_indices() {
        units += ch.len_utf16();
        if units > max {
            return &text[..at];
        }
    }
    text
}

/// Markdown of an HTML page and its title.
pub struct Converted {
    pub title: Option<String>,
    pub markdown: String,
}

/// HTML → GitHub-flavoured markdown: the readable article (dom_smoothie's Readability) unless
/// `whole_page` or no article is found, then the whole page without script, style, nav and
/// footer (htmd). CPU-bound: callers run it on a blocking thread.
pub fn html_to_markdown(html: &str, url: Option<&str>, whole_page: bool) -> Converted {
    let page_title = title_of(html);
    if !whole_page {
        let config = dom_smoothie::Config {
            text_mode: dom_smoothie::TextMode::Markdown,
            ..dom_smoothie::Config::default()
        };
        let article = dom_smoothie::Readability::new(html, url, Some(config))
            .or_else(|_| dom_smoothie::Readability::new(html, None, None))
            .and_then(|mut r| r.parse());
        if let Ok(article) = article {
            let markdown = tidy(&article.text_content);
            if !markdown.is_empty() {
                let title = Some(article.title.trim().to_owned()).filter(|t| !t.is_empty());
                return Converted { title: title.or(page_title), markdown };
            }
        }
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "nav", "footer", "noscript", "template", "head"])
        .build();
    let markdown = converter.convert(html).map(|m| tidy(&m)).unwrap_or_default();
    Converted { title: page_title, markdown }
}

/// Trailing spaces off every line and no runs of more than one blank line.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

/// The text of the first `<title>`.
fn title_of(html: &str) -> Option<String> {
    let lower = html.get(..html.len().min(65536))?.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = html.get(start..end)?.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(title).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_never_split_a_surrogate_pair() {
        assert_eq!(cut_utf16("a😀b", 2), "a");
        assert_eq!(cut_utf16("a😀b", 3), "a😀");
        assert_eq!(utf16_len("a😀b"), 4);
    }

    #[test]
    fn kinds_follow_the_media_type() {
        assert_eq!(kind_of(Some("text/html; charset=utf-8")), Kind::Html);
        assert_eq!(kind_of(Some(" Application/XHTML+XML ")), Kind::Html);
        assert_eq!(kind_of(Some("application/vnd.api+json")), Kind::Text);
        assert_eq!(kind_of(Some("text/markdown")), Kind::Text);
        assert_eq!(kind_of(Some("image/png")), Kind::Binary);
        assert_eq!(kind_of(Some("application/javascript")), Kind::Binary);
        assert_eq!(kind_of(Some("")), Kind::Binary);
        assert_eq!(kind_of(None), Kind::Binary);
    }

    #[test]
    fn charsets_are_decoded() {
        let latin1 = b"caf\xe9";
        assert_eq!(decode(latin1, Some("text/plain; charset=iso-8859-1"), Kind::Text), "café");
        assert_eq!(decode(latin1, Some("text/plain; charset=utf-8"), Kind::Text), "caf\u{fffd}");
        let html = b"<meta charset=\"windows-1251\"><p>\xcf\xf0\xe8\xe2\xe5\xf2</p>";
        assert!(decode(html, Some("text/html"), Kind::Html).contains("Привет"));
    }
}
