//! `tools.<name>(args)`: values, `ToolCallError`, argument checks, exotic names, `$search`.

use crate::fake::Fake;
use crate::support::{PARENT, run, run_with, value};
use serde_json::json;
use toolhost_tools_code::CodeConfig;

#[tokio::test]
async fn a_call_resolves_to_the_tools_value() {
    assert_eq!(value("return await tools.echo({i: 1, s: 'x'})").await, json!({"i": 1, "s": "x"}));
}

#[tokio::test]
async fn a_failed_call_rejects_with_a_tool_call_error() {
    let v = value(
        "try { await tools.fail({}) } catch (e) {\n\
           return {name: e.name, message: e.message, code: e.code, toolName: e.toolName,\n\
                   isError: e instanceof Error, isToolCallError: e instanceof ToolCallError}\n\
         }",
    )
    .await;
    assert_eq!(
        v,
        json!({"name": "ToolCallError", "message": "nope", "code": "E_NOPE", "toolName": "fail",
               "isError": true, "isToolCallError": true})
    );
}

#[tokio::test]
async fn arguments_that_are_not_lossless_json_are_rejected_before_dispatch() {
    let (fake, handle) = Fake::handle();
    let code = "const out = [];\n\
        for (const f of [() => tools.echo(), () => tools.echo(undefined), () => tools.echo({a: NaN}),\n\
                         () => tools.echo({a: -0}), () => tools.echo({a: Infinity}),\n\
                         () => tools.echo({f() {}}), () => { const c = {}; c.c = c; return tools.echo(c) },\n\
                         () => tools.echo({get g() { throw new Error('getter ran') }})]) {\n\
          try { await f(); out.push('dispatched') } catch (e) { out.push(e.message) }\n\
        }\n\
        return out";
    let out = run_with(code, Some(handle), &CodeConfig::default()).await.unwrap();
    let pinned =
        "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)";
    assert_eq!(
        out.result.unwrap(),
        json!([
            pinned,
            pinned,
            "tool arguments must be lossless JSON: arguments.a is NaN",
            "tool arguments must be lossless JSON: arguments.a is -0",
            "tool arguments must be lossless JSON: arguments.a is Infinity",
            "tool arguments must be lossless JSON: arguments.f is a function",
            "tool arguments must be lossless JSON: arguments.c is a cycle",
            "tool arguments must be lossless JSON: arguments.g is a getter",
        ])
    );
    assert!(fake.started_names().is_empty(), "nothing was dispatched");
}

#[tokio::test]
async fn deep_arguments_dispatch() {
    let v = value(
        "let a = {}; for (let i = 0; i < 500; i++) a = {a};\n\
         let r = await tools.echo(a); let n = 0; while (r.a) { r = r.a; n++ } return n",
    )
    .await;
    assert_eq!(v, json!(500));
}

#[tokio::test]
async fn exotic_names_are_ordinary_bindings() {
    let v = value(
        "return [await tools['my-tool']({}), await tools.__proto__({}), \
         Object.getPrototypeOf(tools), Object.keys(tools).length]",
    )
    .await;
    assert_eq!(v, json!(["my-tool", "__proto__", null, 8]));
}

#[tokio::test]
async fn sub_calls_are_numbered_under_the_parent() {
    let (fake, handle) = Fake::handle();
    run_with(
        "await tools.echo({}); await tools.slow({}); await tools.echo({})",
        Some(handle),
        &CodeConfig::default(),
    )
    .await
    .unwrap();
    let started = fake.started.lock().unwrap().clone();
    let ids: Vec<&str> = started.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [format!("{PARENT}:code:1"), format!("{PARENT}:code:2"), format!("{PARENT}:code:3")]
    );
    let parents = fake.parents.lock().unwrap().clone();
    assert!(parents.iter().all(|(p, r)| p == PARENT && r == PARENT), "{parents:?}");
}

#[tokio::test]
async fn search_finds_tools_with_their_declarations() {
    let v = value("return await tools.$search('string bytes')").await;
    let hits = v.as_array().unwrap();
    assert_eq!(hits[0]["name"], "big");
    assert!(hits[0]["declaration"].as_str().unwrap().contains("tools.big(args: {"), "{v}");
    assert_eq!(value("return (await tools.$search('')).length").await, json!(8));
    assert_eq!(value("return (await tools.$search('zzz')).length").await, json!(0));
}

#[tokio::test]
async fn without_the_seam_there_are_no_tools() {
    let out = run_with("return Object.keys(tools)", None, &CodeConfig::default()).await.unwrap();
    assert_eq!(out.result, Some(json!([])));
    assert!(run("return 1").await.is_ok());
}
