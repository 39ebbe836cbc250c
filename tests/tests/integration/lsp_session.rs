//! Session resume over the wire (docs/protocol.md, Lifecycle; docs/design.md §6):
//! `initializationOptions.session_id` resumes a session in a later server process, so a read in one
//! process authorizes an edit in the next; another session id is not authorized
//! (`FS_NOT_OBSERVED`). The initialize result reports the session as
//! `capabilities.experimental.toolhost.sessionId`.
#![allow(clippy::unwrap_used)]

use crate::server;

use serde_json::{Value, json};
use server::{Env, call_err, call_ok};
use toolhost_harness::client::Client;

fn start(env: &Env, init_options: Value) -> (Client, Value) {
    let mut client = env.spawn();
    let init = client.initialize(&env.root, init_options, json!({})).unwrap();
    (client, init)
}

fn session_of(init: &Value) -> Option<&str> {
    init.pointer("/capabilities/experimental/toolhost/sessionId").and_then(Value::as_str)
}

#[test]
fn a_read_in_one_process_authorizes_an_edit_in_the_next_with_the_same_session() {
    let env = Env::new();
    let path = env.write("c.txt", "alpha\n");

    let (mut first, init) = start(&env, json!({"session_id": "resume-test"}));
    assert_eq!(session_of(&init), Some("resume-test"), "{init}");
    let out = call_ok(&mut first, "read", json!({"file_path": "c.txt"}));
    assert_eq!(out["sessionId"], "resume-test");
    assert_eq!(first.shutdown().unwrap().and_then(|s| s.code()), Some(0));

    let (mut second, init) = start(&env, json!({"session_id": "resume-test"}));
    assert_eq!(session_of(&init), Some("resume-test"));
    // While it runs, the session is locked for other processes.
    let mut intruder = env.spawn();
    let refused = intruder
        .request_raw(
            "initialize",
            json!({
                "rootUri": server::uri(&env.root),
                "capabilities": {},
                "initializationOptions": {"session_id": "resume-test"}
            }),
        )
        .unwrap();
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    intruder.kill();
    let out = call_ok(
        &mut second,
        "edit",
        json!({"file_path": "c.txt", "old_string": "alpha", "new_string": "beta"}),
    );
    assert_eq!(out["sessionId"], "resume-test");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "beta\n");
    assert_eq!(second.shutdown().unwrap().and_then(|s| s.code()), Some(0));

    // Another session never observed the file.
    let (mut other, init) = start(&env, json!({"session_id": "other-session"}));
    assert_eq!(session_of(&init), Some("other-session"));
    call_err(
        &mut other,
        "edit",
        json!({"file_path": "c.txt", "old_string": "beta", "new_string": "gamma"}),
        "FS_NOT_OBSERVED",
    );
    // Both sessions are listed for this workspace.
    let listed = other.request("toolhost/listSessions", json!({})).unwrap();
    let ids: Vec<&str> =
        listed["sessions"].as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    assert!(ids.contains(&"resume-test") && ids.contains(&"other-session"), "{listed}");
    other.shutdown().unwrap();

    // Without a session id a fresh one is created and reported; it is not authorized either.
    let (mut fresh, init) = start(&env, json!({}));
    let id = session_of(&init).unwrap().to_owned();
    assert!(id != "resume-test" && id != "other-session" && !id.is_empty(), "{init}");
    let out = call_err(
        &mut fresh,
        "edit",
        json!({"file_path": "c.txt", "old_string": "beta", "new_string": "gamma"}),
        "FS_NOT_OBSERVED",
    );
    assert_eq!(out["sessionId"], id.as_str());
    fresh.shutdown().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "beta\n");
}
