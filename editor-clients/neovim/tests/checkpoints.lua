-- Headless tests of checkpoints (|:Toolhost-checkpoint|, |:Toolhost-checkpoints|,
-- |:Toolhost-checkpoint-restore|) on the real server: a file written through a tool call, a
-- checkpoint, the file edited and a second one written, the checkpoint restored through the
-- command (the picker and the confirmation stubbed) — both files' bytes as at the checkpoint,
-- compared by sha256, the new one gone — then the restore's card reverted with `u` in the cards
-- buffer and the later bytes back; an unknown name, a cancelled confirmation, the name asked with
-- vim.ui.input, how a checkpoint reads in the list and the picker, the completion and the help tags.
-- Registered by tests/run.lua: `require('checkpoints')(test)`.

local H = require('helpers')

--- Runs `fn(msgs)` with vim.notify captured into `msgs` ({text, level} each), vim.fn.confirm
--- answered `msgs.answer` (its questions in `msgs.asked`) and vim.ui.select / vim.ui.input
--- answered by `msgs.pick(items)` / `msgs.input` (their calls in `msgs.selects` / `msgs.inputs`).
---@param fn fun(msgs: table)
local function with_ui(fn)
  local msgs = { asked = {}, selects = {}, inputs = {}, answer = 1 }
  local orig = { notify = vim.notify, select = vim.ui.select, input = vim.ui.input }
  vim.notify = function(m, level)
    table.insert(msgs, { m, level })
  end
  vim.fn.confirm = function(question)
    table.insert(msgs.asked, question)
    return msgs.answer
  end
  vim.ui.select = function(items, opts, on_choice)
    table.insert(msgs.selects, { prompt = opts.prompt, labels = vim.tbl_map(opts.format_item, items) })
    on_choice(msgs.pick and msgs.pick(items) or nil)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(msgs.inputs, opts.prompt)
    on_confirm(msgs.input)
  end
  local ok, err = pcall(fn, msgs)
  vim.notify, vim.ui.select, vim.ui.input = orig.notify, orig.select, orig.input
  vim.fn.confirm = nil -- vim.fn makes the real one again on the next use
  assert(ok, err)
end

--- The newest card of `tool` titled `title` once it has ended.
---@param client vim.lsp.Client
---@param tool string
---@param title string
---@return toolhost.Card
local function ended_card(client, tool, title)
  local card
  H.wait(function()
    local s = require('toolhost.cards').store(client.id)
    for i = #s.order, 1, -1 do
      local c = s.by_id[s.order[i]]
      if c.tool == tool and c.title == title then
        card = c
        return c.status ~= 'pending'
      end
    end
  end, ('the card %s %s'):format(tool, title), 30000)
  return card
end

--- Waits for message number `n` and returns it.
---@param msgs table
---@param n integer
---@param what string
---@return {[1]: string, [2]: integer}
local function message(msgs, n, what)
  H.wait(function()
    return msgs[n]
  end, what .. ' (messages: ' .. vim.inspect(msgs) .. ')', 30000)
  return msgs[n]
end

--- The sha256 of each file's bytes (`nil` for a missing file).
---@param ws string
---@param files string[]
---@return table<string, string|false>
local function digests(ws, files)
  local out = {}
  for _, f in ipairs(files) do
    local bytes = H.read(ws .. '/' .. f)
    out[f] = bytes and vim.fn.sha256(bytes) or false
  end
  return out
end

--- The first row of a call's card in a cards buffer.
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

