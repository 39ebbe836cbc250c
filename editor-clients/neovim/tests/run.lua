-- Headless tests of the Neovim plugin against the real toolhost binary (TOOLHOST_BIN) and a real
-- language server (clangd). Run: nvim --clean --headless -l tests/run.lua
-- Prints `N passed, N failed` and exits non-zero on any failure.
local here = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
package.path = here .. '/?.lua;' .. package.path
local H = require('helpers')

-- What the plugin looks like before anything requires it (plugin/ only, no setup()).
local preload_modules = {}
H.load_plugin()
for name in pairs(package.loaded) do
  if name:match('^toolhost') then
    table.insert(preload_modules, name)
  end
end

--- The clangd program: `clangd`, else `clangd-19` (the test fails when neither exists).
local function clangd()
  for _, name in ipairs({ vim.env.CLANGD or '', 'clangd', 'clangd-19', 'clangd-18', 'clangd-17', 'clangd-16' }) do
    if name ~= '' and vim.fn.executable(name) == 1 then
      return vim.fn.exepath(name)
    end
  end
  error('clangd is not installed (tests/run.sh installs it with apt-get install -y clangd)')
end

--- UTF-16 column of the first `needle` on `line` (0-based), and its byte column.
local function col16(line, needle)
  local b = assert(line:find(needle, 1, true), needle .. ' not on line ' .. line) - 1
  return vim.str_utfindex(line, 'utf-16', b, false), b
end

local C_SOURCE = table.concat({
  '/* héllo wörld — ✓ */',
  'static int /* ü😀 */ add(int a, int b) { return a + b; }',
  '',
  'int main(void) {',
  '  int r = /* é😀ü✓ */ add(1, 2);',
  '  return r;',
  '}',
  '',
}, '\n')

local tests = {}
local function test(name, fn)
  table.insert(tests, { name, fn })
end

test('plugin loads lazily and works without setup()', function()
  H.eq(preload_modules, {}, 'modules required by plugin/toolhost.lua at startup')
  H.eq(vim.fn.exists(':Toolhost'), 2, ':Toolhost exists')
  for _, name in ipairs({
    'cards',
    'clear',
    'tools',
    'sessions',
    'revert',
    'revert-since',
    'review',
    'review-accept',
    'mcp-servers',
  }) do
    H.check(vim.fn.maparg(('<Plug>(toolhost-%s)'):format(name), 'n') ~= '', '<Plug>(toolhost-' .. name .. ') exists')
  end
  H.eq(vim.fn.maparg('<leader>tc', 'n'), '', 'no key mapped by default')
  local config = require('toolhost.config')
  local cfg = config.get()
  H.eq(cfg.cmd, { 'toolhost', 'serve' }, 'default cmd')
  H.eq(cfg.auto_start, true, 'default auto_start')
  H.eq(cfg.keymaps, false, 'default keymaps')
  H.eq(cfg.root_markers, { 'toolhost.toml', '.git' }, 'default root markers')
  vim.g.toolhost = { cmd = { '/opt/th' }, auto_start = false }
  H.eq(config.get().cmd, { '/opt/th' }, 'vim.g.toolhost replaces cmd (lists are not merged)')
  H.eq(config.get().auto_start, false, 'vim.g.toolhost overrides auto_start')
  require('toolhost').setup({ cmd = { 'x', 'serve' }, keymaps = true })
  H.eq(config.get().cmd, { 'x', 'serve' }, 'setup() wins over vim.g.toolhost')
  H.eq(vim.fn.maparg('<leader>tc', 'n'), '<Plug>(toolhost-cards)', 'keymaps = true maps the <Plug> mappings')
  vim.g.toolhost = nil
  -- the help file has valid tags
  local doc = vim.fn.tempname()
  vim.fn.mkdir(doc, 'p')
  vim.fn.writefile(vim.fn.readfile(H.plugin_dir .. '/doc/toolhost.txt', 'b'), doc .. '/toolhost.txt', 'b')
  vim.cmd.helptags(doc)
  local tags = table.concat(vim.fn.readfile(doc .. '/tags'), '\n')
  for _, tag in ipairs({
    'toolhost.txt',
    ':Toolhost',
    'toolhost.setup()',
    'g:toolhost',
    'toolhost-provider',
    'toolhost-provider-cancel',
    'toolhost-install',
    'toolhost-install-lazy',
    'toolhost-install-packages',
    'toolhost-enable',
    'toolhost-mcp',
    'toolhost-mcp-setup',
    'toolhost-mcp-editor',
    'toolhost-mcp-prefer',
    'toolhost-mcp-servers',
    'toolhost-mcp-cards',
    ':Toolhost-mcp-servers',
    'hl-ToolhostMcpServer',
    'hl-ToolhostCaller',
    'hl-ToolhostCardFile',
    ':ToolhostStop',
    ':Toolhost-revert',
    ':Toolhost-revert-since',
    'toolhost-revert',
    'toolhost-terminal',
    'toolhost-output',
    'toolhost-notice',
    'toolhost-review',
    'toolhost-review-keys',
    'toolhost-review-open',
    ':Toolhost-review',
    ':Toolhost-review-mode',
    ':Toolhost-help',
    'toolhost-pending',
    'hl-ToolhostReviewAccepted',
    'hl-ToolhostReviewRejected',
    'hl-ToolhostReviewUndecided',
    'hl-ToolhostExitOk',
    'hl-ToolhostExitError',
    'hl-ToolhostExitWarn',
    'toolhost-ask',
    'toolhost-ask-pickers',
    'toolhost-plan-review',
    'toolhost-plan-mode',
    'toolhost-todo',
    ':Toolhost-plan-mode',
    'hl-ToolhostTodoActive',
    'hl-ToolhostQuestion',
    'hl-ToolhostPlanHeading',
    'toolhost-chat',
    ':Toolhost-ask',
    ':Toolhost-chat',
    'hl-ToolhostChatPrompt',
    'hl-ToolhostChatAgent',
    'toolhost-agents',
    ':Toolhost-agent',
    ':Toolhost-agents',
  }) do
    H.check(tags:find(tag .. '\t', 1, true) == 1 or tags:find('\n' .. tag .. '\t', 1, true) ~= nil, 'help tag ' .. tag)
  end
  -- every |link| of the help names a tag: the plugin's own or Neovim's
  local own = {}
  for _, l in ipairs(vim.fn.readfile(doc .. '/tags')) do
    own[l:match('^[^\t]+')] = true
  end
  for link in table.concat(vim.fn.readfile(doc .. '/toolhost.txt'), '\n'):gmatch('|([^|%s]+)|') do
    H.check(
      own[link] or vim.tbl_contains(vim.fn.getcompletion(link, 'help'), link),
      'help link |' .. link .. '| has a tag'
    )
  end
  vim.keymap.del('n', '<leader>tc')
  for _, k in ipairs({ '<leader>tx', '<leader>tt', '<leader>ts', '<leader>tr' }) do
    pcall(vim.keymap.del, 'n', k)
  end
end)

