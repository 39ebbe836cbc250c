// Cards as the server sends them (shapes from docs/protocol.md and card.rs's tests).

import type { Card } from '../src/cards';

export const editCard: Card = {
  callId: 'call_11d418f8bd96',
  tool: 'edit',
  status: 'completed',
  kind: 'diff',
  title: 'Edit a.txt',
  text: 'The file /w/a.txt has been updated successfully.',
  rendered: 'edit Edit a.txt · completed\n@@ -1,2 +1,2 @@\n hello\n-world\n+there',
  locations: [{ path: '/w/a.txt', line: 1 }],
  hunks: [
    {
      path: 'a.txt',
      oldStart: 1,
      oldLines: 2,
      newStart: 1,
      newLines: 2,
      lines: [
        { op: ' ', text: 'hello' },
        { op: '-', text: 'world' },
        { op: '+', text: 'there' },
      ],
      header: '@@ -1,2 +1,2 @@',
    },
  ],
  stats: { additions: 1, deletions: 1 },
};

/** A write's pending card: its preview has no place in the file yet. */
export const pendingWriteCard: Card = {
  callId: 'c1',
  tool: 'write',
  status: 'pending',
  kind: 'diff',
  title: 'Write a.txt',
  text: '',
  rendered: 'write Write a.txt · pending\n@@ preview -0 +2 @@\n+one\n+two',
  locations: [{ path: '/w/a.txt', line: 1 }],
  hunks: [
    {
      path: 'a.txt',
      oldStart: 0,
      oldLines: 0,
      newStart: 0,
      newLines: 2,
      lines: [
        { op: '+', text: 'one' },
        { op: '+', text: 'two' },
      ],
      preview: true,
      header: '@@ preview -0 +2 @@',
    },
  ],
  stats: { additions: 2, deletions: 0 },
};

/** An edit's pending card (card.rs: `a_pending_preview_claims_no_position`). */
export const pendingEditCard: Card = {
  callId: 'c2',
  tool: 'edit',
  status: 'pending',
  kind: 'diff',
  title: 'Edit a.txt',
  text: '',
  rendered: 'edit Edit a.txt · pending\n@@ preview -2 +1 @@\n-x\n-y\n+z',
  locations: [{ path: '/w/a.txt', line: 1 }],
  hunks: [
    {
      path: 'a.txt',
      oldStart: 0,
      oldLines: 2,
      newStart: 0,
      newLines: 1,
      lines: [
        { op: '-', text: 'x' },
        { op: '-', text: 'y' },
        { op: '+', text: 'z' },
      ],
      preview: true,
      header: '@@ preview -2 +1 @@',
    },
  ],
  stats: { additions: 1, deletions: 2 },
};

/** The same write completed: a new file, its content placed from line 1. */
export const newFileWriteCard: Card = {
  callId: 'c1',
  tool: 'write',
  status: 'completed',
  kind: 'diff',
  title: 'Write a.txt',
  text: '<path>/w/a.txt</path>\n<type>file</type>\n<content>\nCreated file\n</content>',
  rendered: 'write Write a.txt · completed\n@@ -0,0 +1,2 @@\n+one\n+two',
  locations: [{ path: '/w/a.txt', line: 1 }],
  hunks: [
    {
      path: 'a.txt',
      oldStart: 0,
      oldLines: 0,
      newStart: 1,
      newLines: 2,
      lines: [
        { op: '+', text: 'one' },
        { op: '+', text: 'two' },
      ],
      header: '@@ -0,0 +1,2 @@',
    },
  ],
  stats: { additions: 2, deletions: 0 },
};

/** A terminal card from a server without terminal views (no `terminal` field): the generic view,
 * `data` (the presentation meta) carried along. */
export const terminalCard: Card = {
  callId: 'call_term',
  tool: 'bash',
  status: 'completed',
  kind: 'terminal',
  title: 'Run cargo test',
  text: 'running 3 tests\n<ok>',
  rendered: 'bash Run cargo test · completed\nrunning 3 tests\n<ok>',
  locations: [],
  data: { command: 'cargo test', exitCode: 0, stdout: 'running 3 tests' },
};

