//! A full disk loses nothing: the workspace on a small tmpfs (in a mount namespace this test
//! makes with `unshare`), `write` and `edit` calls that need more room than is left fail with a
//! clear error, the file keeps its old bytes, no temporary file is left beside it, and the
//! session goes on (the next call that fits succeeds). And a change never lands without its
//! record: when the session log cannot grow, an edit whose bytes are already kept still fails
//! with the file as it was, because its `tool/call` record could not be made durable first.

use crate::server::{Env, binary};
use serde_json::{Value, json};
use std::process::Command;

/// Runs `script` with `sh` as root of a new user and mount namespace, the workspace folder
/// replaced by a 256 KiB tmpfs. `$TH` is the binary, `$WS` the workspace.
fn in_small_workspace(env: &Env, script: &str) -> String {
    let status = Command::new("unshare").arg("--version").output();
    assert!(status.is_ok(), "unshare (util-linux) is required for this test");
    let mut command = Command::new("unshare");
    command
        .args(["-rm", "sh", "-ec"])
        .arg(format!("mount -t tmpfs -o size=256k tmpfs \"$WS\"\ncd \"$WS\"\n{script}"))
        .env("TH", binary())
        .env("WS", &env.root);
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let start = out.find(&format!("<{name}>\n")).unwrap_or_else(|| panic!("no {name}: {out}"));
    let rest = &out[start + name.len() + 3..];
    &rest[..rest.find(&format!("</{name}>")).unwrap()]
}

#[test]
fn a_write_or_edit_that_does_not_fit_fails_and_keeps_the_file() {
    let env = Env::new();
    let big = "x".repeat(90 * 1024);
    // The arguments wait in files outside the workspace (one argument may be 128 KiB at most,
    // the script holding both would be more).
    let args = tempfile::tempdir().unwrap();
    let (write, edit) = (args.path().join("write.json"), args.path().join("edit.json"));
    std::fs::write(&write, json!({"file_path": "a.txt", "content": big}).to_string()).unwrap();
    let replace = json!({"file_path": "a.txt", "old_string": "original", "new_string": big});
    std::fs::write(&edit, replace.to_string()).unwrap();
    let (write, edit) = (write.display(), edit.display());
    let script = format!(
        "printf 'original\\n' > a.txt\n\
         head -c 200k /dev/zero > filler\n\
         \"$TH\" call read '{{\"file_path\":\"a.txt\"}}' --session s >/dev/null\n\
         echo '<write>'; \"$TH\" call write --json \"$(cat '{write}')\" --session s || echo \"exit=$?\"; echo '</write>'\n\
         echo '<edit>'; \"$TH\" call edit --json \"$(cat '{edit}')\" --session s || echo \"exit=$?\"; echo '</edit>'\n\
         echo '<file>'; cat a.txt; echo '</file>'\n\
         echo '<listing>'; ls -A; echo '</listing>'\n\
         rm filler\n\
         echo '<after>'; \"$TH\" call edit '{{\"file_path\":\"a.txt\",\"old_string\":\"original\",\"new_string\":\"changed\"}}' --session s; cat a.txt; echo '</after>'\n"
    );
    let out = in_small_workspace(&env, &script);
    for call in ["write", "edit"] {
        let text = section(&out, call);
        assert!(text.contains("exit=1"), "{call} did not fail: {text}");
        let json_line =
            text.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("{text}"));
        let result: Value = serde_json::from_str(json_line).unwrap();
        let error = &result["result"]["error"];
        assert_eq!(error["info"]["code"], "FS_IO_ERROR", "{call}: {result}");
        let message = error["message"].as_str().unwrap();
        assert!(message.ends_with(": no space left on device"), "{call}: {message}");
    }
    assert_eq!(section(&out, "file"), "original\n", "{out}");
    assert_eq!(section(&out, "listing"), "a.txt\nfiller\n", "a temporary file was left: {out}");
    let after = section(&out, "after");
    assert!(after.ends_with("changed\n"), "the session did not go on: {after}");
}

/// The edit's body runs while its record is synced (`edit` changes files only through the
/// workspace), so what stops the replace here is the record alone: the log may not grow (a file
/// size limit below its size, `SIGXFSZ` ignored so the append fails with `EFBIG`), and both sides
/// of the change are kept already (the same change was made and undone before).
#[test]
fn an_edit_whose_record_cannot_be_written_changes_nothing() {
    let env = Env::new();
    let forth = json!({"file_path": "a.txt", "old_string": "original", "new_string": "changed"});
    let back = json!({"file_path": "a.txt", "old_string": "changed", "new_string": "original"});
    let script = format!(
        "cd \"$WS\"\n\
         printf 'original\\n' > a.txt\n\
         \"$TH\" call read '{{\"file_path\":\"a.txt\"}}' --session s >/dev/null\n\
         \"$TH\" call edit '{forth}' --session s >/dev/null\n\
         \"$TH\" call edit '{back}' --session s >/dev/null\n\
         size=$(wc -c < \"$(find \"$XDG_STATE_HOME\" -name session.jsonl)\")\n\
         trap '' XFSZ\n\
         echo '<edit>'; (ulimit -f $((size / 512)); \"$TH\" call edit '{forth}' --session s) || echo \"exit=$?\"; echo '</edit>'\n\
         echo '<file>'; cat a.txt; echo '</file>'\n\
         echo '<listing>'; ls -A; echo '</listing>'\n"
    );
    let mut command = Command::new("sh");
    command.args(["-ec", &script]).env("TH", binary()).env("WS", &env.root);
    for (key, value) in env.env() {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    let out =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(section(&out, "edit").contains("exit="), "the edit did not fail: {out}");
    assert_eq!(section(&out, "file"), "original\n", "{out}");
    assert_eq!(section(&out, "listing"), "a.txt\n", "a temporary file was left: {out}");
}
