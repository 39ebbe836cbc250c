-- Headless tests of hosted ACP agents in the chat (|toolhost-agents|): `:Toolhost agent {name}`
-- parsed and sent with `agent`, the chat staying with its agent until a new chat, the header that
-- says who answers, a plan drawn as `[x]`/`[>]`/`[ ]` lines that a newer plan replaces, the
-- context-window line; then the real Claude Code (the npm adapter `claude-agent-acp`) against the
-- scripted Anthropic server tests/anthropic_server.py: its edit of a.txt reviewed hunk by hunk in
-- the plugin's review buffer, its `agent_step` card in the cards buffer, the chat continued with it;
-- `:Toolhost agent-options`: the agent's settings picked with vim.ui.select (a stub picking by
-- label), set, shown in the chat's header, and the next prompt on the chosen model.
-- Registered by tests/run.lua: `require('hosted_agents')(test)`.

local H = require('helpers')

--- What `toolhost/listAgents` answers in the stand-in tests.
local AGENTS = {
  agents = {
    { name = 'claude', title = 'Claude Code', command = 'claude-agent-acp', installed = true },
    {
      name = 'codex',
      title = 'Codex',
      command = 'codex-acp',
      installed = false,
      package = '@zed-industries/codex-acp',
    },
    { name = 'mine', title = 'Mine', command = '/opt/mine', installed = false, configured = true },
  },
}

--- What `toolhost/agentOptions` answers in the stand-in tests: Claude Code's kinds of settings.
local OPTIONS = {
  {
    id = 'mode',
    name = 'Mode',
    category = 'mode',
    current = 'default',
    values = {
      { value = 'default', name = 'Default', description = 'Ask before edits' },
      { value = 'plan', name = 'Plan' },
    },
  },
  {
    id = 'model',
    name = 'Model',
    category = 'model',
    current = 'default',
    values = {
      { value = 'default', name = 'Default (recommended)', description = vim.NIL },
      { value = 'opus', name = 'Opus', group = 'Claude' },
    },
  },
  { id = 'fast', name = 'Fast', current = false, values = {} },
}

--- Replaces vim.ui.select with a stub that picks by label, as the question tests of
--- tests/run.lua do: each step is the formatted text to choose, or a function of the texts and
--- items returning it. Returns the pickers it saw (`{prompt, texts}`) and the restoring function.
---@param steps (string|fun(texts: string[], items: any[]): string)[]
---@return {prompt: string, texts: string[]}[] seen
---@return fun() restore
local function select_by_label(steps)
  local seen, orig = {}, vim.ui.select
  vim.ui.select = function(items, opts, cb)
    local texts = vim.tbl_map(opts.format_item or tostring, items)
    table.insert(seen, { prompt = opts.prompt, texts = texts })
    local step = table.remove(steps, 1)
    H.check(step ~= nil, ('an unexpected picker %q: %s'):format(opts.prompt, vim.inspect(texts)))
    local label = type(step) == 'function' and step(texts, items) or step
    for i, text in ipairs(texts) do
      if text == label then
        return cb(items[i], i)
      end
    end
    error(('no %q among %s'):format(label, vim.inspect(texts)))
  end
  return seen, function()
    vim.ui.select = orig
  end
end

--- Replaces vim.notify to collect `{msg, level}`; returns them and the restoring function.
---@return {[1]: string, [2]: integer?}[] notes
---@return fun() restore
local function collect_notes()
  local notes, orig = {}, vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, { msg, level })
  end
  return notes, function()
    vim.notify = orig
  end
end

--- The chat window's winbar (the header), without its highlight.
---@return string?
local function winbar()
  local win = vim.fn.bufwinid(require('toolhost.chat').state().buf or -1)
  return win ~= -1 and (vim.wo[win].winbar:gsub('%%#[%w_]+#', '')) or nil
end