/** A kind only its tool knows. */
export const customKindCard: Card = {
  callId: 'call_deploy',
  tool: 'deploy',
  status: 'completed',
  kind: 'deployment "x"<y>',
  title: 'Deploy staging',
  text: 'deployed 3 services',
  rendered: 'deploy Deploy staging · completed\ndeployed 3 services',
  locations: [],
  data: [{ service: 'api', url: 'https://staging.example/api' }, 42, null],
};

export const readCard: Card = {
  callId: 'call_read',
  tool: 'read',
  status: 'completed',
  kind: 'read',
  title: 'Read src/a.ts (3 - 4)',
  text: '<path>/w/src/a.ts</path>\n<type>file</type>\n<content>\n3: const x = 1;\n4: <b>\n\n(Showing lines 3-4 of 9. Use offset=5 to continue.)\n</content>',
  rendered:
    'read Read src/a.ts (3 - 4) · completed\n<path>/w/src/a.ts</path>\n<type>file</type>\n<content>\n3: const x = 1;\n4: <b>\n\n(Showing lines 3-4 of 9. Use offset=5 to continue.)\n</content>',
  locations: [{ path: '/w/src/a.ts', line: 3 }],
  read: {
    path: '/w/src/a.ts',
    offset: 3,
    lines: [
      { number: 3, text: 'const x = 1;' },
      { number: 4, text: '<b>' },
    ],
    totalLines: 9,
    lang: 'typescript',
  },
};

export const grepCard: Card = {
  callId: 'call_grep',
  tool: 'grep',
  status: 'completed',
  kind: 'search',
  title: 'Grep TODO',
  text: 'Found 3 matches\nsrc/a.rs:\n  Line 2: // TODO one\n  Line 9: // TODO <two>\nsrc/b.rs:\n  Line 1: TODO & three',
  rendered:
    'grep Grep TODO · completed\nsrc/a.rs:2: // TODO one\nsrc/a.rs:9: // TODO <two>\nsrc/b.rs:1: TODO & three\n(showing 3 of 5)',
  locations: [
    { path: '/w/src/a.rs', line: 2 },
    { path: '/w/src/a.rs', line: 9 },
    { path: '/w/src/b.rs', line: 1 },
  ],
  search: {
    shape: 'matches',
    files: [
      {
        path: 'src/a.rs',
        matches: [
          { lineNumber: 2, line: '// TODO one' },
          { lineNumber: 9, line: '// TODO <two>' },
        ],
      },
      { path: 'src/b.rs', matches: [{ lineNumber: 1, line: 'TODO & three' }] },
    ],
    truncated: true,
    total: 5,
  },
};

export const globCard: Card = {
  callId: 'call_glob',
  tool: 'glob',
  status: 'completed',
  kind: 'search',
  title: 'Glob **/*.md',
  text: '/w/README.md\n/w/docs/x.md',
  rendered: 'glob Glob **/*.md · completed\nREADME.md\ndocs/x.md',
  locations: [
    { path: '/w/README.md', line: 1 },
    { path: '/w/docs/x.md', line: 1 },
  ],
  search: { shape: 'paths', paths: ['README.md', 'docs/x.md'], truncated: false, total: 2 },
};

export const lspCard: Card = {
  callId: 'call_lsp',
  tool: 'lsp',
  status: 'completed',
  kind: 'search',
  title: 'LSP goToDefinition src/b.ts:3:10',
  text: 'src/a.ts:1:17',
  rendered: 'lsp LSP goToDefinition src/b.ts:3:10 · completed\nsrc/a.ts:1:17: export function greet(name: string) {',
  locations: [{ path: '/w/src/a.ts', line: 1 }],
  search: {
    shape: 'locations',
    locations: [{ path: 'src/a.ts', line: 1, character: 17, snippet: 'export function greet(name: string) {' }],
    truncated: false,
    total: 1,
  },
};

