#!/usr/bin/env python3
"""A misbehaving language server for the chaos tests of toolhost-lsp-host.

Usage: fake_lsp_server.py FLAGS LOGFILE
FLAGS is a comma-separated list:
  crash            exit(3) with a message on stderr when a textDocument request arrives
  crash-second     the same, but only on the second textDocument request
  exit-after-first exit right after answering the first textDocument request
  hang             never answer textDocument requests (and ignore $/cancelRequest)
  hang-cancellable never answer, but answer -32800 to $/cancelRequest
  init-hang        never answer initialize
  garbage          answer with bytes that are not a frame
  oversized        announce a 999,999,999-byte message
  badjson          answer with a frame whose body is not JSON
  malformed        answer {"weird": true}
  utf8 / utf32     announce that position encoding (echoing positions in it)
  encoding-bogus   announce "utf-7"
  no-impl          no implementationProvider
  child            spawn a `sleep 300` helper in the same process group
  server-requests  before answering, ask the client four requests and report the answers
  watch            on `initialized`, register a file watcher for **/*.fk
A document whose text contains HANG is never answered, whatever the flags (per-workspace tests).
Default answers: definition/implementation echo the received position as a location in the
same document; references return two locations; hover returns the received position as text.
Every received request and the pids are logged as JSON lines to LOGFILE.
"""
import json
import os
import subprocess
import sys

FLAGS = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else set()
LOG = sys.argv[2] if len(sys.argv) > 2 else None
IN = sys.stdin.buffer
OUT = sys.stdout.buffer


def log(obj):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(obj) + "\n")


def read():
    headers = {}
    while True:
        line = IN.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        key, value = line.decode().split(":", 1)
        headers[key.strip().lower()] = value.strip()
    body = IN.read(int(headers["content-length"]))
    return json.loads(body)


def send(msg):
    body = json.dumps(msg).encode()
    OUT.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    OUT.flush()


def answer(req, result):
    send({"jsonrpc": "2.0", "id": req["id"], "result": result})


log({"pid": os.getpid()})
if "child" in FLAGS:
    helper = subprocess.Popen(["sleep", "300"])
    log({"child": helper.pid})

served = 0
pending_ids = []
opened_text = ""
while True:
    msg = read()
    method = msg.get("method")
    if method is None:
        continue
    if method == "initialize":
        log({"initialize": msg["params"]["capabilities"].get("general")})
        if "init-hang" in FLAGS:
            continue
        caps = {
            "textDocumentSync": 1,
            "definitionProvider": True,
            "referencesProvider": True,
            "hoverProvider": True,
            "implementationProvider": "no-impl" not in FLAGS,
        }
        if "utf8" in FLAGS:
            caps["positionEncoding"] = "utf-8"
        if "utf32" in FLAGS:
            caps["positionEncoding"] = "utf-32"
        if "encoding-bogus" in FLAGS:
            caps["positionEncoding"] = "utf-7"
        answer(msg, {"capabilities": caps})
    elif method == "shutdown":
        answer(msg, None)
    elif method == "exit":
        sys.exit(0)
    elif method == "initialized":
        log({"initialized": True})
        if "watch" in FLAGS:
            send({"jsonrpc": "2.0", "id": "w1", "method": "client/registerCapability",
                  "params": {"registrations": [{"id": "fk-files", "method": "workspace/didChangeWatchedFiles",
                             "registerOptions": {"watchers": [{"globPattern": "**/*.fk"}]}}]}})
    elif method == "workspace/didChangeWatchedFiles":
        log({"watched": msg["params"]["changes"]})
    elif method == "workspace/didChangeConfiguration":
        log({"didChangeConfiguration": msg["params"]["settings"]})
    elif method == "$/cancelRequest":
        log({"cancel": msg["params"]["id"]})
        if "hang-cancellable" in FLAGS and msg["params"]["id"] in pending_ids:
            send({"jsonrpc": "2.0", "id": msg["params"]["id"],
                  "error": {"code": -32800, "message": "cancelled"}})
    elif method in ("textDocument/didOpen", "textDocument/didClose"):
        log({method: msg["params"]["textDocument"]["uri"]})
        if method == "textDocument/didOpen":
            opened_text = msg["params"]["textDocument"]["text"]
    elif method.startswith("textDocument/") and "id" in msg:
        served += 1
        params = msg["params"]
        log({"request": method, "position": params["position"], "context": params.get("context")})
        if "crash" in FLAGS or ("crash-second" in FLAGS and served == 2):
            sys.stderr.write("fatal: simulated crash\n")
            sys.stderr.flush()
            os._exit(3)
        if "hang" in FLAGS or "hang-cancellable" in FLAGS or "HANG" in opened_text:
            pending_ids.append(msg["id"])
            continue
        if "garbage" in FLAGS:
            OUT.write(b"this is not a frame\r\nat all\r\n\r\n")
            OUT.flush()
            continue
        if "oversized" in FLAGS:
            OUT.write(b"Content-Length: 999999999\r\n\r\n{")
            OUT.flush()
            continue
        if "badjson" in FLAGS:
            OUT.write(b"Content-Length: 9\r\n\r\n{not json")
            OUT.flush()
            continue
        if "malformed" in FLAGS:
            answer(msg, {"weird": True})
            continue
        uri = params["textDocument"]["uri"]
        pos = params["position"]
        rng = {"start": pos, "end": pos}
        if "server-requests" in FLAGS:
            asks = [
                ("workspace/configuration", {"items": [{"section": "a"}, {"section": "b.c"}, {}]}),
                ("client/registerCapability", {"registrations": []}),
                ("workspace/workspaceFolders", None),
                ("workspace/applyEdit", {"edit": {}}),
            ]
            replies = {}
            for i, (m, p) in enumerate(asks):
                send({"jsonrpc": "2.0", "id": "s%d" % i, "method": m, "params": p})
            while len(replies) < len(asks):
                reply = read()
                if "method" in reply:
                    continue
                replies[asks[int(reply["id"][1:])][0]] = reply.get("result", reply.get("error"))
            answer(msg, {"contents": json.dumps(replies, sort_keys=True)})
            continue
        if method == "textDocument/hover":
            answer(msg, {"contents": {"kind": "plaintext", "value": "pos %d:%d" % (pos["line"], pos["character"])},
                         "range": rng})
        elif method == "textDocument/references":
            answer(msg, [{"uri": uri, "range": rng},
                         {"uri": uri, "range": {"start": {"line": 0, "character": 0},
                                                "end": {"line": 0, "character": 1}}}])
        else:
            answer(msg, [{"targetUri": uri, "targetRange": rng, "targetSelectionRange": rng}])
        if "exit-after-first" in FLAGS:
            sys.exit(0)
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "nope"}})
