-- Headless tests of worktree sessions (|toolhost-worktrees|: |:Toolhost-worktree-new|,
-- |:Toolhost-worktrees|, |:Toolhost-worktree-apply|, |:Toolhost-worktree-discard|) on the real
-- server, in a git workspace: two worktree sessions made with the command, each changed by the
-- binary's `toolhost call … --session <id>` as an agent there would; w1 chosen in the picker and
-- its cards shown in the cards buffer, a later call of it arriving live, the winbar naming it;
-- back to the workspace; w1 applied through the review (accepted) and the file changed; w2, which
-- changed the same line otherwise, applied after it: a conflict, said as a warning, nothing
-- written; discards cancelled and confirmed (the folders gone), the shown one's buffer back to the
-- workspace; how a worktree session reads in the pickers, the completion and the help tags;
-- worktree-open: a tab whose own toolhost continues the worktree session.
-- Registered by tests/run.lua: `require('worktrees')(test)`.

local H = require('helpers')

--- Runs `fn(msgs)` with vim.notify captured into `msgs` ({text, level} each), vim.fn.confirm
--- answered `msgs.answer` (its questions in `msgs.asked`) and vim.ui.select answered by
--- `msgs.pick(items)` (its calls in `msgs.selects`: the prompt and the labels of the items).
---@param fn fun(msgs: table)
local function with_ui(fn)
  local msgs = { asked = {}, selects = {}, answer = 1 }
  local orig = { notify = vim.notify, select = vim.ui.select }
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
  local ok, err = pcall(fn, msgs)
  vim.notify, vim.ui.select = orig.notify, orig.select
  vim.fn.confirm = nil -- vim.fn makes the real one again on the next use
  assert(ok, err)
end

--- Waits for a captured message holding `text` and returns it.
---@param msgs table
---@param text string
---@return {[1]: string, [2]: integer}
local function message(msgs, text)
  local found
  vim.wait(30000, function()
    for _, m in ipairs(msgs) do
      if type(m[1]) == 'string' and m[1]:find(text, 1, true) then
        found = m
        return true
      end
    end
    return false
  end, 5)
  H.check(found ~= nil, ('no message with %q; the messages: %s'):format(text, vim.inspect(msgs)))
  return found
end

--- A picker answer: the worktree session named `name`, or `This workspace` for nil.
---@param name? string
---@return fun(items: any[]): any
local function pick(name)
  return function(items)
    for _, item in ipairs(items) do
      if (name == nil and item == 'This workspace') or (type(item) == 'table' and item.name == name) then
        return item
      end
    end
  end
end

--- Runs a program in `cwd` and waits for it to exit 0.
---@param cmd string[]
---@param cwd string
---@return string stdout
local function run(cmd, cwd)
  local done
  vim.system(cmd, { cwd = cwd, text = true }, function(r)
    done = r
  end)
  H.wait(function()
    return done
  end, table.concat(cmd, ' '), 30000)
  H.check(done.code == 0, ('%s: exit %d\n%s%s'):format(table.concat(cmd, ' '), done.code, done.stdout, done.stderr))
  return done.stdout
end

--- A git workspace with `a.txt` committed, its file open (the client attached), and its client.
---@return string ws
---@return string sessions
---@return vim.lsp.Client
local function started()
  local ws, sessions = H.workspace({ ['a.txt'] = 'one\ntwo\nthree\n' })
  vim.fn.delete(ws .. '/.git', 'rf')
  run({ 'git', 'init', '-q', '-b', 'main' }, ws)
  run({ 'git', 'add', '.' }, ws)
  run({ 'git', '-c', 'user.email=t@e', '-c', 'user.name=t', 'commit', '-qm', 'base' }, ws)
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  return ws, sessions, H.client()
end

