// A scripted Anthropic Messages server for the real Claude Code (the ACP adapter claude-agent-acp
// that `toolhost serve` hosts) in the e2e: `POST /v1/messages` on 127.0.0.1 answered with a
// server-sent event stream of one content block. A request whose `tools` offer no `Bash` is a side
// request of Claude Code (a title, a summary): plain text. The main loop's answer depends on how
// many tool results the conversation holds: none → `Read` of the file (Claude Code edits only a
// file it read), one → `Edit` of it, line 1 and line 12 uppercased (two hunks), more → the text
// "Done.". `count_tokens` gets a count; `GET /requests` answers the main loop's request bodies so
// far (the conversations sent), `GET /models` the `model` of every request, main loop or side, in
// order (`[{model, main}]`: which model the agent's chosen setting made Claude Code ask for).
//
//   node e2e/anthropicServer.mjs <absolute path of the 12-line file>
//       prints the port it listens on (a free one, or $PORT), then serves until it is killed
import * as http from 'node:http';

/** The file's lines before the edit, and after it (both hunks). */
export const TWELVE = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'].map((w) => `${w}\n`).join('');
export const TWELVE_EDITED = TWELVE.replace(/^one\n/, 'ONE\n').replace(/twelve\n$/, 'TWELVE\n');

const file = process.argv[2] ?? '';
const mainRequests = [];
const models = [];

/** Whether the request is the agent's loop (it offers tools), not a side request. */
function mainLoop(body) {
  return Array.isArray(body.tools) && body.tools.some((t) => t?.name === 'Bash');
}

function toolResults(body) {
  return (Array.isArray(body.messages) ? body.messages : [])
    .flatMap((m) => (Array.isArray(m?.content) ? m.content : []))
    .filter((b) => b?.type === 'tool_result').length;
}

/** The answer's one content block and its stop reason. */
function script(body) {
  if (!mainLoop(body)) {
    return [{ type: 'text', text: 'Edit the file' }, 'end_turn'];
  }
  switch (toolResults(body)) {
    case 0:
      return [{ type: 'tool_use', id: 'toolu_read', name: 'Read', input: { file_path: file } }, 'tool_use'];
    case 1:
      return [{ type: 'tool_use', id: 'toolu_edit', name: 'Edit', input: { file_path: file, old_string: TWELVE, new_string: TWELVE_EDITED } }, 'tool_use'];
    default:
      return [{ type: 'text', text: 'Done.' }, 'end_turn'];
  }
}

/** The SSE events of one message holding `block`. */
function events(block, stopReason) {
  const opening = block.type === 'tool_use' ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta = block.type === 'tool_use' ? { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } : { type: 'text_delta', text: block.text };
  return [
    [
      'message_start',
      {
        type: 'message_start',
        message: { id: 'msg_scripted', type: 'message', role: 'assistant', model: 'claude-scripted', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } },
      },
    ],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: opening }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ['message_stop', { type: 'message_stop' }],
  ];
}

function json(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/requests') {
    json(res, 200, mainRequests);
    return;
  }
  if (req.method === 'GET' && req.url === '/models') {
    json(res, 200, models);
    return;
  }
  if (req.method !== 'POST' || !(req.url ?? '').startsWith('/v1/messages')) {
    json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no ${req.method} ${req.url} here` } });
    return;
  }
  let raw = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    raw += chunk;
  });
  req.on('end', () => {
    if ((req.url ?? '').includes('count_tokens')) {
      json(res, 200, { input_tokens: 10 });
      return;
    }
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'the body is not JSON' } });
      return;
    }
    models.push({ model: typeof body.model === 'string' ? body.model : null, main: mainLoop(body) });
    if (mainLoop(body)) {
      mainRequests.push(body);
    }
    const [block, stopReason] = script(body);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(events(block, stopReason).map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join(''));
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`);
});
