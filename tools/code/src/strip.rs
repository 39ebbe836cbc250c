//! Erasable TypeScript to JavaScript with SWC's type stripper: annotations, interfaces, type
//! aliases, `as`/`satisfies` and generics become white space (positions and lines stay put);
//! syntax that would need code generated (enums, namespaces, parameter properties) is an error
//! with the stripper's message, which the run reports as an `exception`.
//!
//! The program is the body of an async function, so it is stripped inside one: top-level
//! `await` and `return` parse, and the JavaScript evaluated is that function expression.

use swc_common::SourceMap;
use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_ts_fast_strip::{Mode, Options, operate};

/// What precedes the program: one line, so the program's line n is the function's line n + 1.
const HEAD: &str = "(async function () {\n";
const TAIL: &str = "\n})";

/// Collects the stripper's diagnostics ("enum is not supported in strip-only mode at 3:1").
struct Collect {
    messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    map: Lrc<SourceMap>,
}

impl Emitter for Collect {
    fn emit(&mut self, db: &mut DiagnosticBuilder<'_>) {
        let mut message = db.message();
        if let Some(span) = db.span.primary_span() {
            let loc = self.map.lookup_char_pos(span.lo);
            // The first line is the wrapper's.
            let line = loc.line.saturating_sub(1).max(1);
            message = format!("{message} (line {line}, column {})", loc.col_display + 1);
        }
        if let Ok(mut messages) = self.messages.lock() {
            messages.push(message);
        }
    }
}

/// The program as a JavaScript async function expression, or why its TypeScript cannot be run.
pub fn to_function_source(code: &str) -> Result<String, String> {
    let map: Lrc<SourceMap> = Lrc::default();
    let messages = std::sync::Arc::default();
    let emitter = Collect { messages: std::sync::Arc::clone(&messages), map: map.clone() };
    let handler = Handler::with_emitter(true, false, Box::new(emitter));
    let input = format!("{HEAD}{code}{TAIL}");
    let options = Options {
        module: Some(false),
        filename: Some("run_code.ts".to_owned()),
        mode: Mode::StripOnly,
        ..Options::default()
    };
    match operate(&map, &handler, input, options) {
        Ok(out) => Ok(out.code),
        Err(err) => {
            let collected = messages.lock().map(|m| m.join("; ")).unwrap_or_default();
            Err(if collected.is_empty() { err.to_string() } else { collected })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_go_and_lines_stay() {
        let js = to_function_source("const x: number = 1;\nreturn x as number;").unwrap();
        assert!(js.starts_with(HEAD), "{js}");
        assert!(!js.contains("number"), "{js}");
        assert_eq!(js.lines().count(), 4);
    }

    #[test]
    fn an_enum_is_refused_with_the_strippers_message() {
        let err = to_function_source("enum E { A }\nreturn E.A;").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
        assert!(err.to_lowercase().contains("enum"), "{err}");
    }
}