--- What an agent working in a worktree session does, without a model: `toolhost call` in the
--- workspace with `--session <id>` (the suite's XDG_STATE_HOME and XDG_CONFIG_HOME reach it).
---@param ws string
---@param sessions string
---@param session_id string
---@param tool string
---@param args table
local function agent_call(ws, sessions, session_id, tool, args)
  local cmd = { H.bin(), 'call', tool, vim.json.encode(args), '--session', session_id, '--session-dir', sessions }
  run(cmd, ws)
end

--- The worktree session named `name` as the server lists it (nil when there is none).
---@param client vim.lsp.Client
---@param name string
---@return toolhost.Worktree?
local function worktree(client, name)
  local done, found
  require('toolhost.worktrees').list({ client = client }, function(err, worktrees)
    assert(not err, err)
    for _, wt in ipairs(worktrees) do
      if wt.name == name then
        found = wt
      end
    end
    done = true
  end)
  H.wait(function()
    return done
  end, 'toolhost/listSessions')
  return found
end

--- The winbar of the window showing `buf`.
---@param buf integer
---@return string
local function winbar(buf)
  local win = vim.fn.bufwinid(buf)
  H.check(win ~= -1, 'the cards buffer is shown')
  return vim.wo[win].winbar
end

--- Waits until cards buffer `buf` holds `text`.
---@param buf integer
---@param text string
local function shows(buf, text)
  H.wait(function()
    return H.buf_text(buf):find(text, 1, true)
  end, ('%q in the cards buffer'):format(text), 30000)
end

--- The pending review once it has arrived.
---@return toolhost.Review
local function pending_review()
  local R = require('toolhost.review')
  H.wait(function()
    return #R.pending() >= 1
  end, 'a toolhost/review request', 30000)
  return R.pending()[1]
end

--- How worktree sessions read in the pickers.
local DESCRIBED = {
  {
    { name = 'w1', sessionId = 's', root = '/r', branch = 'toolhost/w1', state = 'idle', changedFiles = 1 },
    'w1 · toolhost/w1 · idle · 1 file',
  },
  {
    {
      name = 'fix-2',
      sessionId = 's',
      root = '/r',
      branch = 'toolhost/fix-2',
      state = 'inUse',
      changedFiles = 3,
      agent = 'claude-code',
    },
    'fix-2 · toolhost/fix-2 · in use · 3 files · claude-code',
  },
  { { name = 'plain', sessionId = 's', root = '/r', state = 'idle' }, 'plain · copy · idle' },
}

return function(test)
  test('worktrees: how a worktree session reads; the subcommands complete; help tags', function()
    local worktrees = require('toolhost.worktrees')
    for _, case in ipairs(DESCRIBED) do
      H.eq(worktrees.describe(case[1]), case[2], vim.inspect(case[1]))
    end
    H.eq(
      worktrees.created_text({ name = 'w1', sessionId = 'S1', root = '/wt/w1', branch = 'toolhost/w1' }),
      'worktree session w1: session S1, branch toolhost/w1, in /wt/w1\n'
        .. 'an agent works there with: toolhost agent --session S1 "…"',
      'what worktree-new says'
    )
    local th = require('toolhost')
    H.eq(
      th.complete('worktree', 'Toolhost worktree'),
      { 'worktree-apply', 'worktree-discard', 'worktree-new', 'worktree-open', 'worktrees' },
      'subcommands'
    )
    H.eq(th.complete('worktree-d', 'Toolhost help worktree-d'), { 'worktree-discard' }, 'help completes them')
    local commands = require('toolhost.commands')
    H.eq(commands.usage('worktree-discard'), ':Toolhost[!] worktree-discard [name]', 'usage')
    H.eq(commands.usage('worktree-apply'), ':Toolhost worktree-apply [name]', 'usage')
    H.eq(commands.usage('worktrees'), ':Toolhost worktrees', 'usage')
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-apply w1 w2')
      H.eq(msgs[1], { 'toolhost: usage: :Toolhost worktree-apply [name]', vim.log.levels.ERROR }, 'one name')
    end)
    local doc = vim.fn.tempname()
    vim.fn.mkdir(doc, 'p')
    vim.fn.writefile(vim.fn.readfile(H.plugin_dir .. '/doc/toolhost.txt', 'b'), doc .. '/toolhost.txt', 'b')
    vim.cmd.helptags(doc)
    local tags = '\n' .. table.concat(vim.fn.readfile(doc .. '/tags'), '\n')
    for _, tag in ipairs({
      'toolhost-worktrees',
      ':Toolhost-worktree-new',
      ':Toolhost-worktrees',
      ':Toolhost-worktree-apply',
      ':Toolhost-worktree-discard',
    }) do
      H.check(tags:find('\n' .. tag .. '\t', 1, true) ~= nil, 'help tag ' .. tag)
    end
  end)

  test('worktrees: new, shown live in the cards buffer, applied through review, a conflict, discarded', function()
    local ws, sessions, c = started()
    local own_session = require('toolhost.client').state(c.id).session_id

    -- Two worktree sessions, both from the workspace as it is now.
    local w1, w2
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-new w1')
      local said = message(msgs, 'worktree session w1')
      H.eq(said[2], vim.log.levels.INFO, 'INFO')
      w1 = assert(worktree(c, 'w1'), 'w1 is listed')
      H.eq(w1.branch, 'toolhost/w1', 'its branch')
      H.check(said[1]:find('session ' .. w1.sessionId, 1, true) ~= nil, 'names the session: ' .. said[1])
      local cli = ('toolhost agent --session %s "…"'):format(w1.sessionId)
      H.check(said[1]:find(cli, 1, true) ~= nil, 'and the command for an agent: ' .. said[1])
      vim.cmd('Toolhost worktree-new w2')
      message(msgs, 'worktree session w2')
      w2 = assert(worktree(c, 'w2'), 'w2 is listed')
    end)
    H.check(vim.uv.fs_stat(w1.root) and vim.uv.fs_stat(w2.root), 'both checkouts exist')
    local names = require('toolhost').complete('w', 'Toolhost worktree-apply w')
    table.sort(names)
    H.eq(names, { 'w1', 'w2' }, 'the names complete')
    H.eq(require('toolhost').complete('', 'Toolhost worktree-discard w1 '), {}, 'one name')

    -- Agents at work, each in its own worktree: the same line changed two ways.
    agent_call(ws, sessions, w1.sessionId, 'read', { file_path = 'a.txt' })
    agent_call(ws, sessions, w1.sessionId, 'edit', { file_path = 'a.txt', old_string = 'two', new_string = 'TWO' })
    agent_call(ws, sessions, w2.sessionId, 'read', { file_path = 'a.txt' })
    agent_call(ws, sessions, w2.sessionId, 'edit', { file_path = 'a.txt', old_string = 'two', new_string = 'deux' })
    H.eq(H.read(ws .. '/a.txt'), 'one\ntwo\nthree\n', 'the workspace untouched')

    -- w1 picked: the cards buffer shows its cards, and its next call as it comes.
    local buf
    with_ui(function(msgs)
      msgs.pick = pick('w1')
      vim.cmd('Toolhost worktrees')
      H.wait(function()
        return #msgs.selects == 1
      end, 'the picker')
      local labels = msgs.selects[1].labels
      H.eq(msgs.selects[1].prompt, 'Show the cards of which session?', 'prompt')
      H.eq(labels[1], 'This workspace', 'the workspace first')
      table.sort(labels)
      H.eq(labels, {
        'This workspace',
        'w1 · toolhost/w1 · idle · 1 file',
        'w2 · toolhost/w2 · idle · 1 file',
      }, 'the worktree sessions')
      H.wait(function()
        buf = vim.fn.bufnr('toolhost://cards/' .. own_session)
        return buf ~= -1 and vim.fn.bufwinid(buf) ~= -1
      end, 'the cards buffer shown')
      shows(buf, 'edit Edit a.txt · completed')
      shows(buf, '+TWO')
      H.check(not H.buf_text(buf):find('deux', 1, true), 'not w2’s cards')
      H.eq(winbar(buf), 'toolhost cards · worktree w1 · session ' .. w1.sessionId, 'the winbar names it')

      -- A card of w1 cannot be reverted here: the server's session is the workspace's.
      vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
      vim.api.nvim_win_set_cursor(0, { 1, 0 })
      local refused
      require('toolhost').revert(nil, nil, function(err)
        refused = err
      end)
      local why = refused and refused:find('only calls of the running session', 1, true)
      H.check(why ~= nil, 'revert refused: ' .. tostring(refused))
    end)
    agent_call(ws, sessions, w1.sessionId, 'read', { file_path = 'a.txt' })
    agent_call(ws, sessions, w1.sessionId, 'edit', { file_path = 'a.txt', old_string = 'three', new_string = 'THREE' })
    shows(buf, '+THREE') -- live: toolhost/sessionChanged, then a replay

    -- Back to the workspace: its own cards, and the server stops watching.
    local sent = {}
    local request = c.request
    c.request = function(self, method, params, ...)
      table.insert(sent, { method, params })
      return request(self, method, params, ...)
    end
    local ok, err = pcall(with_ui, function(msgs)
      msgs.pick = pick(nil)
      vim.cmd('Toolhost worktrees')
      H.wait(function()
        return H.buf_text(buf) == '' and winbar(buf):find('this workspace', 1, true)
      end, 'the workspace’s cards (none yet): ' .. H.buf_text(buf))
      H.eq(winbar(buf), 'toolhost cards · this workspace · session ' .. own_session, 'the winbar')
      H.wait(function()
        return sent[#sent] and sent[#sent][1] == 'toolhost/watchSession'
      end, 'toolhost/watchSession')
      H.eq(vim.json.encode(sent[#sent][2]), '{}', 'watching nothing')
    end)
    c.request = nil -- the method again
    assert(ok, err)

    -- w1 applied: its hunk reviewed and accepted, the file written, one card.
    local R = require('toolhost.review')
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-apply w1')
      local review = pending_review()
      H.eq(
        { review.params.tool, review.params.title, review.params.path },
        { 'apply_changes', 'Apply changes from worktree session w1', ws .. '/a.txt' },
        'the review'
      )
      local all = {}
      for i = 1, #review.params.hunks do
        table.insert(all, i)
      end
      R.decide(review, all, true)
      R.submit(review.key, { confirm = false })
      local said = message(msgs, 'Applied changes from worktree session w1')
      H.eq(said[2], vim.log.levels.INFO, 'INFO: ' .. said[1])
    end)
    H.eq(H.read(ws .. '/a.txt'), 'one\nTWO\nTHREE\n', 'w1’s changes are in the workspace')
    shows(buf, 'apply_changes')
    local applied
    for _, card in ipairs(require('toolhost.cards').list(c.id)) do
      if card.tool == 'apply_changes' then
        applied = card
      end
    end
    H.eq({ applied and applied.status, applied and applied.kind }, { 'completed', 'diff' }, 'the apply card')

    -- w2 changed the same line otherwise: a conflict, a warning, nothing written.
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-apply w2')
      local said = message(msgs, 'conflict at lines 2-3: both sides changed it')
      H.eq(said[2], vim.log.levels.WARN, 'a warning: ' .. said[1])
      H.check(said[1]:find('deux', 1, true) ~= nil, 'with the other side: ' .. said[1])
      H.eq(#R.pending(), 0, 'nothing to review')
    end)
    H.eq(H.read(ws .. '/a.txt'), 'one\nTWO\nTHREE\n', 'the conflict is not written')

    -- Discards: cancelled, then confirmed; the shown one's buffer goes back to the workspace.
    with_ui(function(msgs)
      msgs.answer = 2
      vim.cmd('Toolhost worktree-discard w2')
      H.eq(msgs.asked, { 'Discard worktree session w2? Its checkout, branch and session log are removed' }, 'asked')
      H.eq(msgs[1], { 'toolhost: discard cancelled', vim.log.levels.INFO }, 'cancelled')
      H.check(vim.uv.fs_stat(w2.root) ~= nil, 'w2 kept')
      msgs.answer = 1
      vim.cmd('Toolhost worktree-discard w2')
      H.eq(message(msgs, 'worktree session w2 discarded')[2], vim.log.levels.INFO, 'said')
      H.eq(vim.uv.fs_stat(w2.root), nil, 'w2’s folder is gone')
      H.eq(worktree(c, 'w2'), nil, 'and no longer listed')
    end)
    with_ui(function(msgs)
      msgs.pick = pick('w1')
      vim.cmd('Toolhost worktrees')
      H.wait(function()
        return winbar(buf):find('worktree w1', 1, true)
      end, 'w1 shown again')
      vim.cmd('Toolhost worktree-discard')
      message(msgs, 'worktree session w1 discarded')
      H.eq(msgs.selects[2].labels, { 'w1 · toolhost/w1 · idle · 1 file' }, 'picked from the worktree sessions')
      H.eq(msgs.asked, { 'Discard worktree session w1? Its checkout, branch and session log are removed' }, 'asked')
      H.eq(vim.uv.fs_stat(w1.root), nil, 'w1’s folder is gone')
      H.wait(function()
        return winbar(buf):find('this workspace', 1, true)
      end, 'the cards buffer back to the workspace')
      shows(buf, 'apply_changes')
    end)
  end)

  test('worktrees: a made-up name; a discard refused while an agent works there; cancelled pickers', function()
    local ws, sessions, c = started()
    local made
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-new')
      local said = message(msgs, 'worktree session wt-')
      made = said[1]:match('worktree session (wt%-[%w]+):')
      H.check(made ~= nil, 'a name the server made: ' .. said[1])
    end)
    local wt = assert(worktree(c, made), made .. ' is listed')

    -- An agent holds the session (`toolhost mcp --session`): the server refuses the discard.
    local agent = H.mcp(ws, { '--session', wt.sessionId, '--session-dir', sessions })
    agent:initialize('some-agent')
    H.check(not agent:call('read', { file_path = 'a.txt' }).isError, 'the agent reads a.txt there')
    local held = worktree(c, made)
    H.eq({ held.state, held.agent }, { 'inUse', 'some-agent' }, 'in use while the agent runs')
    local described = ('%s · toolhost/%s · in use · 0 files · some-agent'):format(made, made)
    H.eq(require('toolhost.worktrees').describe(held), described, 'described')
    with_ui(function(msgs)
      vim.cmd('Toolhost! worktree-discard ' .. made)
      local said = message(msgs, 'worktree-discard ' .. made .. ' failed')
      H.eq(said[2], vim.log.levels.ERROR, 'ERROR: ' .. said[1])
      H.check(said[1]:find('(WORKTREE_IN_USE)', 1, true) ~= nil, 'names the code: ' .. said[1])
      H.eq(msgs.asked, {}, 'the bang asks nothing')
    end)
    H.check(vim.uv.fs_stat(wt.root) ~= nil, 'its folder is kept')
    agent:close()

    -- Nothing picked: nothing sent, nothing shown.
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-discard')
      message(msgs, 'cancelled')
      H.eq(msgs.selects[1].prompt, 'Discard which worktree session?', 'the picker')
      vim.cmd('Toolhost worktree-apply')
      H.wait(function()
        return #msgs.selects == 2
      end, 'the apply picker')
      vim.cmd('Toolhost worktrees')
      H.wait(function()
        return #msgs.selects == 3
      end, 'the worktrees picker')
      vim.wait(100)
      H.eq(msgs.asked, {}, 'no confirmation')
      H.eq(require('toolhost.cards.watched').get(c.id), nil, 'the workspace’s cards stay')
    end)
    H.check(vim.uv.fs_stat(wt.root) ~= nil, 'still there')
    H.eq(worktree(c, made).changedFiles, 0, 'nothing applied from it, nothing changed in it')
  end)

  test('worktrees: worktree-open starts a toolhost in a tab of its own that continues the session', function()
    local ws, _, c = started()
    local made
    with_ui(function()
      require('toolhost.worktrees').new('w-open', { client = c }, function(err, wt)
        assert(not err, err)
        made = wt
      end)
      H.wait(function()
        return made
      end, 'toolhost/worktreeNew')
    end)
    local tab = vim.api.nvim_get_current_tabpage()
    local opened
    with_ui(function(msgs)
      vim.cmd('Toolhost worktree-open w-open')
      H.wait(function()
        for _, m in ipairs(msgs) do
          if type(m[1]) == 'string' and m[1]:find('worktree session w-open in this tab', 1, true) then
            opened = true
          end
        end
        return opened
      end, 'the tab opened', 30000)
    end)
    H.check(vim.api.nvim_get_current_tabpage() ~= tab, 'a new tab')
    H.eq(vim.fn.getcwd(), vim.uv.fs_realpath(made.root), 'the tab’s folder is the worktree')
    local there = require('toolhost.client').current(0, false)
    H.check(there ~= nil and there.id ~= c.id, 'a toolhost of its own')
    H.wait(function()
      return there.initialized
    end, 'the tab’s toolhost started', 30000)
    H.eq(there.server_capabilities.experimental.toolhost.sessionId, made.sessionId, 'it continues the worktree session')
    -- A call there is the worktree session’s: the workspace lists it as in use, changed.
    H.call('write', { file_path = 'b.txt', content = 'new\n' }, there)
    H.eq(H.read(made.root .. '/b.txt'), 'new\n', 'written in the worktree')
    H.eq(vim.uv.fs_stat(ws .. '/b.txt'), nil, 'not in the workspace')
    local wt = worktree(c, 'w-open')
    H.eq(wt.state, 'inUse', 'held by the tab’s toolhost')
    H.eq(wt.changedFiles, 1, 'one file changed')
    there:stop()
    vim.cmd('tabclose')
  end)
end