--- A stand-in client: what the chat sends, without a server.
---@return table client
---@return table[] sent `{method, params, cb}` each
local function fake_client()
  local sent = {}
  local fake = { id = 99998, initialized = true, root_dir = '/nowhere' }
  function fake:is_stopped()
    return false
  end
  function fake:request(method, params, cb)
    table.insert(sent, { method = method, params = params, cb = cb })
    return true, #sent
  end
  return fake, sent
end

--- Sends keys as typed (mappings apply) and runs them.
---@param k string
local function type_keys(k)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), 'x', false)
end

---@param buf integer
---@return string[]
local function lines_of(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- The 1-based rows of `buf` highlighted with `group` by the chat.
---@param buf integer
---@param group string
---@return integer[]
local function rows_with(buf, group)
  local rows = {}
  local ns = require('toolhost.chat').namespace
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    if (m[4].line_hl_group or m[4].hl_group) == group then
      table.insert(rows, m[2] + 1)
    end
  end
  table.sort(rows)
  return rows
end

--- The 12-line a.txt; the agent's edit uppercases line 1 and line 12 (two hunks); the review
--- accepts only the second.
local A_TXT = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n'
local A_REVIEWED = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\nTWELVE\n'

--- Starts tests/anthropic_server.py for `ws` and points `[acp.agents.claude]` of the user
--- configuration at the real adapter and at it; runs `fn(record)` (`record`: the file of the
--- request bodies, a JSON line each); then removes the configuration and stops the server.
---@param ws string
---@param fn fun(record: string)
local function with_claude(ws, fn)
  local adapter = vim.fs.normalize(H.plugin_dir .. '/../../.client-tools/npm/node_modules/.bin/claude-agent-acp')
  H.check(vim.fn.executable(adapter) == 1, 'the Claude Code adapter is not installed at ' .. adapter)
  local record = vim.fn.tempname() .. '-anthropic.jsonl'
  local home = vim.fn.tempname() .. '-claude-home'
  vim.fn.mkdir(home, 'p')
  local out = ''
  local cmd = { 'python3', H.plugin_dir .. '/tests/anthropic_server.py', '--workspace', ws, '--record', record }
  local proc = vim.system(cmd, {
    stdout = function(_, data)
      out = out .. (data or '')
    end,
  })
  local user_config = vim.env.XDG_CONFIG_HOME .. '/toolhost/config.toml'
  local ok, err = pcall(function()
    H.wait(function()
      return out:find('\n', 1, true)
    end, 'the Anthropic server’s port')
    local port = assert(tonumber(out:match('^(%d+)')), out)
    H.check(H.read(user_config) == nil, 'no user config to overwrite at ' .. user_config)
    H.write(
      user_config,
      table.concat({
        '[acp]',
        'offer_toolhost = false',
        '[acp.agents.claude]',
        ('command = %q'):format(adapter),
        'mode = "default"',
        '[acp.agents.claude.env]',
        'IS_SANDBOX = "1"',
        ('ANTHROPIC_BASE_URL = "http://127.0.0.1:%d"'):format(port),
        'ANTHROPIC_API_KEY = "test-key"',
        ('HOME = %q'):format(home),
        'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"',
        'DISABLE_AUTOUPDATER = "1"',
        'DISABLE_TELEMETRY = "1"',
        'DISABLE_ERROR_REPORTING = "1"',
        'CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION = "false"',
        '',
      }, '\n')
    )
    fn(record)
  end)
  os.remove(user_config)
  proc:kill(9)
  proc:wait(2000)
  if not ok then
    error(err, 0)
  end
end

--- The text of a request body's last user message.
---@param body table
---@return string
local function last_user_text(body)
  for i = #(body.messages or {}), 1, -1 do
    local m = body.messages[i]
    if m.role == 'user' then
      if type(m.content) == 'string' then
        return m.content
      end
      local parts = {}
      for _, b in ipairs(m.content or {}) do
        table.insert(parts, type(b.text) == 'string' and b.text or '')
      end
      return table.concat(parts, '\n')
    end
  end
  return ''
end

--- The main-loop requests (those offering `Bash`) the Anthropic server received.
---@param record string
---@return table[]
local function main_loop_requests(record)
  local out = {}
  for _, body in ipairs(H.model_requests(record)) do
    for _, t in ipairs(body.tools or {}) do
      if t.name == 'Bash' then
        table.insert(out, body)
        break
      end
    end
  end
  return out
end

return function(test)
  test('hosted agents: plan and context lines, :Toolhost agent parsed, agents listed', function()
    local chat = require('toolhost.chat')
    local chat_state = require('toolhost.chat_state')
    local agents = require('toolhost.agents')
    H.eq({
      chat_state.plan_lines({
        { content = 'Read a.txt', status = 'completed', priority = 'high' },
        { content = 'Edit\n  a.txt', status = 'in_progress', priority = 'medium' },
        { content = 'Run the tests', status = 'pending', priority = 'low' },
        { content = 'Odd', status = 'unheard-of' },
      }),
    }, {
      { '[x] Read a.txt', '[>] Edit a.txt', '[ ] Run the tests', '[ ] Odd' },
      { 'ToolhostTodoDone', 'ToolhostTodoActive', false, false },
    }, 'plan lines and their groups')
    H.eq({ chat_state.plan_lines({}) }, { { 'plan: no entries' }, { 'ToolhostChatNote' } }, 'an empty plan')
    H.eq(
      chat_state.context_text({ used = 12345, size = 200000, cost = { amount = 0.01234, currency = 'USD' } }),
      'context: 12,345 / 200,000 tokens · $0.0123',
      'context with a cost'
    )
    H.eq(chat_state.context_text({ used = 999, size = 1000000 }), 'context: 999 / 1,000,000 tokens', 'without a cost')
    H.eq(
      chat_state.context_text({ used = 0, size = 8000, cost = { amount = 1.5, currency = 'EUR' } }),
      'context: 0 / 8,000 tokens · 1.5000 EUR',
      'another currency'
    )
    H.eq({ chat.parse_agent('  claude   edit a.txt  ') }, { 'claude', 'edit a.txt' }, 'name, then the task')
    H.eq({ chat.parse_agent('codex') }, { 'codex', '' }, 'no task: asked for')
    H.eq({ chat.parse_agent('   ') }, { nil, '' }, 'no name')
    H.eq(chat.complete_agent('', 'Toolhost agent claude '), {}, 'only the name completes')
    local msgs = {}
    local orig = vim.notify
    vim.notify = function(m)
      table.insert(msgs, m)
    end
    vim.cmd('Toolhost agent')
    vim.notify = orig
    H.check(
      msgs[1] and msgs[1]:find('usage: :Toolhost[!] agent {name} [task]', 1, true),
      'a missing name is refused: ' .. vim.inspect(msgs)
    )
    H.eq(chat.running(), nil, 'nothing sent')
    local commands = require('toolhost.commands')
    H.check(commands.COMMANDS.agents ~= nil and commands.COMMANDS.agent.complete ~= nil, 'agent, agents')
    local listed = agents.remember(4242, AGENTS)
    H.eq({
      agents.line(listed[1], 6),
      agents.line(listed[2], 6),
      agents.line(listed[3], 6),
    }, {
      'claude  Claude Code  installed',
      'codex   Codex  npm install -g @zed-industries/codex-acp',
      'mine    Mine  not installed: /opt/mine (configured)',
    }, 'the lines of :Toolhost agents')
    H.eq({ agents.title(4242, 'claude'), agents.title(4242, 'other') }, { 'Claude Code', 'other' }, 'titles')
    agents.forget(4242)
    H.eq(agents.cached(4242), nil, 'forgotten')
  end)

  test('hosted agents: the chat stays with its agent, a header per exchange, the plan replaced', function()
    local chat = require('toolhost.chat')
    local agents = require('toolhost.agents')
    local fake, sent = fake_client()
    agents.remember(fake.id, AGENTS)
    local ok, err = pcall(function()
      local function up(run, u)
        chat.on_update(fake.id, { chatId = 'chat_c', runId = run, update = u })
      end
      local usage = { promptTokens = 0, completionTokens = 0, totalTokens = 0, cachedTokens = 0 }
      local function answer(n, chat_id, run)
        sent[n].cb(nil, { chatId = chat_id, runId = run, stop = 'answered', turns = 1, usage = usage })
      end
      chat.ask('fix a.txt', { client = fake, new = true, agent = 'claude' })
      H.eq({ sent[1].method, sent[1].params }, {
        'toolhost/agentPrompt',
        { prompt = 'fix a.txt', agent = 'claude' },
      }, 'the request names the agent (no mode, no model: the own agent’s)')
      H.eq(chat.state().agent, 'claude', 'the chat’s agent')
      up('run_c', { type = 'plan', entries = { { content = 'Read a.txt', status = 'in_progress' } } })
      up('run_c', { type = 'toolCall', callId = 's1', name = 'agent_step', card = { title = 'Read a.txt' } })
      up('run_c', {
        type = 'plan',
        entries = {
          { content = 'Read a.txt', status = 'completed' },
          { content = 'Edit a.txt', status = 'in_progress' },
          { content = 'Say so', status = 'pending' },
        },
      })
      up('run_c', { type = 'context', used = 1000, size = 200000 })
      up('run_c', { type = 'toolResult', callId = 's1', name = 'agent_step', isError = false, text = '', card = {} })
      up('run_c', { type = 'text', text = 'Done.' })
      up('run_c', { type = 'context', used = 12345, size = 200000, cost = { amount = 0.0123, currency = 'USD' } })
      up('run_c', { type = 'somethingNew', text = 'ignored' })
      answer(1, 'chat_c', 'run_c')
      local buf = chat.state().buf
      H.eq(lines_of(buf), {
        '── Claude Code ──',
        '> fix a.txt',
        '',
        '[x] Read a.txt',
        '[>] Edit a.txt',
        '[ ] Say so',
        '',
        '→ agent_step Read a.txt ✓',
        '',
        'context: 12,345 / 200,000 tokens · $0.0123',
        '',
        'Done.',
        '',
        '── answered · 1 turn · 0 tokens in, 0 out',
      }, 'the exchange')
      H.eq(rows_with(buf, 'ToolhostChatAgent'), { 1 }, 'the header’s highlight')
      H.eq(rows_with(buf, 'ToolhostTodoDone'), { 4 }, 'the done entry')
      H.eq(rows_with(buf, 'ToolhostTodoActive'), { 5 }, 'the entry in progress (the earlier plan’s mark gone)')
      H.eq(rows_with(buf, 'ToolhostExitOk'), { 8 }, 'the ✓ on the call’s line, moved by the longer plan')
      H.eq(rows_with(buf, 'ToolhostChatNote'), { 10 }, 'one context line')
      -- <CR> still knows the call of the moved line.
      H.eq(chat.state().rows[7], { client_id = fake.id, call_id = 's1' }, 'the call’s row')

      -- :Toolhost ask continues the chat with the same agent; its plan is its own.
      chat.ask('anything else?', { client = fake })
      H.eq(sent[2].params, { prompt = 'anything else?', chatId = 'chat_c', agent = 'claude' }, 'the same agent')
      up('run_d', { type = 'plan', entries = { { content = 'Answer', status = 'completed' } } })
      answer(2, 'chat_c', 'run_d')
      H.eq(vim.list_slice(lines_of(buf), 15), {
        '',
        '── Claude Code ──',
        '> anything else?',
        '',
        '[x] Answer',
        '',
        '── answered · 1 turn · 0 tokens in, 0 out',
      }, 'the second exchange')

      -- A new chat returns to toolhost's own agent.
      chat.ask('and you?', { client = fake, new = true })
      H.eq(sent[3].params.agent, nil, 'the own agent')
      H.eq(sent[3].params.chatId, nil, 'a new chat')
      H.eq(chat.state().agent, nil, 'the chat has no hosted agent')
      answer(3, 'chat_o', 'run_o')
      H.eq(vim.list_slice(lines_of(buf), 22, 25), { '', '── new chat', '', '> and you?' }, 'no header')

      -- Another agent starts a new chat; `:Toolhost chat new` forgets it.
      chat.ask('hi', { client = fake, agent = 'codex' })
      H.eq({ sent[4].params.agent, sent[4].params.chatId }, { 'codex', nil }, 'another agent, a new chat')
      answer(4, 'chat_x', 'run_x')
      chat.new()
      H.eq(chat.state().agent, nil, 'forgotten with the chat')
    end)
    chat.forget(fake.id)
    agents.forget(fake.id)
    if not ok then
      error(err, 0)
    end
  end)

  test('hosted agents: agent-options picked, set, shown in the header; the chat continued', function()
    local chat = require('toolhost.chat')
    local agents = require('toolhost.agents')
    local ao = require('toolhost.agent_options')
    local fake, sent = fake_client()
    agents.remember(fake.id, AGENTS)
    local restore_select, restore_notify = function() end, function() end
    local ok, err = pcall(function()
      local options = ao.valid(OPTIONS)
      H.eq(vim.tbl_map(ao.label, options), { 'Mode: Default', 'Model: Default (recommended)', 'Fast: false' }, 'labels')
      H.eq(ao.summary(options), 'Mode: Default · Model: Default (recommended)', 'the header’s part')
      H.eq(ao.summary({}), '', 'no settings')
      H.eq(
        ao.valid({ { id = 'x', current = 'a', values = { { value = 'a' }, 'junk' } }, { name = 'no id' } }),
        { { id = 'x', current = 'a', values = { { value = 'a' } } } },
        'malformed options and values dropped'
      )

      -- Named from outside a chat: a new chat, its settings read, the model chosen.
      local seen, restore = select_by_label({ 'Model: Default (recommended)', '[Claude] Opus' })
      restore_select = restore
      local done
      ao.choose({ client = fake, agent = 'claude' }, function(e, r)
        done = { e, r }
      end)
      H.eq({ sent[1].method, sent[1].params }, { 'toolhost/agentOptions', { agent = 'claude' } }, 'a new chat')
      sent[1].cb(nil, { chatId = 'chat_o', options = OPTIONS })
      H.eq(seen, {
        {
          prompt = 'Claude Code setting: ',
          texts = { 'Mode: Default', 'Model: Default (recommended)', 'Fast: false' },
        },
        { prompt = 'Model: ', texts = { 'Default (recommended) (current)', '[Claude] Opus' } },
      }, 'the pickers')
      H.eq(
        { sent[2].method, sent[2].params },
        { 'toolhost/agentSetOption', { chatId = 'chat_o', option = 'model', value = 'opus' } },
        'the choice set'
      )
      local set = vim.deepcopy(OPTIONS)
      set[2].current = 'opus'
      sent[2].cb(nil, { chatId = 'chat_o', options = set })
      H.eq(done[1], nil, 'set')
      H.eq({ chat.state().agent, chat.state().chat_id }, { 'claude', 'chat_o' }, 'the chat is Claude Code’s')
      H.eq(chat.header(), 'Claude Code · Mode: Default · Model: Opus', 'the header')
      H.eq(winbar(), 'Claude Code · Mode: Default · Model: Opus', 'in the chat window’s winbar')

      -- The next :Toolhost agent claude continues that chat; an options update redraws the header.
      chat.ask('plan it', { client = fake, agent = 'claude' })
      H.eq(sent[3].params, { prompt = 'plan it', chatId = 'chat_o', agent = 'claude' }, 'the chat continued')
      local planned = vim.deepcopy(set)
      planned[1].current = 'plan'
      chat.on_update(fake.id, { chatId = 'chat_o', runId = 'run_p', update = { type = 'options', options = planned } })
      H.eq(winbar(), 'Claude Code · Mode: Plan · Model: Opus', 'redrawn on an options update')
      sent[3].cb(nil, { chatId = 'chat_o', runId = 'run_p', stop = 'answered', turns = 1, usage = {} })
      local text = H.buf_text(chat.state().buf)
      local exchange = '\n── Claude Code ──\n> plan it\n'
      H.check(('\n' .. text):find(exchange, 1, true) ~= nil, 'the exchange’s own header:\n' .. text)

      -- Without a name: the chat's agent; an on/off setting picks true or false.
      restore()
      seen, restore = select_by_label({ 'Fast: false', 'true' })
      restore_select = restore
      ao.choose({ client = fake })
      H.eq(sent[4].params, { agent = 'claude', chatId = 'chat_o' }, 'the chat’s agent and chat')
      sent[4].cb(nil, { chatId = 'chat_o', options = planned })
      H.eq(seen[2].texts, { 'true', 'false (current)' }, 'on/off')
      H.eq(sent[5].params, { chatId = 'chat_o', option = 'fast', value = true }, 'a boolean value')

      -- A refused value, a chat without a hosted agent: errors.
      local notes, restore_n = collect_notes()
      restore_notify = restore_n
      sent[5].cb({ code = -32602, message = 'OPTION_VALUE_UNKNOWN: fast offers no such value' })
      chat.new()
      H.eq(winbar(), '', 'a new chat has no header')
      ao.choose({ client = fake })
      restore_n()
      H.eq(notes, {
        {
          'toolhost: setting fast of claude failed: OPTION_VALUE_UNKNOWN: fast offers no such value',
          vim.log.levels.ERROR,
        },
        {
          'toolhost: the chat has no hosted agent; name one: :Toolhost agent-options {name}',
          vim.log.levels.ERROR,
        },
      }, 'the errors')
      H.eq(#sent, 5, 'nothing sent for the chat without a hosted agent')
    end)
    restore_select()
    restore_notify()
    chat.forget(fake.id)
    agents.forget(fake.id)
    if not ok then
      error(err, 0)
    end
  end)

  test('hosted agents (real Claude Code): an edit reviewed hunk by hunk, its card, the chat continued', function()
    local ws, sessions = H.workspace({ ['a.txt'] = A_TXT })
    with_claude(ws, function(record)
      H.setup(sessions)
      vim.cmd.edit(ws .. '/a.txt')
      local c = H.client()
      local chat = require('toolhost.chat')
      local R = require('toolhost.review')
      local th = require('toolhost')
      -- The agents the server hosts: completion and :Toolhost agents.
      H.eq(th.complete('cl', 'Toolhost agent cl'), { 'claude' }, 'the agent’s name completes')
      local echoed
      local echo = vim.api.nvim_echo
      vim.api.nvim_echo = function(chunks)
        echoed = chunks
      end
      vim.cmd('Toolhost agents')
      H.wait(function()
        return echoed
      end, ':Toolhost agents')
      vim.api.nvim_echo = echo
      local listing = table.concat(vim.tbl_map(function(chunk)
        return chunk[1]
      end, echoed))
      H.check(
        listing:find('\n  claude  Claude Code  installed (configured)\n', 1, true) ~= nil,
        'claude is listed, installed and configured:\n' .. listing
      )
      -- What the chat asks the server.
      local prompts = {}
      local request = c.request
      c.request = function(self, method, params, ...)
        if method == 'toolhost/agentPrompt' then
          table.insert(prompts, vim.deepcopy(params))
        end
        return request(self, method, params, ...)
      end

      vim.cmd('Toolhost agent claude edit a.txt')
      H.wait(function()
        return #R.pending() > 0
      end, 'the review of the agent’s edit', 60000)
      local review = R.pending()[1]
      H.eq(
        { review.params.tool, review.params.caller, #review.params.hunks },
        { 'agent_step', 'Claude Code', 2 },
        'the review: the step, its agent, two hunks'
      )
      -- Rejected the first hunk, accepted the second, with the review buffer's keys.
      vim.cmd('Toolhost review')
      H.eq(vim.api.nvim_get_current_buf(), review.buf, 'in the review buffer')
      vim.api.nvim_win_set_cursor(0, { review.hunk_rows[1], 0 })
      type_keys('r')
      vim.api.nvim_win_set_cursor(0, { review.hunk_rows[2], 0 })
      type_keys('a')
      H.eq(R.result(review), { accepted = { 1 } }, 'the answer')
      type_keys('<CR>')
      H.wait(function()
        return not chat.running()
      end, 'the agent’s answer', 60000)
      H.eq(H.read(ws .. '/a.txt'), A_REVIEWED, 'only the accepted hunk is in the file')
      H.eq(prompts[1], { prompt = 'edit a.txt', agent = 'claude' }, 'the prompt went to claude')

      -- The step's card: an ordinary diff card in the cards buffer, by Claude Code.
      local step
      for _, card in ipairs(require('toolhost.cards').list(c.id)) do
        if card.tool == 'agent_step' and card.kind == 'diff' then
          step = card
        end
      end
      H.check(step ~= nil, 'the agent_step diff card arrived')
      H.eq({ step.status, step.caller, #step.hunks }, { 'completed', 'Claude Code', 1 }, 'the card')
      local cards_buf = require('toolhost.cards').open_live(c)
      local cards_text = H.buf_text(cards_buf)
      local title = vim.split(step.rendered, '\n', { plain = true })[1]
      H.check(
        title:find('agent_step', 1, true) and title:find('Claude Code', 1, true),
        'the card’s title line: ' .. title
      )
      H.check(cards_text:find(title, 1, true) ~= nil, 'the cards buffer shows it:\n' .. cards_text)
      H.check(cards_text:find('+TWELVE', 1, true) ~= nil, 'with the accepted hunk:\n' .. cards_text)

      -- The chat: who answered, the step, the answer.
      local buf = chat.state().buf
      local text = H.buf_text(buf)
      H.eq(lines_of(buf)[1], '── Claude Code ──', 'the header:\n' .. text)
      H.eq(lines_of(buf)[2], '> edit a.txt', 'the prompt')
      H.check(text:find('\n→ Read a.txt ✓\n→ Edit a.txt ✓\n', 1, true) ~= nil, 'the steps’ lines:\n' .. text)
      H.check(text:find('\nDone.\n', 1, true) ~= nil, 'the answer:\n' .. text)
      local first_chat = chat.state().chat_id
      H.check(type(first_chat) == 'string', 'the chat id')

      -- :Toolhost ask continues with Claude Code.
      vim.cmd('Toolhost ask anything else?')
      H.wait(function()
        return not chat.running()
      end, 'the second answer', 60000)
      H.eq(prompts[2], { prompt = 'anything else?', chatId = first_chat, agent = 'claude' }, 'the same agent and chat')
      local asked = {}
      for _, body in ipairs(main_loop_requests(record)) do
        table.insert(asked, last_user_text(body))
      end
      H.check(
        vim.iter(asked):any(function(t)
          return t:find('anything else?', 1, true) ~= nil
        end),
        'Claude Code’s main loop got the second prompt: ' .. vim.inspect(asked)
      )
      text = H.buf_text(buf)
      local second = '\n── Claude Code ──\n> anything else?\n'
      H.check(text:find(second, 1, true) ~= nil, 'the second header:\n' .. text)
      H.check(text:find('\nNoted.\n', 1, true) ~= nil, 'the second answer:\n' .. text)
      io.stdout:write('     hosted agents: the chat buffer:\n       ' .. text:gsub('\n', '\n       ') .. '\n')
      H.reset() -- the server (and the agent it started) stop before the Anthropic server does
    end)
  end)

  test('hosted agents (real Claude Code): the model picked with agent-options, the next prompt on it', function()
    local ws, sessions = H.workspace({ ['a.txt'] = A_TXT })
    with_claude(ws, function(record)
      H.setup(sessions)
      vim.cmd.edit(ws .. '/a.txt')
      local c = H.client()
      local chat = require('toolhost.chat')
      H.eq(require('toolhost').complete('cl', 'Toolhost agent-options cl'), { 'claude' }, 'the agent’s name completes')
      local options, chosen
      local seen, restore = select_by_label({
        function(texts, items)
          options = items
          for i, o in ipairs(items) do
            if o.category == 'model' then
              return texts[i]
            end
          end
          error('no model option: ' .. vim.inspect(texts))
        end,
        function(texts, items)
          -- A model other than the current one, by a name Claude Code's model id contains.
          local current = vim.iter(options):find(function(o)
            return o.category == 'model'
          end).current
          for _, wanted in ipairs({ 'opus', 'haiku', 'sonnet' }) do
            for i, v in ipairs(items) do
              if v.value == wanted and v.value ~= current then
                chosen = v
                return texts[i]
              end
            end
          end
          error('no model to switch to: ' .. vim.inspect(texts))
        end,
      })
      local ok, err = pcall(function()
        vim.cmd('Toolhost agent-options claude')
        H.wait(function()
          return chosen and chat.header() and chat.header():find('Model: ' .. chosen.name, 1, true)
        end, 'the model set', 60000)
      end)
      restore()
      if not ok then
        error(err, 0)
      end
      local pickers = vim.inspect(seen):gsub('\n', '\n       ')
      io.stdout:write(('     hosted agents: the pickers:\n       %s\n'):format(pickers))
      local categories = vim.tbl_map(function(o)
        return o.category
      end, options)
      H.check(
        vim.tbl_contains(categories, 'mode') and vim.tbl_contains(categories, 'model'),
        'a mode and a model option: ' .. vim.inspect(options)
      )
      local chat_id = chat.state().chat_id
      H.check(type(chat_id) == 'string', 'the chat opened by agentOptions')
      H.check(winbar():find('Model: ' .. chosen.name, 1, true) ~= nil, 'the header shows the model: ' .. winbar())

      -- The next prompt continues that chat, on the chosen model.
      local prompts = {}
      local request = c.request
      c.request = function(self, method, params, ...)
        if method == 'toolhost/agentPrompt' then
          table.insert(prompts, vim.deepcopy(params))
        end
        return request(self, method, params, ...)
      end
      vim.cmd('Toolhost agent claude anything else?')
      H.wait(function()
        return not chat.running()
      end, 'the answer', 60000)
      H.eq(prompts[1], { prompt = 'anything else?', chatId = chat_id, agent = 'claude' }, 'the chat continued')
      H.check(H.buf_text(chat.state().buf):find('\nNoted.\n', 1, true) ~= nil, 'the answer')
      local models = {}
      for _, body in ipairs(main_loop_requests(record)) do
        if last_user_text(body):find('anything else?', 1, true) then
          table.insert(models, body.model)
        end
      end
      H.check(#models > 0, 'the prompt reached Claude Code’s main loop')
      for _, model in ipairs(models) do
        H.check(tostring(model):find(chosen.value, 1, true) ~= nil, ('the model %s is %s'):format(model, chosen.value))
      end
      H.check(winbar():find('Model: ' .. chosen.name, 1, true) ~= nil, 'the header after the prompt: ' .. winbar())

      -- A value the agent does not offer: an error notification.
      local notes, restore_notify = collect_notes()
      local answered
      require('toolhost.agent_options').set(c, 'claude', chat_id, 'model', 'no-such-model', function(e)
        answered = e or 'no error'
      end)
      H.wait(function()
        return answered
      end, 'the refusal', 20000)
      restore_notify()
      H.check(
        notes[1] and notes[1][2] == vim.log.levels.ERROR and notes[1][1]:find('OPTION_VALUE_UNKNOWN', 1, true),
        'an error notification: ' .. vim.inspect(notes)
      )
      local asked = table.concat(models, ', ')
      io.stdout:write(('     hosted agents: models asked: %s; header: %s\n'):format(asked, winbar()))
      H.reset()
    end)
  end)
end
