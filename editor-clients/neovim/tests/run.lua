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
  for _, name in ipairs({ 'cards', 'clear', 'tools', 'sessions' }) do
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
  for _, tag in ipairs({ 'toolhost.txt', ':Toolhost', 'toolhost.setup()', 'g:toolhost', 'toolhost-provider' }) do
    H.check(tags:find(tag .. '\t', 1, true) == 1 or tags:find('\n' .. tag .. '\t', 1, true) ~= nil, 'help tag ' .. tag)
  end
  vim.keymap.del('n', '<leader>tc')
  for _, k in ipairs({ '<leader>tx', '<leader>tt', '<leader>ts' }) do
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
  H.eq(virt, {
    { row = 2, above = true, lines = { { 'edit Edit a.txt  +2 -1', 'ToolhostInlineHeader' } } },
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
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, require('toolhost.cards').namespace, 0, -1, { details = true })) do
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
    p.normalize_locations(
      {
        targetUri = uri,
        targetRange = {},
        targetSelectionRange = { start = { line = 0, character = 17 }, ['end'] = { line = 0, character = 20 } },
      },
      'utf-8',
      {}
    ),
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
    local _, e2 = handler(
      nil,
      {
        operation = 'hover',
        uri = vim.uri_from_fname(ws .. '/compile_flags.txt'),
        position = { line = 0, character = 0 },
      },
      {}
    )
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

test(':Toolhost tools, subcommand and tool completion, unknown subcommand', function()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local th = require('toolhost')
  H.eq(
    th.complete('', 'Toolhost '),
    { 'call', 'cards', 'clear', 'replay', 'sessions', 'start', 'stop', 'tools' },
    'subcommands'
  )
  H.eq(th.complete('c', 'Toolhost c'), { 'call', 'cards', 'clear' }, 'prefix')
  H.eq(th.complete('ed', 'Toolhost call ed'), { 'edit' }, 'tool names')
  H.eq(th.complete('', 'Toolhost call read '), {}, 'no completion for the JSON')
  H.eq(vim.fn.getcompletion('Toolhost re', 'cmdline'), { 'replay' }, 'command-line completion is wired')
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

local passed, failed = H.run('neovim plugin', tests, H.reset)
vim.cmd((failed == 0 and (passed > 0 or vim.env.TOOLHOST_TEST_FILTER)) and 'qall!' or 'cquit 1')