test('start on a workspace: one client per root, every file buffer attached', function()
  local ws, sessions = H.workspace({
    ['src/main.c'] = 'int main(void) { return 0; }\n',
    ['notes.txt'] = 'hello\n',
    ['docs/guide.md'] = '# Guide\n',
  })
  local outside = vim.fn.tempname() .. '-plain'
  H.write(outside .. '/loose.txt', 'loose\n')
  H.setup(sessions)
  vim.cmd.edit(ws .. '/src/main.c')
  local c = H.client()
  H.eq(c.name, 'toolhost', 'client name')
  H.eq(c.root_dir, ws, 'root from the .git marker')
  H.eq(c.config.cmd_cwd, ws, 'server runs in the root')
  H.eq(c.workspace_folders[1].uri, vim.uri_from_fname(ws), 'workspace folder')
  H.eq(c.config.capabilities.experimental.toolhost.lspProvider, true, 'lspProvider capability advertised')
  H.eq(c.config.capabilities.experimental.toolhost.review, true, 'review capability advertised')
  H.eq(c.config.capabilities.experimental.toolhost.askUser, true, 'askUser capability advertised')
  H.check(c.server_capabilities.experimental.toolhost.sessionId ~= nil, 'server reports its session')
  H.eq(
    require('toolhost.client').state(c.id).session_id,
    c.server_capabilities.experimental.toolhost.sessionId,
    'session id recorded'
  )
  vim.cmd.edit(ws .. '/notes.txt')
  vim.cmd.edit(ws .. '/docs/guide.md')
  H.eq(#vim.lsp.get_clients({ name = 'toolhost' }), 1, 'one client for the root')
  for _, rel in ipairs({ 'src/main.c', 'notes.txt', 'docs/guide.md' }) do
    local b = vim.fn.bufnr(ws .. '/' .. rel)
    H.check(c.attached_buffers[b], rel .. ' is attached (filetype ' .. vim.bo[b].filetype .. ')')
  end
  vim.cmd.edit(outside .. '/loose.txt')
  H.eq(#vim.lsp.get_clients({ name = 'toolhost', bufnr = 0 }), 0, 'a file outside every root is not attached')
  -- another root (toolhost.toml marker) gets its own client
  local ws2, _ = H.workspace({ ['toolhost.toml'] = '', ['x.txt'] = 'x\n' })
  vim.cmd.edit(ws2 .. '/x.txt')
  local c2 = H.client()
  H.check(c2.id ~= c.id and c2.root_dir == ws2, 'a second root gets its own client')
end)

test(':Toolhost call edit changes the file, reloads the buffer, shows inline hunks', function()
  local lines = {}
  for i = 1, 12 do
    lines[i] = 'line ' .. i
  end
  local ws, sessions = H.workspace({ ['a.txt'] = table.concat(lines, '\n') .. '\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.client()
  local read = H.command_call('read', '{"file_path": "a.txt"}')
  H.eq(read.status, 'completed', 'read card status')
  local card =
    H.command_call('edit', '{"file_path": "a.txt", "old_string": "line 6\\n", "new_string": "six\\nsix b\\n"}')
  H.eq(card.status, 'completed', 'edit card status: ' .. card.text)
  local expected =
    'line 1\nline 2\nline 3\nline 4\nline 5\nsix\nsix b\nline 7\nline 8\nline 9\nline 10\nline 11\nline 12\n'
  H.eq(H.read(ws .. '/a.txt'), expected, 'file on disk')
  H.eq(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n', expected, 'buffer reloaded')
  H.eq(vim.bo[buf].modified, false, 'buffer unmodified after reload')
  H.eq(card.hunks[1].newStart, 3, 'hunk newStart')
  local marks = require('toolhost.inline').marks(buf)
  local virt, added = {}, {}
  for _, m in ipairs(marks) do
    local d = m[4]
    if d.virt_lines then
      local texts = {}
      for _, vl in ipairs(d.virt_lines) do
        table.insert(texts, { vl[1][1], vl[1][2] })
      end
      table.insert(virt, { row = m[2], above = d.virt_lines_above, lines = texts })
    elseif d.line_hl_group then
      table.insert(added, { m[2], d.line_hl_group })
    end
  end
  table.sort(virt, function(a, b)
    return a.row < b.row
  end)
  table.sort(added, function(a, b)
    return a[1] < b[1]
  end)
  H.eq(card.hunks[1].header, '@@ -3,7 +3,8 @@', 'hunk header from the server')
  H.eq(virt, {
    { row = 2, above = true, lines = { { 'edit Edit a.txt  @@ -3,7 +3,8 @@  +2 -1', 'ToolhostInlineHeader' } } },
    { row = 5, above = true, lines = { { 'line 6', 'ToolhostInlineDelete' } } },
  }, 'virtual lines: header at newStart (line 3), removed line above its replacement (line 6)')
  H.eq(added, { { 5, 'ToolhostInlineAdd' }, { 6, 'ToolhostInlineAdd' } }, 'added lines highlighted')
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostInlineDelete' }).link, 'DiffDelete', 'delete highlight')

  -- The user edits a line of the hunk: its inline card goes away.
  vim.api.nvim_buf_set_lines(buf, 5, 6, false, { 'SIX' })
  H.wait(function()
    return #require('toolhost.inline').marks(buf) == 0
  end, 'inline card dismissed by an edit of its lines')
  vim.cmd('silent write')

  -- A second edit, then :Toolhost clear.
  H.command_call('read', '{"file_path": "a.txt"}')
  local second = H.command_call('edit', '{"file_path": "a.txt", "old_string": "line 11", "new_string": "eleven"}')
  H.eq(second.status, 'completed', 'second edit: ' .. second.text)
  H.eq(vim.api.nvim_buf_get_lines(buf, 11, 12, false)[1], 'eleven', 'buffer reloaded again')
  H.check(#require('toolhost.inline').marks(buf) > 0, 'second inline card shown')
  -- an edit outside the hunk keeps it
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'LINE 1' })
  vim.wait(50)
  H.check(#require('toolhost.inline').marks(buf) > 0, 'an edit elsewhere keeps the inline card')
  vim.cmd('Toolhost clear')
  H.eq(#require('toolhost.inline').marks(buf), 0, ':Toolhost clear removes inline cards')
end)

--- Runs a mixed session through the API and returns the callTool responses' cards.
local function mixed_session()
  local ws, sessions = H.workspace({
    ['src/util.c'] = 'int one(void) { return 1; }\nint two(void) { return 2; }\n',
    ['README.md'] = '# demo\nsee util.c\n',
  })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/src/util.c')
  local c = H.client()
  local cards = {}
  local calls = {
    { 'glob', { pattern = '**/*.c' } },
    { 'read', { file_path = 'src/util.c' } },
    { 'edit', { file_path = 'src/util.c', old_string = 'return 2;', new_string = 'return 2 + 0;\n  /* two */' } },
    { 'grep', { pattern = 'return' } },
    { 'write', { file_path = 'src/new.h', content = '#pragma once\nint one(void);\n' } },
    { 'read', { file_path = 'missing.txt' } },
  }
  for _, call in ipairs(calls) do
    table.insert(cards, H.call(call[1], call[2], c).card)
  end
  return ws, c, cards
end

---@param cards table[] oldest first
local function expected_text(cards)
  local parts = {}
  for i = #cards, 1, -1 do
    table.insert(parts, cards[i].rendered)
  end
  return table.concat(parts, '\n\n')
end

test('cards buffer shows each card rendered byte for byte, newest first, with highlights and <CR>', function()
  local ws, c, cards = mixed_session()
  local buf = assert(require('toolhost').cards())
  H.eq(
    vim.api.nvim_buf_get_name(buf),
    'toolhost://cards/' .. require('toolhost.client').state(c.id).session_id,
    'buffer name'
  )
  H.eq(H.buf_text(buf), expected_text(cards), 'cards buffer content')
  H.eq(vim.bo[buf].buftype, 'nofile', 'scratch buffer')
  H.eq(vim.bo[buf].modifiable, false, 'read-only')
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostDiffAdd' }).link, 'DiffAdd', 'add highlight links to DiffAdd')
  H.eq(
    vim.api.nvim_get_hl(0, { name = 'ToolhostDiffDelete' }).link,
    'DiffDelete',
    'delete highlight links to DiffDelete'
  )
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local hl = {}
  local ns = require('toolhost.cards').namespace
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    hl[m[2] + 1] = m[4].line_hl_group
  end
  -- The edit card (4th newest) holds the +/- lines; check every line of that card.
  local edit_card = cards[3]
  local start
  for i, l in ipairs(lines) do
    if l == vim.split(edit_card.rendered, '\n')[1] then
      start = i
      break
    end
  end
  assert(start, 'edit card title found')
  local plus_row, n_plus, n_minus = nil, 0, 0
  for k, l in ipairs(vim.split(edit_card.rendered, '\n')) do
    local row = start + k - 1
    local want = k == 1 and 'ToolhostCardTitle'
      or (l:sub(1, 2) == '@@' and 'ToolhostHunkHeader')
      or (l:sub(1, 1) == '+' and 'ToolhostDiffAdd')
      or (l:sub(1, 1) == '-' and 'ToolhostDiffDelete')
      or nil
    H.eq(hl[row], want, ('highlight of %q'):format(l))
    if want == 'ToolhostDiffAdd' then
      n_plus = n_plus + 1
      plus_row = plus_row or row
    elseif want == 'ToolhostDiffDelete' then
      n_minus = n_minus + 1
    end
  end
  H.eq({ n_plus, n_minus }, { edit_card.stats.additions, edit_card.stats.deletions }, '+/- lines highlighted')
  -- A '-' line that merely starts a read card's text is not highlighted.
  for row, l in ipairs(lines) do
    if l:sub(1, 1) == '-' and not (row >= start and row < start + #vim.split(edit_card.rendered, '\n')) then
      H.check(hl[row] ~= 'ToolhostDiffDelete', 'no diff highlight outside diff cards: ' .. l)
    end
  end
  -- <CR> on the first '+' line opens util.c at that line in the new file.
  vim.api.nvim_win_set_cursor(0, { plus_row, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  H.eq(vim.api.nvim_buf_get_name(0), ws .. '/src/util.c', '<CR> opens the file')
  local line = vim.api.nvim_win_get_cursor(0)[1]
  H.eq(
    { line, vim.api.nvim_get_current_line() },
    { 2, 'int two(void) { return 2 + 0;' },
    '<CR> lands on the added line'
  )
  -- <CR> on a grep match line lands on that match.
  vim.cmd('Toolhost cards')
  local grep_card = cards[4]
  local grep_lines = vim.split(grep_card.rendered, '\n')
  local row
  for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    if l == grep_lines[2] then
      row = i
      break
    end
  end
  vim.api.nvim_win_set_cursor(0, { assert(row, 'grep line'), 0 })
  require('toolhost.cards').jump()
  H.eq(
    { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] },
    { grep_card.locations[1].path, grep_card.locations[1].line },
    '<CR> on a grep line'
  )
  -- New cards refresh an open cards buffer.
  H.call('read', { file_path = 'README.md' }, c)
  table.insert(cards, nil)
  H.check(
    vim.startswith(H.buf_text(buf), 'read Read README.md · completed'),
    'the open cards buffer shows the newest card first'
  )
end)

test(':Toolhost replay gives the same cards buffer (same server, a new one, a resumed session)', function()
  local ws, c, cards = mixed_session()
  local session = require('toolhost.client').state(c.id).session_id
  local live = H.buf_text(assert(require('toolhost').cards()))
  H.eq(live, expected_text(cards), 'live cards buffer')
  vim.cmd('Toolhost replay ' .. session)
  local rbuf
  H.wait(function()
    rbuf = vim.fn.bufnr('toolhost://replay/' .. session)
    return rbuf ~= -1 and vim.api.nvim_buf_line_count(rbuf) > 1
  end, 'replay buffer')
  H.eq(H.buf_text(rbuf), live, 'replay buffer equals the live cards buffer')
  -- Completion offers the session.
  local comp = require('toolhost').complete('', 'Toolhost replay ')
  H.check(vim.tbl_contains(comp, session), 'replay completion lists the session')
  -- A new server process (a new session) replays the old session from its log alone.
  vim.cmd('silent! bwipeout! ' .. rbuf)
  c:stop()
  H.wait(function()
    return c:is_stopped()
  end, 'client stop')
  vim.cmd.edit(ws .. '/README.md')
  local c2 = H.client()
  H.check(c2.id ~= c.id, 'a new client')
  local got
  require('toolhost').sessions(function(err, list)
    got = err or list
  end)
  H.wait(function()
    return got
  end, 'listSessions')
  local ids = vim.tbl_map(function(s)
    return s.id
  end, got)
  H.check(vim.tbl_contains(ids, session), 'the old session is listed: ' .. vim.inspect(ids))
  vim.cmd('Toolhost replay ' .. session)
  H.wait(function()
    rbuf = vim.fn.bufnr('toolhost://replay/' .. session)
    return rbuf ~= -1 and vim.api.nvim_buf_line_count(rbuf) > 1
  end, 'replay buffer (new server)')
  H.eq(H.buf_text(rbuf), live, 'replay from a new server equals the live cards buffer')
  -- Resuming the session (session_id) shows its earlier cards in the live cards buffer.
  c2:stop()
  H.wait(function()
    return c2:is_stopped()
  end, 'client stop')
  H.setup(vim.fs.dirname(ws) .. '/sessions', { session_id = session })
  vim.cmd('silent! bwipeout! ' .. vim.fn.bufnr(ws .. '/README.md'))
  vim.cmd.edit(ws .. '/README.md')
  local c3 = H.client()
  H.eq(require('toolhost.client').state(c3.id).session_id, session, 'resumed session')
  H.wait(function()
    return #require('toolhost.cards').list(c3.id) == #cards
  end, 'earlier cards of the resumed session')
  H.eq(H.buf_text(assert(require('toolhost').cards())), live, 'resumed session: same cards buffer')
end)

test(':Toolhost replay of a damaged log shows the cards before the damage and says how to repair it', function()
  local ws, c, cards = mixed_session()
  local session = require('toolhost.client').state(c.id).session_id
  c:stop()
  H.wait(function()
    return c:is_stopped()
  end, 'client stop')
  local sessions = vim.fs.dirname(ws) .. '/sessions'
  local logs = vim.fs.find('session.jsonl', { path = sessions, type = 'file', limit = math.huge })
  local log = vim.tbl_filter(function(p)
    return vim.fs.basename(vim.fs.dirname(p)) == session
  end, logs)[1]
  H.check(log, 'the session log: ' .. vim.inspect(logs))
  -- A NUL near the end of the log: never valid JSON, so that record and the rest are unreadable.
  local f = assert(io.open(log, 'rb'))
  local bytes = f:read('*a')
  f:close()
  local mid = math.floor(#bytes * 0.9)
  f = assert(io.open(log, 'wb'))
  f:write(bytes:sub(1, mid) .. '\0' .. bytes:sub(mid + 2))
  f:close()
  vim.cmd.edit(ws .. '/README.md')
  local c2 = H.client()
  H.check(c2.id ~= c.id, 'a new client')
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    table.insert(msgs, { m, level })
  end
  local buf
  require('toolhost').replay(session, function(_, b)
    buf = b or -1
  end)
  H.wait(function()
    return buf
  end, 'replay')
  vim.notify = orig
  local text = H.buf_text(buf)
  H.check(text:find(cards[1].rendered, 1, true), 'the first card is replayed: ' .. text)
  local warned = vim.tbl_filter(function(m)
    return m[2] == vim.log.levels.WARN and m[1]:find('toolhost sessions repair ' .. session, 1, true) ~= nil
  end, msgs)
  H.eq(#warned, 1, 'one warning naming the repair command: ' .. vim.inspect(msgs))
  H.check(warned[1][1]:find('skipped', 1, true), 'the warning says what was skipped')
end)

test('a missing server binary is reported once, nothing starts', function()
  local ws, _ = H.workspace({ ['a.txt'] = 'a\n', ['b.txt'] = 'b\n' })
  require('toolhost').setup({ cmd = { '/nonexistent/toolhost', 'serve' } })
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m)
    table.insert(msgs, m)
  end
  vim.cmd.edit(ws .. '/a.txt')
  vim.cmd.edit(ws .. '/b.txt')
  vim.notify = orig
  H.eq(#vim.lsp.get_clients({ name = 'toolhost' }), 0, 'no client')
  H.eq(#msgs, 1, 'one warning: ' .. vim.inspect(msgs))
  H.check(msgs[1]:find('not executable', 1, true), 'warning text')
end)

test('FS_DIRTY_BUFFER: an edit of a modified buffer fails and the unsaved text is kept', function()
  local ws, sessions = H.workspace({ ['b.txt'] = 'alpha\nbeta\ngamma\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/b.txt')
  local buf = vim.api.nvim_get_current_buf()
  local c = H.client()
  H.eq(H.call('read', { file_path = 'b.txt' }, c).result.isError, false, 'read')
  -- The user types (unsaved); no waiting for the debounce: the request flushes didChange first.
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { 'beta (my unsaved work)' })
  local res = H.call('edit', { file_path = 'b.txt', old_string = 'gamma', new_string = 'GAMMA' }, c)
  H.eq(res.result.isError, true, 'edit fails')
  H.eq(res.result.error.info.code, 'FS_DIRTY_BUFFER', 'error code')
  H.eq(res.card.status, 'failed', 'failed card')
  H.eq(H.read(ws .. '/b.txt'), 'alpha\nbeta\ngamma\n', 'disk unchanged')
  H.eq(
    vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    { 'alpha', 'beta (my unsaved work)', 'gamma' },
    'unsaved text kept'
  )
  H.eq(vim.bo[buf].modified, true, 'buffer still modified')
  -- A write is refused the same way.
  local w = H.call('write', { file_path = 'b.txt', content = 'overwritten\n' }, c)
  H.eq(w.result.error and w.result.error.info.code, 'FS_DIRTY_BUFFER', 'write refused')
  -- After :write the agent can edit again (after reading the saved text).
  vim.cmd('silent write')
  H.call('read', { file_path = 'b.txt' }, c)
  local ok = H.call('edit', { file_path = 'b.txt', old_string = 'gamma', new_string = 'GAMMA' }, c)
  H.eq(ok.result.isError, false, 'edit after save: ' .. vim.inspect(ok.result.content))
  H.eq(
    vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    { 'alpha', 'beta (my unsaved work)', 'GAMMA' },
    'buffer reloaded with both changes'
  )
end)

test('reload_misses_a_same_size_change_in_the_same_mtime_tick: a completed card re-reads the buffer anyway', function()
  -- What broke: an agent edit right after :write kept the size and landed in the same
  -- filesystem clock tick, so checktime saw nothing and the buffer kept the old text.
  local ws, sessions = H.workspace({ ['t.txt'] = 'alpha\ngamma\n' })
  H.setup(sessions)
  local path = ws .. '/t.txt'
  -- Whole seconds: fs_utime takes a double, which cannot carry every nanosecond.
  local when = assert(vim.uv.fs_stat(path)).mtime.sec
  assert(vim.uv.fs_utime(path, when, when))
  local st = assert(vim.uv.fs_stat(path))
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  H.write(path, 'alpha\nGAMMA\n')
  assert(vim.uv.fs_utime(path, when, when))
  local after = assert(vim.uv.fs_stat(path))
  H.eq({ after.size, after.mtime.sec, after.mtime.nsec }, { st.size, st.mtime.sec, st.mtime.nsec }, 'same stat')
  require('toolhost.inline').on_file_card({
    callId = 'c1',
    tool = 'edit',
    title = 't.txt',
    hunks = {},
    status = 'completed',
    kind = 'diff',
    locations = { { path = path } },
  })
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'alpha', 'GAMMA' }, 'buffer re-read')
  H.eq(vim.bo[buf].modified, false, 'unmodified')
end)

test(
  'buffers of files that do not exist yet: an agent write creates and loads them; typed text is protected',
  function()
    local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/a.txt')
    local c = H.client()
    vim.cmd.edit(ws .. '/new.txt')
    local nb = vim.api.nvim_get_current_buf()
    local card = H.command_call('write', '{"file_path": "new.txt", "content": "x\\ny\\n"}')
    H.eq(card.status, 'completed', 'an empty new buffer does not block the write: ' .. card.text)
    H.eq(vim.api.nvim_buf_get_lines(nb, 0, -1, false), { 'x', 'y' }, 'the buffer now shows the created file')
    H.eq(vim.bo[nb].modified, false, 'unmodified')
    H.check(c.attached_buffers[nb], 'attached once the file exists')
    H.eq(#require('toolhost.inline').marks(nb), 4, 'inline card: header, span and two added lines')
    vim.cmd.edit(ws .. '/other.txt')
    local ob = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(ob, 0, -1, false, { 'my notes' })
    vim.api.nvim_exec_autocmds('TextChanged', { buffer = ob })
    H.check(c.attached_buffers[ob], 'attached once the user types')
    local r = H.call('write', { file_path = 'other.txt', content = 'agent\n' }, c)
    H.eq(r.result.error and r.result.error.info.code, 'FS_DIRTY_BUFFER', 'the agent cannot create over unsaved text')
    H.eq(vim.uv.fs_stat(ws .. '/other.txt'), nil, 'nothing written')
    H.eq(vim.api.nvim_buf_get_lines(ob, 0, -1, false), { 'my notes' }, 'text kept')
  end
)

test('provider position conversion: UTF-16 <-> UTF-8/UTF-32 with non-ASCII before the symbol', function()
  local p = require('toolhost.provider')
  local line = 'x = "é😀✓"; add(1)'
  local c16, byte = col16(line, 'add')
  H.eq(byte, 17, 'byte column of add')
  H.eq(c16, 12, 'UTF-16 column of add (😀 counts 2)')
  H.eq(p.convert(line, c16, 'utf-16', 'utf-8'), 17, 'utf-16 -> utf-8')
  H.eq(p.convert(line, c16, 'utf-16', 'utf-32'), 11, 'utf-16 -> utf-32')
  H.eq(p.convert(line, 17, 'utf-8', 'utf-16'), 12, 'utf-8 -> utf-16')
  H.eq(p.convert(line, 11, 'utf-32', 'utf-16'), 12, 'utf-32 -> utf-16')
  H.eq(p.convert(line, 99, 'utf-16', 'utf-8'), #line, 'past the end clamps')
  H.eq(p.hover_text({ kind = 'markdown', value = 'v' }), 'v', 'MarkupContent')
  H.eq(p.hover_text({ language = 'c', value = 'int x' }), '```c\nint x\n```', 'MarkedString object')
  H.eq(p.hover_text({ 'a', { language = 'c', value = 'b' } }), 'a\n\n```c\nb\n```', 'MarkedString list')
  H.eq(p.hover_text(''), nil, 'empty hover')
  local tmp = vim.fn.tempname()
  H.write(tmp, line .. '\n')
  local uri = vim.uri_from_fname(tmp)
  H.eq(
    p.normalize_locations({
      targetUri = uri,
      targetRange = {},
      targetSelectionRange = { start = { line = 0, character = 17 }, ['end'] = { line = 0, character = 20 } },
    }, 'utf-8', {}),
    { { uri = uri, range = { start = { line = 0, character = 12 }, ['end'] = { line = 0, character = 15 } } } },
    'LocationLink (utf-8) -> Location (utf-16)'
  )
  H.eq(p.normalize_locations(vim.NIL, 'utf-8', {}), {}, 'null -> no locations')
end)

--- Starts clangd through vim.lsp.config/enable (the user's own language server setup). With
--- `encoding`, clangd is asked for that offset encoding through its `offsetEncoding` extension
--- (as nvim-lspconfig's clangd config does: clangd 19 ignores `general.positionEncodings`).
---@param encoding? 'utf-8'|'utf-16'|'utf-32'
local function enable_clangd(encoding)
  vim.lsp.config('clangd', {
    cmd = { clangd(), '--background-index=false', '--log=error' },
    filetypes = { 'c' },
    root_markers = { 'compile_flags.txt', '.git' },
    capabilities = encoding and { offsetEncoding = { encoding } } or nil,
    on_init = function(client, result)
      if result.offsetEncoding then
        client.offset_encoding = result.offsetEncoding
      end
    end,
  })
  vim.lsp.enable('clangd')
end

for _, encoding in ipairs({ 'utf-8', 'utf-16', 'utf-32' }) do
  test(('editor-backed lsp provider: definition, hover, references through clangd (%s)'):format(encoding), function()
    local ws, sessions = H.workspace({ ['main.c'] = C_SOURCE, ['compile_flags.txt'] = '-std=c11\n' })
    H.setup(sessions)
    enable_clangd(encoding)
    vim.cmd.edit(ws .. '/compile_flags.txt')
    local th = H.client()
    local uri = vim.uri_from_fname(ws .. '/main.c')
    H.eq(vim.fn.bufloaded(ws .. '/main.c'), 0, 'main.c not loaded yet')
    local lines = vim.split(C_SOURCE, '\n')
    local call_col16, call_byte = col16(lines[5], 'add')
    local def_col16, def_byte = col16(lines[2], 'add')
    H.check(call_col16 ~= call_byte and def_col16 ~= def_byte, 'the fixture has non-ASCII text before the symbols')
    local handler = th.handlers['toolhost/lspQuery']
    -- definition, answered by the handler the server calls (main.c is loaded on demand and
    -- clangd starts on its FileType)
    local res, err = handler(nil, {
      operation = 'goToDefinition',
      uri = uri,
      position = { line = 4, character = call_col16 + 1 },
    }, { method = 'toolhost/lspQuery', client_id = th.id })
    H.eq(err, nil, 'no error')
    local cl = vim.lsp.get_clients({ name = 'clangd' })[1]
    H.check(cl ~= nil, 'clangd attached to main.c')
    H.eq(cl.offset_encoding, encoding, 'clangd speaks ' .. encoding)
    local want_def = {
      kind = 'locations',
      locations = {
        {
          uri = uri,
          range = { start = { line = 1, character = def_col16 }, ['end'] = { line = 1, character = def_col16 + 3 } },
        },
      },
    }
    H.eq(res, want_def, 'definition lands on `add` in UTF-16 units')
    -- The same query over stdio, sent by a server the way the `lsp` tool will (a stand-in server:
    -- tests/fake_server.py); Neovim runs the handler in a coroutine, so it yields while waiting.
    vim.fn.mkdir(ws .. '/fake-root', 'p')
    local fid = require('toolhost.client').start(
      ws .. '/fake-root',
      { config = { cmd = { 'python3', here .. '/fake_server.py' } } }
    )
    local fake = assert(vim.lsp.get_client_by_id(assert(fid)))
    H.wait(function()
      return fake.initialized
    end, 'stand-in server')
    local yielded = require('toolhost.provider').stats.yielded
    local wire
    fake:request(
      'fake/query',
      { operation = 'hover', uri = uri, position = { line = 4, character = call_col16 } },
      function(e, r)
        wire = e or r
      end
    )
    H.wait(function()
      return wire
    end, 'toolhost/lspQuery over stdio')
    H.check(wire.response and wire.response.result, 'a result over the wire: ' .. vim.inspect(wire))
    H.eq(wire.response.result.kind, 'hover', 'hover over the wire')
    H.check(wire.response.result.hover.contents:find('add', 1, true) ~= nil, 'hover contents over the wire')
    H.check(require('toolhost.provider').stats.yielded > yielded, 'the handler yielded instead of blocking the editor')
    wire = nil
    fake:request(
      'fake/query',
      { operation = 'goToDefinition', uri = uri, position = { line = 4, character = call_col16 + 1 } },
      function(e, r)
        wire = e or r
      end
    )
    H.wait(function()
      return wire
    end, 'toolhost/lspQuery over stdio')
    H.eq(wire.response.result, want_def, 'definition over the wire')
    fake:stop()
    -- hover, from inside a coroutine as Neovim runs server->client requests (non-blocking path)
    local hover_res, done = nil, false
    coroutine.wrap(function()
      hover_res = require('toolhost.provider').handle({
        operation = 'hover',
        uri = uri,
        position = { line = 4, character = call_col16 + 2 },
      })
      done = true
    end)()
    H.wait(function()
      return done
    end, 'hover answer')
    H.eq(hover_res.kind, 'hover', 'hover kind')
    H.check(type(hover_res.hover) == 'table', 'hover present')
    H.check(hover_res.hover.contents:find('add', 1, true) ~= nil, 'hover names add: ' .. hover_res.hover.contents)
    H.check(
      hover_res.hover.contents:find('int a', 1, true) ~= nil,
      'hover shows the parameters: ' .. hover_res.hover.contents
    )
    H.eq(
      hover_res.hover.range,
      { start = { line = 4, character = call_col16 }, ['end'] = { line = 4, character = call_col16 + 3 } },
      'hover range in UTF-16'
    )
    -- references: declaration and call site, both in UTF-16
    local refs = handler(
      nil,
      { operation = 'findReferences', uri = uri, position = { line = 1, character = def_col16 } },
      { client_id = th.id }
    )
    local starts = vim.tbl_map(function(l)
      return { l.range.start.line, l.range.start.character }
    end, refs.locations)
    table.sort(starts, function(a, b)
      return a[1] < b[1]
    end)
    H.eq(starts, { { 1, def_col16 }, { 4, call_col16 } }, 'references')
    -- a position on the whitespace before a symbol gives nothing, not a neighbour
    local none = handler(nil, { operation = 'goToDefinition', uri = uri, position = { line = 4, character = 2 } }, {})
    H.eq(none, { kind = 'locations', locations = {} }, 'definition of `int` keyword: none')
    -- errors: an unknown operation, a file no language server handles
    local _, e1 = handler(nil, { operation = 'rename', uri = uri, position = { line = 0, character = 0 } }, {})
    H.eq(e1 and e1.data and e1.data.code, 'LSP_UNSUPPORTED_OPERATION', 'unknown operation')
    local _, e2 = handler(nil, {
      operation = 'hover',
      uri = vim.uri_from_fname(ws .. '/compile_flags.txt'),
      position = { line = 0, character = 0 },
    }, {})
    H.eq(e2 and e2.data and e2.data.code, 'LSP_UNAVAILABLE', 'no language server for the file')
  end)
end

test('editor-backed lsp provider through the server (`lsp` tool, when the server has it)', function()
  local ws, sessions = H.workspace({ ['main.c'] = C_SOURCE, ['compile_flags.txt'] = '-std=c11\n' })
  H.setup(sessions)
  enable_clangd('utf-8')
  vim.cmd.edit(ws .. '/main.c')
  local th = H.client()
  H.wait(function()
    local cl = vim.lsp.get_clients({ name = 'clangd', bufnr = 0 })[1]
    return cl and cl.initialized
  end, 'clangd')
  local names = require('toolhost.client').tool_names(th, 5000)
  if not vim.tbl_contains(names, 'lsp') then
    H.skip('the server has no `lsp` tool yet (tools: ' .. table.concat(names, ', ') .. ')')
  end
  local queries = {}
  local orig = th.handlers['toolhost/lspQuery']
  th.handlers['toolhost/lspQuery'] = function(e, p, ctx)
    table.insert(queries, p)
    return orig(e, p, ctx)
  end
  local lines = vim.split(C_SOURCE, '\n')
  local call_col16 = col16(lines[5], 'add')
  local def_col16 = col16(lines[2], 'add')
  local res =
    H.call('lsp', { operation = 'goToDefinition', file_path = 'main.c', line = 5, character = call_col16 + 2 }, th)
  th.handlers['toolhost/lspQuery'] = orig
  H.eq(res.result.isError, false, 'lsp call: ' .. vim.inspect(res.result))
  H.check(#queries > 0, 'the server asked the editor (toolhost/lspQuery)')
  H.eq(queries[1].position, { line = 4, character = call_col16 + 1 }, 'zero-based UTF-16 position sent by the server')
  H.check(
    res.card.rendered:find(('main.c:2:%d'):format(def_col16 + 1), 1, true) ~= nil,
    'card shows main.c:2:' .. (def_col16 + 1) .. ' — ' .. res.card.rendered
  )
end)

test(
  'cards: hunk headers come from the server; a preview hunk is shown from `rendered`, never placed inline',
  function()
    local ws, sessions = H.workspace({ ['p.txt'] = 'one\ntwo\nthree\nfour\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/p.txt')
    local buf = vim.api.nvim_get_current_buf()
    local th = H.client()
    local seen, marks_at_pending = {}, nil
    local orig = th.handlers['toolhost/card']
    th.handlers['toolhost/card'] = function(e, card, ctx)
      table.insert(seen, vim.deepcopy(card))
      orig(e, card, ctx)
      if card.status == 'pending' and card.tool == 'edit' then
        marks_at_pending = #require('toolhost.inline').marks(buf)
      end
    end
    H.call('read', { file_path = 'p.txt' }, th)
    local done = H.call('edit', { file_path = 'p.txt', old_string = 'two\n', new_string = 'TWO\nand more\n' }, th)
    th.handlers['toolhost/card'] = orig
    local pending
    for _, c in ipairs(seen) do
      if c.tool == 'edit' and c.status == 'pending' then
        pending = c
      end
    end
    assert(pending, 'a pending edit card arrives: ' .. vim.inspect(seen))
    H.eq(pending.kind, 'diff', 'pending edit card kind')
    local hunk = assert(pending.hunks and pending.hunks[1], 'the pending card has a preview hunk')
    H.eq(hunk.preview, true, 'hunk.preview')
    H.eq(hunk.header, ('@@ preview -%d +%d @@'):format(hunk.oldLines, hunk.newLines), 'preview hunk header')
    H.eq(marks_at_pending, 0, 'no inline marks for the pending card')
    -- The preview hunk is never anchored at a line (its newStart is 0 and means nothing).
    local inline = require('toolhost.inline')
    H.eq(inline.plan(pending, hunk, vim.api.nvim_buf_line_count(buf)), nil, 'no plan for a preview hunk')
    inline.clear(buf)
    inline.show(buf, pending)
    H.eq(#inline.marks(buf), 0, 'inline.show places nothing for preview hunks')
    -- Not even a completed card made only of preview hunks reloads or places anything.
    local fake = vim.deepcopy(pending)
    fake.callId, fake.status = 'preview-only', 'completed'
    require('toolhost.cards').on_card(th.id, fake)
    H.eq(#inline.marks(buf), 0, 'a card of preview hunks changes no buffer')
    -- The completed card: headers are the server's, the hunk is placed at its line.
    local completed = done.card
    H.eq(completed.hunks[1].preview, nil, 'the completed hunk is no preview')
    H.eq(
      completed.hunks[1].header,
      ('@@ -%d,%d +%d,%d @@'):format(
        completed.hunks[1].oldStart,
        completed.hunks[1].oldLines,
        completed.hunks[1].newStart,
        completed.hunks[1].newLines
      ),
      'completed hunk header'
    )
    -- Cards buffer: both cards byte for byte; hunk header lines are the `header` strings, highlighted.
    local cbuf = assert(require('toolhost').cards())
    local text = H.buf_text(cbuf)
    H.check(text:find(completed.rendered, 1, true) ~= nil, 'completed card shown')
    H.check(text:find(pending.rendered, 1, true) ~= nil, 'the preview card (stored as callId preview-only) shown')
    local lines = vim.api.nvim_buf_get_lines(cbuf, 0, -1, false)
    local hl = {}
    for _, m in
      ipairs(vim.api.nvim_buf_get_extmarks(cbuf, require('toolhost.cards').namespace, 0, -1, { details = true }))
    do
      hl[m[2] + 1] = m[4].line_hl_group
    end
    local headers = {}
    for row, l in ipairs(lines) do
      if hl[row] == 'ToolhostHunkHeader' then
        table.insert(headers, l)
      end
    end
    H.eq(headers, { hunk.header, completed.hunks[1].header }, 'hunk header lines (newest card first)')
    -- <CR> on a line of the preview hunk: the card's location, not a made-up line.
    local layout = require('toolhost.cards').layout(fake)
    H.eq(layout[2].role, 'header', 'layout: header line')
    H.eq(layout[2].line, nil, 'layout: a preview header has no line')
    local path, line = require('toolhost.cards').target({ card = fake, index = 3 })
    H.eq({ path, line }, { fake.locations[1].path, fake.locations[1].line }, 'target of a preview line')
    local cpath, cline = require('toolhost.cards').target({ card = completed, index = 2 })
    H.eq({ cpath, cline }, { ws .. '/p.txt', completed.hunks[1].newStart }, 'target of a completed hunk header')
  end
)

test('cards: kinds without a view here (todo, a tool’s own kind, a terminal without `terminal`): generic', function()
  local ws, sessions = H.workspace({ ['q.txt'] = 'a\nb\nc\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/q.txt')
  local th = H.client()
  local cards = require('toolhost.cards')
  local function card(id, kind, body, data)
    return {
      callId = id,
      tool = 'mytool',
      status = 'completed',
      kind = kind,
      title = 'Do ' .. kind,
      text = body,
      rendered = 'mytool Do ' .. kind .. ' · completed\n' .. body,
      locations = { { path = ws .. '/q.txt', line = 2 } },
      data = data,
    }
  end
  local list = {
    -- a terminal card without its `terminal` view (an older server) is drawn from `rendered`
    card('k1', 'terminal', '$ make\n+ok\n-1 warning', { command = 'make', exitCode = 0 }),
    card('k2', 'todo', '- [x] one\n- [ ] two', { items = { { text = 'one', done = true } } }),
    card('k3', 'my-own-kind', '@@ not a hunk @@\n+plus\n-minus', { anything = { 1, 2 } }),
    -- a diff card whose hunks do not match its text falls back to the line prefixes
    card('k4', 'generic', '+x', nil),
  }
  for _, c in ipairs(list) do
    cards.on_card(th.id, c)
  end
  local buf = assert(require('toolhost').cards())
  local want = {}
  for i = #list, 1, -1 do
    table.insert(want, list[i].rendered)
  end
  H.eq(H.buf_text(buf), table.concat(want, '\n\n'), 'each card rendered byte for byte')
  local groups = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, cards.namespace, 0, -1, { details = true })) do
    groups[m[4].line_hl_group] = (groups[m[4].line_hl_group] or 0) + 1
  end
  H.eq(groups, { ToolhostCardTitle = #list }, 'only titles are highlighted: no diff colours in generic cards')
  for _, c in ipairs(list) do
    for i, role in ipairs(cards.layout(c)) do
      H.eq(role.role, i == 1 and 'title' or 'text', ('%s line %d is generic text'):format(c.kind, i))
    end
  end
  -- <CR> anywhere in a generic card opens its location.
  local row
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l == '+plus' then
      row = i
    end
  end
  vim.api.nvim_win_set_cursor(0, { assert(row, '+plus line'), 0 })
  cards.jump()
  H.eq(
    { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] },
    { ws .. '/q.txt', 2 },
    '<CR> on a generic card'
  )
  -- echo draws the same way
  local echoed
  local orig = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks)
    echoed = chunks
  end
  cards.echo(list[3])
  vim.api.nvim_echo = orig
  H.eq(echoed[1][2], 'ToolhostCardTitle', 'echo: title highlighted')
  for i = 2, #echoed do
    H.eq(echoed[i][2], nil, 'echo: no diff highlight in a generic card: ' .. echoed[i][1])
  end
  -- a diff card whose hunks do not fit its text: line prefixes decide
  local odd = card('k5', 'diff', '@@ -1,1 +1,1 @@\n-a\n+b', nil)
  odd.hunks =
    { { path = 'q.txt', oldStart = 1, oldLines = 1, newStart = 1, newLines = 1, header = '@@ other @@', lines = {} } }
  local roles = vim.tbl_map(function(r)
    return r.role
  end, cards.layout(odd))
  H.eq(roles, { 'title', 'header', '-', '+' }, 'fallback layout of a diff card')
end)

--- A language server inside Neovim (cmd = function) that never answers navigation requests and
--- records every request and `$/cancelRequest` it gets.
--- With `init_delay_ms` it takes that long to initialize; with `answer` it answers every
--- navigation request with `answer(params)` instead.
---@param log {requests: table[], cancels: integer[]}
---@param opts? {init_delay_ms?: integer, answer?: fun(params: table): any}
local function slow_server(log, opts)
  opts = opts or {}
  return function(dispatchers)
    local closing, next_id = false, 0
    return {
      request = function(method, params, callback)
        next_id = next_id + 1
        local id = next_id
        if method == 'initialize' then
          vim.defer_fn(function()
            callback(nil, {
              capabilities = { definitionProvider = true, hoverProvider = true, referencesProvider = true },
            })
          end, opts.init_delay_ms or 0)
        elseif opts.answer and method ~= 'shutdown' then
          table.insert(log.requests, { id = id, method = method, params = params, callback = callback })
          vim.schedule(function()
            callback(nil, opts.answer(params))
          end)
        elseif method == 'shutdown' then
          vim.schedule(function()
            callback(nil, vim.NIL)
          end)
        else
          table.insert(log.requests, { id = id, method = method, params = params, callback = callback })
        end
        return true, id
      end,
      notify = function(method, params)
        if method == '$/cancelRequest' then
          table.insert(log.cancels, params.id)
        elseif method == 'exit' then
          closing = true
          vim.schedule(function()
            dispatchers.on_exit(0, 0)
          end)
        end
        return true
      end,
      is_closing = function()
        return closing
      end,
      terminate = function()
        if not closing then
          closing = true
          vim.schedule(function()
            dispatchers.on_exit(0, 15)
          end)
        end
      end,
    }
  end
end

test('a toolhost/lspQuery the server cancels: the language-server request is cancelled, no late answer', function()
  local ws, sessions = H.workspace({ ['main.c'] = C_SOURCE })
  -- Without cancellation the handler would wait 20 s for the silent language server.
  H.setup(sessions, { lsp_timeout_ms = 20000 })
  vim.cmd.edit(ws .. '/main.c')
  local buf = vim.api.nvim_get_current_buf()
  local th = H.client()
  local log = { requests = {}, cancels = {} }
  local sid = assert(vim.lsp.start({ name = 'slowls', cmd = slow_server(log), root_dir = ws }, { bufnr = buf }))
  H.wait(function()
    local c = vim.lsp.get_client_by_id(sid)
    return c and c.initialized
  end, 'the slow language server')
  local answers = {}
  local orig = th.handlers['toolhost/lspQuery']
  th.handlers['toolhost/lspQuery'] = function(e, p, ctx)
    local r, err = orig(e, p, ctx)
    table.insert(answers, { result = r, err = err, at = vim.uv.now() })
    return r, err
  end
  local cancelled_before = require('toolhost.provider').stats.cancelled
  local lines = vim.split(C_SOURCE, '\n')
  local reply
  local ok, call_id = th:request('toolhost/callTool', {
    name = 'lsp',
    arguments = {
      operation = 'goToDefinition',
      file_path = 'main.c',
      line = 5,
      character = col16(lines[5], 'add') + 1,
    },
  }, function(e, r)
    reply = { err = e, result = r }
  end)
  H.check(ok and call_id, 'callTool sent')
  H.wait(function()
    return #log.requests > 0
  end, 'the provider asking the slow language server', 10000)
  H.eq(log.requests[1].method, 'textDocument/definition', 'the query reached the language server')
  local inflight = require('toolhost.provider').inflight()[th.id]
  H.check(inflight and #inflight == 1, 'the query id is known to the provider: ' .. vim.inspect(inflight))
  -- Cancel the tool call: the server stops waiting and sends $/cancelRequest for its query.
  local t0 = vim.uv.now()
  th:cancel_request(call_id)
  H.wait(function()
    return #answers > 0
  end, 'the handler to return after the cancel', 5000)
  th.handlers['toolhost/lspQuery'] = orig
  H.check(answers[1].at - t0 < 3000, ('answered %d ms after the cancel'):format(answers[1].at - t0))
  H.eq(answers[1].result, nil, 'no result for a cancelled query')
  H.eq(answers[1].err and answers[1].err.code, vim.lsp.protocol.ErrorCodes.RequestCancelled, 'answer: RequestCancelled')
  H.eq(log.cancels, { log.requests[1].id }, 'the language-server request was cancelled')
  H.eq(require('toolhost.provider').stats.cancelled, cancelled_before + 1, 'one query cancelled')
  H.eq(require('toolhost.provider').inflight()[th.id], nil, 'nothing left in flight')
  -- The language server answers late: nothing more goes to the toolhost server.
  log.requests[1].callback(nil, {
    uri = vim.uri_from_fname(ws .. '/main.c'),
    range = {
      start = { line = 1, character = 0 },
      ['end'] = { line = 1, character = 3 },
    },
  })
  vim.wait(200)
  H.eq(#answers, 1, 'one answer only, and no late one')
  -- The callTool itself is answered -32800 (Neovim does not surface that to callbacks); its
  -- card ends `failed` (aborted), never with the late location.
  local failed
  H.wait(function()
    for _, c in ipairs(require('toolhost.cards').list(th.id)) do
      if c.tool == 'lsp' and c.status ~= 'pending' then
        failed = c
        return true
      end
    end
  end, 'the card of the cancelled call')
  H.eq(failed.status, 'failed', 'the cancelled call failed: ' .. failed.rendered)
  H.check(reply == nil or reply.err ~= nil or reply.result.result.isError, 'no success: ' .. vim.inspect(reply))
  vim.lsp.get_client_by_id(sid):stop(true)
end)

test('editor-backed lsp provider waits for a language server that is still initializing', function()
  -- What broke: Neovim 0.11 lists no initializing client unless asked, so a language server that
  -- took more than 300 ms to start (clangd on a busy machine) was taken for none: LSP_UNAVAILABLE.
  local ws, sessions = H.workspace({ ['main.c'] = C_SOURCE })
  H.setup(sessions)
  local uri = vim.uri_from_fname(ws .. '/main.c')
  local log = { requests = {}, cancels = {} }
  local want = { uri = uri, range = { start = { line = 1, character = 2 }, ['end'] = { line = 1, character = 5 } } }
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'c',
    once = true,
    callback = function(ev)
      vim.lsp.start({
        name = 'slowstart',
        cmd = slow_server(log, {
          init_delay_ms = 800,
          answer = function()
            return { want }
          end,
        }),
        root_dir = ws,
      }, { bufnr = ev.buf })
    end,
  })
  local handler = require('toolhost.client').handlers()['toolhost/lspQuery']
  local res, err = handler(nil, { operation = 'goToDefinition', uri = uri, position = { line = 4, character = 2 } }, {})
  H.eq(err, nil, 'no error')
  H.eq(res, { kind = 'locations', locations = { want } }, 'answered once the server was up')
  H.eq(#log.requests, 1, 'one request')
end)

--- Runs a child Neovim (`args` after the program) with `env`, waits for it, and returns the JSON
--- object its check script wrote to `out`.
---@param args string[]
---@param env table<string, string>
---@param out string
---@param clear_env? boolean
---@return table
local function child(args, env, out, clear_env)
  local cmd = { vim.v.progpath }
  vim.list_extend(cmd, args)
  local res = vim.system(cmd, { env = env, clear_env = clear_env, text = true }):wait(40000)
  local data = H.read(out)
  H.check(
    data ~= nil,
    ('the child Neovim wrote no result (exit %s)\nstdout: %s\nstderr: %s'):format(res.code, res.stdout, res.stderr)
  )
  return vim.json.decode(data)
end

--- The check script a child Neovim runs: opens files of `TH_WS`, reports on the toolhost client.
local CHILD_CHECK = [=[
local out = {}
local ok, err = pcall(function()
  local ws = vim.env.TH_WS
  out.loaded_toolhost = vim.g.loaded_toolhost == true
  out.lsp_files = vim.api.nvim_get_runtime_file('lsp/toolhost.lua', true)
  out.resolved_cmd = vim.lsp.config.toolhost and vim.lsp.config.toolhost.cmd
  vim.cmd.edit(ws .. '/src/main.c')
  local buf = vim.api.nvim_get_current_buf()
  local c
  out.attached = vim.wait(20000, function()
    c = vim.lsp.get_clients({ name = 'toolhost', bufnr = buf })[1]
    return c ~= nil and c.initialized
  end, 10)
  if c then
    out.root = c.root_dir
    out.cmd = c.config.cmd
    out.lsp_provider = c.config.capabilities.experimental.toolhost.lspProvider
    out.handlers = vim.tbl_keys(c.handlers)
    table.sort(out.handlers)
    out.session = require('toolhost.client').state(c.id).session_id
    out.server_session = c.server_capabilities.experimental.toolhost.sessionId
    vim.cmd.edit(ws .. '/notes.unknownext')
    local nb = vim.api.nvim_get_current_buf()
    out.notes_filetype = vim.bo[nb].filetype
    out.notes_attached = vim.wait(2000, function()
      return c.attached_buffers[nb] == true
    end, 10)
    local done
    require('toolhost').call('read', { file_path = 'src/main.c' }, { client = c, echo = false }, function(e, r)
      done = { err = e, status = r and r.card and r.card.status }
    end)
    vim.wait(15000, function()
      return done ~= nil
    end, 10)
    out.call = done
  end
  vim.wait(300) -- a second start (scheduled by either path) would show up here
  local all = vim.lsp.get_clients({ name = 'toolhost', _uninitialized = true })
  out.clients = #all
  out.messages = vim.api.nvim_exec2('messages', { output = true }).output
end)
if not ok then
  out.error = tostring(err)
end
local f = assert(io.open(vim.env.TH_OUT, 'w'))
f:write(vim.json.encode(out))
f:close()
vim.cmd('qall!')
]=]

local function child_workspace()
  local ws, sessions = H.workspace({ ['src/main.c'] = 'int main(void) { return 0; }\n', ['notes.unknownext'] = 'n\n' })
  local dir = vim.fs.dirname(ws)
  H.write(dir .. '/check.lua', CHILD_CHECK)
  return ws, sessions, dir
end

test('lsp/toolhost.lua: the config vim.lsp.enable() uses', function()
  local cfg = dofile(H.plugin_dir .. '/lsp/toolhost.lua')
  H.eq(cfg.cmd, { 'toolhost', 'serve' }, 'cmd')
  H.eq(cfg.root_markers, { 'toolhost.toml', '.git' }, 'root_markers')
  H.eq(cfg.filetypes, nil, 'every filetype (root_dir picks the buffers)')
  H.eq(type(cfg.root_dir), 'function', 'root_dir decides per buffer')
  H.eq(cfg.capabilities.experimental.toolhost.lspProvider, true, 'lspProvider capability')
  H.eq(cfg.capabilities.experimental.toolhost.review, true, 'review capability')
  for _, m in ipairs({
    'toolhost/card',
    'toolhost/callOutput',
    'toolhost/notice',
    'toolhost/mcpServersChanged',
    'toolhost/lspQuery',
    '$/cancelRequest',
  }) do
    H.eq(type(cfg.handlers[m]), 'function', 'handler ' .. m)
  end
  for _, hook in ipairs({ 'on_init', 'on_attach', 'on_exit' }) do
    H.eq(type(cfg[hook]), 'table', hook .. ' (a list, as vim.lsp.ClientConfig allows)')
  end
  -- root_dir: a file under a marker root; nothing for scratch buffers or files outside roots
  local ws = H.workspace({ ['a.c'] = 'int a;\n' })
  vim.g.toolhost = { auto_start = false } -- only root_dir is under test here
  vim.cmd.edit(ws .. '/a.c')
  vim.g.toolhost = nil
  local got
  cfg.root_dir(vim.api.nvim_get_current_buf(), function(root)
    got = root
  end)
  H.eq(got, ws, 'root of a file under .git')
  got = nil
  local scratch = vim.api.nvim_create_buf(false, true)
  cfg.root_dir(scratch, function(root)
    got = root
  end)
  H.eq(got, nil, 'no root for a scratch buffer')
  -- setup()/g:toolhost give the defaults
  require('toolhost').setup({ cmd = { '/opt/toolhost', 'serve' }, lsp_provider = false, review = false })
  local cfg2 = dofile(H.plugin_dir .. '/lsp/toolhost.lua')
  H.eq(cfg2.cmd, { '/opt/toolhost', 'serve' }, 'cmd from setup()')
  H.eq(cfg2.capabilities.experimental.toolhost.lspProvider, false, 'lspProvider from setup()')
  H.eq(cfg2.capabilities.experimental.toolhost.review, false, 'review from setup()')
end)

test('vim.lsp.enable(toolhost) and the automatic start coexist: one client per root', function()
  local ws, sessions = H.workspace({
    ['src/main.c'] = 'int main(void) { return 0; }\n',
    ['README.md'] = '# r\n',
    ['data.unknownext'] = 'x\n',
  })
  H.setup(sessions)
  vim.lsp.config('toolhost', { cmd = { H.bin(), 'serve', '--session-dir', sessions } })
  vim.lsp.enable('toolhost')
  vim.cmd.edit(ws .. '/src/main.c')
  local c = H.client()
  vim.cmd.edit(ws .. '/README.md')
  vim.cmd.edit(ws .. '/data.unknownext')
  H.eq(vim.bo.filetype, '', 'a file without a filetype (no FileType event for vim.lsp.enable)')
  vim.cmd.edit(ws .. '/later.c') -- does not exist yet: attaches once it does
  local later = vim.api.nvim_get_current_buf()
  vim.wait(300)
  ---@diagnostic disable-next-line: invisible
  local all = vim.lsp.get_clients({ name = 'toolhost', _uninitialized = true })
  H.eq(#all, 1, 'one toolhost client for the root')
  for _, rel in ipairs({ 'src/main.c', 'README.md', 'data.unknownext' }) do
    H.check(c.attached_buffers[vim.fn.bufnr(ws .. '/' .. rel)], rel .. ' attached')
  end
  H.check(not c.attached_buffers[later], 'a buffer of a file that does not exist yet waits')
  H.eq(c.config.cmd, { H.bin(), 'serve', '--session-dir', sessions }, 'cmd')
  H.check(require('toolhost.client').state(c.id).session_id ~= nil, 'session recorded')
  local card = H.call('write', { file_path = 'later.c', content = 'int later;\n' }, c).card
  H.eq(card.status, 'completed', 'the agent creates the file: ' .. card.text)
  H.wait(function()
    return c.attached_buffers[later]
  end, 'the new file attached')
  -- :Toolhost start and the API reuse it too
  vim.cmd('Toolhost start')
  H.eq(#vim.lsp.get_clients({ name = 'toolhost' }), 1, ':Toolhost start reuses the client')
  -- another root: its own client, from the same config
  local ws2 = H.workspace({ ['toolhost.toml'] = '', ['x.c'] = 'int x;\n' })
  vim.cmd.edit(ws2 .. '/x.c')
  local c2 = H.client()
  H.check(c2.id ~= c.id and c2.root_dir == ws2, 'a second root gets its own client')
  vim.wait(300)
  ---@diagnostic disable-next-line: invisible
  H.eq(#vim.lsp.get_clients({ name = 'toolhost', _uninitialized = true }), 2, 'two roots, two clients')
  vim.cmd('silent checkhealth toolhost')
  local text = H.buf_text(0)
  H.check(
    text:find("OK vim.lsp.enable('toolhost')", 1, true) ~= nil,
    'checkhealth reports the enabled config:\n' .. text
  )
  H.check(not text:find('ERROR', 1, true), 'checkhealth: no error:\n' .. text)
end)

test('headless Neovim with only the plugin on the runtimepath: vim.lsp.enable(toolhost) attaches', function()
  local ws, sessions, dir = child_workspace()
  local init = dir .. '/init.lua'
  H.write(
    init,
    table.concat({
      "vim.lsp.config('toolhost', { cmd = { vim.env.TH_BIN, 'serve', '--session-dir', vim.env.TH_SESSIONS } })",
      "vim.lsp.enable('toolhost')",
    }, '\n')
  )
  local rtp = ("let &runtimepath = '%s,' . $VIMRUNTIME"):format(H.plugin_dir)
  local env = { TH_WS = ws, TH_BIN = H.bin(), TH_SESSIONS = sessions }
  for _, variant in ipairs({ 'with plugin/toolhost.lua', 'lsp/toolhost.lua alone' }) do
    env.TH_OUT = dir .. '/out-' .. (variant:match('^with') and 'plugin' or 'alone') .. '.json'
    local args = { '--clean', '--headless', '--cmd', rtp }
    if variant == 'lsp/toolhost.lua alone' then
      vim.list_extend(args, { '--cmd', 'let g:loaded_toolhost = 1' })
    end
    vim.list_extend(args, { '--cmd', 'luafile ' .. init, '-c', 'luafile ' .. dir .. '/check.lua' })
    local out = child(args, env, env.TH_OUT)
    H.eq(out.error, nil, variant .. ': no error')
    H.eq(out.lsp_files, { H.plugin_dir .. '/lsp/toolhost.lua' }, variant .. ': lsp/toolhost.lua from the plugin')
    H.eq(out.attached, true, variant .. ': the toolhost client attached: ' .. vim.inspect(out))
    H.eq(out.root, ws, variant .. ': root')
    H.eq(out.cmd, { H.bin(), 'serve', '--session-dir', sessions }, variant .. ': cmd from vim.lsp.config')
    H.eq(out.lsp_provider, true, variant .. ': lspProvider')
    H.eq(out.handlers, {
      '$/cancelRequest',
      'toolhost/agentUpdate',
      'toolhost/askUser',
      'toolhost/callOutput',
      'toolhost/card',
      'toolhost/lspQuery',
      'toolhost/mcpServersChanged',
      'toolhost/notice',
      'toolhost/review',
      'toolhost/sessionChanged',
    }, variant .. ': handlers')
    H.check(out.session and out.session == out.server_session, variant .. ': session recorded by on_init')
    H.eq(out.call and out.call.status, 'completed', variant .. ': a tool call')
    H.eq(out.clients, 1, variant .. ': one client')
    H.eq(out.notes_filetype, '', variant .. ': notes file has no filetype')
    -- The plugin attaches buffers Neovim's FileType trigger misses; lsp/toolhost.lua alone cannot.
    H.eq(out.notes_attached, variant:match('^with') ~= nil, variant .. ': buffer without a filetype attached')
    H.check(not out.messages:find('not executable', 1, true), variant .. ': no warning: ' .. out.messages)
    -- (in the second variant g:loaded_toolhost = 1 kept plugin/toolhost.lua from running)
    H.eq(out.loaded_toolhost, variant:match('^with') ~= nil, variant .. ': plugin/toolhost.lua ran')
  end
end)

--- The shell lines of the doc's plain-packages recipe (*toolhost-install-packages*).
---@return string[]
local function packages_recipe()
  local doc = vim.fn.readfile(H.plugin_dir .. '/doc/toolhost.txt')
  local out, state = {}, 'before'
  for _, l in ipairs(doc) do
    if state == 'before' and l:find('*toolhost-install-packages*', 1, true) then
      state = 'tag'
    elseif state == 'tag' and l:match('>sh$') then
      state = 'block'
    elseif state == 'block' then
      if l:match('^<') then
        break
      end
      table.insert(out, vim.trim(l))
    end
  end
  return out
end

test('the plain-packages recipe of the doc, run literally: the plugin loads and attaches', function()
  local ws, _, dir = child_workspace()
  local recipe = packages_recipe()
  H.check(#recipe >= 2, 'recipe found in the doc: ' .. vim.inspect(recipe))
  local repo = vim.fs.dirname(vim.fs.dirname(H.plugin_dir))
  local script = {}
  for _, l in ipairs(recipe) do
    local dest = l:match('^git clone %S+ (%S+)$')
    if dest then
      -- The clone, offline: this checkout stands in for it at the same place.
      table.insert(script, ('mkdir -p "$(dirname %s)" && ln -s %s %s'):format(dest, vim.fn.shellescape(repo), dest))
    else
      table.insert(script, l)
    end
  end
  local home = dir .. '/home'
  vim.fn.mkdir(home, 'p')
  local env = {}
  for k, v in pairs(vim.fn.environ()) do
    if not k:match('^XDG_') and not k:match('^NVIM') and k ~= 'VIMRUNTIME' and k ~= 'MYVIMRC' then
      env[k] = v
    end
  end
  env.HOME = home
  local sh = vim
    .system({ 'sh', '-ec', table.concat(script, '\n') }, { env = env, clear_env = true, text = true })
    :wait()
  H.eq(sh.code, 0, 'the recipe runs: ' .. (sh.stderr or ''))
  local linked = home .. '/.local/share/nvim/site/pack/toolhost/start/toolhost'
  H.eq(vim.uv.fs_realpath(linked), H.plugin_dir, 'the package is the plugin folder')
  -- `toolhost` on PATH, as the default cmd expects
  local bin = dir .. '/bin'
  vim.fn.mkdir(bin, 'p')
  assert(vim.uv.fs_symlink(H.bin(), bin .. '/toolhost'))
  env.PATH = bin .. ':' .. (env.PATH or '')
  env.TH_WS = ws
  env.TH_OUT = dir .. '/out-packages.json'
  local out = child({ '--headless', '-i', 'NONE', '-c', 'luafile ' .. dir .. '/check.lua' }, env, env.TH_OUT, true)
  H.eq(out.error, nil, 'no error')
  H.eq(out.loaded_toolhost, true, 'plugin/toolhost.lua loaded from the package')
  H.eq(out.lsp_files, { linked .. '/lsp/toolhost.lua' }, 'lsp/toolhost.lua found in the package')
  H.eq(out.resolved_cmd, { 'toolhost', 'serve' }, 'vim.lsp.config.toolhost resolves')
  H.eq(out.attached, true, 'the automatic start attached: ' .. vim.inspect(out))
  H.eq(out.root, ws, 'root')
  H.eq(out.cmd, { 'toolhost', 'serve' }, 'the default cmd')
  H.eq(out.notes_attached, true, 'every file buffer under the root attached')
  H.eq(out.call and out.call.status, 'completed', 'a tool call')
  H.eq(out.clients, 1, 'one client')
end)

test(':Toolhost tools, subcommand and tool completion, unknown subcommand', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local th = require('toolhost')
  H.eq(th.complete('', 'Toolhost '), {
    'agent',
    'agent-options',
    'agents',
    'ask',
    'best-of',
    'call',
    'cards',
    'chat',
    'checkpoint',
    'checkpoint-restore',
    'checkpoints',
    'clear',
    'help',
    'mcp-servers',
    'plan-mode',
    'replay',
    'revert',
    'revert-since',
    'review',
    'review-mode',
    'sessions',
    'start',
    'stop',
    'tools',
    'worktree-apply',
    'worktree-discard',
    'worktree-new',
    'worktree-open',
    'worktrees',
  }, 'subcommands')
  H.eq(
    th.complete('c', 'Toolhost c'),
    { 'call', 'cards', 'chat', 'checkpoint', 'checkpoint-restore', 'checkpoints', 'clear' },
    'prefix'
  )
  H.eq(th.complete('ed', 'Toolhost call ed'), { 'edit' }, 'tool names')
  H.eq(th.complete('', 'Toolhost call read '), {}, 'no completion for the JSON')
  H.eq(vim.fn.getcompletion('Toolhost rep', 'cmdline'), { 'replay' }, 'command-line completion is wired')
  H.eq(
    th.complete('re', 'Toolhost re'),
    { 'replay', 'revert', 'revert-since', 'review', 'review-mode' },
    'subcommands starting with re'
  )
  H.eq(th.complete('', 'Toolhost plan-mode '), { 'on', 'off' }, 'plan-mode words')
  H.eq(th.complete('o', 'Toolhost plan-mode o'), { 'on', 'off' }, 'plan-mode prefix')
  H.eq(th.complete('', 'Toolhost plan-mode on '), {}, 'one word')
  H.eq(th.complete('rev', 'Toolhost help rev'), { 'revert', 'revert-since', 'review', 'review-mode' }, 'help completes')
  -- One table drives dispatch, completion, usage messages and the listings.
  local commands = require('toolhost.commands')
  H.eq(th.subcommands, commands.COMMANDS, 'the Lua API exposes the command table')
  for name, entry in pairs(commands.COMMANDS) do
    H.check(type(entry.desc) == 'string' and type(entry.run) == 'function', name .. ': desc and run')
  end
  H.eq(commands.usage('revert-since'), ':Toolhost[!] revert-since [call_id]', 'usage with a bang')
  H.eq(commands.usage('tools'), ':Toolhost tools', 'usage without arguments')
  local echoed = {}
  local orig_echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks)
    table.insert(
      echoed,
      table.concat(vim.tbl_map(function(ch)
        return ch[1]
      end, chunks))
    )
  end
  vim.cmd('Toolhost help')
  vim.cmd('Toolhost help revert-since')
  vim.cmd('Toolhost')
  vim.api.nvim_echo = orig_echo
  for name in pairs(commands.COMMANDS) do
    H.check(echoed[1]:find(commands.usage(name), 1, true) ~= nil, ':Toolhost help lists ' .. name .. ':\n' .. echoed[1])
  end
  H.check(echoed[1]:find('undo every file change since a call (asks first) (:Toolhost! revert-since: no confirmation)', 1, true) ~= nil, echoed[1])
  H.eq(
    echoed[2],
    ':Toolhost[!] revert-since [call_id]\nundo every file change since a call (asks first)\n:Toolhost! revert-since: no confirmation',
    ':Toolhost help {subcommand}'
  )
  H.check(vim.startswith(echoed[3], echoed[1]), ':Toolhost lists the same, then the servers:\n' .. echoed[3])
  H.check(echoed[3]:find('root ' .. ws, 1, true) ~= nil, 'and the running server: ' .. echoed[3])
  local tools
  th.tools(function(err, t)
    tools = err or t
  end)
  H.wait(function()
    return tools
  end, 'listTools')
  local names = vim.tbl_map(function(t)
    return t.name
  end, tools)
  for _, n in ipairs({ 'read', 'write', 'edit', 'glob', 'grep' }) do
    H.check(vim.tbl_contains(names, n), 'tool ' .. n)
  end
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m)
    table.insert(msgs, m)
  end
  vim.cmd('Toolhost frobnicate')
  vim.cmd('Toolhost call read {not json')
  vim.notify = orig
  H.check(msgs[1] and msgs[1]:find('unknown subcommand', 1, true), 'unknown subcommand reported: ' .. vim.inspect(msgs))
  H.check(msgs[2] and msgs[2]:find('JSON object', 1, true), 'bad JSON reported: ' .. vim.inspect(msgs))
  -- executeCommand (for clients that only speak commands) reaches the same pipeline
  local r
  c:request(
    'workspace/executeCommand',
    { command = 'toolhost.callTool', arguments = { 'read', { file_path = 'a.txt' } } },
    function(e, res)
      r = e or res
    end
  )
  H.wait(function()
    return r
  end, 'executeCommand')
  H.eq(r.card and r.card.status, 'completed', 'executeCommand toolhost.callTool')
end)

test(':checkhealth toolhost reports OK', function()
  local ws, sessions = H.workspace({ ['main.c'] = C_SOURCE, ['compile_flags.txt'] = '-std=c11\n' })
  H.setup(sessions)
  enable_clangd('utf-8')
  vim.cmd.edit(ws .. '/main.c')
  H.client()
  H.wait(function()
    local cl = vim.lsp.get_clients({ name = 'clangd', bufnr = 0 })[1]
    return cl and cl.initialized
  end, 'clangd')
  vim.cmd('silent checkhealth toolhost')
  local text = H.buf_text(0)
  H.check(text:find('toolhost 0.', 1, true) ~= nil, 'binary version reported:\n' .. text)
  H.check(text:find('OK running', 1, true) ~= nil, 'server running reported:\n' .. text)
  H.check(text:find('OK workspace root: ' .. ws, 1, true) ~= nil, 'workspace root reported:\n' .. text)
  H.check(text:find('OK language server: clangd', 1, true) ~= nil, 'language servers reported:\n' .. text)
  H.check(not text:find('ERROR', 1, true) and not text:find('WARNING', 1, true), 'no error or warning:\n' .. text)
end)

-- `toolhost mcp`: an agent's MCP server attaches to the editor's `toolhost serve` of the same
-- workspace (its Unix socket under $XDG_STATE_HOME), so the agent's calls run in Neovim's server
-- and their cards, labelled with the agent (`caller`), reach the plugin like its own.

--- A workspace with `a.txt` (8 lines) and `b.txt`, the plugin's server running, a.txt shown.
---@return string ws
---@return vim.lsp.Client
local function mcp_workspace()
  local lines = {}
  for i = 1, 8 do
    lines[i] = 'line ' .. i
  end
  local ws, sessions = H.workspace({ ['a.txt'] = table.concat(lines, '\n') .. '\n', ['b.txt'] = 'alpha\nbeta\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  return ws, H.client()
end

--- The plugin's card of a call (by the `toolhost/callId` of an MCP result), once it has ended.
---@param client vim.lsp.Client
---@param result table a `tools/call` result
---@return toolhost.Card
local function settled_card(client, result)
  local id = result._meta and result._meta['toolhost/callId']
  H.check(type(id) == 'string', 'the MCP result names its call: ' .. vim.inspect(result))
  local card
  H.wait(function()
    card = require('toolhost.cards').store(client.id).by_id[id]
    return card and card.status ~= 'pending'
  end, 'the card of the MCP call ' .. id)
  return card
end

--- The `ToolhostCaller` spans of a cards buffer: `{row (1-based), text under the highlight}`.
---@param buf integer
---@return {[1]: integer, [2]: string}[]
local function caller_spans(buf)
  local out = {}
  local ns = require('toolhost.cards').namespace
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    if m[4].hl_group == 'ToolhostCaller' then
      local line = vim.api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1]
      table.insert(out, { m[2] + 1, line:sub(m[3] + 1, m[4].end_col) })
    end
  end
  return out
end

test('toolhost mcp: an agent’s read and edit run in the editor’s server, cards carry the caller', function()
  local ws, c = mcp_workspace()
  local buf = vim.api.nvim_get_current_buf()
  local seen = {}
  local orig = c.handlers['toolhost/card']
  c.handlers['toolhost/card'] = function(e, card, ctx)
    table.insert(seen, vim.deepcopy(card))
    return orig(e, card, ctx)
  end
  local cards_buf = assert(require('toolhost').cards()) -- open before the calls: it must refresh
  local mcp = H.mcp(ws)
  local init = mcp:initialize('claude-code')
  H.eq(init.serverInfo and init.serverInfo.name, 'toolhost', 'the MCP server answers initialize')
  local read = mcp:call('read', { file_path = 'a.txt' })
  H.eq(read.isError, false, 'MCP read: ' .. H.mcp_text(read))
  H.check(H.mcp_text(read):find('4: line 4', 1, true) ~= nil, 'the agent read the file: ' .. H.mcp_text(read))
  local edit = mcp:call('edit', { file_path = 'a.txt', old_string = 'line 4\n', new_string = 'four\nfour b\n' })
  H.eq(edit.isError, false, 'MCP edit: ' .. H.mcp_text(edit))
  local expected = 'line 1\nline 2\nline 3\nfour\nfour b\nline 5\nline 6\nline 7\nline 8\n'
  H.eq(H.read(ws .. '/a.txt'), expected, 'the file changed on disk')

  -- The cards reached the plugin through the editor's server, labelled with the agent.
  local rc, ec = settled_card(c, read), settled_card(c, edit)
  c.handlers['toolhost/card'] = orig
  H.eq({ rc.status, rc.kind, rc.caller }, { 'completed', 'read', 'claude-code' }, 'read card')
  H.eq({ ec.status, ec.kind, ec.caller }, { 'completed', 'diff', 'claude-code' }, 'edit card')
  H.eq(vim.split(ec.rendered, '\n')[1], 'edit Edit a.txt · completed · claude-code', 'edit card title line')
  H.check(vim.endswith(vim.split(rc.rendered, '\n')[1], ' · claude-code'), 'read title line: ' .. rc.rendered)
  local pending
  for _, card in ipairs(seen) do
    if card.callId == ec.callId and card.status == 'pending' then
      pending = card
    end
  end
  assert(pending, 'the pending card of the agent’s edit arrived first: ' .. vim.inspect(seen))
  H.eq(pending.caller, 'claude-code', 'the pending card carries the caller')
  H.eq(pending.hunks and pending.hunks[1] and pending.hunks[1].preview, true, 'with its preview hunk')

  -- Cards buffer: the same text as the plugin's own calls (each `rendered`, newest first), the
  -- agent's name highlighted on each title line.
  H.eq(H.buf_text(cards_buf), ec.rendered .. '\n\n' .. rc.rendered, 'cards buffer')
  H.eq(
    caller_spans(cards_buf),
    { { 1, 'claude-code' }, { #vim.split(ec.rendered, '\n') + 2, 'claude-code' } },
    'ToolhostCaller on the agent’s name of both title lines'
  )
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostCaller' }).link, 'Identifier', 'caller highlight links to Identifier')
  local echoed
  local echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks)
    echoed = chunks
  end
  require('toolhost.cards').echo(ec)
  vim.api.nvim_echo = echo
  H.eq(
    { echoed[1], echoed[2] },
    { { 'edit Edit a.txt · completed · ', 'ToolhostCardTitle' }, { 'claude-code\n', 'ToolhostCaller' } },
    'an echoed card highlights its caller the same way'
  )
  local roles = vim.tbl_map(function(r)
    return r.role
  end, require('toolhost.cards').layout(ec))
  H.eq(roles, { 'title', 'header', ' ', ' ', ' ', '-', '+', '+', ' ', ' ', ' ' }, 'diff layout of the agent’s card')

  -- The buffer of the file: reloaded, the hunk inline with the agent's name in its header.
  H.eq(H.buf_text(buf) .. '\n', expected, 'buffer reloaded')
  H.eq(vim.bo[buf].modified, false, 'buffer unmodified')
  local headers = {}
  for _, m in ipairs(require('toolhost.inline').marks(buf)) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      if vl[1][2] == 'ToolhostInlineHeader' then
        table.insert(headers, vl[1][1])
      end
    end
  end
  H.eq(
    headers,
    { 'edit Edit a.txt · claude-code  ' .. ec.hunks[1].header .. '  +2 -1' },
    'inline hunk header names the agent'
  )
  -- Follow-along: <CR> on the first added line of the agent's card lands on it in the file.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(cards_buf))
  vim.api.nvim_win_set_cursor(0, { 7, 0 })
  require('toolhost.cards').jump()
  H.eq(
    { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1], vim.api.nvim_get_current_line() },
    { ws .. '/a.txt', 4, 'four' },
    '<CR> on the agent’s added line'
  )
  H.eq(mcp:close().code, 0, 'toolhost mcp exits 0 when the agent closes stdin')

  -- `--standalone` never attaches: the call runs in that process, no card reaches the editor.
  local before = #require('toolhost.cards').store(c.id).order
  local alone = H.mcp(ws, { '--standalone' })
  alone:initialize('claude-code')
  local r = alone:call('read', { file_path = 'b.txt' })
  H.eq(r.isError, false, 'standalone read: ' .. H.mcp_text(r))
  vim.wait(300)
  H.eq(#require('toolhost.cards').store(c.id).order, before, 'no card from a standalone toolhost mcp')
  alone:close()
end)

test('toolhost mcp: an agent’s edit of a file with unsaved changes in Neovim fails FS_DIRTY_BUFFER', function()
  local ws, c = mcp_workspace()
  local buf = vim.api.nvim_get_current_buf()
  local cards_buf = assert(require('toolhost').cards())
  local mcp = H.mcp(ws)
  mcp:initialize('claude-code')
  H.eq(mcp:call('read', { file_path = 'a.txt' }).isError, false, 'MCP read')
  -- The user types in a.txt and does not save.
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { 'line 2 (my unsaved work)' })
  -- The agent's call does not go through this client, so nothing flushes Neovim's debounced
  -- didChange for it: a request of the plugin does (every request flushes pending changes).
  H.eq(
    require('toolhost.client').request_sync(c, 'toolhost/listTools', vim.empty_dict(), 10000),
    nil,
    'listTools'
  )
  local res = mcp:call('edit', { file_path = 'a.txt', old_string = 'line 7', new_string = 'seven' })
  H.eq(res.isError, true, 'the agent’s edit fails: ' .. H.mcp_text(res))
  H.eq(res._meta and res._meta['toolhost/error'] and res._meta['toolhost/error'].code, 'FS_DIRTY_BUFFER', 'error')
  H.check(H.mcp_text(res):find('unsaved changes', 1, true) ~= nil, 'the agent is told why: ' .. H.mcp_text(res))
  H.eq(H.read(ws .. '/a.txt'), 'line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n', 'disk unchanged')
  H.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false), { 'line 2 (my unsaved work)' }, 'unsaved text kept')
  H.eq(vim.bo[buf].modified, true, 'buffer still modified')
  local failed = settled_card(c, res)
  H.eq({ failed.status, failed.caller }, { 'failed', 'claude-code' }, 'the failed card reached the plugin')
  H.check(
    vim.startswith(failed.rendered, 'edit Edit a.txt · failed · claude-code\n'),
    'failed card title line: ' .. failed.rendered
  )
  H.check(vim.startswith(H.buf_text(cards_buf), failed.rendered), 'the cards buffer shows it first')
  H.eq(caller_spans(cards_buf)[1], { 1, 'claude-code' }, 'its caller highlighted')
  H.eq(#require('toolhost.inline').marks(buf), 0, 'nothing inline in the modified buffer')
  -- Saved, the agent's next edit (after reading the saved text) goes through and the buffer reloads.
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent write')
  end)
  H.eq(mcp:call('read', { file_path = 'a.txt' }).isError, false, 'MCP read of the saved file')
  local ok = mcp:call('edit', { file_path = 'a.txt', old_string = 'line 7', new_string = 'seven' })
  H.eq(ok.isError, false, 'the agent’s edit after :write: ' .. H.mcp_text(ok))
  H.eq(settled_card(c, ok).status, 'completed', 'completed card')
  H.eq(vim.api.nvim_buf_get_lines(buf, 1, 2, false), { 'line 2 (my unsaved work)' }, 'the user’s text is kept')
  H.eq(vim.api.nvim_buf_get_lines(buf, 6, 7, false), { 'seven' }, 'the buffer reloaded with the agent’s change')
  H.eq(vim.bo[buf].modified, false, 'unmodified after the reload')
  mcp:close()
end)

test('toolhost mcp: :Toolhost sessions counts the agent’s calls, :Toolhost replay shows their caller', function()
  local ws, c = mcp_workspace()
  local session = require('toolhost.client').state(c.id).session_id
  local mine = H.call('read', { file_path = 'b.txt' }, c).card -- the plugin's own call: no caller
  H.eq(mine.caller, nil, 'the editor’s own call has no caller')
  local mcp = H.mcp(ws)
  mcp:initialize('claude-code')
  local agent_cards = {}
  for _, call in ipairs({
    { 'read', { file_path = 'a.txt' } },
    { 'edit', { file_path = 'a.txt', old_string = 'line 3', new_string = 'three' } },
    { 'grep', { pattern = 'line [58]' } },
    { 'read', { file_path = 'missing.txt' } },
  }) do
    table.insert(agent_cards, settled_card(c, mcp:call(call[1], call[2])))
  end
  mcp:close()
  for _, card in ipairs(agent_cards) do
    H.eq(card.caller, 'claude-code', card.tool .. ' card caller')
  end
  H.eq(agent_cards[4].status, 'failed', 'the read of a missing file failed')
  -- The agent's calls are logged in the editor's session.
  local got
  require('toolhost').sessions(function(err, list)
    got = err or list
  end)
  H.wait(function()
    return got
  end, 'listSessions')
  local listed
  for _, s in ipairs(got) do
    if s.id == session then
      listed = s
    end
  end
  H.eq(listed and listed.calls, 5, 'the session counts the editor’s call and the agent’s four: ' .. vim.inspect(got))
  -- :Toolhost sessions shows it.
  local echoed
  local echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks)
    echoed = chunks
  end
  vim.cmd('Toolhost sessions')
  H.wait(function()
    return echoed
  end, ':Toolhost sessions')
  vim.api.nvim_echo = echo
  local text = table.concat(vim.tbl_map(function(ch)
    return ch[1]
  end, echoed))
  H.check(text:find(vim.pesc(session) .. '  %d+%-%d+%-%d+ [%d:]+  5 calls') ~= nil, ':Toolhost sessions lists it: ' .. text)
  -- Replay: the cards come from the log with their caller, drawn as the live cards buffer draws them.
  local live_buf = assert(require('toolhost').cards())
  local live = H.buf_text(live_buf)
  local err, res = require('toolhost.client').request_sync(c, 'toolhost/replaySession', { sessionId = session })
  H.eq(err, nil, 'replaySession')
  H.eq(
    vim.tbl_map(function(card)
      return card.caller or vim.NIL
    end, res.cards),
    { vim.NIL, 'claude-code', 'claude-code', 'claude-code', 'claude-code' },
    'replayed cards carry the caller'
  )
  vim.cmd('Toolhost replay ' .. session)
  local rbuf
  H.wait(function()
    rbuf = vim.fn.bufnr('toolhost://replay/' .. session)
    return rbuf ~= -1 and vim.api.nvim_buf_line_count(rbuf) > 1
  end, 'replay buffer')
  H.eq(H.buf_text(rbuf), live, 'the replay buffer equals the live cards buffer')
  H.check(live:find('edit Edit a.txt · completed · claude-code', 1, true) ~= nil, 'with the agent’s name: ' .. live)
  H.eq(#caller_spans(rbuf), 4, 'ToolhostCaller on the four agent cards of the replay')
  H.eq(caller_spans(rbuf), caller_spans(live_buf), 'the same highlights as the live buffer')
end)

test('toolhost mcp: the agent’s lsp calls are answered by Neovim’s language servers', function()
  local ws, sessions = H.workspace({ ['main.c'] = C_SOURCE, ['compile_flags.txt'] = '-std=c11\n' })
  H.setup(sessions)
  enable_clangd('utf-8')
  vim.cmd.edit(ws .. '/main.c')
  local th = H.client()
  H.wait(function()
    local cl = vim.lsp.get_clients({ name = 'clangd', bufnr = 0 })[1]
    return cl and cl.initialized
  end, 'clangd')
  local names = require('toolhost.client').tool_names(th, 5000)
  if not vim.tbl_contains(names, 'lsp') then
    H.skip('the server has no `lsp` tool yet (tools: ' .. table.concat(names, ', ') .. ')')
  end
  local queries = {}
  local orig = th.handlers['toolhost/lspQuery']
  th.handlers['toolhost/lspQuery'] = function(e, p, ctx)
    table.insert(queries, p)
    return orig(e, p, ctx)
  end
  local lines = vim.split(C_SOURCE, '\n')
  local call_col16 = col16(lines[5], 'add')
  local def_col16 = col16(lines[2], 'add')
  local mcp = H.mcp(ws)
  mcp:initialize('codex-mcp-client')
  local res = mcp:call('lsp', { operation = 'goToDefinition', file_path = 'main.c', line = 5, character = call_col16 + 2 })
  th.handlers['toolhost/lspQuery'] = orig
  mcp:close()
  H.eq(res.isError, false, 'MCP lsp call: ' .. H.mcp_text(res))
  H.check(#queries > 0, 'the server asked Neovim (toolhost/lspQuery) for the agent’s call')
  H.check(
    H.mcp_text(res):find(('main.c:2:%d'):format(def_col16 + 1), 1, true) ~= nil,
    'the agent gets main.c:2:' .. (def_col16 + 1) .. ' — ' .. H.mcp_text(res)
  )
  local card = settled_card(th, res)
  H.eq({ card.status, card.caller }, { 'completed', 'codex-mcp-client' }, 'lsp card labelled with the agent')
end)

--- Starts a tool call through the plugin API without waiting; `done()` tells whether its
--- callTool response came, `response()` returns it.
---@param client vim.lsp.Client
---@param tool string
---@param args table
local function start_call(client, tool, args)
  local state = { done = false }
  require('toolhost').call(tool, args, { client = client, echo = false }, function(err, res)
    state.done, state.err, state.res = true, err, res
  end)
  return {
    done = function()
      return state.done
    end,
    response = function()
      H.wait(function()
        return state.done
      end, 'toolhost/callTool ' .. tool, 30000)
      assert(not state.err, state.err)
      return state.res
    end,
  }
end

--- The newest card of a client whose tool is `tool` (nil before its first card).
---@param client vim.lsp.Client
---@param tool string
---@param after integer cards in the store before the call started
---@return toolhost.Card?
local function newest_card(client, tool, after)
  local s = require('toolhost.cards').store(client.id)
  for i = #s.order, after + 1, -1 do
    local card = s.by_id[s.order[i]]
    if card.tool == tool then
      return card
    end
  end
end

--- The cards-buffer lines of one card (its rows start at its title line) and the first row.
---@param buf integer
---@param card toolhost.Card
---@return string[] lines
---@return integer row
local function card_rows(buf, card)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local title = vim.split(card.rendered, '\n')[1]
  for i, l in ipairs(lines) do
    if l == title then
      local out = {}
      for j = i, #lines do
        if lines[j] == '' then
          break
        end
        table.insert(out, lines[j])
      end
      return out, i
    end
  end
  error('card not in the buffer: ' .. title .. '\n' .. table.concat(lines, '\n'))
end

--- line_hl_group of each row of a cards buffer.
---@param buf integer
---@return table<integer, string>
local function row_groups(buf)
  local out = {}
  local ns = require('toolhost.cards').namespace
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    out[m[2] + 1] = m[4].line_hl_group
  end
  return out
end

test('terminal cards: live bash output while pending, then the final output and `exit 0` / `exit 3`', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local cards = require('toolhost.cards')
  local buf = assert(require('toolhost').cards())
  local before = #cards.store(c.id).order
  local command = 'for i in 1 2 3 4; do echo line $i; sleep 0.4; done'
  local call = start_call(c, 'bash', { command = command, description = 'count to four' })
  -- `line 1` is in the buffer while the card is still pending (toolhost/callOutput).
  local live_rows
  H.wait(function()
    local card = newest_card(c, 'bash', before)
    if card and card.status == 'pending' and H.buf_text(buf):find('\nline 1\n', 1, true) then
      live_rows = card_rows(buf, card)
      return true
    end
  end, 'live output `line 1` in the pending card', 5000)
  io.stdout:write(
    '     cards buffer, live terminal card (pending):\n       ' .. table.concat(live_rows, '\n       ') .. '\n'
  )
  H.eq(live_rows[1], 'bash ' .. command .. ' · pending', 'title line of the pending card')
  H.eq(live_rows[2], '$ ' .. command, 'command line')
  H.eq(live_rows[3], '# count to four', 'description line')
  H.eq(live_rows[4], 'line 1', 'first live output line')
  H.check(vim.startswith(live_rows[#live_rows], 'running…'), 'status line while running: ' .. live_rows[#live_rows])
  H.check(not call.done(), 'the call is still running')
  local card = call.response().card
  H.eq(card.status, 'completed', 'final card: ' .. card.rendered)
  H.eq(card.kind, 'terminal', 'terminal card')
  local final_rows, row = card_rows(buf, card)
  io.stdout:write('     cards buffer, final terminal card:\n       ' .. table.concat(final_rows, '\n       ') .. '\n')
  H.eq(final_rows, {
    'bash ' .. command .. ' · completed',
    '$ ' .. command,
    '# count to four',
    'line 1',
    'line 2',
    'line 3',
    'line 4',
    'exit 0',
  }, 'final terminal card: the output of terminal.output and the exit status')
  H.eq(cards.live_output(c.id, card.callId), nil, 'the live text is dropped once the final card came')
  local groups = row_groups(buf)
  H.eq(groups[row], 'ToolhostCardTitle', 'title highlight')
  H.eq(groups[row + 1], 'ToolhostTerminalCommand', 'command highlight')
  H.eq(groups[row + 3], nil, 'output lines are not highlighted')
  H.eq(groups[row + 7], 'ToolhostExitOk', '`exit 0` highlight')
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostExitOk' }).link, 'DiagnosticOk', 'ToolhostExitOk links to DiagnosticOk')

  -- A failing exit code: `exit 3`, in ToolhostExitError.
  local res = H.call('bash', { command = 'echo hi; exit 3', description = 'fail' }, c)
  H.eq({ res.card.status, res.card.terminal.exitCode }, { 'completed', 3 }, 'exit code 3 card')
  local rows3
  rows3, row = card_rows(buf, res.card)
  H.eq(rows3, { 'bash echo hi; exit 3 · completed', '$ echo hi; exit 3', '# fail', 'hi', 'exit 3' }, 'exit 3 card')
  H.eq(row_groups(buf)[row + 4], 'ToolhostExitError', '`exit 3` highlight')
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostExitError' }).link, 'DiagnosticError', 'links to DiagnosticError')

  -- A timeout: the status line says so (and the server's marker line leaves the output).
  res = H.call('bash', { command = 'sleep 5', description = 'too slow', timeoutMs = 300 }, c)
  local rows_t
  rows_t, row = card_rows(buf, res.card)
  H.eq(rows_t[#rows_t], 'timed out after 300ms', 'timeout status line: ' .. vim.inspect(rows_t))
  H.eq(row_groups(buf)[row + #rows_t - 1], 'ToolhostExitWarn', 'timeout highlight')
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostExitWarn' }).link, 'DiagnosticWarn', 'links to DiagnosticWarn')
  local killed = vim.deepcopy(res.card)
  killed.terminal.timedOut = nil
  local killed_lines = cards.terminal_view(killed)
  H.eq(killed_lines[#killed_lines], 'killed by SIGTERM', 'a signal without a timeout')

  -- The cards buffer and the echo show no ANSI escapes; \r overwrites like a terminal.
  H.eq(
    cards.output_lines('\27[1;31mred\27[0m\r\n50%\r100%\n\27]0;title\7\27]8;;http://x\27\\ok\27]8;;\27\\\n'),
    { 'red', '100%', 'ok' },
    'ANSI stripped'
  )
  res = H.call('bash', { command = [[printf '\033[1;32mgreen\033[0m\n']], description = 'colour' }, c)
  H.eq(res.card.terminal.output:find('\27[', 1, true) ~= nil, true, 'the server keeps the escapes')
  H.eq(card_rows(buf, res.card)[4], 'green', 'no escape sequence in the buffer')
  H.check(not H.buf_text(buf):find('\27', 1, true), 'no ESC anywhere in the cards buffer')
end)

test('terminal cards: the last 20 lines, `… N more lines`, <CR> opens the full output or the spill file', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local cards = require('toolhost.cards')
  local res = H.call(
    'bash',
    { command = [[for i in $(seq 1 30); do printf '\033[32mrow %d\033[0m\n' $i; done]], description = 'thirty rows' },
    c
  )
  local buf = assert(require('toolhost').cards())
  local rows, row = card_rows(buf, res.card)
  H.eq(rows[4], '… 10 more lines (<CR> for all)', 'the hidden lines are counted')
  H.eq(rows[5], 'row 11', 'the tail starts 20 lines from the end')
  H.eq(rows[#rows - 1], 'row 30', 'last output line')
  H.eq(rows[#rows], 'exit 0', 'status line')
  H.eq(#rows, 3 + 1 + 20 + 1, 'title, command, description, more, 20 lines, status')
  H.eq(row_groups(buf)[row + 3], 'ToolhostTerminalMore', '`… more lines` highlight')
  -- <CR> on the `… more lines` line opens the whole output in a scratch buffer.
  local cards_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(0, { row + 3, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  local out = vim.api.nvim_get_current_buf()
  H.check(vim.api.nvim_get_current_win() ~= cards_win, 'the output opens in another window')
  H.eq(vim.api.nvim_buf_get_name(out), 'toolhost://output/' .. res.card.callId, 'output buffer name')
  H.eq(vim.bo[out].filetype, 'toolhost-output', 'output buffer filetype')
  H.eq(vim.bo[out].buftype, 'nofile', 'a scratch buffer')
  local want = {}
  for i = 1, 30 do
    want[i] = 'row ' .. i
  end
  H.eq(vim.api.nvim_buf_get_lines(out, 0, -1, false), want, 'the full output, ANSI stripped')
  vim.cmd('close')

  -- Output the server spilled to a file: <CR> opens that file (spillPaths[1]).
  res = H.call('bash', { command = 'seq 1 100000', description = 'lots' }, c)
  local spill = res.card.terminal.spillPaths and res.card.terminal.spillPaths[1]
  H.check(type(spill) == 'string' and vim.uv.fs_stat(spill) ~= nil, 'a spill file: ' .. vim.inspect(res.card.terminal))
  vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
  rows, row = card_rows(buf, res.card)
  H.check(rows[4]:match('^… %d+ more lines %(<CR> for all%)$') ~= nil, 'long output is cut: ' .. rows[4])
  vim.api.nvim_win_set_cursor(0, { row + 5, 0 })
  cards.jump()
  H.eq(vim.api.nvim_buf_get_name(0), spill, '<CR> opens the spill file')
  H.eq(vim.api.nvim_buf_get_lines(0, 0, 1, false)[1], '1', 'the spill file holds the whole stream')
  H.eq(vim.bo.readonly, true, 'opened read-only')
end)

test(':ToolhostStop and <C-c> stop a running bash call (toolhost/cancelCall); the card ends failed', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local cards = require('toolhost.cards')
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    table.insert(msgs, { m, level })
  end
  local ok, err = pcall(function()
    vim.cmd('ToolhostStop')
    H.wait(function()
      return #msgs > 0
    end, 'a message')
    H.eq(msgs[1][1], 'toolhost: no running call to stop', 'nothing to stop')

    -- :ToolhostStop from a file buffer stops the newest pending call.
    local before = #cards.store(c.id).order
    local start = vim.uv.now()
    local call = start_call(c, 'bash', { command = 'echo started; sleep 30', description = 'sleep' })
    H.wait(function()
      local card = newest_card(c, 'bash', before)
      return card and card.status == 'pending' and cards.live_output(c.id, card.callId)
    end, 'the pending sleep card and its first output')
    vim.cmd('ToolhostStop')
    local res = call.response()
    local elapsed = vim.uv.now() - start
    H.eq(res.card.status, 'failed', 'the stopped call ends failed')
    H.eq(res.result.error.info.code, 'ABORTED', 'ABORTED')
    H.check(elapsed < 5000, ('stopped within seconds (%d ms)'):format(elapsed))

    -- <C-c> in the cards buffer stops the call under the cursor, not the newest pending card
    -- (here a card of a call the server does not run: bash calls run one at a time, so two
    -- real ones are never pending together).
    before = #cards.store(c.id).order
    call = start_call(c, 'bash', { command = 'sleep 30', description = 'sleep again' })
    local card
    H.wait(function()
      card = newest_card(c, 'bash', before)
      return card and card.status == 'pending'
    end, 'the second pending card')
    local ghost = vim.tbl_extend('force', card, { callId = 'call_not_running', title = 'ghost' })
    ghost.rendered = 'bash ghost · pending'
    cards.on_card(c.id, ghost)
    local buf = assert(require('toolhost').cards())
    local _, row = card_rows(buf, card)
    vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
    start = vim.uv.now()
    msgs = {}
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<C-c>', true, false, true), 'x', false)
    res = call.response()
    H.eq(res.card.status, 'failed', '<C-c>: the call under the cursor ends failed')
    H.check(vim.uv.now() - start < 5000, 'stopped within seconds')
    H.eq(msgs, {}, 'no message')
    -- Elsewhere, :ToolhostStop takes the newest pending card: the server says it is not running.
    vim.cmd('wincmd p')
    vim.cmd('ToolhostStop')
    H.wait(function()
      return #msgs > 0
    end, 'the answer to cancelCall')
    H.eq(msgs[1][1], 'toolhost: call call_not_running is not running (it may just have ended)', 'race message')
    cards.on_card(c.id, vim.tbl_extend('force', ghost, { status = 'failed', rendered = 'bash ghost · failed' }))
    H.check(not H.buf_text(buf):find('running…', 1, true), 'no running card left in the buffer')
  end)
  vim.notify = orig
  assert(ok, err)
end)

test('toolhost/notice: a background job’s end reaches vim.notify', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, level, opts)
    table.insert(msgs, { m, level, opts })
  end
  local ok, err = pcall(function()
    local res = H.call('bash', { command = 'echo done', description = 'background', run_in_background = true }, c)
    H.eq(res.card.status, 'completed', 'the job started: ' .. res.card.rendered)
    H.wait(function()
      return #msgs > 0
    end, 'the job notice', 10000)
  end)
  vim.notify = orig
  assert(ok, err)
  io.stdout:write('     vim.notify: ' .. msgs[1][1] .. '\n')
  H.check(msgs[1][1]:match('^background job %S+ %(bash: echo done%) finished') ~= nil, 'notice text: ' .. msgs[1][1])
  H.eq(msgs[1][2], vim.log.levels.INFO, 'INFO level')
end)

-- Revert (the server's `revert` tool): `:Toolhost revert`, `:Toolhost revert-since`, `u`/`U` in a
-- cards buffer and the <Plug> maps. Only completed cards of kind `diff` can be reverted.

--- Runs `fn(msgs)` with vim.notify captured into `msgs` ({text, level} each) and vim.fn.confirm
--- answered by `msgs.answer` or else `answer` (its questions go to `msgs.asked`; nil: fail the
--- test if asked).
---@param fn fun(msgs: table)
---@param answer? integer
local function with_messages(fn, answer)
  local msgs = { asked = {} }
  local orig = vim.notify
  vim.notify = function(m, level)
    table.insert(msgs, { m, level })
  end
  vim.fn.confirm = function(question)
    table.insert(msgs.asked, question)
    return msgs.answer or answer or error('vim.fn.confirm was called: ' .. question)
  end
  local ok, err = pcall(fn, msgs)
  vim.notify = orig
  vim.fn.confirm = nil -- vim.fn makes the real one again on the next use
  assert(ok, err)
end

--- Waits for the message number `n` and returns it.
---@param msgs table
---@param n integer
---@param what string
---@return {[1]: string, [2]: integer}
local function message(msgs, n, what)
  H.wait(function()
    return msgs[n]
  end, what, 30000)
  return msgs[n]
end

--- The file a buffer holds, as bytes: its lines with the BOM, line ends and final newline it
--- was read with ('bomb', 'fileformat', 'eol'; not 'fixeol', which only acts on :write).
---@param buf integer
---@return string
local function buffer_bytes(buf)
  local nl = ({ unix = '\n', dos = '\r\n', mac = '\r' })[vim.bo[buf].fileformat]
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), nl)
  return (vim.bo[buf].bomb and '\239\187\191' or '') .. text .. (vim.bo[buf].eol and nl or '')
end

--- The first row of a call's card in a cards buffer (by call id: two cards may share a title).
---@param buf integer
---@param call_id string
---@return integer
local function card_row(buf, call_id)
  for row = 1, vim.api.nvim_buf_line_count(buf) do
    local card = require('toolhost.cards').card_at(buf, row)
    if card and card.callId == call_id then
      return row
    end
  end
  error('no card ' .. call_id .. ' in the buffer:\n' .. H.buf_text(buf))
end

--- The newest card of a `revert` call started after `before` cards, once completed or failed.
---@param client vim.lsp.Client
---@param before integer
---@return toolhost.Card
local function revert_card(client, before)
  local card
  H.wait(function()
    card = newest_card(client, 'revert', before)
    return card and card.status ~= 'pending'
  end, 'the revert card', 30000)
  return card
end

test('revert: :Toolhost revert of the card under the cursor restores the exact bytes (disk, buffer)', function()
  -- A UTF-8 BOM, CRLF line ends, non-ASCII text, a tab and no final newline.
  local original = '\239\187\191alpha\r\nbeta \195\188\r\n\tgamma'
  local ws, sessions = H.workspace({ ['a.txt'] = original })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.eq(buffer_bytes(buf), original, 'the buffer holds the file')
  local c = H.client()
  local cards = require('toolhost.cards')
  H.call('read', { file_path = 'a.txt' }, c)
  local edit = H.call('edit', { file_path = 'a.txt', old_string = 'beta', new_string = 'BETA\r\nmore' }, c).card
  H.eq(edit.status, 'completed', 'edit: ' .. edit.rendered)
  local edited = H.read(ws .. '/a.txt')
  H.check(edited ~= original, 'the edit changed the file')
  H.eq(buffer_bytes(buf), edited, 'buffer reloaded after the edit')

  local cbuf = assert(require('toolhost').cards())
  local row = card_row(cbuf, edit.callId)
  local hunk_row = row + 2 -- a line inside the edit card's hunk
  local lines = vim.api.nvim_buf_get_lines(cbuf, row - 1, row + 2, false)
  H.check(
    lines[2]:sub(1, 3) == '@@ ' and cards.card_at(cbuf, hunk_row) == edit,
    'a line of the edit card’s hunk: ' .. vim.inspect(lines)
  )
  vim.api.nvim_win_set_cursor(0, { hunk_row, 0 })
  local before = #cards.store(c.id).order
  with_messages(function(msgs)
    vim.cmd('Toolhost revert')
    local msg = message(msgs, 1, 'the revert message')
    local card = revert_card(c, before)
    H.eq({ card.status, card.kind, card.title }, { 'completed', 'diff', 'Revert ' .. edit.callId }, 'revert card')
    H.eq(msg[2], vim.log.levels.INFO, 'success at INFO: ' .. msg[1])
    H.check(msg[1]:find('Reverted ' .. edit.callId, 1, true) ~= nil, 'the server text: ' .. msg[1])
    io.stdout:write('     vim.notify: ' .. msg[1] .. '\n')
    H.eq(H.read(ws .. '/a.txt'), original, 'the original bytes on disk')
    H.wait(function()
      return buffer_bytes(buf) == original
    end, 'the buffer reloaded to the original text')
    H.eq(vim.bo[buf].modified, false, 'buffer unmodified')
    H.eq(#msgs, 1, 'one message: ' .. vim.inspect(msgs))
    -- The revert's card came in above; the cursor stayed on the edit card's line.
    H.eq(vim.api.nvim_get_current_buf(), cbuf, 'still in the cards buffer')
    local cur = vim.api.nvim_win_get_cursor(0)[1]
    H.eq(cards.card_at(cbuf, cur).callId, edit.callId, 'the cursor is still on the reverted card')
    H.eq(vim.api.nvim_buf_get_lines(cbuf, cur - 1, cur, false)[1], lines[3], 'on the same line of it')

    -- `u` on the revert's own card reverts the revert (a redo).
    vim.api.nvim_win_set_cursor(0, { card_row(cbuf, card.callId), 0 })
    before = #cards.store(c.id).order
    vim.api.nvim_feedkeys('u', 'x', false)
    local redo = revert_card(c, before)
    H.eq({ redo.status, redo.title }, { 'completed', 'Revert ' .. card.callId }, 'u reverts the revert')
    H.eq(H.read(ws .. '/a.txt'), edited, 'the edit is back on disk')
    H.wait(function()
      return buffer_bytes(buf) == edited
    end, 'the buffer reloaded to the edited text')
    H.eq(message(msgs, 2, 'the second message')[2], vim.log.levels.INFO, 'INFO')
  end)
end)

test('revert: revert-since over two files restores both (asks first; :Toolhost! does not)', function()
  local a0, b0 = 'one\ntwo\nthree\n', 'uno\ndos\ntres\n'
  local ws, sessions = H.workspace({ ['a.txt'] = a0, ['b.txt'] = b0 })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/b.txt')
  local bbuf = vim.api.nvim_get_current_buf()
  vim.cmd('split ' .. vim.fn.fnameescape(ws .. '/a.txt'))
  local abuf = vim.api.nvim_get_current_buf()
  local c = H.client()
  local cards = require('toolhost.cards')
  H.call('read', { file_path = 'a.txt' }, c)
  H.call('read', { file_path = 'b.txt' }, c)
  local first = H.call('edit', { file_path = 'a.txt', old_string = 'two', new_string = 'TWO' }, c).card
  H.call('edit', { file_path = 'b.txt', old_string = 'tres', new_string = 'TRES' }, c)
  H.call('read', { file_path = 'a.txt' }, c)
  H.call('edit', { file_path = 'a.txt', old_string = 'one', new_string = 'ONE' }, c)
  local a1, b1 = H.read(ws .. '/a.txt'), H.read(ws .. '/b.txt')
  H.eq({ a1, b1 }, { 'ONE\nTWO\nthree\n', 'uno\ndos\nTRES\n' }, 'both files edited')
  with_messages(function(msgs)
    -- Cancel: nothing is sent.
    local before = #cards.store(c.id).order
    vim.cmd('Toolhost revert-since ' .. first.callId)
    H.eq(#msgs.asked, 1, 'asked once')
    H.check(msgs.asked[1]:find(first.callId, 1, true) ~= nil, 'the question names the call: ' .. msgs.asked[1])
    H.check(msgs.asked[1]:find('3 calls', 1, true) ~= nil, 'and counts the changes: ' .. msgs.asked[1])
    H.eq(msgs[1], { 'toolhost: revert cancelled', vim.log.levels.INFO }, 'cancelled')
    vim.wait(200)
    H.eq(#cards.store(c.id).order, before, 'no call made')
    H.eq({ H.read(ws .. '/a.txt'), H.read(ws .. '/b.txt') }, { a1, b1 }, 'files untouched')
  end, 2)
  with_messages(function(msgs)
    local before = #cards.store(c.id).order
    vim.cmd('Toolhost revert-since ' .. first.callId)
    H.eq(#msgs.asked, 1, 'asked')
    local card = revert_card(c, before)
    H.eq({ card.status, card.kind, card.title }, { 'completed', 'diff', 'Revert since ' .. first.callId }, 'card')
    local msg = message(msgs, 1, 'the revert message')
    H.eq(msg[2], vim.log.levels.INFO, 'INFO: ' .. msg[1])
    io.stdout:write('     vim.notify: ' .. msg[1]:gsub('\n', '\n                 ') .. '\n')
    H.eq({ H.read(ws .. '/a.txt'), H.read(ws .. '/b.txt') }, { a0, b0 }, 'both files restored on disk')
    H.wait(function()
      return buffer_bytes(abuf) == a0 and buffer_bytes(bbuf) == b0
    end, 'both buffers reloaded')
    H.eq({ vim.bo[abuf].modified, vim.bo[bbuf].modified }, { false, false }, 'unmodified')
    -- Each buffer shows its own file's hunks inline (both are in windows).
    local function hunk_headers(buf)
      local out = {}
      for _, m in ipairs(require('toolhost.inline').marks(buf)) do
        local vl = m[4].virt_lines
        if vl and vl[1][1][2] == 'ToolhostInlineHeader' then
          table.insert(out, vl[1][1][1])
        end
      end
      return out
    end
    H.eq(#hunk_headers(abuf) > 0 and #hunk_headers(bbuf) > 0, true, 'inline hunks in both buffers')
    for _, h in ipairs(card.hunks) do
      local file = vim.fs.basename(h.path)
      local hbuf = file == 'a.txt' and abuf or bbuf
      H.check(vim.tbl_contains(hunk_headers(hbuf), require('toolhost.inline').header(card, h)), 'hunk of ' .. file)
    end
    -- In the cards buffer the card names each file before its hunks (the server's `rendered`);
    -- <CR> on a line of b.txt's hunk opens b.txt at that line, not the card's first file.
    local cbuf = assert(require('toolhost').cards())
    local row = card_row(cbuf, card.callId)
    local layout, file_lines, b_row, b_line = cards.layout(card), {}, nil, nil
    local hl = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(cbuf, cards.namespace, 0, -1, { details = true })) do
      hl[m[2] + 1] = m[4].line_hl_group
    end
    for i, l in ipairs(cards.split(card.rendered)) do
      if layout[i].role == 'file' then
        table.insert(file_lines, l)
        H.eq(hl[row + i - 1], 'ToolhostCardFile', 'file line highlighted: ' .. l)
      elseif layout[i].role == '+' and layout[i].hunk.path == 'b.txt' then
        b_row, b_line = row + i - 1, layout[i].line
      end
    end
    table.sort(file_lines)
    H.eq(file_lines, { 'a.txt', 'b.txt' }, 'a file line per file: ' .. card.rendered)
    H.eq(vim.api.nvim_buf_get_lines(cbuf, assert(b_row, 'a + line of b.txt') - 1, b_row, false)[1], '+tres', 'row')
    vim.api.nvim_win_set_cursor(0, { b_row, 0 })
    cards.jump(cbuf)
    H.eq(
      { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] },
      { ws .. '/b.txt', b_line },
      '<CR> on b.txt’s hunk: b.txt at that line'
    )
  end, 1)
  -- With the bang there is no question.
  H.call('read', { file_path = 'b.txt' }, c)
  local again = H.call('edit', { file_path = 'b.txt', old_string = 'dos', new_string = 'DOS' }, c).card
  H.eq(again.status, 'completed', 'another edit')
  with_messages(function(msgs)
    local before = #cards.store(c.id).order
    vim.cmd('Toolhost! revert-since ' .. again.callId)
    H.eq(revert_card(c, before).status, 'completed', 'reverted without a question')
    H.eq(msgs.asked, {}, 'not asked')
    H.eq(H.read(ws .. '/b.txt'), b0, 'restored')
  end)
end)

test('revert: pending, failed and read cards are refused with a message; server failures reach vim.notify', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'one\ntwo\nthree\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local buf = vim.api.nvim_get_current_buf()
  local c = H.client()
  local cards = require('toolhost.cards')
  local th = require('toolhost')
  local read = H.call('read', { file_path = 'a.txt' }, c).card
  local failed = H.call('edit', { file_path = 'a.txt', old_string = 'not there', new_string = 'x' }, c).card
  H.eq({ read.kind, failed.status }, { 'read', 'failed' }, 'a read card and a failed card')
  local pending = {
    callId = 'call_pending_edit',
    tool = 'edit',
    status = 'pending',
    kind = 'diff',
    title = 'Edit a.txt',
    text = '',
    rendered = 'edit Edit a.txt · pending\n@@ preview -1 +1 @@\n-two\n+2',
    locations = { { path = ws .. '/a.txt', line = 1 } },
    hunks = {
      {
        path = 'a.txt',
        oldStart = 0,
        oldLines = 1,
        newStart = 0,
        newLines = 1,
        preview = true,
        header = '@@ preview -1 +1 @@',
        lines = { { op = '-', text = 'two' }, { op = '+', text = '2' } },
      },
    },
  }
  cards.on_card(c.id, pending)
  H.eq(th.complete('', 'Toolhost revert '), {}, 'nothing to complete')
  with_messages(function(msgs)
    local before = #cards.store(c.id).order
    for _, want in ipairs({
      { read, 'it is a read card, not a file change' },
      { failed, 'it failed' },
      { pending, 'it is still running' },
    }) do
      local n = #msgs + 1
      vim.cmd('Toolhost revert ' .. want[1].callId)
      H.eq(msgs[n], {
        ('toolhost: %s (%s %s) cannot be reverted: %s (only completed file changes, diff cards, can be)'):format(
          want[1].callId,
          want[1].tool,
          want[1].title,
          want[2]
        ),
        vim.log.levels.WARN,
      }, 'refused: ' .. want[1].callId)
    end
    vim.cmd('Toolhost revert-since! ' .. read.callId) -- not a subcommand: the bang goes on :Toolhost
    H.check(msgs[#msgs][1]:find('unknown subcommand', 1, true) ~= nil, 'revert-since! is not a subcommand')
    vim.cmd('Toolhost! revert-since ' .. read.callId)
    H.check(msgs[#msgs][1]:find('it is a read card', 1, true) ~= nil, 'revert-since refuses it too')
    vim.cmd('Toolhost revert')
    H.eq(
      msgs[#msgs],
      { 'toolhost: no file change to revert (only completed diff cards can be reverted)', vim.log.levels.WARN },
      'nothing revertible'
    )
    vim.cmd('Toolhost revert a b')
    H.eq(msgs[#msgs], { 'toolhost: usage: :Toolhost revert [call_id]', vim.log.levels.ERROR }, 'usage')
    -- In the cards buffer: `u` on the read card, on the blank line between cards.
    local cbuf = assert(th.cards())
    local row = card_row(cbuf, read.callId)
    H.check(row > 1, 'the read card is not the newest')
    vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
    vim.api.nvim_feedkeys('u', 'x', false)
    H.check(msgs[#msgs][1]:find(read.callId .. ' (read ', 1, true) ~= nil, 'u refuses the read card')
    vim.api.nvim_win_set_cursor(0, { row - 1, 0 })
    H.eq(vim.api.nvim_get_current_line(), '', 'a blank line')
    vim.api.nvim_feedkeys('U', 'x', false)
    H.eq(msgs[#msgs], { 'toolhost: no card under the cursor', vim.log.levels.WARN }, 'U on a blank line')
    H.eq(msgs.asked, {}, 'never asked')
    vim.wait(200)
    H.eq(#cards.store(c.id).order, before, 'no revert call was made')
    vim.cmd('wincmd p')

    -- A call id the server does not know: its error, at ERROR level.
    local n = #msgs + 1
    vim.cmd('Toolhost revert call_unknown')
    local msg = message(msgs, n, 'the unknown-call error')
    H.eq(msg[2], vim.log.levels.ERROR, 'ERROR: ' .. msg[1])
    H.check(vim.startswith(msg[1], 'toolhost: revert call_unknown failed: '), msg[1])
    io.stdout:write('     vim.notify: ' .. msg[1] .. '\n')
  end)

  -- A revertible edit; the user then changes the file's buffer without saving.
  H.call('read', { file_path = 'a.txt' }, c)
  local edit = H.call('edit', { file_path = 'a.txt', old_string = 'two', new_string = 'TWO' }, c).card
  H.eq(th.complete('', 'Toolhost revert '), { edit.callId }, 'completion: the completed diff card')
  H.eq(th.complete('x', 'Toolhost revert-since x'), {}, 'completion filters by prefix')
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'one (unsaved)' })
  with_messages(function(msgs)
    vim.cmd('Toolhost revert ' .. edit.callId)
    local msg = message(msgs, 1, 'the dirty-buffer error')
    H.eq(msg[2], vim.log.levels.ERROR, 'ERROR: ' .. msg[1])
    io.stdout:write('     vim.notify: ' .. msg[1] .. '\n')
    H.eq(H.read(ws .. '/a.txt'), 'one\nTWO\nthree\n', 'disk untouched')
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'one (unsaved)', 'TWO', 'three' }, 'unsaved text kept')
    -- Saved, with the edited line changed again: the reverse change conflicts.
    vim.api.nvim_buf_set_lines(buf, 1, 2, false, { 'TWO and more' })
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent write')
    end)
    vim.cmd('Toolhost revert ' .. edit.callId)
    msg = message(msgs, 2, 'the conflict error')
    H.eq(msg[2], vim.log.levels.ERROR, 'ERROR: ' .. msg[1])
    io.stdout:write('     vim.notify: ' .. msg[1] .. '\n')
    H.eq(H.read(ws .. '/a.txt'), 'one (unsaved)\nTWO and more\nthree\n', 'nothing written on a conflict')
  end)

  -- The replay of another session: its calls are not this session's.
  local other = vim.tbl_extend('force', edit, { callId = 'call_elsewhere' })
  cards.open_replay('20000101-000000-000000', { other }, c.id)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  with_messages(function(msgs)
    vim.api.nvim_feedkeys('u', 'x', false)
    H.check(
      msgs[1] and msgs[1][1]:find('call_elsewhere is a call of session 20000101-000000-000000', 1, true) ~= nil,
      'refused in the replay of another session: ' .. vim.inspect(msgs)
    )
  end)
end)

test('revert: a diff card of several files reloads each buffer with its own hunks; a removed file empties', function()
  -- What a revert since a call sends: one card, hunks of several files (paths relative to the
  -- root), one location per file. Client side only: the card is made here.
  local ws, sessions = H.workspace({ ['a.txt'] = 'a1\na2\n', ['sub/b.txt'] = 'b1\nb2\n', ['c.txt'] = 'c1\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local abuf = vim.api.nvim_get_current_buf()
  vim.cmd('split ' .. vim.fn.fnameescape(ws .. '/sub/b.txt'))
  local bbuf = vim.api.nvim_get_current_buf()
  vim.cmd('split ' .. vim.fn.fnameescape(ws .. '/c.txt'))
  local cbuf = vim.api.nvim_get_current_buf()
  local c = H.client()
  H.wait(function()
    return c.attached_buffers[abuf] and c.attached_buffers[bbuf] and c.attached_buffers[cbuf]
  end, 'the three buffers attached')
  H.write(ws .. '/a.txt', 'a1\nA2\n')
  H.write(ws .. '/sub/b.txt', 'b1\nb2\nb3 added\n')
  vim.uv.fs_unlink(ws .. '/c.txt')
  local function hunk(path, old_start, new_start, lines)
    local old_n, new_n = 0, 0
    for _, l in ipairs(lines) do
      old_n = old_n + (l.op ~= '+' and 1 or 0)
      new_n = new_n + (l.op ~= '-' and 1 or 0)
    end
    return {
      path = path,
      oldStart = old_start,
      oldLines = old_n,
      newStart = new_start,
      newLines = new_n,
      header = ('@@ -%d,%d +%d,%d @@'):format(old_start, old_n, new_start, new_n),
      lines = lines,
    }
  end
  local card = {
    callId = 'call_multi',
    tool = 'revert',
    status = 'completed',
    kind = 'diff',
    title = 'Revert since call_x',
    text = 'Reverted 2 calls since call_x',
    rendered = 'revert Revert since call_x · completed',
    locations = {
      { path = ws .. '/a.txt', line = 2 },
      { path = ws .. '/sub/b.txt', line = 3 },
      { path = ws .. '/c.txt', line = 1 },
    },
    hunks = {
      hunk('a.txt', 1, 1, { { op = ' ', text = 'a1' }, { op = '-', text = 'a2' }, { op = '+', text = 'A2' } }),
      hunk('sub/b.txt', 2, 2, { { op = ' ', text = 'b2' }, { op = '+', text = 'b3 added' } }),
      hunk('c.txt', 1, 0, { { op = '-', text = 'c1' } }),
    },
  }
  local inline = require('toolhost.inline')
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m)
    table.insert(msgs, m)
  end
  local ok, err = pcall(inline.on_file_card, card, ws)
  vim.notify = orig
  assert(ok, err)
  H.eq(msgs, {}, 'reloaded without a message')
  H.eq(vim.api.nvim_buf_get_lines(abuf, 0, -1, false), { 'a1', 'A2' }, 'a.txt reloaded')
  H.eq(vim.api.nvim_buf_get_lines(bbuf, 0, -1, false), { 'b1', 'b2', 'b3 added' }, 'sub/b.txt reloaded')
  H.eq(vim.api.nvim_buf_get_lines(cbuf, 0, -1, false), { '' }, 'the buffer of the removed c.txt is empty')
  H.eq(
    { vim.bo[abuf].modified, vim.bo[bbuf].modified, vim.bo[cbuf].modified },
    { false, false, false },
    'none modified'
  )
  local function headers(buf)
    local out = {}
    for _, m in ipairs(inline.marks(buf)) do
      local vl = m[4].virt_lines
      if vl and vl[1][1][2] == 'ToolhostInlineHeader' then
        table.insert(out, vl[1][1][1])
      end
    end
    return out
  end
  H.eq(headers(abuf), { inline.header(card, card.hunks[1]) }, 'a.txt shows its own hunk only')
  H.eq(headers(bbuf), { inline.header(card, card.hunks[2]) }, 'sub/b.txt shows its own hunk only')
  H.eq(headers(cbuf), { inline.header(card, card.hunks[3]) }, 'c.txt shows its removed line')
  -- The cards buffer's view of such a card: a file line before each file's hunks, and <CR>
  -- targets in each hunk's own file, even when one path ends with another (`b.txt` and
  -- `sub/b.txt`: the shortest location that ends with the hunk's path is its file).
  local cards = require('toolhost.cards')
  local two = {
    callId = 'call_two',
    tool = 'revert',
    status = 'completed',
    kind = 'diff',
    title = 'Revert since call_y',
    locations = { { path = ws .. '/sub/b.txt', line = 2 }, { path = ws .. '/b.txt', line = 1 } },
    hunks = {
      hunk('sub/b.txt', 2, 2, { { op = ' ', text = 'b2' }, { op = '+', text = 'b3 added' } }),
      hunk('b.txt', 1, 1, { { op = '-', text = 'x' }, { op = '+', text = 'y' } }),
    },
  }
  two.rendered = table.concat({
    'revert Revert since call_y · completed',
    'sub/b.txt',
    two.hunks[1].header,
    ' b2',
    '+b3 added',
    'b.txt',
    two.hunks[2].header,
    '-x',
    '+y',
  }, '\n')
  H.eq(
    vim.tbl_map(function(r)
      return r.role
    end, cards.layout(two)),
    { 'title', 'file', 'header', ' ', '+', 'file', 'header', '-', '+' },
    'layout of a card of two files'
  )
  local function target(index)
    return { cards.target({ card = two, index = index }) }
  end
  H.eq(target(2), { ws .. '/sub/b.txt', 2 }, 'the file line: that file at its first hunk')
  H.eq(target(5), { ws .. '/sub/b.txt', 3 }, 'a line of sub/b.txt’s hunk')
  H.eq(target(9), { ws .. '/b.txt', 1 }, 'a line of b.txt’s hunk')
  -- A card of one file names no file: its hunks follow the title.
  two.hunks[2].path = 'sub/b.txt'
  two.rendered = two.rendered:gsub('\nsub/b%.txt\n', '\n'):gsub('\nb%.txt\n', '\n')
  local one = cards.layout(two)
  H.eq({ one[2].role, one[5].role, one[5].line }, { 'header', 'header', 1 }, 'one file: no file lines')
  -- A card of one file whose hunks name no path (older logs): its hunks go to its location.
  H.write(ws .. '/a.txt', 'a1\na2\n')
  inline.on_file_card({
    callId = 'call_one',
    tool = 'edit',
    status = 'completed',
    kind = 'diff',
    title = 'Edit a.txt',
    locations = { { path = ws .. '/a.txt', line = 2 } },
    hunks = { hunk('', 1, 1, { { op = ' ', text = 'a1' }, { op = '-', text = 'A2' }, { op = '+', text = 'a2' } }) },
  }, nil)
  H.eq(vim.api.nvim_buf_get_lines(abuf, 0, -1, false), { 'a1', 'a2' }, 'reloaded')
  H.eq(#headers(abuf), 1, 'the pathless hunk is shown in the location’s buffer')
end)

test('revert: <Plug>(toolhost-revert) and <Plug>(toolhost-revert-since), keys from the keymaps table', function()
  local a0 = 'alpha\nbeta\n'
  local ws, sessions = H.workspace({ ['a.txt'] = a0 })
  H.setup(sessions, { keymaps = { revert = '<F5>', ['revert-since'] = '<F6>' } })
  H.eq(vim.fn.maparg('<F5>', 'n'), '<Plug>(toolhost-revert)', 'keymaps table: revert')
  H.eq(vim.fn.maparg('<F6>', 'n'), '<Plug>(toolhost-revert-since)', 'keymaps table: revert-since')
  vim.cmd.edit(ws .. '/a.txt')
  local buf = vim.api.nvim_get_current_buf()
  local c = H.client()
  local cards = require('toolhost.cards')
  H.call('read', { file_path = 'a.txt' }, c)
  local first = H.call('edit', { file_path = 'a.txt', old_string = 'alpha', new_string = 'ALPHA' }, c).card
  local second = H.call('edit', { file_path = 'a.txt', old_string = 'beta', new_string = 'BETA' }, c).card
  H.eq({ first.status, second.status }, { 'completed', 'completed' }, 'two edits')
  local keys = function(k)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), 'x', false)
  end
  with_messages(function(msgs)
    -- In a file buffer: the newest completed diff card (the second edit).
    local before = #cards.store(c.id).order
    keys('<F5>')
    H.eq(revert_card(c, before).title, 'Revert ' .. second.callId, '<Plug>(toolhost-revert): the newest change')
    H.wait(function()
      return H.read(ws .. '/a.txt') == 'ALPHA\nbeta\n' and buffer_bytes(buf) == 'ALPHA\nbeta\n'
    end, 'the second edit reverted')
    H.eq(message(msgs, 1, 'message')[2], vim.log.levels.INFO, 'INFO')
    -- Revert since: the newest change is now the revert itself; since the first edit, from the
    -- cards buffer with the cursor on it (the question names it).
    local cbuf = assert(require('toolhost').cards())
    vim.api.nvim_win_set_cursor(0, { card_row(cbuf, first.callId), 0 })
    before = #cards.store(c.id).order
    keys('<F6>')
    H.eq(#msgs.asked, 1, 'asked')
    H.check(msgs.asked[1]:find(first.callId, 1, true) ~= nil, 'about the card under the cursor')
    H.eq(revert_card(c, before).title, 'Revert since ' .. first.callId, '<Plug>(toolhost-revert-since)')
    H.wait(function()
      return H.read(ws .. '/a.txt') == a0 and buffer_bytes(buf) == a0
    end, 'everything since the first edit reverted')
  end, 1)
  -- A keymaps table maps the default keys too: leave no global map to later tests.
  for _, k in ipairs({ '<F5>', '<F6>', '<leader>tc', '<leader>tx', '<leader>tt', '<leader>ts', '<leader>tr' }) do
    pcall(vim.keymap.del, 'n', k)
  end
end)

-- Review mode (|toolhost-review|): the person decides each hunk of a write/edit before it is
-- written, in a review buffer.

--- A file of 20 lines with `alpha` on lines 2 and 15: an edit of both (replace_all) has two
--- hunks, far enough apart not to merge.
---@param first string line 2
---@param second string line 15
---@return string
local function alpha_file(first, second)
  local lines = {}
  for i = 1, 20 do
    lines[i] = i == 2 and first or i == 15 and second or ('line ' .. i)
  end
  return table.concat(lines, '\n') .. '\n'
end

local ALPHA0 = alpha_file('alpha', 'alpha')

--- Sends keys as typed (mappings apply) and runs them.
---@param k string
local function type_keys(k)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), 'x', false)
end

--- The newest pending review once it has arrived (waits).
---@param n? integer how many must be pending
---@return toolhost.Review
local function pending_review(n)
  local R = require('toolhost.review')
  H.wait(function()
    return #R.pending() >= (n or 1)
  end, 'a toolhost/review request', 30000)
  local list = R.pending()
  return list[#list]
end

--- Sets the review settings through the plugin API and waits for the server's answer.
---@param client vim.lsp.Client
---@param settings table
---@return table
local function set_review(client, settings)
  local done, err, res = false, nil, nil
  require('toolhost').set_review(settings, { client = client, quiet = true }, function(e, r)
    done, err, res = true, e, r
  end)
  H.wait(function()
    return done
  end, 'toolhost/setReview')
  assert(not err, err)
  return res
end

--- Whether some captured message contains `text`.
---@param msgs table
---@param text string
---@return boolean
local function said(msgs, text)
  for _, m in ipairs(msgs) do
    if type(m[1]) == 'string' and m[1]:find(text, 1, true) then
      return true
    end
  end
  return false
end

--- The text of a result's content blocks.
---@param result table
---@return string
local function result_text(result)
  local out = {}
  for _, b in ipairs(result.content or {}) do
    if b.type == 'text' then
      table.insert(out, b.text)
    end
  end
  return table.concat(out, '\n')
end

test('review: the keys of the review buffer accept the first hunk and reject the second; only it is written', function()
  local ws, sessions = H.workspace({ ['a.txt'] = ALPHA0 })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local file_buf = vim.api.nvim_get_current_buf()
  local file_win = vim.api.nvim_get_current_win()
  local c = H.client()
  local R = require('toolhost.review')
  with_messages(function(msgs)
    -- :Toolhost review-mode with arguments (the command path).
    vim.cmd('Toolhost review-mode ask timeout=60000')
    H.wait(function()
      return said(msgs, 'review mode ask')
    end, 'the review-mode message')
    H.check(said(msgs, 'timeout 60000 ms'), 'the message names the timeout: ' .. vim.inspect(msgs))
    H.call('read', { file_path = ws .. '/a.txt' }, c)
    local call = start_call(
      c,
      'edit',
      { file_path = ws .. '/a.txt', old_string = 'alpha', new_string = 'ALPHA', replace_all = true }
    )
    local review = pending_review()
    H.eq(review.params.tool, 'edit', 'the review names the tool')
    H.eq(#review.params.hunks, 2, 'two hunks')
    H.eq(review.params.before, ALPHA0, '`before` is the file')
    H.eq(review.params.after, alpha_file('ALPHA', 'ALPHA'), '`after` is the whole change')
    H.check(said(msgs, 'review requested'), 'a notification says a review arrived')
    -- It opened in a split; the cursor stayed in the file's window (|toolhost-review-open|).
    H.wait(function()
      return review.buf and vim.fn.bufwinid(review.buf) ~= -1
    end, 'the review window')
    H.eq(vim.api.nvim_get_current_win(), file_win, 'the cursor stays where it was')
    H.eq(vim.api.nvim_get_current_buf(), file_buf, 'in the file')
    H.eq(vim.bo[review.buf].filetype, 'toolhost-review', 'filetype')
    H.check(
      vim.api.nvim_buf_get_name(review.buf):find('toolhost://review/', 1, true) == 1,
      'named toolhost://review/…'
    )
    H.check(
      vim.api.nvim_buf_get_name(review.buf):find(review.params.title, 1, true) ~= nil,
      'named after the title ' .. review.params.title
    )
    -- :Toolhost review goes there.
    vim.cmd('Toolhost review')
    H.eq(vim.api.nvim_get_current_buf(), review.buf, ':Toolhost review moves the cursor to the review')
    local lines = vim.api.nvim_buf_get_lines(review.buf, 0, -1, false)
    local h1, h2 = review.params.hunks[1].header, review.params.hunks[2].header
    H.eq(lines[review.hunk_rows[1]], '[ ] ' .. h1, 'hunk 1 header with its mark')
    H.eq(lines[review.hunk_rows[2]], '[ ] ' .. h2, 'hunk 2 header with its mark')
    H.eq(lines[review.hunk_rows[1] + 2], '-alpha', 'a removed line')
    H.eq(lines[review.hunk_rows[1] + 3], '+ALPHA', 'an added line')
    local groups = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(review.buf, R.namespace, 0, -1, { details = true })) do
      groups[m[2] + 1] = groups[m[2] + 1] or m[4].line_hl_group or m[4].hl_group
    end
    H.eq(groups[review.hunk_rows[1] + 2], 'ToolhostDiffDelete', '- line highlight')
    H.eq(groups[review.hunk_rows[1] + 3], 'ToolhostDiffAdd', '+ line highlight')
    H.eq(groups[review.hunk_rows[1]], 'ToolhostReviewUndecided', 'undecided mark highlight')
    -- ]h / [h move between hunks; a accepts (and moves on), r rejects.
    H.eq(vim.api.nvim_win_get_cursor(0)[1], review.hunk_rows[1], 'the cursor starts on the first hunk')
    type_keys(']h')
    H.eq(vim.api.nvim_win_get_cursor(0)[1], review.hunk_rows[2], ']h: the second hunk')
    type_keys('[h')
    H.eq(vim.api.nvim_win_get_cursor(0)[1], review.hunk_rows[1], '[h: the first hunk')
    vim.api.nvim_win_set_cursor(0, { review.hunk_rows[1] + 2, 0 })
    type_keys('a')
    H.eq(vim.api.nvim_win_get_cursor(0)[1], review.hunk_rows[2], 'a accepted and moved to the next hunk')
    type_keys('r')
    lines = vim.api.nvim_buf_get_lines(review.buf, 0, -1, false)
    H.eq(lines[review.hunk_rows[1]], '[✓] ' .. h1, 'hunk 1 accepted')
    H.eq(lines[review.hunk_rows[2]], '[✗] ' .. h2, 'hunk 2 rejected')
    local orig_input = vim.ui.input
    vim.ui.input = function(opts, cb)
      H.check(opts.prompt:find('Comment', 1, true) ~= nil, 'asks for a comment')
      cb('keep the second alpha')
    end
    type_keys('c')
    vim.ui.input = orig_input
    H.check(H.buf_text(review.buf):find('Comment: keep the second alpha', 1, true) ~= nil, 'the comment is shown')
    H.eq(R.result(review), { accepted = { 0 }, comment = 'keep the second alpha' }, 'the answer')
    local rbuf = review.buf
    type_keys('<CR>')
    H.eq(#msgs.asked, 0, 'nothing undecided: no question')
    local res = call.response()
    H.check(not res.result.isError, 'the edit succeeded: ' .. vim.inspect(res.result))
    H.eq(H.read(ws .. '/a.txt'), alpha_file('ALPHA', 'alpha'), 'only the accepted hunk is on disk')
    H.check(not vim.api.nvim_buf_is_valid(rbuf), 'the review buffer is gone')
    H.eq(#R.pending(), 0, 'nothing pending')
    H.check(said(msgs, 'review sent: 1 of 2 hunks accepted'), 'a message says what was sent')
    local card = require('toolhost.cards').get(c.id, res.callId)
    H.eq(card.status, 'completed', 'the card')
    io.stdout:write('     review: completed card text:\n       ' .. card.text:gsub('\n', '\n       ') .. '\n')
    -- The server names a rejected hunk by its number and its line in the original file.
    local named = 'rejected 1 of 2 hunks: hunk 2 (line 15 of the original)'
    H.check(card.text:find(named, 1, true) ~= nil, 'the card text names the rejected hunk:\n' .. card.text)
    H.check(card.text:find('keep the second alpha', 1, true) ~= nil, 'and the comment')
    H.check(result_text(res.result):find(named, 1, true) ~= nil, 'so does the text the model read')
    H.eq(#card.hunks, 1, 'the card shows the hunk written')
    H.eq(card.hunks[1].header, h1, 'the first')
    H.wait(function()
      return buffer_bytes(file_buf) == alpha_file('ALPHA', 'alpha')
    end, 'the file buffer reloaded')
  end)
end)

test('review: a withdrawn review (the call cancelled with toolhost/cancelCall) closes its buffer', function()
  local ws, sessions = H.workspace({ ['a.txt'] = ALPHA0 })
  H.setup(sessions, { review_open = 'focus' })
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local R = require('toolhost.review')
  with_messages(function(msgs)
    H.eq(set_review(c, { mode = 'ask', timeoutMs = 60000 }).mode, 'ask', 'review mode on')
    H.call('read', { file_path = ws .. '/a.txt' }, c)
    local call = start_call(
      c,
      'edit',
      { file_path = ws .. '/a.txt', old_string = 'alpha', new_string = 'ALPHA', replace_all = true }
    )
    local review = pending_review()
    H.wait(function()
      return review.buf and vim.fn.bufwinid(review.buf) ~= -1
    end, 'the review window')
    local buf, wins = review.buf, #vim.api.nvim_list_wins()
    -- review_open = 'focus' in Normal mode: the cursor went there.
    H.eq(vim.api.nvim_get_current_buf(), buf, 'focused')
    -- :ToolhostStop in the review buffer stops the call of the review's server.
    local stopped
    require('toolhost').stop_call(function(err, cancelled)
      stopped = { err, cancelled }
    end)
    H.wait(function()
      return stopped
    end, 'toolhost/cancelCall')
    H.eq(stopped, { nil, true }, 'the call was cancelled')
    H.wait(function()
      return not vim.api.nvim_buf_is_valid(buf)
    end, 'the review buffer closed')
    H.eq(#vim.api.nvim_list_wins(), wins - 1, 'its window closed')
    H.eq(#R.pending(), 0, 'nothing pending')
    H.wait(function()
      return said(msgs, 'review withdrawn')
    end, 'the withdrawal message')
    local res = call.response()
    H.eq(res.result.isError, true, 'the call failed')
    H.eq(H.read(ws .. '/a.txt'), ALPHA0, 'nothing written')
  end)
end)

test('review: q closes the review unanswered; the fallback applies after the timeout (REVIEW_TIMEOUT)', function()
  local ws, sessions = H.workspace({ ['a.txt'] = ALPHA0 })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local R = require('toolhost.review')
  with_messages(function(msgs)
    vim.cmd('Toolhost review-mode ask timeout=3000 fallback=deny')
    H.wait(function()
      return said(msgs, 'review mode ask (timeout 3000 ms, fallback deny)')
    end, 'the review-mode message')
    H.call('read', { file_path = ws .. '/a.txt' }, c)
    local call = start_call(
      c,
      'edit',
      { file_path = ws .. '/a.txt', old_string = 'alpha', new_string = 'ALPHA', replace_all = true }
    )
    local review = pending_review()
    vim.cmd('Toolhost review')
    H.eq(vim.api.nvim_get_current_buf(), review.buf, 'in the review')
    type_keys('A')
    H.eq(R.result(review).accepted, { 0, 1 }, 'A accepts every hunk (not sent)')
    type_keys('q')
    H.check(not (review.buf and vim.api.nvim_buf_is_valid(review.buf)), 'q closed the review buffer')
    H.eq(#vim.api.nvim_list_wins(), 1, 'and its window')
    H.eq(#R.pending(), 1, 'the review is still pending')
    H.check(said(msgs, 'review still pending'), 'q says it is still pending')
    -- Reopened, it keeps its decisions.
    vim.cmd('Toolhost review')
    H.check(H.buf_text(review.buf):find('[✓] ' .. review.params.hunks[2].header, 1, true) ~= nil, 'decisions kept')
    type_keys('q')
    local res = call.response()
    H.eq(res.result.isError, true, 'no answer: the call failed (fallback deny)')
    H.eq(res.result.error.info.code, 'REVIEW_TIMEOUT', 'REVIEW_TIMEOUT: ' .. vim.inspect(res.result.error))
    H.eq(H.read(ws .. '/a.txt'), ALPHA0, 'nothing written')
    H.wait(function()
      return #R.pending() == 0
    end, 'the server withdrew the review')
    H.check(said(msgs, 'review withdrawn'), 'the withdrawal is reported')
  end)
end)

test('review: several pending at once (two roots); :Toolhost review picks one; undecided hunks ask first', function()
  -- One server runs its writes one at a time (a write waits for the one under review), so two
  -- questions are open at once only from two servers: two workspace roots.
  local ws1, sessions = H.workspace({ ['a.txt'] = ALPHA0 })
  local ws2 = H.workspace({ ['b.txt'] = ALPHA0 })
  H.setup(sessions)
  vim.cmd.edit(ws1 .. '/a.txt')
  local c1 = H.client()
  vim.cmd.edit(ws2 .. '/b.txt')
  local c2 = H.client()
  H.check(c1.id ~= c2.id, 'two servers')
  local R = require('toolhost.review')
  with_messages(function(msgs)
    set_review(c1, { mode = 'ask', timeoutMs = 60000, fallback = 'deny' })
    set_review(c2, { mode = 'ask', timeoutMs = 60000 })
    -- No argument: the settings as they are (of the current buffer's server).
    vim.cmd('Toolhost review-mode')
    H.wait(function()
      return said(msgs, 'review mode ask (timeout 60000 ms, fallback deny)')
    end, 'the settings')
    local complete = require('toolhost').complete
    H.eq(
      complete('', 'Toolhost review-mode '),
      { 'ask', 'off', 'timeout=', 'fallback=deny', 'fallback=accept' },
      'completion'
    )
    H.eq(
      complete('', 'Toolhost review-mode ask '),
      { 'timeout=', 'fallback=deny', 'fallback=accept' },
      'completion after a mode'
    )
    H.check(vim.tbl_contains(complete('rev', 'Toolhost rev'), 'review-mode'), 'the subcommand completes')
    H.call('read', { file_path = ws1 .. '/a.txt' }, c1)
    H.call('read', { file_path = ws2 .. '/b.txt' }, c2)
    local args = { old_string = 'alpha', new_string = 'ALPHA', replace_all = true }
    local call_a = start_call(c1, 'edit', vim.tbl_extend('force', args, { file_path = ws1 .. '/a.txt' }))
    local first = pending_review(1)
    H.wait(function()
      return first.buf ~= nil
    end, 'the first review shown')
    local call_b = start_call(c2, 'edit', vim.tbl_extend('force', args, { file_path = ws2 .. '/b.txt' }))
    local second = pending_review(2)
    H.check(first ~= second, 'two reviews')
    H.eq({ first.client_id, second.client_id }, { c1.id, c2.id }, 'one of each server')
    H.check(first.buf and vim.fn.bufwinid(first.buf) ~= -1, 'the first is shown')
    H.check(not second.buf, 'the second waits: one review window at a time')
    H.check(said(msgs, '1 more pending'), 'its notification says another is pending')
    H.eq(complete('', 'Toolhost review '), { first.params.callId, second.params.callId }, 'call ids complete')
    local offered
    local orig_select = vim.ui.select
    vim.ui.select = function(items, opts, cb)
      offered = vim.tbl_map(opts.format_item, items)
      cb(items[2])
    end
    vim.cmd('Toolhost review')
    vim.ui.select = orig_select
    H.eq(#(offered or {}), 2, 'both offered')
    H.check(offered[2]:find('b.txt', 1, true) ~= nil, 'named by their title: ' .. vim.inspect(offered))
    H.eq(vim.api.nvim_get_current_buf(), second.buf, 'the picked review')
    -- Undecided hunks: asked first (Cancel: nothing sent).
    type_keys('a')
    msgs.answer = 2
    type_keys('<CR>')
    H.eq(#msgs.asked, 1, 'asked')
    H.check(msgs.asked[1]:find('1 hunk of 2 undecided', 1, true) ~= nil, msgs.asked[1])
    H.check(not call_b.done(), 'nothing sent')
    H.eq(#R.pending(), 2, 'still pending')
    -- :w submits (Submit answered): the undecided hunk counts as rejected.
    msgs.answer = 1
    vim.cmd('write')
    local res_b = call_b.response()
    H.check(not res_b.result.isError, 'b: one hunk written')
    H.eq(H.read(ws2 .. '/b.txt'), alpha_file('ALPHA', 'alpha'), 'b: the undecided hunk was not written')
    H.eq(#R.pending(), 1, 'one left')
    -- The first: reject all; every hunk rejected is a failure (REVIEW_REJECTED).
    vim.cmd('Toolhost review')
    H.eq(vim.api.nvim_get_current_buf(), first.buf, 'the first review')
    type_keys('R')
    type_keys('<CR>')
    local res_a = call_a.response()
    H.eq(res_a.result.isError, true, 'a: rejected')
    H.eq(res_a.result.error.info.code, 'REVIEW_REJECTED', 'REVIEW_REJECTED')
    H.eq(H.read(ws1 .. '/a.txt'), ALPHA0, 'a: nothing written')
    H.eq(#R.pending(), 0, 'none left')
  end, 1)
end)

-- Questions for the person (|toolhost-ask|): `toolhost/askUser` answered through vim.ui.select /
-- vim.ui.input, here replaced by scripted pickers.

--- Replaces vim.ui.select and vim.ui.input with a script: each step is `{select = fn}` (given the
--- items, their formatted texts and the opts, returns the choice; nil dismisses) or `{input = text}`
--- (`false`: <Esc>), or `{hold = true}` (never calls back; the callback is kept in `held`). Every
--- call is recorded in `calls`. Restored by the returned function.
---@param steps table[]
---@return {calls: table[], held: function?, remaining: fun(): integer} picks
---@return fun() restore
local function scripted_pickers(steps)
  local picks = { calls = {} }
  local orig_select, orig_input = vim.ui.select, vim.ui.input
  local i = 0
  local function step(kind)
    i = i + 1
    local st = steps[i]
    if not st then
      error(('picker %d (%s): the script has no step for it'):format(i, kind))
    end
    return st
  end
  vim.ui.select = function(items, opts, cb)
    local texts = vim.tbl_map(opts.format_item or tostring, items)
    table.insert(picks.calls, { kind = 'select', prompt = opts.prompt, texts = texts, items = items, opts = opts })
    local st = step('select')
    if st.hold then
      picks.held = cb
      return
    end
    H.check(st.select ~= nil, ('picker %d is a select, the script expected %s'):format(i, vim.inspect(st)))
    cb(st.select(items, texts, opts))
  end
  vim.ui.input = function(opts, cb)
    table.insert(picks.calls, { kind = 'input', prompt = opts.prompt, default = opts.default })
    local st = step('input')
    if st.hold then
      picks.held = cb
      return
    end
    H.check(st.input ~= nil, ('picker %d is an input, the script expected %s'):format(i, vim.inspect(st)))
    cb(st.input ~= false and st.input or nil)
  end
  picks.remaining = function()
    return #steps - i
  end
  return picks, function()
    vim.ui.select, vim.ui.input = orig_select, orig_input
  end
end

--- A select step choosing the item whose formatted text is `text`.
---@param text string
local function pick(text)
  return {
    select = function(items, texts)
      for k, t in ipairs(texts) do
        if t == text then
          return items[k]
        end
      end
      error(('no entry %q among %s'):format(text, vim.inspect(texts)))
    end,
  }
end

local ask_request_id = 0

--- Runs the plugin's `toolhost/askUser` handler as Neovim's LSP client does (in a coroutine it
--- resumes), with scripted pickers; waits for its result.
---@param params table
---@param steps table[]
---@param opts? {inspect?: fun(picks: table), client_id?: integer}
---@return table result
---@return table picks
local function ask_with(params, steps, opts)
  opts = opts or {}
  ask_request_id = ask_request_id + 1
  params = vim.tbl_extend('keep', params, {
    requestId = ask_request_id,
    callId = 'call-' .. ask_request_id,
    tool = 'ask_user_question',
    title = 'Ask',
  })
  local picks, restore = scripted_pickers(steps)
  local out = {}
  local co = coroutine.create(function()
    out.result, out.err = require('toolhost.ask').handle(params, { client_id = opts.client_id or 9999 })
    out.done = true
  end)
  local ok, err = coroutine.resume(co)
  local wait_ok, wait_err = pcall(function()
    assert(ok, err)
    if opts.inspect then
      opts.inspect(picks, params)
    end
    H.wait(function()
      return out.done
    end, 'the askUser answer')
  end)
  restore()
  assert(wait_ok, wait_err)
  H.eq(out.err, nil, 'no error reply')
  H.eq(picks.remaining(), 0, 'every scripted picker was used')
  return out.result, picks
end

local DB_QUESTION = {
  id = 'db',
  question = 'Which database?',
  header = 'DB',
  options = { { label = 'Postgres', description = 'the production one' }, { label = 'SQLite' } },
}

test('ask: a single-select question is one vim.ui.select over its options, then Other…', function()
  local res, picks = ask_with({ questions = { DB_QUESTION } }, { pick('SQLite') })
  H.eq(res, { answers = { { id = 'db', selected = { 'SQLite' } } } }, 'the answer')
  H.eq(picks.calls[1].texts, { 'Postgres — the production one', 'SQLite', 'Other…' }, 'the entries')
  H.eq(picks.calls[1].prompt, 'DB: Which database?', 'the prompt')
  H.eq(picks.calls[1].opts.kind, 'toolhost-ask', 'a kind pickers can match')
  -- The answer goes over the wire as JSON: `selected` is an array even when empty.
  H.eq(vim.json.encode({ selected = {} }), '{"selected":[]}', 'an empty list encodes as an array')
end)

test('ask: Other… asks for free text (custom, nothing selected); <Esc> there goes back to the options', function()
  local res, picks = ask_with(
    { questions = { DB_QUESTION } },
    { pick('Other…'), { input = false }, pick('Other…'), { input = 'MySQL, please' } }
  )
  H.eq(res, { answers = { { id = 'db', selected = {}, custom = 'MySQL, please' } } }, 'the answer')
  H.eq(
    vim.tbl_map(function(c)
      return c.kind
    end, picks.calls),
    { 'select', 'input', 'select', 'input' },
    'Esc in the text input showed the options again'
  )
end)

test('ask: a multi-select question toggles [x] marks until Done; Other… adds free text', function()
  local q = {
    id = 'os',
    question = 'Which platforms?',
    options = { { label = 'Linux' }, { label = 'macOS' }, { label = 'Windows' } },
    multiSelect = true,
  }
  local res, picks = ask_with({ questions = { q } }, {
    pick('[ ] Linux'),
    pick('[ ] Windows'),
    pick('[x] Linux'),
    pick('[ ] macOS'),
    pick('Other…'),
    { input = 'BeOS' },
    pick('Done (2 selected)'),
  })
  H.eq(res, { answers = { { id = 'os', selected = { 'macOS', 'Windows' }, custom = 'BeOS' } } }, 'in option order')
  H.eq(picks.calls[1].texts, { '[ ] Linux', '[ ] macOS', '[ ] Windows', 'Done', 'Other…' }, 'first entries')
  H.eq(
    picks.calls[#picks.calls].texts,
    { '[ ] Linux', '[x] macOS', '[x] Windows', 'Done (2 selected)', 'Other… ("BeOS")' },
    'last entries'
  )
end)

test('ask: a question without options is a vim.ui.input; several questions come one after another', function()
  local res, picks = ask_with({
    questions = {
      DB_QUESTION,
      { id = 'name', question = 'What is the project called?' },
      { id = 'ok', question = 'Ship it?', options = { { label = 'Yes' }, { label = 'No' } }, multiSelect = true },
    },
  }, { pick('Postgres — the production one'), { input = 'toolhost' }, pick('Done') })
  H.eq(res, {
    answers = {
      { id = 'db', selected = { 'Postgres' } },
      { id = 'name', selected = {}, custom = 'toolhost' },
      { id = 'ok', selected = {} },
    },
  }, 'one answer per question, in order')
  H.eq(picks.calls[1].prompt, 'DB: Which database? (1/3)', 'numbered prompts')
  H.eq(picks.calls[2].prompt, 'What is the project called? (2/3) ', 'the input prompt')
end)

test('ask: picking nothing dismisses the whole question ({dismissed = true})', function()
  local res = ask_with({ questions = { DB_QUESTION } }, {
    {
      select = function()
        return nil
      end,
    },
  })
  H.eq(res, { dismissed = true }, 'Esc in the select')
  res = ask_with(
    { questions = { DB_QUESTION, { id = 'name', question = 'Name?' } } },
    { pick('SQLite'), { input = false } }
  )
  H.eq(res, { dismissed = true }, 'Esc in a later question dismisses all of it')
  H.eq(#require('toolhost.ask').pending(), 0, 'nothing pending')
end)

local PLAN = '# Bump the version\n\n1. Change a.txt to version 2\n2. Run the tests'

local function plan_params()
  return {
    tool = 'exit_plan_mode',
    title = 'Plan: Bump the version',
    intent = 'plan-review',
    plan = PLAN,
    questions = {
      {
        id = 'plan',
        question = 'Approve this plan?',
        header = 'Plan',
        options = {
          { label = 'Approve', description = 'Leave plan mode; the agent carries out the plan.' },
          { label = 'Keep planning', description = 'Stay in plan mode; say what to change.' },
        },
      },
    },
  }
end

--- The window showing a markdown plan buffer, or nil.
local function plan_window()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    local b = vim.api.nvim_win_get_buf(w)
    if vim.api.nvim_buf_get_name(b):find('toolhost://plan/', 1, true) then
      return w, b
    end
  end
end

test('ask: a plan review shows the plan (markdown) while asking Approve / Keep planning; approve', function()
  local seen
  local wins = #vim.api.nvim_list_wins()
  local res, picks = ask_with(plan_params(), {
    {
      select = function(items, texts)
        local win, buf = plan_window()
        seen = {
          win = win ~= nil,
          filetype = buf and vim.bo[buf].filetype,
          text = buf and H.buf_text(buf),
          current = win and vim.api.nvim_get_current_win() == win,
        }
        return items[1]
      end,
    },
  })
  H.eq(res, { answers = { { id = 'plan', selected = { 'Approve' } } } }, 'approved')
  H.eq(seen, { win = true, filetype = 'markdown', text = PLAN, current = false }, 'the plan, shown beside')
  H.eq(picks.calls[1].texts, {
    'Approve — Leave plan mode; the agent carries out the plan.',
    'Keep planning — Stay in plan mode; say what to change.',
  }, 'no Other… in a plan review')
  H.eq(picks.calls[1].opts.kind, 'toolhost-plan-review', 'its own picker kind')
  H.eq(plan_window(), nil, 'the plan window closed after the answer')
  H.eq(#vim.api.nvim_list_wins(), wins, 'no window left behind')
end)

test('ask: a plan review, keep planning with feedback (vim.ui.input)', function()
  local res, picks = ask_with(plan_params(), {
    pick('Keep planning — Stay in plan mode; say what to change.'),
    { input = 'also update the changelog' },
  })
  H.eq(
    res,
    { answers = { { id = 'plan', selected = { 'Keep planning' }, custom = 'also update the changelog' } } },
    'feedback as custom'
  )
  H.eq(picks.calls[2].kind, 'input', 'feedback asked with vim.ui.input')
  H.eq(plan_window(), nil, 'the plan window closed')
end)

test('ask: $/cancelRequest naming requestId withdraws the question: its windows close, no reply', function()
  local A = require('toolhost.ask')
  local picks, restore = scripted_pickers({ { hold = true } })
  local ok, err = pcall(function()
    -- A picker that opens a floating window and returns (as telescope and friends do).
    local orig = vim.ui.select
    local float
    vim.ui.select = function(items, opts, cb)
      local b = vim.api.nvim_create_buf(false, true)
      float = vim.api.nvim_open_win(b, true, { relative = 'editor', row = 1, col = 1, width = 20, height = 3 })
      orig(items, opts, cb)
    end
    local out = {}
    local params = vim.tbl_extend('force', plan_params(), { requestId = 4242, callId = 'withdrawn-call' })
    local co = coroutine.create(function()
      out.result, out.err = A.handle(params, { client_id = 77 })
      out.done = true
    end)
    assert(coroutine.resume(co))
    H.wait(function()
      return picks.held ~= nil
    end, 'the picker')
    vim.ui.select = orig
    H.check(plan_window() ~= nil, 'the plan is shown')
    H.eq(#A.pending(), 1, 'pending')
    A.on_cancel(77, { id = 999 }) -- another request's id: ignored
    H.eq(#A.pending(), 1, 'another id changes nothing')
    A.on_cancel(78, { id = 4242 }) -- another client's: ignored
    H.eq(#A.pending(), 1, 'another client changes nothing')
    with_messages(function(msgs)
      A.on_cancel(77, { id = 4242 })
      H.check(said(msgs, 'question withdrawn'), 'the person is told')
    end)
    H.eq(#A.pending(), 0, 'withdrawn')
    H.check(not vim.api.nvim_win_is_valid(float), "the picker's window closed")
    H.eq(plan_window(), nil, 'the plan window closed')
    -- A late pick (the picker closed by its own means) answers nothing.
    picks.held({ label = 'Approve' })
    vim.wait(50)
    H.eq(out.done, nil, 'the handler never returned: nothing is sent')
    H.eq(coroutine.status(co), 'suspended', 'left suspended (collected with the question)')
  end)
  restore()
  assert(ok, err)
end)

--- The line highlight of each row (1-based) of a cards buffer.
---@param buf integer
---@return table<integer, string>
local function line_groups(buf)
  local groups = {}
  local ns = require('toolhost.cards').namespace
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    groups[m[2] + 1] = m[4].line_hl_group or groups[m[2] + 1] -- not a span's (a badge, a caller)
  end
  return groups
end

test('ask: a picker that fails answers an error (the call fails at once, not at the timeout)', function()
  local orig = vim.ui.select
  vim.ui.select = function()
    error('broken picker')
  end
  local out = {}
  local ok, err = pcall(function()
    with_messages(function(msgs)
      local co = coroutine.create(function()
        out.result, out.err = require('toolhost.ask').handle(
          { requestId = 'broken', callId = 'c', tool = 't', title = 'T', questions = { DB_QUESTION } },
          { client_id = 9999 }
        )
        out.done = true
      end)
      assert(coroutine.resume(co))
      H.wait(function()
        return out.done
      end, 'the error reply')
      H.check(said(msgs, 'broken picker'), 'reported')
    end)
  end)
  vim.ui.select = orig
  assert(ok, err)
  H.eq(out.result, nil, 'no result')
  H.eq(out.err.code, vim.lsp.protocol.ErrorCodes.InternalError, 'an error reply')
  H.check(out.err.message:find('broken picker', 1, true) ~= nil, out.err.message)
  H.eq(#require('toolhost.ask').pending(), 0, 'nothing pending')
end)

-- The pending queue (lua/toolhost/pending.lua): questions and reviews share one queue — arrival
-- order across both kinds, one request on screen at a time, one count, withdrawal by request id.

--- The params of a `toolhost/review` of one hunk (no server: the handler is run directly).
---@param id integer the request id
---@return table
local function review_params(id)
  return {
    requestId = id,
    callId = 'call-review-' .. id,
    tool = 'edit',
    title = ('Edit r%d.txt'):format(id),
    path = ('/nonexistent/r%d.txt'):format(id),
    before = 'a\n',
    after = 'b\n',
    hunks = {
      {
        path = ('r%d.txt'):format(id),
        oldStart = 1,
        oldLines = 1,
        newStart = 1,
        newLines = 1,
        header = '@@ -1,1 +1,1 @@',
        lines = { { op = '-', text = 'a' }, { op = '+', text = 'b' } },
      },
    },
  }
end

--- The params of a `toolhost/askUser` with the DB question.
---@param id integer the request id
---@return table
local function question_params(id)
  return {
    requestId = id,
    callId = 'call-question-' .. id,
    tool = 'ask_user_question',
    title = 'Ask: DB',
    questions = { DB_QUESTION },
  }
end

--- Runs a server-request handler as Neovim's LSP client does: in a coroutine it resumes. The
--- returned table gets `done`, `result` and `err` when the handler returns.
---@param handle fun(params: table, ctx: table): any, any
---@param params table
---@param client_id integer
---@return {done?: boolean, result?: any, err?: table}
local function run_handler(handle, params, client_id)
  local out = {}
  local co = coroutine.create(function()
    out.result, out.err = handle(params, { client_id = client_id })
    out.done = true
  end)
  assert(coroutine.resume(co))
  return out
end

--- Waits until every callback scheduled so far has run (the queue shows requests on a later tick).
local function settle()
  local ticked = false
  vim.schedule(function()
    ticked = true
  end)
  H.wait(function()
    return ticked
  end, 'the scheduled callbacks')
end

--- Whether the review's buffer is in a window.
---@param review toolhost.Review
---@return boolean
local function review_shown(review)
  return review.buf ~= nil and vim.fn.bufwinid(review.buf) ~= -1
end

test('pending: a review and a question at once are shown in arrival order, with one count', function()
  require('toolhost.config').reset()
  local P, R, A = require('toolhost.pending'), require('toolhost.review'), require('toolhost.ask')
  local here = vim.api.nvim_get_current_win()
  local picks, restore = scripted_pickers({ pick('SQLite'), { hold = true } })
  local ok, err = pcall(with_messages, function(msgs)
    -- A review, then a question: the review is shown, the question waits for it.
    local rev = run_handler(R.handle, review_params(501), 88)
    local review = R.pending()[1]
    H.wait(function()
      return review_shown(review)
    end, 'the review window')
    H.eq(P.front(), review, 'the review is on screen')
    local q = run_handler(A.handle, question_params(502), 88)
    settle()
    H.eq(P.count(), 2, 'one count for both kinds')
    H.eq(
      vim.tbl_map(function(e)
        return e.kind.name
      end, P.list()),
      { 'review', 'question' },
      'arrival order'
    )
    H.eq(#picks.calls, 0, 'the question waits while the review is on screen')
    H.check(
      said(msgs, 'question waiting: ask_user_question Ask: DB, 1 more pending — asked once the review before it'),
      'the waiting question is announced with the count: ' .. vim.inspect(msgs)
    )
    -- The review answered: its window closes and the question is asked.
    R.submit(review.key, { confirm = false })
    H.wait(function()
      return rev.done
    end, 'the review answered')
    H.eq(rev.result, { accepted = {} }, 'the review result')
    H.wait(function()
      return q.done
    end, 'the question asked and answered')
    H.eq(q.result, { answers = { { id = 'db', selected = { 'SQLite' } } } }, 'the answer')
    H.check(not review_shown(review), 'the review window closed')
    H.eq(P.count(), 0, 'nothing pending')

    -- A question, then a review: the question's picker is on screen, the review waits.
    local q2 = run_handler(A.handle, question_params(503), 88)
    H.wait(function()
      return picks.held
    end, 'the picker')
    local rev2 = run_handler(R.handle, review_params(504), 88)
    local q3 = run_handler(A.handle, question_params(505), 88)
    settle()
    local review2 = R.pending()[1]
    H.check(not review_shown(review2), 'the review waits while the question is on screen')
    H.check(
      said(msgs, 'review requested: edit Edit r504.txt (1 hunk), 1 more pending — :Toolhost review'),
      'the waiting review is announced with the count: ' .. vim.inspect(msgs)
    )
    H.check(said(msgs, 'question waiting: ask_user_question Ask: DB, 2 more pending'), 'the third counts both')
    H.eq(P.count(), 3, 'three pending')
    -- The waiting question withdrawn: gone from the queue, never asked, no reply.
    P.on_cancel(88, { id = 505 })
    H.eq(P.count(), 2, 'withdrawn while waiting')
    H.check(said(msgs, 'question withdrawn'), 'its withdrawal is told')
    -- The question answered: the review is shown, without the cursor.
    picks.held({ label = 'Postgres' })
    H.wait(function()
      return q2.done
    end, 'the question answered')
    H.wait(function()
      return review_shown(review2)
    end, 'the review shown after the question')
    H.eq(vim.api.nvim_get_current_win(), here, 'the cursor stayed')
    H.eq(P.front(), review2, 'the review is on screen')
    -- The shown review withdrawn: its window closes; a review is answered RequestCancelled.
    P.on_cancel(88, { id = 504 })
    H.wait(function()
      return rev2.done
    end, 'the withdrawn review answered')
    H.eq(rev2.err.code, vim.lsp.protocol.ErrorCodes.RequestCancelled, 'RequestCancelled')
    H.check(not review_shown(review2), 'its window closed')
    H.eq(q3.done, nil, 'the withdrawn question never answers')
    H.eq(P.count(), 0, 'nothing pending')

    -- Two arriving in the same tick: the second knows the first goes before it.
    run_handler(R.handle, review_params(506), 88)
    run_handler(A.handle, question_params(507), 88)
    H.check(
      said(msgs, 'question waiting: ask_user_question Ask: DB, 1 more pending — asked once the review before it'),
      'announced behind the review that came first: ' .. vim.inspect(msgs)
    )
    P.on_cancel(88, { id = 507 })
    P.on_cancel(88, { id = 506 })
    H.eq(P.count(), 0, 'both withdrawn')
  end)
  restore()
  require('toolhost.pending').forget(88)
  assert(ok, err)
end)

test('pending: a review closed with q is set aside, the next request is shown; :Toolhost review reopens it', function()
  require('toolhost.config').reset()
  local P, R, A = require('toolhost.pending'), require('toolhost.review'), require('toolhost.ask')
  local picks, restore = scripted_pickers({ { hold = true } })
  local ok, err = pcall(with_messages, function()
    local rev = run_handler(R.handle, review_params(511), 89)
    local review = R.pending()[1]
    H.wait(function()
      return review_shown(review)
    end, 'the review window')
    run_handler(A.handle, question_params(512), 89)
    settle()
    H.eq(#picks.calls, 0, 'the question waits')
    vim.cmd('Toolhost review')
    H.eq(vim.api.nvim_get_current_buf(), review.buf, 'in the review')
    type_keys('q')
    H.wait(function()
      return picks.held
    end, 'the question asked once the review is set aside')
    H.eq(#R.pending(), 1, 'the review is still pending')
    H.eq(P.count(), 2, 'both counted')
    vim.cmd('Toolhost review')
    H.check(review_shown(review), ':Toolhost review reopens it')
    R.submit(review.key, { confirm = false })
    H.wait(function()
      return rev.done
    end, 'the review answered')
    H.eq(P.count(), 1, 'the question is left')
  end)
  restore()
  P.forget(89)
  assert(ok, err)
  H.eq(P.count(), 0, 'a server that exits takes its requests along')
end)

test('review: shown without the cursor, the notice says which window and how to get there', function()
  require('toolhost.config').reset()
  local R = require('toolhost.review')
  local here = vim.api.nvim_get_current_win()
  local ok, err = pcall(with_messages, function(msgs)
    local rev = run_handler(R.handle, review_params(521), 90)
    local review = R.pending()[1]
    H.wait(function()
      return review_shown(review)
    end, 'the review window')
    H.eq(vim.api.nvim_get_current_win(), here, 'the cursor stayed (typing is not stolen)')
    local win = vim.fn.bufwinid(review.buf)
    local n = vim.api.nvim_win_get_number(win)
    local notice
    for _, m in ipairs(msgs) do
      if m[1]:find('review requested: edit Edit r521.txt', 1, true) then
        notice = m[1]
      end
    end
    H.check(notice ~= nil, 'a notice: ' .. vim.inspect(msgs))
    io.stdout:write('     review: the notice: ' .. notice .. '\n')
    H.check(notice:find(('in window %d (at the bottom)'):format(n), 1, true) ~= nil, 'names the window: ' .. notice)
    H.check(notice:find('without the cursor: keys you type still go to your buffer', 1, true) ~= nil, 'says where keys go: ' .. notice)
    H.check(notice:find(':Toolhost review', 1, true) ~= nil, 'names :Toolhost review: ' .. notice)
    H.check(notice:find(('%d<C-w>w'):format(n), 1, true) ~= nil, 'names the window key: ' .. notice)
    -- The way the notice names gets there.
    type_keys(('%d<C-w>w'):format(n))
    H.eq(vim.api.nvim_get_current_win(), win, '{n}<C-w>w goes to the review')
    vim.cmd('wincmd p')
    H.eq(vim.api.nvim_get_current_win(), here, 'back')
    vim.cmd('Toolhost review')
    H.eq(vim.api.nvim_get_current_win(), win, ':Toolhost review goes to the review')
    R.submit(review.key, { confirm = false })
    H.wait(function()
      return rev.done
    end, 'the review answered')
  end)
  require('toolhost.pending').forget(90)
  assert(ok, err)
end)

--- The Native text of a callTool result.
local function native_text(res)
  local out = {}
  for _, b in ipairs(res.result.content or {}) do
    if b.type == 'text' then
      table.insert(out, b.text)
    end
  end
  return table.concat(out, '\n')
end

test('ask (real server): ask_user_question answered with the scripted vim.ui.select; the question card', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  H.eq(c.config.capabilities.experimental.toolhost.askUser, true, 'askUser capability advertised')
  local picks, restore = scripted_pickers({ pick('SQLite') })
  local ok, res = pcall(H.call, 'ask_user_question', {
    questions = {
      {
        id = 'db',
        question = 'Which database?',
        header = 'DB',
        options = { { label = 'Postgres' }, { label = 'SQLite' } },
      },
    },
  }, c)
  restore()
  assert(ok, res)
  H.eq(picks.calls[1].texts, { 'Postgres', 'SQLite', 'Other…' }, 'the entries')
  H.eq(res.result.isError, false, 'answered')
  H.eq(native_text(res), '{"answers":[{"id":"db","selected":["SQLite"]}]}', 'the Native text')
  local buf = assert(require('toolhost').cards())
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  H.eq(lines[1], 'ask_user_question Ask: DB · completed', 'the card title')
  H.eq(lines[2], '? [DB] Which database?', 'the question')
  H.eq(lines[3], '→ SQLite', 'the answer')
end)

test('ask (real server): todo_write twice: the cards buffer shows one todo list, up to date', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local buf = assert(require('toolhost').cards())
  H.call('todo_write', {
    todos = { { content = 'a', status = 'completed' }, { content = 'b', status = 'in_progress' } },
  }, c)
  local function count(lines, text)
    local n = 0
    for _, l in ipairs(lines) do
      n = n + (l == text and 1 or 0)
    end
    return n
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  H.eq(vim.list_slice(lines, 1, 3), { 'Todos · 1/2 completed · 1 in progress · 0 pending', '[x] a', '[>] b' }, 'pinned')
  H.call('todo_write', {
    todos = {
      { content = 'a', status = 'completed' },
      { content = 'b', status = 'completed' },
      { content = 'c', status = 'in_progress' },
      { content = 'd', status = 'pending' },
    },
  }, c)
  lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  io.stdout:write('     todo: cards buffer:\n       ' .. table.concat(lines, '\n       ') .. '\n')
  H.eq(
    vim.list_slice(lines, 1, 5),
    { 'Todos · 2/4 completed · 1 in progress · 1 pending', '[x] a', '[x] b', '[>] c', '[ ] d' },
    'the pinned list is the latest'
  )
  H.eq(count(lines, '[>] b'), 0, 'the old list is gone')
  H.eq(count(lines, '[x] a'), 1, 'one list')
  H.eq(count(lines, '[>] c'), 1, 'one list')
  local todo_cards = 0
  for _, l in ipairs(lines) do
    if l:match('^todo_write ') then
      todo_cards = todo_cards + 1
    end
  end
  H.eq(todo_cards, 2, 'both calls keep a card (collapsed to their counts)')
  local groups = line_groups(buf)
  H.eq(groups[4], 'ToolhostTodoActive', 'the item in progress is highlighted')
  H.eq(groups[2], 'ToolhostTodoDone', 'done items')
end)

test('ask (real server): :Toolhost plan-mode on, exit_plan_mode approved with the pickers, the plan card', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  with_messages(function(msgs)
    vim.cmd('Toolhost plan-mode on')
    H.wait(function()
      return said(msgs, 'plan mode on')
    end, 'the plan-mode message')
    local w = H.call('write', { file_path = ws .. '/a.txt', content = 'b\n' }, c)
    H.eq(w.result.isError, true, 'plan mode refuses a write')
    -- keep planning first, then approve
    local _, restore = scripted_pickers({
      pick('Keep planning — Stay in plan mode; say what to change.'),
      { input = 'add tests' },
    })
    local ok, res = pcall(H.call, 'exit_plan_mode', { plan = PLAN }, c)
    restore()
    assert(ok, res)
    H.eq(res.result.isError, true, 'keep planning: the call fails')
    H.check(native_text(res):find('their feedback: add tests', 1, true) ~= nil, native_text(res))
    local seen_plan
    _, restore = scripted_pickers({
      {
        select = function(items)
          local _, b = plan_window()
          seen_plan = b and H.buf_text(b)
          return items[1]
        end,
      },
    })
    ok, res = pcall(H.call, 'exit_plan_mode', { plan = PLAN }, c)
    restore()
    assert(ok, res)
    H.eq(res.result.isError, false, 'approved')
    H.eq(seen_plan, PLAN, 'the plan was shown while asking')
    local buf = assert(require('toolhost').cards())
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(lines[1], 'exit_plan_mode Plan: Bump the version · completed', 'the plan card')
    H.eq(lines[2], '# Bump the version', 'its markdown')
    H.eq(lines[6], '→ Approved', 'approved')
    local groups = line_groups(buf)
    H.eq(groups[2], 'ToolhostPlanHeading', 'the heading highlighted')
    H.eq(groups[6], 'ToolhostExitOk', 'Approved highlighted')
    local failed_row
    for i, l in ipairs(lines) do
      if l:find('their feedback: add tests', 1, true) then
        failed_row = i
      end
    end
    H.check(failed_row and groups[failed_row] == 'ToolhostExitError', 'the refused plan says why')
    local state
    require('toolhost').set_plan_mode(nil, { client = c, quiet = true }, function(_, r)
      state = r
    end)
    H.wait(function()
      return state
    end, 'toolhost/setPlanMode {}')
    H.eq(state.active, false, 'approving ended plan mode')
  end)
end)

test('ask (real server): a cancelled call withdraws its question; the picker closes, nothing answered', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local A = require('toolhost.ask')
  local picks, restore = scripted_pickers({ { hold = true } })
  local ok, err = pcall(function()
    with_messages(function(msgs)
      local call = start_call(c, 'ask_user_question', { questions = { { id = 'q', question = 'Proceed?' } } })
      H.wait(function()
        return picks.held ~= nil
      end, 'the question', 30000)
      H.eq(#A.pending(), 1, 'pending')
      local stopped
      require('toolhost').stop_call(function(e, cancelled)
        stopped = { e, cancelled }
      end)
      H.wait(function()
        return stopped
      end, 'toolhost/cancelCall')
      H.wait(function()
        return #A.pending() == 0
      end, 'the server withdrew the question')
      H.check(said(msgs, 'question withdrawn'), 'reported')
      local res = call.response()
      H.eq(res.result.isError, true, 'the call failed')
      H.eq(res.result.error.info.code, 'ASK_ABORTED', 'ASK_ABORTED: ' .. vim.inspect(res.result.error))
      picks.held('too late')
      vim.wait(100)
    end)
  end)
  restore()
  assert(ok, err)
end)

-- The MCP bridge: the tools of external MCP servers (`mcp__<server>__<tool>`) give cards of kind
-- `mcp`, and the server reports those servers' status (`toolhost/mcpServers`,
-- `toolhost/mcpServersChanged`). The stand-in server (tests/fake_server.py) says what each test
-- scripts, so every shape is covered whatever MCP servers the real one can reach.

--- A client of the stand-in server for a fresh root (the only client running).
---@return vim.lsp.Client
local function fake_client()
  local ws = H.workspace()
  local id = require('toolhost.client').start(ws, { config = { cmd = { 'python3', here .. '/fake_server.py' } } })
  local c = assert(vim.lsp.get_client_by_id(assert(id, 'the stand-in server started')))
  H.wait(function()
    return c.initialized
  end, 'stand-in server')
  return c
end

--- A request to the stand-in server, answered before this returns.
---@param c vim.lsp.Client
---@param method string
---@param params table
---@return any result
local function fake_request(c, method, params)
  local done
  c:request(method, params, function(e, r)
    done = { e, r }
  end)
  H.wait(function()
    return done
  end, method)
  assert(done[1] == nil, vim.inspect(done[1]))
  return done[2]
end

--- Has the stand-in server send a notification (handled by the time this returns).
---@param c vim.lsp.Client
---@param method string
---@param params table
local function fake_notify(c, method, params)
  fake_request(c, 'fake/notify', { method = method, params = params })
end

--- The buffer named `name`, or nil.
---@param name string
---@return integer?
local function buf_named(name)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name then
      return b
    end
  end
  return nil
end

--- An MCP card as the server sends it.
---@param status string
---@param extra? table
---@return table
local function mcp_card(status, extra)
  return vim.tbl_extend('force', {
    callId = 'call_mcp1',
    tool = 'mcp__fs__read_file',
    status = status,
    kind = 'mcp',
    title = 'fs · read_file',
    text = '',
    rendered = 'mcp__fs__read_file fs · read_file · ' .. status,
    locations = {},
    data = { server = 'fs', tool = 'read_file' },
  }, extra or {})
end

--- The rows (1-based) of a cards buffer with an extmark of highlight group `group` over a span,
--- and the text under it.
---@param buf integer
---@param group string
---@return {[1]: integer, [2]: string}[]
local function spans_of(buf, group)
  local out = {}
  local ns = require('toolhost.cards').namespace
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    if m[4].hl_group == group then
      local line = vim.api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1]
      table.insert(out, { m[2] + 1, line:sub(m[3] + 1, m[4].end_col) })
    end
  end
  return out
end

test('mcp (stand-in server): an MCP card pending with live output, completed with structured JSON, failed', function()
  local c = fake_client()
  local buf = require('toolhost.cards').open_live(c)
  local function lines()
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  fake_notify(c, 'toolhost/card', mcp_card('pending', { caller = 'claude-code' }))
  H.eq(lines(), {
    '[fs] read_file · pending · claude-code',
    'running… (<C-c> or :ToolhostStop stops it)',
  }, 'the pending card: header (server badge, raw tool), running')
  H.eq(spans_of(buf, 'ToolhostMcpServer'), { { 1, '[fs]' } }, 'the server is a badge')
  H.eq(spans_of(buf, 'ToolhostCaller'), { { 1, 'claude-code' } }, 'the agent that made the call')
  fake_notify(c, 'toolhost/callOutput', { callId = 'call_mcp1', text = 'reading 1/2\n' })
  fake_notify(c, 'toolhost/callOutput', { callId = 'call_mcp1', text = 'reading 2/2\n' })
  H.wait(function()
    return vim.deep_equal(lines(), {
      '[fs] read_file · pending · claude-code',
      'reading 1/2',
      'reading 2/2',
      'running… (<C-c> or :ToolhostStop stops it)',
    })
  end, 'the live progress in the pending card:\n' .. table.concat(lines(), '\n'))
  -- Keys in the server's order, not sorted; an empty object and an empty array stay apart.
  local body = '{"z":1,"a":{"c":"x","b":[true,false]},"list":[],"obj":{},"n":1.5,"s":"say \\"hi\\"","big":12345678901}'
  local value = vim.json.decode(body)
  fake_notify(
    c,
    'toolhost/card',
    mcp_card('completed', {
      caller = 'claude-code',
      text = 'hello\nworld',
      rendered = 'mcp__fs__read_file fs · read_file · completed · claude-code\nhello\nworld',
      data = { server = 'fs', tool = 'read_file', structuredContent = value },
    })
  )
  local want = {
    '[fs] read_file · completed · claude-code',
    'hello',
    'world',
    'structured:',
    '{',
    '  "a": {',
    '    "b": [',
    '      true,',
    '      false',
    '    ],',
    '    "c": "x"',
    '  },',
    '  "big": 12345678901,',
    '  "list": [],',
    '  "n": 1.5,',
    '  "obj": {},',
    '  "s": "say \\"hi\\"",',
    '  "z": 1',
    '}',
  }
  H.eq(lines(), want, 'the completed card: the text, then the structured content pretty printed')
  H.eq(vim.json.decode(table.concat(vim.list_slice(want, 5), '\n')), value, 'the pretty JSON is that value')
  local groups = line_groups(buf)
  H.eq(groups[1], 'ToolhostCardTitle', 'the header')
  H.eq(groups[4], 'ToolhostCardInfo', 'the structured: label')
  H.eq(spans_of(buf, 'ToolhostMcpServer'), { { 1, '[fs]' } }, 'the badge again')
  H.eq(vim.api.nvim_get_hl(0, { name = 'ToolhostMcpServer' }).link, 'PmenuSel', 'a badge-like default')
  local echoed
  local echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks)
    echoed = chunks
  end
  require('toolhost.cards').echo(require('toolhost.cards').get(c.id, 'call_mcp1'))
  vim.api.nvim_echo = echo
  H.eq(vim.list_slice(echoed, 1, 4), {
    { '[fs]', 'ToolhostMcpServer' },
    { ' read_file · completed · ', 'ToolhostCardTitle' },
    { 'claude-code\n', 'ToolhostCaller' },
    { 'hello\n' },
  }, 'an echoed MCP card (:Toolhost call) is drawn the same way')

  -- A long structured content is cut like a terminal card's output; <CR> shows all of it.
  local numbers = {}
  for i = 1, 30 do
    numbers[i] = i
  end
  fake_notify(
    c,
    'toolhost/card',
    mcp_card('completed', {
      callId = 'call_mcp2',
      tool = 'mcp__gh__list',
      title = 'gh · list',
      text = 'thirty numbers',
      rendered = 'mcp__gh__list gh · list · completed\nthirty numbers',
      data = { server = 'gh', tool = 'list', structuredContent = { numbers = numbers } },
    })
  )
  local l = lines()
  H.eq(l[1], '[gh] list · completed', 'the newest card first')
  H.eq(l[2], 'thirty numbers', 'its text')
  H.eq(l[3], 'structured:', 'its structured section')
  H.eq(l[4], '{', 'the JSON starts')
  H.eq(#vim.list_slice(l, 4, 24) - 1, require('toolhost.mcp').STRUCTURED_LINES, 'the JSON is cut')
  H.eq(l[24], '… 14 more lines (<CR> for all)', 'the rest is behind <CR> (34 lines in all)')
  H.eq(line_groups(buf)[24], 'ToolhostTerminalMore', 'like a terminal card’s')
  H.eq(l[25], '', 'then the older card')
  local win = vim.fn.bufwinid(buf)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { 24, 0 })
  vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
  local out = vim.api.nvim_get_current_buf()
  H.eq(vim.api.nvim_buf_get_name(out), 'toolhost://output/call_mcp2', '<CR> opens the full output')
  local full = vim.api.nvim_buf_get_lines(out, 0, -1, false)
  H.eq(vim.list_slice(full, 1, 4), { 'thirty numbers', '', 'structured:', '{' }, 'the text, then the JSON')
  H.eq(#full, 3 + 34, 'all of it')
  H.eq(full[#full - 1], '  ]', 'to its end')
  vim.cmd('close')

  fake_notify(
    c,
    'toolhost/card',
    mcp_card('failed', {
      callId = 'call_mcp3',
      text = 'MCP error -32000: no such file: x.txt',
      rendered = 'mcp__fs__read_file fs · read_file · failed\nMCP error -32000: no such file: x.txt',
    })
  )
  l = lines()
  H.eq(vim.list_slice(l, 1, 3), {
    '[fs] read_file · failed',
    'MCP error -32000: no such file: x.txt',
    '',
  }, 'the failed card: its error')
  H.eq(line_groups(buf)[2], 'ToolhostExitError', 'in the failed highlight')

  -- Kinds without a view (and an mcp card without its data) are drawn from `rendered`.
  fake_notify(c, 'toolhost/card', {
    callId = 'call_other',
    tool = 'odd',
    status = 'completed',
    kind = 'a-kind-nobody-knows',
    title = 'Odd',
    text = 't',
    rendered = 'odd Odd · completed\nsome text',
    locations = {},
  })
  fake_notify(c, 'toolhost/card', {
    callId = 'call_nodata',
    tool = 'mcp__x__y',
    status = 'completed',
    kind = 'mcp',
    title = 'x · y',
    text = 't',
    rendered = 'mcp__x__y x · y · completed\nplain',
    locations = {},
  })
  l = lines()
  H.eq(vim.list_slice(l, 1, 6), {
    'mcp__x__y x · y · completed',
    'plain',
    '',
    'odd Odd · completed',
    'some text',
    '',
  }, 'generic views')
end)

--- The status of three MCP servers, in no particular order.
local MCP_SERVERS = {
  {
    name = 'web',
    transport = 'streamable-http',
    state = 'failed',
    tools = {},
    error = 'connection refused',
    attempts = 5,
  },
  {
    name = 'fs',
    transport = 'stdio',
    state = 'ready',
    tools = { 'mcp__fs__read_file', 'mcp__fs__write_file' },
    protocolVersion = '2025-06-18',
    attempts = 1,
  },
  {
    name = 'gh',
    transport = 'stdio',
    state = 'reconnecting',
    tools = { 'mcp__gh__list' },
    error = 'pipe closed',
    attempts = 2,
  },
}

test('mcp (stand-in server): :Toolhost mcp-servers shows the status and follows toolhost/mcpServersChanged', function()
  local c = fake_client()
  fake_request(c, 'fake/setMcpServers', { servers = MCP_SERVERS })
  H.eq(require('toolhost').mcp_servers(c), nil, 'nothing known before the server told')
  vim.cmd('Toolhost mcp-servers')
  local buf
  H.wait(function()
    buf = buf_named('toolhost://mcp-servers/fake')
    return buf and vim.api.nvim_get_current_buf() == buf
  end, 'the MCP servers buffer')
  local function row(name, state, transport, tools, err)
    return ('%-3s  %-12s  %-15s  %s'):format(name, state, transport, tools) .. (err and ('  ' .. err) or '')
  end
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {
    row('fs', 'ready', 'stdio', '2 tools'),
    '  mcp__fs__read_file',
    '  mcp__fs__write_file',
    row('gh', 'reconnecting', 'stdio', '1 tool', 'pipe closed'),
    '  mcp__gh__list',
    row('web', 'failed', 'streamable-http', '0 tools', 'connection refused'),
  }, 'one line per server (by name), its tools beneath')
  local ns = vim.api.nvim_get_namespaces().toolhost_mcp_servers
  local hl = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local line = vim.api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1]
    table.insert(hl, { m[2] + 1, line:sub(m[3] + 1, m[4].end_col), m[4].hl_group })
  end
  table.sort(hl, function(a, b)
    return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
  end)
  H.eq(hl, {
    { 1, 'fs', 'ToolhostMcpServer' },
    { 1, 'ready', 'ToolhostExitOk' },
    { 4, 'gh', 'ToolhostMcpServer' },
    { 4, 'pipe closed', 'ToolhostExitError' },
    { 4, 'reconnecting', 'ToolhostExitWarn' },
    { 6, 'connection refused', 'ToolhostExitError' },
    { 6, 'failed', 'ToolhostExitError' },
    { 6, 'web', 'ToolhostMcpServer' },
  }, 'highlights')
  H.eq(#require('toolhost').mcp_servers(c), 3, 'the status is kept')
  H.eq(require('toolhost').mcp_servers()[1].name, 'fs', 'of the server this buffer shows, by name')

  -- A change arrives as a notification: the buffer follows, wherever the cursor is.
  local changed = vim.deepcopy(MCP_SERVERS)
  changed[1] =
    { name = 'web', transport = 'streamable-http', state = 'ready', tools = { 'mcp__web__fetch' }, attempts = 6 }
  table.remove(changed, 3)
  vim.cmd('wincmd p')
  fake_request(c, 'fake/setMcpServers', { servers = changed, notify = true })
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {
    ('%-3s  %-5s  %-15s  %s'):format('fs', 'ready', 'stdio', '2 tools'),
    '  mcp__fs__read_file',
    '  mcp__fs__write_file',
    ('%-3s  %-5s  %-15s  %s'):format('web', 'ready', 'streamable-http', '1 tool'),
    '  mcp__web__fetch',
  }, 'the buffer follows toolhost/mcpServersChanged')
  H.eq(require('toolhost').mcp_servers(c)[2].state, 'ready', 'and the state')
  fake_request(c, 'fake/setMcpServers', { servers = {}, notify = true })
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), { 'no MCP servers configured' }, 'none left')
  -- The server goes away: the buffer says so rather than showing a status that no longer moves.
  c:stop()
  H.wait(function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == 'the toolhost server of this view has stopped'
  end, 'the stopped view')
end)

test('mcp (stand-in server): :Toolhost mcp-servers against a server without the method warns', function()
  fake_client()
  with_messages(function(msgs)
    vim.cmd('Toolhost mcp-servers')
    H.wait(function()
      return said(msgs, 'method not found')
    end, 'the warning')
    H.check(said(msgs, 'does not report MCP servers'), 'says why')
  end)
  H.eq(buf_named('toolhost://mcp-servers/fake'), nil, 'no buffer opened')
end)

--- The lines of one section of the current `:checkhealth` buffer, without its header.
---@param title string
---@return string[]
local function health_section(title)
  local out, inside = {}, false
  for _, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    if l:match(' ~$') then
      inside = l == title .. ' ~'
    elseif inside and l ~= '' then
      table.insert(out, l)
    end
  end
  return out
end

test('mcp (stand-in server): :checkhealth toolhost reports the MCP servers (ready, failed, none, no method)', function()
  vim.cmd('silent checkhealth toolhost')
  H.eq(
    health_section('toolhost: MCP servers'),
    { '- no toolhost server running: a running server reports its MCP servers' },
    'no server'
  )
  vim.cmd('bwipeout')
  local c = fake_client()
  vim.cmd('silent checkhealth toolhost')
  H.eq(health_section('toolhost: MCP servers'), {
    '- ⚠️ WARNING this toolhost server does not report MCP servers (toolhost/mcpServers: method not found; an older toolhost?)',
  }, 'an older server')
  vim.cmd('bwipeout')
  fake_request(c, 'fake/setMcpServers', { servers = {} })
  vim.cmd('silent checkhealth toolhost')
  H.eq(health_section('toolhost: MCP servers'), { '- no MCP servers configured' }, 'none configured')
  vim.cmd('bwipeout')
  fake_request(c, 'fake/setMcpServers', { servers = MCP_SERVERS })
  vim.cmd('silent checkhealth toolhost')
  local section = health_section('toolhost: MCP servers')
  io.stdout:write('     mcp: checkhealth:\n       ' .. table.concat(section, '\n       ') .. '\n')
  H.eq(section, {
    '- ✅ OK fs: ready, 2 tools, protocol 2025-06-18 (stdio)',
    '- ⚠️ WARNING gh: reconnecting, 2 attempts (stdio): pipe closed',
    '- ❌ ERROR web: failed after 5 attempts (streamable-http): connection refused',
  }, 'one line per server')
  H.eq(#require('toolhost').mcp_servers(c), 3, 'the answer is kept as the latest status')
end)

test('mcp (real server): toolhost/mcpServers with no MCP server configured', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local res = c:request_sync('toolhost/mcpServers', vim.empty_dict(), 5000)
  assert(res, 'an answer')
  if res.err and res.err.code == vim.lsp.protocol.ErrorCodes.MethodNotFound then
    H.skip('the server under test has no toolhost/mcpServers yet')
  end
  H.eq(res.err, nil, 'no error')
  H.eq(res.result.servers, {}, 'no MCP servers')
  local got
  require('toolhost').show_mcp_servers(function(e, b)
    got = { e, b }
  end)
  H.wait(function()
    return got
  end, ':Toolhost mcp-servers')
  H.eq(got[1], nil, 'no error')
  H.eq(vim.api.nvim_buf_get_lines(got[2], 0, -1, false), { 'no MCP servers configured' }, 'the view')
  H.eq(require('toolhost').mcp_servers(c), {}, 'the state')
end)

test('mcp (real server): an MCP server’s tools through the bridge: cards, :Toolhost mcp-servers, health', function()
  -- Program-starting settings are honoured from the user config (this suite's XDG_CONFIG_HOME);
  -- it is removed again, so later tests' servers start no MCP server.
  local python = vim.trim(vim.system({ 'python3', '-c', 'import sys; print(sys.executable)' }):wait().stdout or '')
  local user_config = vim.env.XDG_CONFIG_HOME .. '/toolhost/config.toml'
  H.check(H.read(user_config) == nil, 'no user config to overwrite at ' .. user_config)
  H.write(
    user_config,
    ('[mcp.servers.weather]\ncommand = %s\nargs = [%s]\n'):format(
      vim.json.encode(python),
      vim.json.encode(here .. '/mcp_server.py')
    )
  )
  local ok, err = pcall(function()
    local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/a.txt')
    local c = H.client()
    local status
    for _ = 1, 200 do
      local res = c:request_sync('toolhost/mcpServers', vim.empty_dict(), 5000)
      if res and res.err and res.err.code == vim.lsp.protocol.ErrorCodes.MethodNotFound then
        H.skip('the server under test has no toolhost/mcpServers yet')
      end
      status = res and res.result and res.result.servers and res.result.servers[1]
      if status and (status.state == 'ready' or status.state == 'failed') then
        break
      end
      vim.wait(50)
    end
    H.eq(status and status.state, 'ready', 'the MCP server is ready: ' .. vim.inspect(status))
    local tools = vim.deepcopy(status.tools)
    table.sort(tools)
    H.eq(tools, { 'mcp__weather__broken', 'mcp__weather__weather' }, 'its tools: ' .. vim.inspect(status))

    local res = H.call('mcp__weather__weather', { city = 'Lyon' }, c)
    local card = res.card
    H.eq({ card.kind, card.status, card.title }, { 'mcp', 'completed', 'weather · weather' }, 'the card')
    H.eq({ card.data.server, card.data.tool }, { 'weather', 'weather' }, 'its data names the server and tool')
    local buf = assert(require('toolhost').cards())
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    io.stdout:write('     mcp: cards buffer:\n       ' .. table.concat(lines, '\n       ') .. '\n')
    H.eq(lines[1], '[weather] weather · completed', 'the header')
    local text = require('toolhost.cards').split(card.text)
    H.check(card.text:find('Lyon: 21.5 °C, sunny', 1, true) ~= nil, 'the Native text: ' .. card.text)
    H.eq(vim.list_slice(lines, 2, 1 + #text), text, 'the text the model saw')
    H.eq(vim.list_slice(lines, 2 + #text, 13 + #text), {
      'structured:',
      '{',
      '  "celsius": 21.5,',
      '  "conditions": [',
      '    "sunny",',
      '    "calm"',
      '  ],',
      '  "location": {',
      '    "city": "Lyon",',
      '    "country": "Nowhere"',
      '  }',
      '}',
    }, 'the structured content, keys sorted')

    res = H.call('mcp__weather__broken', vim.empty_dict(), c)
    card = res.card
    H.eq(
      { card.kind, card.status, card.data.server, card.data.tool },
      { 'mcp', 'failed', 'weather', 'broken' },
      'failed'
    )
    H.check(card.text:find('the tool broke', 1, true) ~= nil, 'the error: ' .. card.text)
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(lines[1], '[weather] broken · failed', 'the failed card first')
    local groups = line_groups(buf)
    for i = 2, #require('toolhost.cards').split(card.text) + 1 do
      H.eq(groups[i], 'ToolhostExitError', 'its error line ' .. i)
    end

    local got
    require('toolhost').show_mcp_servers(function(e, b)
      got = { e, b }
    end)
    H.wait(function()
      return got
    end, ':Toolhost mcp-servers')
    H.eq(vim.api.nvim_buf_get_lines(got[2], 0, -1, false), {
      'weather  ready  stdio  2 tools',
      '  ' .. status.tools[1],
      '  ' .. status.tools[2],
    }, 'the status view (the tools in the server’s order)')
    vim.cmd('silent checkhealth toolhost')
    local section = health_section('toolhost: MCP servers')
    H.eq(#section, 1, 'one server: ' .. vim.inspect(section))
    H.check(
      section[1]:find('OK weather: ready, 2 tools, protocol ', 1, true) ~= nil and section[1]:find('(stdio)', 1, true),
      'reported ready: ' .. section[1]
    )
  end)
  os.remove(user_config)
  if not ok then
    error(err, 0)
  end
end)

test('web cards: <CR> on a source or the page line opens its URL with vim.ui.open (http/https only)', function()
  local cards = require('toolhost.cards')
  local search = {
    callId = 'call_web1',
    tool = 'web_search',
    status = 'completed',
    kind = 'fetch',
    title = 'Search greet in C',
    text = 'Sources:\n- [Writing a <greet> function](https://example.com/c/greet?a=1&b=2)',
    locations = {},
    rendered = table.concat({
      'web_search Search greet in C · completed',
      '- Writing a <greet> function <https://example.com/c/greet?a=1&b=2>',
      '- https://example.org/stdio <https://example.org/stdio>',
      '- Evil <javascript:alert(1)>',
      '- Local file <file:///etc/passwd>',
      '(more sources were left out)',
    }, '\n'),
    data = {
      queries = { 'greet in C' },
      sources = {
        { url = 'https://example.com/c/greet?a=1&b=2', title = 'Writing a <greet> function' },
        { url = 'https://example.org/stdio' },
        { url = 'javascript:alert(1)', title = 'Evil' },
        { url = 'file:///etc/passwd', title = 'Local file' },
      },
      truncated = true,
    },
  }
  local fetch = {
    callId = 'call_web2',
    tool = 'web_fetch',
    status = 'completed',
    kind = 'fetch',
    title = 'Fetch http://127.0.0.1:8080/guide',
    text = 'Fetched http://127.0.0.1:8080/guide (HTTP 200)\n\nA greeting function takes a name.',
    locations = {},
    rendered = table.concat({
      'web_fetch Fetch http://127.0.0.1:8080/guide · completed',
      'http://127.0.0.1:8080/guide · HTTP 200 · "Guide" · 633 bytes',
      'A greeting function takes a name.',
    }, '\n'),
    data = {
      url = 'http://127.0.0.1:8080/guide',
      finalUrl = 'https://example.net/guide/',
      status = 200,
      statusCode = 200,
      title = 'Guide',
      size = 633,
      truncated = false,
      cached = false,
    },
  }
  local opened, notes = {}, {}
  local open, notify = vim.ui.open, vim.notify
  vim.ui.open = function(url)
    table.insert(opened, url)
    return nil, nil
  end
  vim.notify = function(msg)
    table.insert(notes, msg)
  end
  local ok, err = pcall(function()
    -- oldest first, as the server sends a replay: the search card is drawn first (newest)
    local buf = cards.open_replay('20000101-000000-000042', { fetch, search })
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(lines[2], '- Writing a <greet> function <https://example.com/c/greet?a=1&b=2>', 'a source line')
    H.eq(lines[9], 'http://127.0.0.1:8080/guide · HTTP 200 · "Guide" · 633 bytes', 'the fetch header line')
    local function press(row)
      vim.api.nvim_win_set_cursor(0, { row, 0 })
      vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
      H.eq(vim.api.nvim_get_current_buf(), buf, '<CR> on a web line stays in the cards buffer')
    end
    press(2)
    press(3)
    H.eq(opened, { 'https://example.com/c/greet?a=1&b=2', 'https://example.org/stdio' }, 'the sources under the cursor')
    press(9)
    H.eq(opened[3], 'https://example.net/guide/', 'the header line opens where the fetch ended (finalUrl)')
    -- never a URL that is not http(s): <CR> there is what it is on any card without a location
    opened = {}
    for _, row in ipairs({ 4, 5, 1, 6, 10 }) do
      press(row)
    end
    H.eq(opened, {}, 'javascript:, file:, the title, the "more" line and the preview open nothing')
    H.eq(#notes, 5, 'each says there is no location: ' .. vim.inspect(notes))
    H.check(notes[1]:find('no location', 1, true) ~= nil, notes[1])

    -- url_at directly: the header without finalUrl, other kinds, forged lines
    local no_final = vim.deepcopy(fetch)
    no_final.data.finalUrl = vim.NIL
    H.eq(cards.url_at({ card = no_final, index = 2 }), 'http://127.0.0.1:8080/guide', 'url when there is no finalUrl')
    local generic = vim.tbl_extend('force', fetch, { kind = 'generic' })
    H.eq(cards.url_at({ card = generic, index = 2 }), nil, 'only fetch cards')
    local failed = vim.tbl_extend('force', fetch, { status = 'failed' })
    H.eq(cards.url_at({ card = failed, index = 2 }), nil, 'not a failed fetch')
    local forged = vim.deepcopy(search)
    forged.rendered = 'web_search Search x · completed\n- x <https://not-a-source.example/>'
    H.eq(cards.url_at({ card = forged, index = 2 }), nil, 'only the URLs of the card’s sources')
    local js = vim.deepcopy(fetch)
    js.data.url, js.data.finalUrl = 'javascript:alert(1)', vim.NIL
    js.rendered = 'web_fetch Fetch javascript:alert(1) · completed\njavascript:alert(1) · HTTP 200'
    H.eq(cards.url_at({ card = js, index = 2 }), nil, 'a javascript: page is not opened')
    for url, want in pairs({
      ['https://example.com'] = true,
      ['HTTP://EXAMPLE.COM/x'] = true,
      ['javascript:alert(1)'] = false,
      ['javascript://example.com/%0aalert(1)'] = false,
      ['file:///etc/passwd'] = false,
      ['https://'] = false,
      ['https:///path'] = false,
      ['https://a b/'] = false,
      ['https://example.com/\n'] = false,
      [''] = false,
    }) do
      H.eq(cards.is_web_url(url), want, 'is_web_url ' .. vim.inspect(url))
    end
  end)
  vim.ui.open, vim.notify = open, notify
  if not ok then
    error(err, 0)
  end
end)

-- `:Toolhost ask`: toolhost's own agent (`toolhost/agentPrompt`) against a scripted chat
-- completions server (tests/model_server.py) that the real server reaches through `[agent]` in the
-- user configuration (an endpoint is never taken from an untrusted workspace).

test('cards: a kind never heard of is drawn by the generic view, whatever its data looks like', function()
  local cards = require('toolhost.cards')
  local views = require('toolhost.cards.views')
  local generic = require('toolhost.cards.generic')
  local path = vim.fn.tempname()
  H.write(path, 'one\ntwo\nthree\n')
  -- Data every view of this plugin would draw (a todo list, questions, a plan, an MCP server, a
  -- terminal): the view is chosen by the kind alone, so none of them draws it.
  local card = {
    callId = 'call-hologram',
    tool = 'projector',
    status = 'completed',
    kind = 'hologram',
    title = 'Project a hologram',
    text = 'beam on',
    rendered = 'projector Project a hologram · completed · some-agent\n+ beam on\n@@ not a hunk @@\n- 3 lines',
    caller = 'some-agent',
    locations = { { path = path, line = 3 } },
    data = {
      todos = { { content = 'x', status = 'completed' } },
      questions = { { id = 'q', question = '?' } },
      plan = '# plan',
      server = 'srv',
      tool = 'raw',
      sources = { { url = 'https://example.invalid/' } },
    },
    terminal = { command = 'make', output = 'made\n', exitCode = 0 },
  }
  H.eq(views.of(card), generic, 'the generic view')
  H.eq(cards.view(card), nil, 'no view of its own: drawn from `rendered`')
  for kind, name in pairs(views.KINDS) do
    local view = require(name)
    H.check(view.draw or view.layout or view.target or view.url, kind .. ': its module is a view')
    H.eq(views.of({ kind = kind }), view, kind .. ': chosen by its kind')
  end
  local buf = cards.open_replay('hologram-session', { card })
  H.eq(H.buf_text(buf), card.rendered, 'drawn byte for byte')
  H.eq(line_groups(buf), { 'ToolhostCardTitle' }, 'only the title is highlighted')
  H.eq(caller_spans(buf), { { 1, 'some-agent' } }, 'the caller at the end of the title')
  -- <CR> on any line opens its location; nothing opens a web page or an output buffer.
  local opened
  local orig = vim.ui.open
  vim.ui.open = function(url)
    opened = url
  end
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  cards.jump()
  vim.ui.open = orig
  H.eq(opened, nil, 'no web page')
  H.eq({ vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] }, { path, 3 }, 'its location')
end)

local with_model, model_requests = H.with_model, H.model_requests

test('chat: :Toolhost ask streams the answer, a line per call, the footer; the next prompt continues', function()
  with_model({}, function(record)
    local ws, sessions = H.workspace({ ['a.txt'] = 'hello world\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/a.txt')
    local c = H.client()
    local chat = require('toolhost.chat')
    local th = require('toolhost')
    -- arguments and completion
    H.eq(th.complete('mode=p', 'Toolhost ask mode=p'), { 'mode=plan' }, 'mode completes')
    H.eq(th.complete('', 'Toolhost ask mode=plan '), { 'model=' }, 'each option once')
    H.eq(th.complete('', 'Toolhost ask fix it '), {}, 'no completion in the task')
    H.eq(th.complete('', 'Toolhost chat '), { 'new', 'stop' }, 'chat words')
    H.eq({ chat.parse('mode=plan model=m  do it') }, { 'do it', { mode = 'plan', model = 'm' } }, 'parse')
    local msgs = {}
    local orig = vim.notify
    vim.notify = function(m)
      table.insert(msgs, m)
    end
    vim.cmd('Toolhost ask mode=bogus do it')
    vim.notify = orig
    H.check(msgs[1] and msgs[1]:find('unknown mode "bogus"', 1, true), 'a bad mode is refused: ' .. vim.inspect(msgs))
    H.eq(chat.running(), nil, 'nothing sent')

    -- The answer's text as each piece arrives (streamed into the last line).
    local pieces = {}
    local on_update = chat.on_update
    chat.on_update = function(id, params)
      on_update(id, params)
      if params.update.type == 'text' then
        local lines = vim.api.nvim_buf_get_lines(chat.state().buf, 0, -1, false)
        table.insert(pieces, lines[#lines])
      end
    end
    vim.cmd('Toolhost ask what does a.txt say?')
    H.check(chat.running() ~= nil, 'the prompt runs')
    H.wait(function()
      return not chat.running()
    end, 'the answer', 20000)
    chat.on_update = on_update
    local buf = chat.state().buf
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {
      '> what does a.txt say?',
      '',
      '→ read Read a.txt ✓',
      '',
      'a.txt says hello world.',
      '',
      '── answered · 2 turns · 440 tokens in, 27 out · $0.0005',
    }, 'the chat buffer')
    H.eq(pieces, { 'a.txt says ', 'a.txt says hello', 'a.txt says hello world.' }, 'streamed piece by piece')
    H.eq({ vim.api.nvim_buf_get_name(buf), vim.bo[buf].filetype }, { 'toolhost://chat', 'markdown' }, 'the buffer')
    H.check(vim.fn.bufwinid(buf) ~= -1, 'the chat is shown')
    H.eq(vim.api.nvim_get_current_buf(), vim.fn.bufnr(ws .. '/a.txt'), 'the cursor stayed in a.txt')
    local first_chat = chat.state().chat_id
    H.check(type(first_chat) == 'string', 'the chat id is kept')

    -- The agent's card is in the cards buffer; <CR> on the call line goes to it.
    local card
    for _, cd in ipairs(require('toolhost.cards').list(c.id)) do
      if cd.tool == 'read' then
        card = cd
      end
    end
    H.check(card ~= nil, 'the read card arrived')
    H.eq({ card.status, card.caller, card.title }, { 'completed', 'toolhost agent', 'Read a.txt' }, 'the card')
    vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
    vim.api.nvim_win_set_cursor(0, { 3, 0 })
    vim.fn.maparg('<CR>', 'n', false, true).callback()
    local cards_buf = vim.api.nvim_get_current_buf()
    H.check(vim.api.nvim_buf_get_name(cards_buf):find('^toolhost://cards/'), 'in the cards buffer')
    H.eq(
      require('toolhost.cards').card_at(cards_buf, vim.api.nvim_win_get_cursor(0)[1]).callId,
      card.callId,
      'on the card of the call'
    )

    -- The next prompt (from the chat buffer) continues the chat.
    vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
    local result
    th.ask('and before that?', nil, function(e, r)
      result = { e, r }
    end)
    H.wait(function()
      return result
    end, 'the second answer', 20000)
    H.eq(result[1], nil, 'no error')
    H.eq(result[2].chatId, first_chat, 'the same chat')
    H.eq(vim.list_slice(vim.api.nvim_buf_get_lines(buf, 0, -1, false), 9), {
      '> and before that?',
      '',
      'Second answer.',
      '',
      '── answered · 1 turn · 200 tokens in, 8 out · $0.0002',
    }, 'the second exchange')
    local requests = model_requests(record)
    H.eq(#requests, 3, 'three model requests')
    local said = {}
    for _, m in ipairs(requests[3].messages) do
      if m.role ~= 'system' then
        table.insert(said, { m.role, type(m.content) == 'string' and m.content or '' })
      end
    end
    H.eq(said[1], { 'user', 'what does a.txt say?' }, 'the first prompt: ' .. vim.inspect(said))
    H.eq(said[2][1], 'assistant', 'the call')
    H.eq(said[3][1], 'tool', 'its answer')
    H.check(said[3][2]:find('hello world', 1, true), 'the file as read: ' .. said[3][2])
    H.eq(said[4], { 'assistant', 'a.txt says hello world.' }, 'the first answer')
    H.eq(said[5], { 'user', 'and before that?' }, 'the second prompt')
    H.eq(#said, 5, 'nothing else')

    -- :Toolhost chat new: the next prompt starts another chat.
    vim.cmd('Toolhost chat new')
    H.eq(chat.state().chat_id, nil, 'no chat to continue')
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(lines[#lines], '── new chat', 'said in the buffer')
  end)
end)

test('chat: <C-c> in the chat buffer stops a slow answer: cancelled here and in the session log', function()
  with_model({ '--slow' }, function()
    local ws, sessions = H.workspace({ ['a.txt'] = 'hello world\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/a.txt')
    local c = H.client()
    local chat = require('toolhost.chat')
    local done
    vim.cmd('Toolhost! ask mode=plan count slowly')
    chat.running().cb = function(e, r)
      done = { e, r }
    end
    local buf = chat.state().buf
    H.wait(function()
      return H.buf_text(buf):find('tick tick', 1, true)
    end, 'the answer streaming')
    H.check(chat.running() ~= nil and done == nil, 'still running')
    vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
    vim.fn.maparg('<C-c>', 'n', false, true).callback()
    H.eq(done and done[1], 'cancelled', 'the prompt ended')
    H.eq(chat.running(), nil, 'nothing runs')
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq({ lines[1], lines[2], lines[#lines - 1], lines[#lines] }, {
      '> count slowly',
      '',
      '',
      '── cancelled',
    }, 'the prompt and the footer')
    H.check(lines[3]:find('^tick tick'), 'the text so far: ' .. lines[3])
    vim.wait(200)
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), lines, 'nothing after the footer')
    -- The server stopped the run and recorded it, in the mode asked for.
    local session = require('toolhost.client').state(c.id).session_id
    local records
    H.wait(function()
      local res = c:request_sync('toolhost/replaySession', { sessionId = session }, 5000)
      records = {}
      for _, r in ipairs(res and res.result and res.result.conversation or {}) do
        records[r.type] = r.data
      end
      return records['agent/end']
    end, 'the end of the run in the log')
    H.eq(records['agent/end'].stop, 'cancelled', 'recorded as cancelled')
    H.eq(records['agent/run'].mode, 'plan', 'mode=plan reached the server')
  end)
end)

test('chat: reasoning, a retry drops the broken attempt, compaction, call failures, stop, errors', function()
  -- A stand-in client object: what the chat sends and the updates it draws, without a server.
  local chat = require('toolhost.chat')
  local sent = {}
  local fake = { id = 99999, initialized = true, root_dir = '/nowhere' }
  function fake:is_stopped()
    return false
  end
  function fake:request(method, params, cb)
    table.insert(sent, { method = method, params = params, cb = cb })
    return true, #sent
  end
  local ok, err = pcall(function()
    local function up(run, u)
      chat.on_update(fake.id, { chatId = 'chat_x', runId = run, update = u })
    end
    local done
    chat.ask('fix it', { client = fake, new = true, mode = 'accept-edits' }, function(e, r)
      done = { e, r }
    end)
    H.eq({ sent[1].method, sent[1].params }, {
      'toolhost/agentPrompt',
      { prompt = 'fix it', mode = 'accept-edits' },
    }, 'the request')
    up('run_x', { type = 'text', text = 'Partial' })
    up('run_x', { type = 'retry', attempt = 1, delayMs = 1000, reason = 'HTTP 503' })
    up('run_x', { type = 'reasoning', text = 'Let me think.\nYes.' })
    up('run_x', { type = 'text', text = 'Looking ' })
    up('run_x', { type = 'text', text = 'at it.' })
    up('run_x', { type = 'usage', promptTokens = 100, completionTokens = 5, totalTokens = 105, cachedTokens = 40 })
    up('run_x', { type = 'toolCall', callId = 'c1', name = 'edit', card = { title = 'Edit a.txt' } })
    up('run_x', { type = 'toolCall', callId = 'c2', name = 'bash', card = { title = 'make' } })
    local rejected = 'the user rejected tool "edit"\nmore'
    up('run_x', { type = 'toolResult', callId = 'c1', name = 'edit', isError = true, text = rejected, card = {} })
    up('run_x', { type = 'toolResult', callId = 'c2', name = 'bash', isError = false, text = 'ok', card = {} })
    up('run_x', { type = 'compaction', tokensBefore = 1000, tokensAfter = 300, pruned = 2, summarized = false })
    local usage = { promptTokens = 100, completionTokens = 5, totalTokens = 105, cachedTokens = 40 }
    local failed = { chatId = 'chat_x', runId = 'run_x', stop = 'failed', turns = 1, usage = usage }
    failed.error = 'MODEL_HTTP_ERROR: 401 Unauthorized'
    sent[1].cb(nil, failed)
    local buf = chat.state().buf
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {
      '> fix it',
      '',
      '… the model request failed (HTTP 503); retry 1 in 1000 ms',
      '',
      'Let me think.',
      'Yes.',
      '',
      'Looking at it.',
      '',
      '→ edit Edit a.txt ✗ the user rejected tool "edit"',
      '→ bash make ✓',
      '',
      '… conversation compacted (1000 → 300 tokens, 2 outputs pruned)',
      '',
      '── failed · 1 turn · 100 tokens in (40 cached), 5 out · MODEL_HTTP_ERROR: 401 Unauthorized',
    }, 'the chat buffer')
    H.eq(done, { 'MODEL_HTTP_ERROR: 401 Unauthorized', failed }, 'the callback')
    local groups = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, chat.namespace, 0, -1, { details = true })) do
      local g = m[4].hl_group or m[4].line_hl_group
      groups[g] = groups[g] or {}
      table.insert(groups[g], m[2] + 1)
    end
    H.eq(groups.ToolhostChatReasoning, { 5 }, 'the reasoning (one mark from line 5)')
    H.eq(groups.ToolhostExitError, { 10 }, 'the ✗')
    H.eq(groups.ToolhostExitOk, { 11 }, 'the ✓')
    H.eq(groups.ToolhostChatFooter, { 15 }, 'the footer')

    -- Stopped: the footer at once; a late call result still marks its line, late text is dropped.
    chat.ask('again', { client = fake })
    H.eq(sent[2].params.chatId, 'chat_x', 'the chat continues')
    up('run_y', { type = 'toolCall', callId = 'c3', name = 'read', card = { title = 'Read b.txt' } })
    H.eq(chat.stop(), true, 'stopped')
    up('run_y', { type = 'toolResult', callId = 'c3', name = 'read', isError = false, text = '', card = {} })
    up('run_y', { type = 'text', text = 'late' })
    sent[2].cb(nil, { stop = 'answered' }) -- (Neovim drops the answer of a cancelled request anyway)
    H.eq(vim.list_slice(vim.api.nvim_buf_get_lines(buf, 0, -1, false), 16), {
      '',
      '> again',
      '',
      '→ read Read b.txt ✓',
      '',
      '── cancelled',
    }, 'the stopped prompt')

    -- A request the server refuses.
    chat.ask('third', { client = fake })
    sent[3].cb({ code = -32600, message = 'Invalid request: chat chat_x is still answering a prompt' })
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(lines[#lines], '── error: Invalid request: chat chat_x is still answering a prompt', 'the error')

    -- Without a task it is asked for.
    local input, asked = vim.ui.input, nil
    vim.ui.input = function(opts, on_confirm)
      asked = opts.prompt
      on_confirm('from the input')
    end
    chat.ask(nil, { client = fake })
    vim.ui.input = input
    H.eq({ asked, sent[4] and sent[4].params.prompt }, { 'Ask toolhost: ', 'from the input' }, 'asked with vim.ui.input')
    sent[4].cb(nil, { stop = 'answered', turns = 1, usage = usage })
  end)
  chat.forget(fake.id)
  if not ok then
    error(err, 0)
  end
end)

require('nested_cards')(test)
require('workflow_cards')(test)
require('hosted_agents')(test)
require('checkpoints')(test)
require('worktrees')(test)
require('best_of')(test)

local passed, failed = H.run('neovim plugin', tests, H.reset)
vim.cmd((failed == 0 and (passed > 0 or vim.env.TOOLHOST_TEST_FILTER)) and 'qall!' or 'cquit 1')
