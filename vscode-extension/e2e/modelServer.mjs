// A scripted model server for toolhost's own agent: an OpenAI-compatible
// `POST /v1/chat/completions` on 127.0.0.1 that streams (SSE: `data: {json}\n\n` chunks, then
// `data: [DONE]\n\n`). A conversation without a tool answer yet gets turn 1 — some reasoning, then
// a `read` of a.txt (`finish_reason: "tool_calls"`) and a usage chunk of 120 prompt / 10 completion
// tokens —; once a tool answered, turn 2 — the answer in several content chunks (`finish_reason:
// "stop"`) and 1,000 prompt (100 of them cached) / 40 completion tokens. With `[agent.price] input
// = 1.0, output = 2.0` the two turns cost (1,120 + 2 × 50) / 1e6 = $0.0012.
// A prompt holding `[slow]` gets an answer that streams a dot every 250 ms for a minute instead
// (something to Stop). `GET /requests` answers the request bodies received so far (the
// conversations sent).
//
//   node e2e/modelServer.mjs     prints the port it listens on (a free one, or $PORT), then serves
//                                until it is killed
import * as http from 'node:http';

export const ANSWER_CHUNKS = ['The file a.txt ', 'starts with ', '**hello**', ' and has 4 lines.'];
export const ANSWER = ANSWER_CHUNKS.join('');

const requests = [];

function turnOne() {
  return [
    { choices: [{ delta: { reasoning_content: 'The user asks about a.txt: read it first.' } }] },
    {
      choices: [
        {
          delta: { tool_calls: [{ index: 0, id: 'm0', type: 'function', function: { name: 'read', arguments: '{"file_path":"a.txt"}' } }] },
          finish_reason: 'tool_calls',
        },
      ],
    },
    { choices: [], usage: { prompt_tokens: 120, completion_tokens: 10, total_tokens: 130 } },
  ];
}

function turnTwo() {
  return [
    ...ANSWER_CHUNKS.map((content) => ({ choices: [{ delta: { content } }] })),
    { choices: [{ delta: {}, finish_reason: 'stop' }] },
    { choices: [], usage: { prompt_tokens: 1000, completion_tokens: 40, total_tokens: 1040, prompt_tokens_details: { cached_tokens: 100 } } },
  ];
}

function slowTurn() {
  return [
    { choices: [{ delta: { content: 'Thinking slowly' } }] },
    ...Array.from({ length: 240 }, () => ({ choices: [{ delta: { content: '.' } }] })),
    { choices: [{ delta: {}, finish_reason: 'stop' }] },
    { choices: [], usage: { prompt_tokens: 50, completion_tokens: 241, total_tokens: 291 } },
  ];
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/requests') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(requests));
    return;
  }
  if (req.method !== 'POST' || !(req.url ?? '').endsWith('/chat/completions')) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `no ${req.method} ${req.url} here` } }));
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', () => {
    let request;
    try {
      request = JSON.parse(body);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the body is not JSON' } }));
      return;
    }
    requests.push(request);
    const messages = Array.isArray(request.messages) ? request.messages : [];
    // After the last prompt, has a tool answered? Then the answer; else the read.
    const lastUser = messages.map((m) => m?.role).lastIndexOf('user');
    const answered = messages.slice(lastUser + 1).some((m) => m?.role === 'tool');
    const prompt = messages[lastUser]?.content;
    const slow = typeof prompt === 'string' && prompt.includes('[slow]');
    const chunks = slow ? slowTurn() : answered ? turnTwo() : turnOne();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let i = 0;
    let gone = false;
    res.on('close', () => {
      gone = true;
    });
    const next = () => {
      if (gone) {
        return;
      }
      if (i < chunks.length) {
        res.write(`data: ${JSON.stringify(chunks[i++])}\n\n`);
        // a little apart, so the answer visibly streams
        setTimeout(next, slow ? 250 : 40);
      } else {
        res.end('data: [DONE]\n\n');
      }
    };
    next();
  });
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`);
});