export const emptySearchCard: Card = {
  callId: 'call_none',
  tool: 'grep',
  status: 'completed',
  kind: 'search',
  title: 'Grep nothing',
  text: 'No files found',
  rendered: 'grep Grep nothing · completed\n(no results)',
  locations: [],
  search: { shape: 'matches', files: [], truncated: false, total: 0 },
};

export const failedCard: Card = {
  callId: 'call_fail',
  tool: 'edit',
  status: 'failed',
  kind: 'generic',
  title: 'Edit a.txt',
  text: '"/w/a.txt" has unsaved changes in the editor; save or revert it, then retry',
  rendered: 'edit Edit a.txt · failed\n"/w/a.txt" has unsaved changes in the editor; save or revert it, then retry',
  locations: [{ path: '/w/a.txt', line: 1 }],
};

export const hostileCard: Card = {
  callId: 'call_"><script>',
  tool: 'edit',
  status: 'completed',
  kind: 'diff',
  title: '<img src=x onerror=alert(1)>',
  text: '<script>alert(1)</script>',
  rendered: 'edit <img src=x onerror=alert(1)> · completed\n@@ -1,1 +1,1 @@\n-<script>\n+</div>&amp;',
  locations: [{ path: '/w/<x>.html', line: 1 }],
  hunks: [
    {
      path: '<x>.html',
      oldStart: 1,
      oldLines: 1,
      newStart: 1,
      newLines: 1,
      lines: [
        { op: '-', text: '<script>' },
        { op: '+', text: '</div>&amp;' },
      ],
      header: '@@ -1,1 +1,1 @@',
    },
  ],
  stats: { additions: 1, deletions: 1 },
};

/** An edit an agent made through `toolhost mcp`, attached to the editor's server (the server's
 * real output): `caller` is its MCP client's name, and the title line ends with it. */
export const mcpEditCard: Card = {
  callId: 'call_24898a4c08b4',
  tool: 'edit',
  caller: 'claude-code',
  status: 'completed',
  kind: 'diff',
  title: 'Edit mcp.txt',
  text: 'The file /w/mcp.txt has been updated successfully.',
  rendered:
    'edit Edit mcp.txt · completed · claude-code\n@@ -1,3 +1,3 @@\n first line\n-second line\n+second line, edited by claude-code\n third line',
  locations: [{ path: '/w/mcp.txt', line: 1 }],
  hunks: [
    {
      path: 'mcp.txt',
      oldStart: 1,
      oldLines: 3,
      newStart: 1,
      newLines: 3,
      lines: [
        { op: ' ', text: 'first line' },
        { op: '-', text: 'second line' },
        { op: '+', text: 'second line, edited by claude-code' },
        { op: ' ', text: 'third line' },
      ],
      header: '@@ -1,3 +1,3 @@',
    },
  ],
  stats: { additions: 1, deletions: 1 },
};

/** The same call while it runs: pending, with its preview hunk, already labelled. */
export const mcpPendingEditCard: Card = {
  callId: 'call_24898a4c08b4',
  tool: 'edit',
  caller: 'claude-code',
  status: 'pending',
  kind: 'diff',
  title: 'Edit mcp.txt',
  text: '',
  rendered: 'edit Edit mcp.txt · pending · claude-code\n@@ preview -1 +1 @@\n-second line\n+second line, edited by claude-code',
  locations: [{ path: '/w/mcp.txt', line: 1 }],
  hunks: [
    {
      path: 'mcp.txt',
      oldStart: 0,
      oldLines: 1,
      newStart: 0,
      newLines: 1,
      lines: [
        { op: '-', text: 'second line' },
        { op: '+', text: 'second line, edited by claude-code' },
      ],
      preview: true,
      header: '@@ preview -1 +1 @@',
    },
  ],
  stats: { additions: 1, deletions: 1 },
};