--- A workspace with a file open (the client attached) and its client.
---@return string ws
---@return vim.lsp.Client
local function started()
  local ws, sessions = H.workspace({ ['seed.txt'] = 'seed\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/seed.txt')
  return ws, H.client()
end

--- How checkpoints read in `:Toolhost checkpoints` and the restore picker.
local DESCRIBED = {
  { { name = 'cp1', kind = 'named', changedAfter = 2 }, 'cp1: 2 calls changed files since' },
  { { name = 'cp2', kind = 'named', changedAfter = 1 }, 'cp2: 1 call changed files since' },
  {
    { name = 'run_7f', kind = 'turn', prompt = 'fix the\n  failing test', changedAfter = 0 },
    'run_7f before the turn “fix the failing test”: 0 calls changed files since',
  },
  {
    { name = 'run_8a', kind = 'turn', prompt = ('é'):rep(70), changedAfter = 3 },
    ('run_8a before the turn “%s…”: 3 calls changed files since'):format(('é'):rep(59)),
  },
}

return function(test)
  test('checkpoints: how a checkpoint reads (list and picker); the subcommands complete', function()
    local describe = require('toolhost.checkpoints').describe
    for _, case in ipairs(DESCRIBED) do
      H.eq(describe(case[1]), case[2], vim.inspect(case[1]))
    end
    local th = require('toolhost')
    H.eq(th.complete('check', 'Toolhost check'), { 'checkpoint', 'checkpoint-restore', 'checkpoints' }, 'subcommands')
    H.eq(th.complete('checkpoint-', 'Toolhost help checkpoint-'), { 'checkpoint-restore' }, 'help completes them')
    local commands = require('toolhost.commands')
    H.eq(commands.usage('checkpoint-restore'), ':Toolhost[!] checkpoint-restore [name]', 'usage')
    H.eq(commands.usage('checkpoint'), ':Toolhost checkpoint [name]', 'usage')
    local doc = vim.fn.tempname()
    vim.fn.mkdir(doc, 'p')
    vim.fn.writefile(vim.fn.readfile(H.plugin_dir .. '/doc/toolhost.txt', 'b'), doc .. '/toolhost.txt', 'b')
    vim.cmd.helptags(doc)
    local tags = '\n' .. table.concat(vim.fn.readfile(doc .. '/tags'), '\n')
    for _, tag in ipairs({ ':Toolhost-checkpoint', ':Toolhost-checkpoints', ':Toolhost-checkpoint-restore' }) do
      H.check(tags:find('\n' .. tag .. '\t', 1, true) ~= nil, 'help tag ' .. tag)
    end
  end)

  test('checkpoints: a restore picked and confirmed brings back the bytes; u on its card undoes it', function()
    local ws, c = started()
    local files = { 'a.txt', 'b.txt' }
    local written = H.call('write', { file_path = 'a.txt', content = 'alpha\nbeta \195\188\n\tgamma\n' }, c).card
    H.eq(written.status, 'completed', 'write: ' .. written.rendered)
    local at_checkpoint = digests(ws, files)
    H.eq(at_checkpoint['b.txt'], false, 'no b.txt yet')

    with_ui(function(msgs)
      vim.cmd('Toolhost checkpoint cp1')
      local card = ended_card(c, 'checkpoint', 'Checkpoint cp1')
      H.eq({ card.status, card.kind }, { 'completed', 'generic' }, 'the checkpoint card')
      local said = message(msgs, 1, 'the checkpoint message')
      H.eq(said, { 'toolhost: Checkpoint cp1 created.', vim.log.levels.INFO }, 'said')
    end)

    H.call('read', { file_path = 'a.txt' }, c)
    local edit = H.call('edit', { file_path = 'a.txt', old_string = 'beta', new_string = 'BETA\nmore' }, c).card
    H.eq(edit.status, 'completed', 'edit: ' .. edit.rendered)
    H.eq(H.call('write', { file_path = 'b.txt', content = 'new\n' }, c).card.status, 'completed', 'b.txt written')
    local later = digests(ws, files)
    H.check(later['a.txt'] ~= at_checkpoint['a.txt'] and later['b.txt'], 'both files changed after the checkpoint')

    local echoed
    local orig_echo = vim.api.nvim_echo
    vim.api.nvim_echo = function(chunks)
      echoed = table.concat(vim.tbl_map(function(ch)
        return ch[1]
      end, chunks))
    end
    local ok, err = pcall(function()
      vim.cmd('Toolhost checkpoints')
      H.wait(function()
        return echoed
      end, ':Toolhost checkpoints')
    end)
    vim.api.nvim_echo = orig_echo
    assert(ok, err)
    H.eq(
      echoed,
      'Checkpoints, oldest first (:Toolhost checkpoint-restore {name}):\n  cp1: 2 calls changed files since',
      'listed'
    )

    local restore
    with_ui(function(msgs)
      msgs.pick = function(items)
        for _, cp in ipairs(items) do
          if cp.name == 'cp1' then
            return cp
          end
        end
      end
      vim.cmd('Toolhost checkpoint-restore')
      restore = ended_card(c, 'checkpoint', 'Restore checkpoint cp1')
      H.eq(msgs.selects, {
        { prompt = 'Restore which checkpoint?', labels = { 'cp1: 2 calls changed files since' } },
      }, 'picked from the list')
      H.eq(msgs.asked, { 'Restore checkpoint cp1? Every change after it is undone (revertible)' }, 'confirmed')
      H.eq({ restore.status, restore.kind }, { 'completed', 'diff' }, 'the restore card: ' .. restore.rendered)
      local msg = message(msgs, 1, 'the restore message')
      H.eq(msg[2], vim.log.levels.INFO, 'INFO: ' .. msg[1])
      H.check(msg[1]:find('Restored checkpoint cp1: undid 2 calls', 1, true) ~= nil, 'the server text: ' .. msg[1])
    end)
    H.eq(digests(ws, files), at_checkpoint, 'both files as at the checkpoint (b.txt gone)')

    -- The restore is one call with a diff card: `u` on it in the cards buffer reverts it.
    local cbuf = assert(require('toolhost').cards())
    vim.api.nvim_win_set_cursor(0, { card_row(cbuf, restore.callId), 0 })
    with_ui(function(msgs)
      vim.api.nvim_feedkeys('u', 'x', false)
      local redo = ended_card(c, 'revert', 'Revert ' .. restore.callId)
      H.eq(redo.status, 'completed', 'the restore reverted: ' .. redo.rendered)
      H.eq(message(msgs, 1, 'the revert message')[2], vim.log.levels.INFO, 'INFO')
    end)
    H.eq(digests(ws, files), later, 'the later bytes are back')
  end)

  test('checkpoints: an unknown name is an ERROR with its code; cancel sends nothing; a name asked', function()
    local ws, c = started()
    local cards = require('toolhost.cards')
    with_ui(function(msgs)
      vim.cmd('Toolhost! checkpoint-restore nope')
      local card = ended_card(c, 'checkpoint', 'Restore checkpoint nope')
      H.eq(card.status, 'failed', 'a failed card')
      local msg = message(msgs, 1, 'the error')
      H.eq(msg[2], vim.log.levels.ERROR, 'ERROR: ' .. msg[1])
      H.check(msg[1]:find('CHECKPOINT_UNKNOWN', 1, true) ~= nil, 'names the code: ' .. msg[1])
      H.check(msg[1]:find('nope', 1, true) ~= nil, 'and the server’s text: ' .. msg[1])
      H.eq(msgs.asked, {}, 'the bang asks nothing')
    end)

    -- No checkpoint yet: the picker is not shown.
    with_ui(function(msgs)
      vim.cmd('Toolhost checkpoint-restore')
      local msg = message(msgs, 1, 'the warning')
      local none = 'toolhost: no checkpoint in this session (:Toolhost checkpoint {name} makes one)'
      H.eq(msg, { none, vim.log.levels.WARN }, 'said')
      H.eq(msgs.selects, {}, 'no picker')
    end)

    with_ui(function(msgs)
      msgs.input = 'before refactor'
      vim.cmd('Toolhost checkpoint')
      H.eq(msgs.inputs, { 'Checkpoint name: ' }, 'asked with vim.ui.input')
      H.eq(ended_card(c, 'checkpoint', 'Checkpoint before refactor').status, 'completed', 'created')
      H.eq(message(msgs, 1, 'the checkpoint message')[1], 'toolhost: Checkpoint before refactor created.', 'said')
      msgs.input = nil
      vim.cmd('Toolhost checkpoint')
      H.eq(msgs[2], { 'toolhost: checkpoint cancelled', vim.log.levels.INFO }, 'no name: nothing made')
    end)

    H.call('write', { file_path = 'c.txt', content = 'c\n' }, c)
    with_ui(function(msgs)
      msgs.answer = 2
      local before = #cards.store(c.id).order
      vim.cmd('Toolhost checkpoint-restore before refactor')
      H.eq(msgs.asked, { 'Restore checkpoint before refactor? Every change after it is undone (revertible)' }, 'asked')
      H.eq(msgs[1], { 'toolhost: restore cancelled', vim.log.levels.INFO }, 'cancelled')
      vim.wait(200)
      H.eq(#cards.store(c.id).order, before, 'no call made')
      H.eq(H.read(ws .. '/c.txt'), 'c\n', 'c.txt kept')
    end)
  end)
end
