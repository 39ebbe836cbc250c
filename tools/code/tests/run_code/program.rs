//! A program's value and Native text: logs, the result's rendering, exceptions, TypeScript.

use crate::support::{failed, run, text, value};
use serde_json::json;
use toolhost_tools_code::FailureKind;
use toolhost_tools_code::render::{render_result, render_text};

#[tokio::test]
async fn the_result_renders_as_pretty_json() {
    let out = run("return {n: 42, ok: true}").await.unwrap();
    assert_eq!(out.result, Some(json!({"n": 42, "ok": true})));
    assert_eq!(text(&out), "{\n  \"n\": 42,\n  \"ok\": true\n}");
    let out = run("return ['x', 2]").await.unwrap();
    assert_eq!(text(&out), "[\n  \"x\",\n  2\n]");
}

#[tokio::test]
async fn numbers_print_as_javascript_prints_them() {
    let out = run("return [1e21, 0.1 + 0.2, 5.0, 2 ** 53 + 2, 1e-7]").await.unwrap();
    assert_eq!(
        text(&out),
        "[\n  1e+21,\n  0.30000000000000004,\n  5,\n  9007199254740994,\n  1e-7\n]"
    );
    assert_eq!(render_result(&json!(-0.0)), "0");
    assert_eq!(render_result(&json!([-0.0, 1.5])), "[\n  0,\n  1.5\n]");
}

#[test]
fn containers_five_levels_down_print_compact() {
    let deep = json!({"a": {"b": {"c": {"d": {"e": {"f": [1, {"g": 2}]}, "e2": []}}}}});
    let expected = "{\n  \"a\": {\n    \"b\": {\n      \"c\": {\n        \"d\": {\n          \
                    \"e\": {\"f\":[1,{\"g\":2}]},\n          \"e2\": []\n        }\n      }\n    \
                    }\n  }\n}";
    assert_eq!(render_result(&deep), expected);
    assert_eq!(render_result(&json!({})), "{}");
    assert_eq!(render_result(&json!([])), "[]");
    assert_eq!(render_result(&json!(null)), "null");
    assert_eq!(render_result(&json!("raw\ntext")), "raw\ntext");
}

#[tokio::test]
async fn logs_come_first_and_an_empty_run_says_so() {
    let out = run("console.log('hello'); console.error('oops', 2); return 'done'").await.unwrap();
    assert_eq!(out.logs, ["hello", "oops 2"]);
    assert_eq!(text(&out), "hello\noops 2\ndone");
    let out = run("const x = 1;").await.unwrap();
    assert_eq!((out.logs.len(), out.result.clone()), (0, None));
    assert_eq!(text(&out), "(run_code completed with no output)");
    assert_eq!(render_text(&[], Some(&json!(""))), "(run_code completed with no output)");
    let out = run("return null").await.unwrap();
    assert_eq!((out.result.clone(), text(&out)), (Some(json!(null)), "null".to_owned()));
}

#[tokio::test]
async fn console_inspects_what_is_not_a_string() {
    let out = run(
        "console.log('a', 1, -0, {b: [1, 'x'], 'c-d': null}, undefined, [], {}, 10n);\
         console.info(new Map([['k', 1]]), new Set([1]), function f() {}, new Error('bad'));\
         console.warn({a: {b: {c: {d: {e: {f: 1}}}}}}, Array.from({length: 102}, (_, i) => i).length);\
         console.debug(Array.from({length: 101}, () => 0).join('').length);\
         const big = Array.from({length: 101}, () => 0); console.log(big);",
    )
    .await
    .unwrap();
    assert_eq!(out.logs[0], "a 1 -0 { b: [ 1, 'x' ], 'c-d': null } undefined [] {} 10n");
    assert_eq!(
        out.logs[1],
        "Map(1) { 'k' => 1 } Set(1) { 1 } [Function: f] Error: bad (line 1, column 146)"
    );
    assert_eq!(out.logs[2], "{ a: { b: { c: { d: { e: [Object] } } } } } 102");
    assert_eq!(out.logs[3], "101");
    assert!(out.logs[4].ends_with(", 0, ... 1 more item ]"), "{}", out.logs[4]);
}

#[tokio::test]
async fn an_exception_fails_the_run_with_its_logs() {
    let err = failed(
        run("console.log('before');\nthrow new TypeError('boom')").await,
        FailureKind::Exception,
    );
    assert_eq!(
        err,
        "code run failed (exception): TypeError: boom (line 2, column 11)\nCaptured output:\nbefore"
    );
    let err = failed(run("throw 'plain'").await, FailureKind::Exception);
    assert_eq!(err, "code run failed (exception): plain");
    let err = failed(run("throw {message: 'denied'}").await, FailureKind::Exception);
    assert_eq!(err, "code run failed (exception): denied");
    let err = failed(run("return (").await, FailureKind::Exception);
    assert!(err.starts_with("code run failed (exception): "), "{err}");
}

#[tokio::test]
async fn top_level_await_and_return_work() {
    assert_eq!(value("const v = await Promise.resolve(3); return v * 2").await, json!(6));
    assert_eq!(value("return await (async () => 'a')()").await, json!("a"));
}

#[tokio::test]
async fn erasable_typescript_is_stripped() {
    let code = "interface P { x: number }\ntype N = number;\nconst p: P = { x: 2 };\n\
                function twice<T extends N>(v: T): number { return v * 2 }\n\
                return twice(p.x as N) satisfies number;";
    assert_eq!(value(code).await, json!(4));
}

#[tokio::test]
async fn an_enum_is_an_exception_with_the_strippers_message() {
    let err = failed(run("enum Color { Red }\nreturn Color.Red").await, FailureKind::Exception);
    assert!(err.contains("enum"), "{err}");
    assert!(err.contains("line 1"), "{err}");
    let err =
        failed(run("namespace N { export const a = 1 }\nreturn 1").await, FailureKind::Exception);
    assert!(err.contains("namespace"), "{err}");
}

#[tokio::test]
async fn a_result_that_is_not_lossless_json_is_invalid_output() {
    for code in [
        "return () => 1",
        "return {a: undefined}",
        "return [NaN]",
        "return new Date()",
        "const a = {}; a.self = a; return a",
        "return -0",
    ] {
        let err = failed(run(code).await, FailureKind::InvalidOutput);
        assert!(err.contains("not lossless JSON"), "{code}: {err}");
    }
}

#[tokio::test]
async fn the_global_scope_has_no_host_apis() {
    let v = value(
        "return [typeof setTimeout, typeof setInterval, typeof require, typeof process, \
         typeof fetch, typeof std, typeof os, typeof print, typeof Deno]",
    )
    .await;
    assert!(v.as_array().unwrap().iter().all(|t| t == "undefined"), "{v}");
    let v = value("return [typeof tools, typeof ToolCallError, typeof console]").await;
    assert_eq!(v, json!(["object", "function", "object"]));
}

#[tokio::test]
async fn a_program_waiting_on_nothing_fails_at_once() {
    let err = failed(run("await new Promise(() => {})").await, FailureKind::Exception);
    assert!(err.contains("nothing can settle"), "{err}");
}