/** A `bash` call while it runs (`TerminalView::running`): no output yet; the client appends the
 * `toolhost/callOutput` text. */
export const bashPendingCard: Card = {
  callId: 'call_bash',
  tool: 'bash',
  status: 'pending',
  kind: 'terminal',
  title: 'for i in 1 2 3; do echo "line $i"; done',
  text: '',
  rendered: 'bash for i in 1 2 3; do echo "line $i"; done · pending',
  locations: [],
  terminal: { command: 'for i in 1 2 3; do echo "line $i"; done', description: 'count to three', output: '' },
};

/** The same call finished (the server's real output for such a command): coloured output, stderr,
 * a non-zero exit (the `[exit code: 3]` line became the pill and left `output`). */
export const bashCard: Card = {
  callId: 'call_bash',
  tool: 'bash',
  status: 'completed',
  kind: 'terminal',
  title: 'for i in 1 2 3; do echo "line $i"; done',
  text: 'line 1\n\u001b[31mred\u001b[0m <b>\n[stderr]\nerr\n[exit code: 3]',
  rendered: 'bash for i in 1 2 3; do echo "line $i"; done · completed\nline 1\n\u001b[31mred\u001b[0m <b>\n[stderr]\nerr\n[exit code: 3]',
  locations: [],
  terminal: {
    command: 'for i in 1 2 3; do echo "line $i"; done',
    description: 'count to three',
    output: 'line 1\n\u001b[31mred\u001b[0m <b>\n[stderr]\nerr',
    exitCode: 3,
  },
};

/** A command the timeout stopped, in a subdirectory. */
export const bashTimedOutCard: Card = {
  callId: 'call_slow',
  tool: 'bash',
  status: 'completed',
  kind: 'terminal',
  title: 'sleep 5',
  text: '(no output)\n[timed out after 500ms]\n[killed by signal: SIGTERM]',
  rendered: 'bash sleep 5 · completed\n(no output)\n[timed out after 500ms]\n[killed by signal: SIGTERM]',
  locations: [],
  terminal: { command: 'sleep 5', description: 'slow', cwd: 'sub', output: '(no output)\n[timed out after 500ms]', signal: 'SIGTERM', timedOut: true },
};

/** Long output: 30 lines shown, the full output spilled to a file. */
export const bashSpillCard: Card = {
  callId: 'call_seq',
  tool: 'bash',
  status: 'completed',
  kind: 'terminal',
  title: 'seq 1 30',
  text: `${Array.from({ length: 30 }, (_, i) => `${i + 1}`).join('\n')}\n[output truncated; full output: /s/blobs/5af7b9]`,
  rendered: `bash seq 1 30 · completed\n${Array.from({ length: 30 }, (_, i) => `${i + 1}`).join('\n')}\n[output truncated; full output: /s/blobs/5af7b9]`,
  locations: [],
  terminal: {
    command: 'seq 1 30',
    output: `${Array.from({ length: 30 }, (_, i) => `${i + 1}`).join('\n')}\n[output truncated; full output: /s/blobs/5af7b9]`,
    exitCode: 0,
    spillPaths: ['/s/blobs/5af7b9'],
  },
};

/** A `bash` call stopped with Stop (`toolhost/cancelCall`): a failed call is generic. */
export const bashAbortedCard: Card = {
  callId: 'call_bash',
  tool: 'bash',
  status: 'failed',
  kind: 'generic',
  title: 'for i in 1 2 3; do echo "line $i"; done',
  text: 'the call was cancelled',
  rendered: 'bash for i in 1 2 3; do echo "line $i"; done · failed\nthe call was cancelled',
  locations: [],
};

/** The card of a revert of {@link editCard} (the `revert` tool's spec): a diff card of what the
 * revert wrote, titled `Revert <call_id>`, itself revertible. */
