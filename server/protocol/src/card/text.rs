//! The one plain-text rendering of a card ([`to_text`]): what the CLI prints, what a replay shows,
//! and what clients fall back to.

use super::{Card, CardKind, CardStatus, SearchView, hunk_header};
use serde_json::Value;

/// The one plain-text rendering of a card: a title line `<tool> <title> · <status>` (then
/// ` · <caller>` for a call another program made), then hunks (diff cards), `path:line` lines
/// (search cards) or the Native text (everything else).
pub fn to_text(card: &Card) -> String {
    let mut out = format!("{} {} · {}", card.tool, card.title, card.status.as_str());
    if let Some(caller) = &card.caller {
        out.push_str(" · ");
        out.push_str(caller);
    }
    let mut body: Vec<String> = Vec::new();
    match (&card.kind, &card.hunks, &card.search) {
        (CardKind::Diff, Some(hunks), _) => {
            // A change of several files names each before its hunks (one file: the title does).
            let several = hunks.iter().any(|h| h.path != hunks[0].path);
            let mut last_path: Option<&str> = None;
            for hunk in hunks {
                if several && last_path != Some(hunk.path.as_str()) {
                    body.push(hunk.path.clone());
                    last_path = Some(&hunk.path);
                }
                body.push(hunk_header(hunk));
                for line in &hunk.lines {
                    body.push(format!("{}{}", line.op, line.text));
                }
            }
        }
        (CardKind::Search, _, Some(search)) if card.status != CardStatus::Pending => {
            search_lines(search, &mut body);
        }
        _ => {
            let drawn = card.data.as_ref().is_some_and(|data| data_lines(card, data, &mut body));
            // A failure says why under what was asked; other kinds show their Native text.
            if (!drawn || card.status == CardStatus::Failed) && !card.text.is_empty() {
                body.push(card.text.clone());
            }
        }
    }
    for line in body {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

/// How many lines of a fetched page a fetch card shows.
const FETCH_PREVIEW_LINES: usize = 12;

/// The body of a todo, question, plan or structured card, from its data; `false` when the
/// kind has no such view or the data is not its shape (the Native text is shown instead).
fn data_lines(card: &Card, data: &Value, body: &mut Vec<String>) -> bool {
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match card.kind {
        CardKind::Todo => {
            let Some(todos) = data.get("todos").and_then(Value::as_array) else { return false };
            for todo in todos {
                let mark = match todo.get("status").and_then(Value::as_str) {
                    Some("completed") => "[x]",
                    Some("in_progress") => "[>]",
                    _ => "[ ]",
                };
                body.push(format!("{mark} {}", str_of(todo, "content").unwrap_or_default()));
            }
            true
        }
        CardKind::Question => {
            let Some(questions) = data.get("questions").and_then(Value::as_array) else {
                return false;
            };
            let answers = data.get("answers").and_then(Value::as_array);
            for question in questions {
                body.push(format!("? {}", str_of(question, "question").unwrap_or_default()));
                let id = question.get("id");
                let answer = answers.and_then(|a| a.iter().find(|a| a.get("id") == id));
                if let Some(answer) = answer {
                    let mut chosen: Vec<String> = answer
                        .get("selected")
                        .and_then(Value::as_array)
                        .map(|s| s.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                        .unwrap_or_default();
                    if let Some(custom) = str_of(answer, "custom") {
                        chosen.push(format!("\"{custom}\""));
                    }
                    body.push(format!("→ {}", chosen.join(", ")));
                }
            }
            true
        }
        CardKind::Plan => {
            let Some(plan) = str_of(data, "plan") else { return false };
            body.extend(plan.trim_end().lines().map(str::to_owned));
            if data.get("approved").and_then(Value::as_bool) == Some(true) {
                body.push("→ Approved".to_owned());
            }
            true
        }
        CardKind::Fetch if data.get("sources").is_some() => {
            let Some(sources) = data.get("sources").and_then(Value::as_array) else {
                return false;
            };
            if sources.is_empty() {
                body.push("No results found.".to_owned());
            }
            for source in sources {
                let url = str_of(source, "url").unwrap_or_default();
                let title = str_of(source, "title").filter(|t| !t.is_empty());
                body.push(format!("- {} <{url}>", title.as_deref().unwrap_or(&url)));
            }
            if data.get("truncated").and_then(Value::as_bool) == Some(true) {
                body.push("(more sources were left out)".to_owned());
            }
            true
        }
        CardKind::Fetch if card.status == CardStatus::Completed => {
            let Some(url) = str_of(data, "url") else { return false };
            let mut head = vec![url];
            if let Some(status) = data.get("statusCode").and_then(Value::as_u64) {
                head.push(format!("HTTP {status}"));
            }
            if let Some(title) = str_of(data, "title").filter(|t| !t.is_empty()) {
                head.push(format!("\"{title}\""));
            }
            if let Some(size) = data.get("size").and_then(Value::as_u64) {
                head.push(format!("{size} bytes"));
            }
            for flag in ["truncated", "cached"] {
                if data.get(flag).and_then(Value::as_bool) == Some(true) {
                    head.push(flag.to_owned());
                }
            }
            body.push(head.join(" · "));
            // A preview: the page itself is in the Native text, too long for a card.
            let text: Vec<&str> = card.text.lines().skip(1).skip_while(|l| l.is_empty()).collect();
            body.extend(text.iter().take(FETCH_PREVIEW_LINES).map(|l| (*l).to_owned()));
            if text.len() > FETCH_PREVIEW_LINES {
                body.push("…".to_owned());
            }
            true
        }
        CardKind::Structured => {
            let Some(value) = data.get("value") else { return false };
            let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
            body.extend(pretty.lines().map(str::to_owned));
            true
        }
        _ => false,
    }
}

fn search_lines(search: &SearchView, body: &mut Vec<String>) {
    let mut shown = 0u64;
    if let Some(paths) = &search.paths {
        for path in paths {
            body.push(path.clone());
            shown += 1;
        }
    }
    if let Some(files) = &search.files {
        for file in files {
            for m in &file.matches {
                body.push(format!("{}:{}: {}", file.path, m.line_number, m.line));
                shown += 1;
            }
        }
    }
    if let Some(locations) = &search.locations {
        for loc in locations {
            if loc.snippet.is_empty() {
                body.push(format!("{}:{}:{}", loc.path, loc.line, loc.character));
            } else {
                body.push(format!("{}:{}:{}: {}", loc.path, loc.line, loc.character, loc.snippet));
            }
            shown += 1;
        }
    }
    if shown == 0 {
        body.push("(no results)".to_owned());
    } else if search.truncated || shown < search.total {
        body.push(format!("(showing {shown} of {})", search.total));
    }
}
