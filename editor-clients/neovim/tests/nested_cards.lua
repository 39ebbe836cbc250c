-- Headless tests of nested calls in the cards buffers (|toolhost.cards.tree|): a `run_code`
-- program's calls (`parentCallId`, ids `<parent>:code:<n>`) drawn indented under its card, live
-- when they arrive before the program's final card, with an unknown parent, in a replay, folded
-- with the program, and the keys of a child line acting on that child. The children are the real
-- server's cards of a read, a grep and an edit, given the ids and parent a program's calls have.
-- Registered by tests/run.lua: `require('nested_cards')(test)`.

local H = require('helpers')

local PARENT = 'call_prog'

--- The program's card.
---@param status string
local function program(status)
  return {
    callId = PARENT,
    tool = 'run_code',
    status = status,
    kind = 'generic',
    title = 'Fix the TODOs',
    text = status == 'pending' and '' or 'done',
    rendered = 'run_code Fix the TODOs · ' .. status .. (status == 'pending' and '' or '\ndone'),
    locations = {},
  }
end

--- Real cards of a read, a grep and an edit in a fresh workspace, made the program's calls 1-3.
---@return string ws
---@return vim.lsp.Client client
---@return table<string, toolhost.Card> children read, grep, edit
local function program_session()
  local ws, sessions = H.workspace({ ['a.txt'] = 'one\nTODO two\nthree\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local function as_child(card, n)
    return vim.tbl_extend('force', card, { callId = ('%s:code:%d'):format(PARENT, n), parentCallId = PARENT })
  end
  local read = as_child(H.call('read', { file_path = 'a.txt' }, c).card, 1)
  local grep = as_child(H.call('grep', { pattern = 'TODO' }, c).card, 2)
  local edit = as_child(H.call('edit', { file_path = 'a.txt', old_string = 'three', new_string = 'THREE' }, c).card, 3)
  H.eq(
    { read.status, grep.status, edit.status, edit.kind },
    { 'completed', 'completed', 'completed', 'diff' },
    'real cards'
  )
  return ws, c, { read = read, grep = grep, edit = edit }
end

--- The lines a card draws (its `rendered`, or its view's) with the marks of a child in front.
---@param card toolhost.Card
---@param first string
---@param rest string
---@return string[]
local function child_lines(card, first, rest)
  local lines = require('toolhost.cards').view(card) or vim.split(card.rendered, '\n', { plain = true })
  local out = {}
  for i, l in ipairs(lines) do
    table.insert(out, (i == 1 and first or rest) .. l)
  end
  return out
end

--- The buffer a program with those children shows (newest card first).
---@param children toolhost.Card[]
---@param label string
---@return string
local function expected(children, label)
  local lines = vim.split(program('completed').rendered, '\n', { plain = true })
  table.insert(lines, '  ' .. label)
  for i, card in ipairs(children) do
    local last = i == #children
    vim.list_extend(lines, child_lines(card, last and '  └ ' or '  ├ ', last and '    ' or '  │ '))
  end
  return table.concat(lines, '\n')
end

--- The first row of a call's card in `buf`.
local function row_of(buf, call_id)
  return assert(require('toolhost.cards').row_of(buf, call_id), 'no card ' .. call_id .. ' in:\n' .. H.buf_text(buf))
end

return function(test)
  test('nested calls: a program’s read, grep and edit under its card, live before its final card', function()
    local _, c, k = program_session()
    local cards = require('toolhost.cards')
    -- the session's own cards of those calls are not what this test draws
    cards.store(c.id).order, cards.store(c.id).by_id = {}, {}
    local buf = assert(require('toolhost').cards())
    cards.on_card(c.id, program('pending'))
    local title = vim.split(k.read.rendered, '\n')[1]:gsub(' · completed$', ' · pending')
    cards.on_card(c.id, vim.tbl_extend('force', k.read, { status = 'pending', rendered = title, read = vim.NIL }))
    local shown = vim.api.nvim_buf_get_lines(buf, 1, 3, false)
    H.eq(shown[1], '  1 call · 1 running', 'the count line of a pending program')
    local pending_child = vim.startswith(shown[2], '  └ read ') and vim.endswith(shown[2], ' · pending')
    H.check(pending_child, 'a pending child: ' .. shown[2])
    cards.on_card(c.id, k.read)
    cards.on_card(c.id, k.grep)
    cards.on_card(c.id, vim.tbl_extend('force', k.edit, { status = 'failed', kind = 'generic', hunks = vim.NIL }))
    local counted = H.buf_text(buf):find('  3 calls · 1 failed', 1, true) ~= nil
    H.check(counted, 'a failed child counts:\n' .. H.buf_text(buf))
    cards.on_card(c.id, k.edit)
    cards.on_card(c.id, program('completed'))
    H.eq(H.buf_text(buf), expected({ k.read, k.grep, k.edit }, '3 calls'), 'children in order, under their program')
    H.eq(#cards.list(c.id), 4, 'one card per call in the store')

    -- each line knows its card: the child's lines are the child's
    local edit_row = row_of(buf, k.edit.callId)
    H.eq(cards.card_at(buf, edit_row + 1).callId, k.edit.callId, 'a line inside the child edit')
    H.eq(cards.card_at(buf, 2).callId, PARENT, 'the count line is the program’s')

    -- folds: the program's card folds with its children; a child folds alone
    local last = vim.api.nvim_buf_line_count(buf)
    vim.api.nvim_win_set_cursor(0, { edit_row, 0 })
    vim.cmd('normal! zc')
    local folded = { vim.fn.foldclosed(edit_row), vim.fn.foldclosedend(edit_row) }
    H.eq(folded, { edit_row, last }, 'the child edit folded alone')
    vim.cmd('normal! zo')
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.cmd('normal! zc')
    H.eq({ vim.fn.foldclosed(1), vim.fn.foldclosedend(1) }, { 1, last }, 'the program folds with its children')
    -- a new card redraws the buffer: the program stays folded
    cards.on_card(c.id, vim.tbl_extend('force', k.grep, { callId = 'call_after', parentCallId = vim.NIL }))
    local prog_row = row_of(buf, PARENT)
    H.eq(vim.fn.foldclosed(prog_row), prog_row, 'still folded after a redraw')
    H.eq(vim.fn.foldclosedend(prog_row), vim.api.nvim_buf_line_count(buf), 'with its children')
    vim.cmd('normal! zR')

    -- the keys of a child line act on the child: revert sends its call id
    local toolhost = require('toolhost')
    local call, sent = toolhost.call, nil
    toolhost.call = function(tool, args, _, cb)
      sent = { tool, args }
      cb('not sent in this test')
    end
    vim.api.nvim_win_set_cursor(0, { row_of(buf, k.edit.callId) + 2, 0 })
    local ok, err = pcall(vim.cmd, 'Toolhost revert')
    toolhost.call = call
    assert(ok, err)
    H.eq(sent, { 'revert', { call_id = PARENT .. ':code:3' } }, 'revert of the child edit by its own call id')
    -- <C-c> on a pending child stops that child; with no card under the cursor, the program
    cards.on_card(c.id, vim.tbl_extend('force', k.read, { callId = PARENT .. ':code:4', status = 'pending' }))
    cards.on_card(c.id, program('pending'))
    local _, id = cards.call_to_stop(buf, row_of(buf, PARENT .. ':code:4'), c.id)
    H.eq(id, PARENT .. ':code:4', 'stop: the child under the cursor')
    _, id = cards.call_to_stop(nil, nil, c.id)
    H.eq(id, PARENT, 'stop without a card under the cursor: the program, not its nested call')
    -- <CR> on the child read opens its file
    vim.api.nvim_win_set_cursor(0, { row_of(buf, k.read.callId), 0 })
    cards.jump(buf)
    H.eq(vim.api.nvim_buf_get_name(0), k.read.locations[1].path, '<CR> on a child line opens its location')
  end)

  test('nested calls: a child whose program is unknown is drawn at the top, then moves under it', function()
    local _, c, k = program_session()
    local cards = require('toolhost.cards')
    cards.store(c.id).order, cards.store(c.id).by_id = {}, {}
    local buf = assert(require('toolhost').cards())
    cards.on_card(c.id, k.read)
    H.eq(H.buf_text(buf), k.read.rendered, 'at the top, as a card of its own')
    cards.on_card(c.id, program('completed'))
    H.eq(H.buf_text(buf), expected({ k.read }, '1 call'), 'under the program once it is known')
  end)

  test('nested calls: a replay draws the same tree, the program’s result after its children or before', function()
    local _, c, k = program_session()
    local cards = require('toolhost.cards')
    local want = expected({ k.read, k.grep, k.edit }, '3 calls')
    for _, order in ipairs({
      { program('completed'), k.read, k.grep, k.edit },
      { k.read, k.grep, k.edit, program('completed') },
    }) do
      local buf = cards.open_replay('s-nested', order, c.id)
      H.eq(H.buf_text(buf), want, 'replay')
      H.eq(cards.card_at(buf, row_of(buf, k.edit.callId)).callId, k.edit.callId, 'the child edit in the replay')
      vim.cmd('silent! bwipeout! ' .. buf)
    end
  end)

  test('nested calls: a real run_code program, live and replayed; u reverts its nested edit alone', function()
    local ws, sessions = H.workspace({ ['a.txt'] = 'a\nTODO one\n', ['b.txt'] = 'b\nTODO two\n', ['c.txt'] = 'c\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/a.txt')
    local c = H.client()
    local names = require('toolhost.client').tool_names(c)
    if not vim.tbl_contains(names, 'run_code') then
      H.skip('the server has no `run_code` tool yet')
    end
    local cards = require('toolhost.cards')
    local code = table.concat({
      "await tools.grep({ pattern: 'TODO' });",
      "for (const f of ['a.txt', 'b.txt', 'c.txt']) await tools.read({ file_path: f });",
      "await tools.edit({ file_path: 'b.txt', old_string: 'TODO two', new_string: 'DONE two' });",
      "return 'ok';",
    }, '\n')
    local run = H.call('run_code', { code = code, description = 'fix one TODO' }, c)
    H.eq(run.card.status, 'completed', 'the program: ' .. run.card.rendered)
    H.eq(H.read(ws .. '/b.txt'), 'b\nDONE two\n', 'the nested edit wrote b.txt')
    local children
    H.wait(function()
      children = {}
      local s = cards.store(c.id)
      for _, id in ipairs(s.order) do -- oldest first
        local card = s.by_id[id]
        if card.parentCallId == run.callId and card.status ~= 'pending' then
          table.insert(children, card)
        end
      end
      return #children == 5
    end, 'the program’s five nested cards')
    H.eq(vim.tbl_map(function(card)
      return card.tool
    end, children), { 'grep', 'read', 'read', 'read', 'edit' }, 'in the order the program made them')
    for _, card in ipairs(children) do
      H.check(vim.startswith(card.callId, run.callId .. ':code:'), 'a nested call id: ' .. card.callId)
    end
    local edit = children[5]
    local buf = assert(require('toolhost').cards())
    local live = H.buf_text(buf)
    local prog_row = row_of(buf, run.callId)
    H.check(live:find('\n  5 calls\n', 1, true) ~= nil, 'the count line:\n' .. live)
    local edit_row = row_of(buf, edit.callId)
    H.check(edit_row > prog_row and vim.startswith(vim.fn.getline(edit_row), '  └ edit '), vim.fn.getline(edit_row))

    -- the replay draws the same
    local session = require('toolhost.client').state(c.id).session_id
    vim.cmd('Toolhost replay ' .. session)
    local rbuf
    H.wait(function()
      rbuf = vim.fn.bufnr('toolhost://replay/' .. session)
      return rbuf ~= -1 and vim.api.nvim_buf_line_count(rbuf) > 1
    end, 'replay buffer')
    H.eq(H.buf_text(rbuf), live, 'the replay equals the live cards buffer')
    vim.cmd('silent! bwipeout! ' .. rbuf)

    -- `u` on the nested edit's line reverts that call alone
    buf = assert(require('toolhost').cards())
    vim.api.nvim_win_set_cursor(0, { row_of(buf, edit.callId) + 1, 0 })
    local before = #cards.store(c.id).order
    vim.cmd('Toolhost revert')
    local revert
    H.wait(function()
      for _, card in ipairs(cards.list(c.id)) do
        if card.tool == 'revert' and card.status ~= 'pending' then
          revert = card
        end
      end
      return revert ~= nil
    end, 'the revert card', 30000)
    H.eq({ revert.status, revert.title }, { 'completed', 'Revert ' .. edit.callId }, 'the revert of the nested edit')
    H.check(#cards.store(c.id).order > before, 'a new card')
    H.eq(H.read(ws .. '/b.txt'), 'b\nTODO two\n', 'b.txt as before the program')
  end)
end