export const revertCard: Card = {
  callId: 'call_5e1f0c2a9d77',
  tool: 'revert',
  status: 'completed',
  kind: 'diff',
  title: 'Revert call_11d418f8bd96',
  text: 'Reverted call_11d418f8bd96: restored a.txt',
  rendered: 'revert Revert call_11d418f8bd96 · completed\n@@ -1,2 +1,2 @@\n hello\n-there\n+world',
  locations: [{ path: '/w/a.txt', line: 1 }],
  hunks: [
    {
      path: 'a.txt',
      oldStart: 1,
      oldLines: 2,
      newStart: 1,
      newLines: 2,
      lines: [
        { op: ' ', text: 'hello' },
        { op: '-', text: 'there' },
        { op: '+', text: 'world' },
      ],
      header: '@@ -1,2 +1,2 @@',
    },
  ],
  stats: { additions: 1, deletions: 1 },
};

/** A revert the server refused (`REVERT_CONFLICT`): a failed card, like every failed call. */
export const failedRevertCard: Card = {
  callId: 'call_0b7c1d2e3f40',
  tool: 'revert',
  status: 'failed',
  kind: 'generic',
  title: 'Revert call_11d418f8bd96',
  text: 'a.txt changed since call_11d418f8bd96 and the reverse change conflicts at lines 2-2; nothing was written',
  rendered:
    'revert Revert call_11d418f8bd96 · failed\na.txt changed since call_11d418f8bd96 and the reverse change conflicts at lines 2-2; nothing was written',
  locations: [{ path: '/w/a.txt', line: 1 }],
};

// ---- cards drawn from their data (todo_write, ask_user_question, exit_plan_mode,
// structured_output), as the real server sends them

export const todoCard: Card = {
  callId: 'call_02a4165d50d8',
  tool: 'todo_write',
  status: 'completed',
  kind: 'todo',
  title: 'Todos (1/3 done)',
  text: 'Updated todo list: 1 pending, 1 in progress, 1 completed.',
  rendered: 'todo_write Todos (1/3 done) · completed\n[x] a\n[>] b <x>\n[ ] c',
  locations: [],
  data: {
    todos: [
      { content: 'a', status: 'completed' },
      { content: 'b <x>', status: 'in_progress' },
      { content: 'c', status: 'pending' },
    ],
    counts: { pending: 1, inProgress: 1, completed: 1 },
  },
};

export const laterTodoCard: Card = {
  callId: 'call_todo_later',
  tool: 'todo_write',
  status: 'completed',
  kind: 'todo',
  title: 'Todos (3/3 done)',
  text: 'Updated todo list: 0 pending, 0 in progress, 3 completed.',
  rendered: 'todo_write Todos (3/3 done) · completed\n[x] a\n[x] b <x>\n[x] c',
  locations: [],
  data: {
    todos: [
      { content: 'a', status: 'completed' },
      { content: 'b <x>', status: 'completed' },
      { content: 'c', status: 'completed' },
    ],
    counts: { pending: 0, inProgress: 0, completed: 3 },
  },
};

const dbQuestion = { id: 'db', question: 'Which database?', header: 'DB', options: [{ label: 'Postgres' }, { label: 'SQLite <3', description: 'one "file"' }], multiSelect: false };

export const pendingQuestionCard: Card = {
  callId: 'call_ask',
  tool: 'ask_user_question',
  status: 'pending',
  kind: 'question',
  title: 'Ask: DB',
  text: '',
  rendered: 'ask_user_question Ask: DB · pending\n? Which database?',
  locations: [],
  data: { questions: [dbQuestion] },
};

export const questionCard: Card = {
  ...pendingQuestionCard,
  status: 'completed',
  text: '{"answers":[{"id":"db","selected":["SQLite <3"]},{"id":"why","selected":[],"custom":"it is <small>"}]}',
  rendered: 'ask_user_question Ask: DB (+1) · completed\n? Which database?\n→ SQLite <3\n? Why?\n→ "it is <small>"',
  title: 'Ask: DB (+1)',
  data: {
    questions: [dbQuestion, { id: 'why', question: 'Why?', multiSelect: false }],
    answers: [
      { id: 'db', selected: ['SQLite <3'] },
      { id: 'why', selected: [], custom: 'it is <small>' },
    ],
  },
};

export const failedQuestionCard: Card = {
  ...pendingQuestionCard,
  status: 'failed',
  text: 'Error: the user cancelled ask_user_question',
  rendered: 'ask_user_question Ask: DB · failed\n? Which database?\nError: the user cancelled ask_user_question',
};

const plan = '# Move to <SQLite>\n\n1. Add the **driver**\n2. Port `schema.sql`\n   - keep the _old_ one\n\n```sh\nrm -rf <old> && echo "done"\n```\n\n<script>alert(1)</script>';

export const planCard: Card = {
  callId: 'call_plan',
  tool: 'exit_plan_mode',
  status: 'completed',
  kind: 'plan',
  title: 'Plan: Move to <SQLite>',
  text: 'Plan approved — plan mode exited; carry out the plan starting with your next step.',
  rendered: `exit_plan_mode Plan: Move to <SQLite> · completed\n${plan}\n→ Approved`,
  locations: [],
  data: { plan, approved: true },
};

export const refusedPlanCard: Card = {
  ...planCard,
  status: 'failed',
  text: 'Error: the user wants more planning: <use a migration tool>',
  rendered: `exit_plan_mode Plan: Move to <SQLite> · failed\n${plan}\nError: the user wants more planning: <use a migration tool>`,
  data: { plan },
};

export const structuredCard: Card = {
  callId: 'call_6ffd6f9c59c3',
  tool: 'structured_output',
  status: 'completed',
  kind: 'structured',
  title: 'Structured output',
  text: 'Structured output recorded.',
  rendered: 'structured_output Structured output · completed\n{\n  "name": "<x>",\n  "n": [\n    1,\n    2\n  ]\n}',
  locations: [],
  data: { value: { name: '<x>', n: [1, 2] } },
};

// Cards of tools external MCP servers provide through toolhost's MCP bridge (`kind: "mcp"`; the
// shapes of tools/mcp's bridge: data `{server, tool, structuredContent?}`, the title
// `<server> · <tool>`).

export const mcpToolPendingCard: Card = {
  callId: 'call_mcp_pending',
  tool: 'mcp__echo__weather',
  status: 'pending',
  kind: 'mcp',
  title: 'echo · weather',
  text: '',
  rendered: 'mcp__echo__weather echo · weather · pending',
  locations: [],
  data: { server: 'echo', tool: 'weather' },
};

const weather = { location: { city: 'Paris</script><script>alert(1)</script>', country: 'Nowhere' }, celsius: 21.5, conditions: ['sunny', 'calm'], windy: false, note: null };
const weatherText = JSON.stringify(weather);

export const mcpToolStructuredCard: Card = {
  ...mcpToolPendingCard,
  callId: 'call_mcp_structured',
  status: 'completed',
  text: weatherText,
  rendered: `mcp__echo__weather echo · weather · completed\n${weatherText}`,
  data: { server: 'echo', tool: 'weather', structuredContent: weather },
};

export const mcpToolTextCard: Card = {
  callId: 'call_mcp_text',
  tool: 'mcp__echo__shout',
  status: 'completed',
  kind: 'mcp',
  title: 'echo · shout',
  text: 'HELLO <SCRIPT>ALERT(1)</SCRIPT>\n  indented & spaced',
  rendered: 'mcp__echo__shout echo · shout · completed\nHELLO <SCRIPT>ALERT(1)</SCRIPT>\n  indented & spaced',
  locations: [],
  data: { server: 'echo', tool: 'shout' },
};

export const mcpToolFailedCard: Card = {
  ...mcpToolTextCard,
  callId: 'call_mcp_failed',
  status: 'failed',
  text: 'Error: MCP server "echo" is not connected (failed: <spawn> python3: not found)',
  rendered: 'mcp__echo__shout echo · shout · failed\nError: MCP server "echo" is not connected (failed: <spawn> python3: not found)',
};
