--- toolhost.chat: `:Toolhost ask` — toolhost's own agent from Neovim (|toolhost-chat|) — and
--- `:Toolhost agent`, an ACP agent the server hosts (Claude Code, Codex, …; |toolhost-agents|), in
--- the same chat.
---
--- A prompt is a `toolhost/agentPrompt` request; what the run streams (`toolhost/agentUpdate`)
--- is written to the chat buffer `toolhost://chat` as it arrives: `> prompt` (under a
--- `── Claude Code ──` header when a hosted agent answers), the answer's text, one line per call
--- (`→ read Read a.txt`, then ` ✓` or ` ✗ error`), a hosted agent's plan (`[x]`/`[>]`/`[ ]`) and
--- context window (`context: 12,345 / 200,000 tokens`), and a footer when the request is answered
--- (`── answered · 2 turns · 440 tokens in, 27 out · $0.0005`). The next prompt continues the chat
--- (its `chatId`) with the chat's agent; Stop cancels the request (`$/cancelRequest`). How the
--- plan, the context line and the header (a hosted agent's mode and model, in the winbar) look
--- is `toolhost.chat_state`'s; this module places them.

local M = {}

--- The chat buffer's name.
M.NAME = 'toolhost://chat'

--- The permission modes a prompt may ask for (docs/agent.md).
M.MODES = { 'ask', 'accept-edits', 'plan', 'auto' }

local chat_state = require('toolhost.chat_state')

local ns = vim.api.nvim_create_namespace('toolhost-chat')
M.namespace = ns

---@class toolhost.ChatUsage
---@field promptTokens integer
---@field completionTokens integer
---@field totalTokens integer
---@field cachedTokens integer

---@class toolhost.ChatRun A prompt whose request has not been answered yet.
---@field client_id integer
---@field prompt string
---@field request_id? integer the `toolhost/agentPrompt` request (once sent)
---@field run_id? string from its first update
---@field usage toolhost.ChatUsage summed over the run's `usage` updates
---@field streamed boolean some answer text arrived
---@field agent? string the hosted agent answering (nil: toolhost's own)
---@field cb? fun(err: string?, result: table?)

---@class toolhost.ChatState
---@field buf? integer the chat buffer
---@field client_id? integer the server of the chat
---@field chat_id? string the chat to continue (from the last answer or update)
---@field agent? string the hosted agent of the chat (nil: toolhost's own); its next prompt goes there
---@field run? toolhost.ChatRun the running prompt
---@field block? string what the buffer ends with: prompt, text, reasoning, call, note, footer
---@field attempt? {row: integer, col: integer, block: string?} where the model's current attempt began
---@field calls table<string, {row: integer, done: boolean}> call lines by call id
---@field rows table<integer, {client_id: integer, call_id: string}> call lines by 0-based row
---@field reasoning? {mark: integer?, row: integer} the reasoning block being streamed
---@field blocks table<string, {row: integer, count: integer}> this exchange's plan and context line,
---  by kind (a newer one replaces them)
---@field options? toolhost.AgentOption[] the hosted agent's settings for the chat (nil: not asked yet)
---@field ended table<string, boolean> runs already ended here (a late update only marks calls)

---@type toolhost.ChatState
local state = { calls = {}, rows = {}, ended = {}, blocks = {} }

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO)
end

--- The state (tests, |:checkhealth|): the chat buffer, the chat id, the running prompt.
---@return toolhost.ChatState
function M.state()
  return state
end

--- The running prompt, or nil.
---@return toolhost.ChatRun?
function M.running()
  return state.run
end

local function buf_valid()
  return state.buf ~= nil and vim.api.nvim_buf_is_valid(state.buf)
end

--- The chat buffer (created when needed): markdown, not modifiable, with its keys.
---@return integer
function M.buf()
  if buf_valid() then
    return state.buf --[[@as integer]]
  end
  local buf
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == M.NAME then
      buf = b
    end
  end
  if not buf then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, M.NAME)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'markdown'
  require('toolhost.cards.highlights') -- the highlight groups
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, desc = 'toolhost chat: ' .. desc })
  end
  map('<CR>', function()
    M.jump()
  end, 'show the card of the call on this line')
  map('<C-c>', function()
    M.stop()
  end, 'stop the running prompt')
  map('i', function()
    M.ask()
  end, 'ask the next prompt')
  map('q', '<cmd>close<cr>', 'close the window')
  vim.api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    desc = 'toolhost chat: the header of a hosted agent’s chat',
    callback = function()
      M.draw_header()
    end,
  })
  state.buf, state.block, state.attempt, state.reasoning = buf, nil, nil, nil
  state.calls, state.rows, state.blocks = {}, {}, {}
  if state.client_id then
    vim.b[buf].toolhost_client = state.client_id
  end
  return buf
end

---@param buf integer
---@return boolean
local function is_empty(buf)
  return vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
end

---@param buf integer
---@return integer row 0-based
---@return string line
local function last_line(buf)
  local row = vim.api.nvim_buf_line_count(buf) - 1
  return row, vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
end

--- Changes the chat buffer with `fn(buf)`; windows whose cursor was on the last line follow the
--- end (like `tail -f`).
---@param fn fun(buf: integer)
local function edit(fn)
  local buf = M.buf()
  local last = vim.api.nvim_buf_line_count(buf)
  local follow = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    follow[win] = vim.api.nvim_win_get_cursor(win)[1] >= last
  end
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn, buf)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local count = vim.api.nvim_buf_line_count(buf)
  for win, f in pairs(follow) do
    if f then
      pcall(vim.api.nvim_win_set_cursor, win, { count, 0 })
    end
  end
  if not ok then
    error(err, 0)
  end
end

--- Appends whole lines (an empty buffer's only line is replaced); returns the first one's row.
---@param buf integer
---@param lines string[]
---@return integer row 0-based
local function add_lines(buf, lines)
  if is_empty(buf) then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    return 0
  end
  local row = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
  return row
end

--- Starts a block of `kind`: one blank line between blocks; consecutive calls and notes stay
--- together.
---@param buf integer
---@param kind string
local function open_block(buf, kind)
  local joins = (kind == 'call' or kind == 'note') and state.block == kind
  if not joins and not is_empty(buf) then
    local _, line = last_line(buf)
    if line ~= '' then
      add_lines(buf, { '' })
    end
  end
  if kind ~= 'reasoning' then
    state.reasoning = nil
  end
  state.block = kind
end

---@param buf integer
---@param row integer
---@param count integer
---@param group string
local function highlight_lines(buf, row, count, group)
  for r = row, row + count - 1 do
    vim.api.nvim_buf_set_extmark(buf, ns, r, 0, { line_hl_group = group, priority = 100 })
  end
end

--- Remembers where the model's next attempt starts: a `retry` drops what it streamed.
local function mark_attempt()
  if buf_valid() then
    local row, line = last_line(state.buf --[[@as integer]])
    state.attempt = { row = row, col = #line, block = state.block }
  end
end

--- Appends streamed text (`text` or `reasoning`) at the end of the buffer: a new block starts on
--- a line of its own, the rest continues the last line.
---@param kind 'text'|'reasoning'
---@param text string
local function stream(kind, text)
  if text == '' then
    return
  end
  edit(function(buf)
    if state.block ~= kind then
      open_block(buf, kind)
      if not is_empty(buf) then
        add_lines(buf, { '' })
      end
      if kind == 'reasoning' then
        state.reasoning = { row = (last_line(buf)) }
      end
    end
    local row, line = last_line(buf)
    vim.api.nvim_buf_set_text(buf, row, #line, row, #line, vim.split(text, '\n', { plain = true }))
    local r = state.reasoning
    if kind == 'reasoning' and r then
      local end_row, end_line = last_line(buf)
      r.mark = vim.api.nvim_buf_set_extmark(buf, ns, r.row, 0, {
        id = r.mark,
        end_row = end_row,
        end_col = #end_line,
        hl_group = 'ToolhostChatReasoning',
        hl_eol = true,
        priority = 100,
      })
    end
  end)
end

--- Adds note lines (a retry, a compaction, a new chat).
---@param lines string[]
---@param kind? string the block kind (default `note`)
local function note(lines, kind)
  edit(function(buf)
    open_block(buf, kind or 'note')
    local row = add_lines(buf, lines)
    highlight_lines(buf, row, #lines, 'ToolhostChatNote')
  end)
end

--- The first line of a text, cut to `max` characters.
---@param text any
---@param max? integer
---@return string
local function first_line(text, max)
  local line = type(text) == 'string' and (text:match('^[^\n]*') or '') or ''
  max = max or 120
  if vim.fn.strchars(line) > max then
    line = vim.fn.strcharpart(line, 0, max - 1) .. '…'
  end
  return line
end

--- The line of a call that started: `→ {tool} {title}` (`→ {title}` when the update names the
--- call by its title, as a hosted agent's steps are).
---@param client_id integer
---@param update table a `toolCall` update
local function call_started(client_id, update)
  local call_id = update.callId
  if type(call_id) ~= 'string' or state.calls[call_id] then
    return
  end
  local card = type(update.card) == 'table' and update.card or {}
  local name = type(update.name) == 'string' and update.name or tostring(card.tool or '?')
  local title = type(card.title) == 'string' and card.title or ''
  edit(function(buf)
    open_block(buf, 'call')
    -- A hosted agent's step is named by its title: said once.
    local label = (title == name or title == '') and name or ('%s %s'):format(name, first_line(title))
    local row = add_lines(buf, { '→ ' .. vim.trim(label) })
    state.calls[call_id] = { row = row, done = false }
    state.rows[row] = { client_id = client_id, call_id = call_id }
    vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { line_hl_group = 'ToolhostChatCall', priority = 100 })
  end)
end

--- Marks a call's line ` ✓`, or ` ✗ {the first line of the error}`.
---@param client_id integer
---@param update table a `toolResult` update
local function call_finished(client_id, update)
  if type(update.callId) ~= 'string' then
    return
  end
  if not state.calls[update.callId] then
    call_started(client_id, update)
  end
  local call = state.calls[update.callId]
  if not call or call.done or not buf_valid() then
    return
  end
  call.done = true
  local failed = update.isError == true
  local suffix = failed and (' ✗ ' .. first_line(update.text)) or ' ✓'
  edit(function(buf)
    local line = vim.api.nvim_buf_get_lines(buf, call.row, call.row + 1, false)[1]
    if not line then
      return
    end
    vim.api.nvim_buf_set_text(buf, call.row, #line, call.row, #line, { suffix })
    vim.api.nvim_buf_set_extmark(buf, ns, call.row, #line + 1, {
      end_col = #line + #suffix,
      hl_group = failed and 'ToolhostExitError' or 'ToolhostExitOk',
      priority = 110,
    })
  end)
end

--- Moves what the chat remembers by row (call lines, the attempt, the reasoning, the exchange's
--- plan and context line) at or after `from` by `delta` rows: lines were inserted or removed above
--- them.
---@param from integer 0-based
---@param delta integer
local function shift_rows(from, delta)
  if delta == 0 then
    return
  end
  local rows = {}
  for row, entry in pairs(state.rows) do
    rows[row >= from and row + delta or row] = entry
  end
  state.rows = rows
  for _, call in pairs(state.calls) do
    if call.row >= from then
      call.row = call.row + delta
    end
  end
  local marks = { attempt = state.attempt, reasoning = state.reasoning }
  for kind, block in pairs(state.blocks) do
    marks[kind] = block
  end
  for _, t in pairs(marks) do
    if t.row >= from then
      t.row = t.row + delta
    end
  end
end

--- The chat's header: the hosted agent and its mode and model as far as known
--- (`Claude Code · Mode: Default · Model: Opus`); nil for toolhost's own agent.
---@return string?
function M.header()
  if not state.agent or not state.client_id then
    return nil
  end
  return chat_state.header(state.client_id, state.agent, state.options)
end

--- Shows the header in the winbar of the windows showing the chat.
function M.draw_header()
  if buf_valid() then
    chat_state.draw_header(state.buf --[[@as integer]], M.header())
  end
end

--- Draws `lines` (each highlighted with its group of `groups`; false: none) as this exchange's
--- block `kind` — a hosted agent's plan or context line, which the agent sends whole each time:
--- the first as a block of its own, a later one in the earlier one's place.
---@param kind 'plan'|'context'
---@param lines string[]
---@param groups (string|false)[]
local function place(kind, lines, groups)
  edit(function(buf)
    local b = state.blocks[kind]
    if b then
      vim.api.nvim_buf_clear_namespace(buf, ns, b.row, b.row + b.count)
      vim.api.nvim_buf_set_lines(buf, b.row, b.row + b.count, false, lines)
      shift_rows(b.row + b.count, #lines - b.count)
      b.count = #lines
    else
      open_block(buf, kind)
      b = { row = add_lines(buf, lines), count = #lines }
      state.blocks[kind] = b
    end
    for i, group in ipairs(groups) do
      if group then
        highlight_lines(buf, b.row + i - 1, 1, group)
      end
    end
  end)
end

--- `12 tokens in (3 cached), 4 out`, as `toolhost agent` prints it.
---@param usage? table `{promptTokens, completionTokens, cachedTokens}`
---@return string
function M.usage_text(usage)
  usage = type(usage) == 'table' and usage or {}
  local function n(key)
    return math.floor(tonumber(usage[key]) or 0)
  end
  local text = ('%d tokens in'):format(n('promptTokens'))
  if n('cachedTokens') > 0 then
    text = text .. (' (%d cached)'):format(n('cachedTokens'))
  end
  return text .. (', %d out'):format(n('completionTokens'))
end

--- The footer of an answered prompt: `── answered · 2 turns · 440 tokens in, 27 out · $0.0005`
--- (then ` · {error}` for a failed run).
---@param result table the `toolhost/agentPrompt` result
---@return string
function M.footer(result)
  local parts = { '── ' .. tostring(result.stop or '?') }
  local turns = tonumber(result.turns)
  if turns then
    table.insert(parts, ('%d turn%s'):format(turns, turns == 1 and '' or 's'))
  end
  table.insert(parts, M.usage_text(result.usage))
  if type(result.cost) == 'number' then
    table.insert(parts, ('$%.4f'):format(result.cost))
  end
  if type(result.error) == 'string' and result.error ~= '' then
    table.insert(parts, first_line(result.error, 400))
  end
  return table.concat(parts, ' · ')
end

--- Ends the running prompt with a footer: the chat buffer's last block, the callback called.
---@param run toolhost.ChatRun
---@param lines string[] the footer (and what comes before it: a structured value)
---@param err? string
---@param result? table
local function finish(run, lines, err, result)
  if state.run ~= run then
    return
  end
  state.run = nil
  if run.run_id then
    state.ended[run.run_id] = true
  end
  if buf_valid() then -- (a chat buffer wiped meanwhile is not made again for the footer)
    edit(function(buf)
      open_block(buf, 'footer')
      local row = add_lines(buf, lines)
      highlight_lines(buf, row, #lines, 'ToolhostChatFooter')
    end)
  end
  mark_attempt()
  if run.cb then
    run.cb(err, result)
  end
end

--- The answer of `toolhost/agentPrompt`.
---@param run toolhost.ChatRun
---@param err? table the JSON-RPC error
---@param result? table
local function on_result(run, err, result)
  if state.run ~= run then
    return -- stopped here already
  end
  if err or type(result) ~= 'table' then
    local msg = err and (err.message or vim.inspect(err)) or 'the server sent no result'
    return finish(run, { '── error: ' .. first_line(msg, 400) }, msg)
  end
  if type(result.chatId) == 'string' and state.client_id == run.client_id then
    state.chat_id = result.chatId
  end
  run.run_id = run.run_id or result.runId
  if not run.streamed and type(result.answer) == 'string' and result.answer ~= '' then
    stream('text', result.answer) -- a server that did not stream it
  end
  local lines = {}
  if result.structured ~= nil and result.structured ~= vim.NIL then
    lines = vim.list_extend({ '```json' }, require('toolhost.json').lines(result.structured))
    table.insert(lines, '```')
    note(lines, 'structured')
    lines = {}
  end
  table.insert(lines, M.footer(result))
  local problem = result.stop == 'failed' and (result.error or 'failed') or nil
  finish(run, lines, problem, result)
end

--- `toolhost/agentUpdate {chatId, runId, update}`: one piece of what the running prompt
--- streams. Calls of a run that ended here (stopped) still get their ✓/✗.
---@param client_id integer
---@param params table
function M.on_update(client_id, params)
  if type(params) ~= 'table' or type(params.update) ~= 'table' then
    return
  end
  local u = params.update
  local run = state.run
  local live = run ~= nil
    and run.client_id == client_id
    and (run.run_id == nil or run.run_id == params.runId)
    and not state.ended[params.runId or '']
  if u.type == 'toolResult' then
    if live or state.calls[u.callId or ''] then
      call_finished(client_id, u)
      if live then
        mark_attempt()
      end
    end
    return
  end
  if not live then
    return
  end
  ---@cast run toolhost.ChatRun
  if type(params.runId) == 'string' then
    run.run_id = params.runId
  end
  if type(params.chatId) == 'string' and state.client_id == client_id then
    state.chat_id = params.chatId -- a stopped new chat is continued too
  end
  if u.type == 'text' or u.type == 'reasoning' then
    if type(u.text) == 'string' then
      run.streamed = run.streamed or u.type == 'text'
      stream(u.type, u.text)
    end
    return
  elseif u.type == 'toolCall' then
    call_started(client_id, u)
  elseif u.type == 'usage' then
    for _, key in ipairs({ 'promptTokens', 'completionTokens', 'totalTokens', 'cachedTokens' }) do
      run.usage[key] = run.usage[key] + (tonumber(u[key]) or 0)
    end
  elseif u.type == 'retry' then
    -- The model's attempt broke: what it streamed is dropped (it comes again).
    local a = state.attempt
    if a and buf_valid() then
      edit(function(buf)
        local row, line = last_line(buf)
        if row > a.row or #line > a.col then
          vim.api.nvim_buf_set_text(buf, a.row, a.col, row, #line, { '' })
        end
      end)
      state.block = a.block
      state.reasoning = nil
    end
    note({
      ('… the model request failed (%s); retry %s in %s ms'):format(
        first_line(u.reason),
        tostring(u.attempt or '?'),
        tostring(u.delayMs or '?')
      ),
    })
  elseif u.type == 'compaction' then
    local extra = ''
    if (tonumber(u.pruned) or 0) > 0 then
      extra = (', %d outputs pruned'):format(u.pruned)
    end
    if u.summarized then
      extra = extra .. ', summarized'
    end
    local before, after = tostring(u.tokensBefore), tostring(u.tokensAfter)
    note({ ('… conversation compacted (%s → %s tokens%s)'):format(before, after, extra) })
  elseif u.type == 'plan' then
    place('plan', chat_state.plan_lines(u.entries))
  elseif u.type == 'context' then
    place('context', chat_state.context_lines(u))
  elseif u.type == 'options' then
    state.options = require('toolhost.agent_options').valid(u.options)
    M.draw_header()
  else
    return
  end
  mark_attempt()
end

--- Shows the chat buffer in a window (a vertical split on the right when none shows it). With
--- `focus` the cursor moves there; else it stays where it was.
---@param focus? boolean
---@return integer buf
function M.open(focus)
  local buf = M.buf()
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local prev = vim.api.nvim_get_current_win()
    vim.cmd('botright vsplit')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
    if not focus and vim.api.nvim_win_is_valid(prev) then
      vim.api.nvim_set_current_win(prev)
    end
  elseif focus then
    vim.api.nvim_set_current_win(win)
  end
  return buf
end

--- The server a prompt goes to: from the chat buffer the chat's server; elsewhere the current
--- one (|:Toolhost|), started when needed.
---@return vim.lsp.Client?
function M.server()
  local cl = require('toolhost.client')
  local cur = vim.api.nvim_get_current_buf()
  if cur == state.buf and state.client_id then
    local c = vim.lsp.get_client_by_id(state.client_id)
    if c and not c:is_stopped() then
      return c
    end
  end
  return cl.current(cur, true)
end

--- Writes `── new chat` (with the server's folder when the server changes) under a chat that had
--- begun: what follows does not continue it.
---@param client vim.lsp.Client the new chat's server
local function mark_new_chat(client)
  if state.chat_id and buf_valid() and not is_empty(state.buf --[[@as integer]]) then
    note({ '── new chat' .. (state.client_id ~= client.id and (' · ' .. tostring(client.root_dir)) or '') }, 'footer')
  end
end

---@class toolhost.AskOpts
---@field new? boolean start a new chat (`:Toolhost! ask`)
---@field mode? 'ask'|'accept-edits'|'plan'|'auto' the permission mode of this prompt
---@field model? string the model of this prompt
---@field client? vim.lsp.Client the server (default: the current one)
---@field agent? string the hosted ACP agent to ask (`claude`, …; `toolhost`: the own agent); nil:
---  the chat's agent (a new chat: the own one). Another agent than the chat's starts a new chat.

--- Checks a permission mode; returns the problem, or nil.
---@param mode any
---@return string?
local function mode_problem(mode)
  if mode == nil or vim.tbl_contains(M.MODES, mode) then
    return nil
  end
  return ('unknown mode %s (one of: %s)'):format(vim.inspect(mode), table.concat(M.MODES, ', '))
end

--- The agent a prompt goes to and whether it starts a new chat: the one `opts.agent` names
--- (another than the chat's: a new chat), else the chat's own agent when the prompt continues
--- it, else (a new chat) toolhost's own.
---@param opts toolhost.AskOpts
---@param client_id integer the server of the prompt
---@return string? agent nil: toolhost's own
---@return boolean fresh a new chat
local function agent_of(opts, client_id)
  local fresh = opts.new == true or state.client_id ~= client_id
  if opts.agent == nil then
    return (not fresh) and state.agent or nil, fresh
  end
  local wanted = opts.agent ~= 'toolhost' and opts.agent ~= '' and opts.agent or nil
  return wanted, fresh or wanted ~= state.agent
end

--- Sends `task` to toolhost's own agent, or the hosted ACP agent `opts.agent`
--- (`toolhost/agentPrompt`), and streams the run into the chat buffer. The prompt continues the
--- chat of the server (the last `chatId`) and its agent unless `opts.new`, another agent, or the
--- server is not the chat's. Without `task`, asks for it with |vim.ui.input()|. One prompt at a
--- time. `cb(err, result)` when the request is answered (or stopped: err `cancelled`).
---@param task? string
---@param opts? toolhost.AskOpts
---@param cb? fun(err: string?, result: table?)
function M.ask(task, opts, cb)
  opts = opts or {}
  if state.run then
    notify('a prompt is still running (stop it with <C-c> in the chat or :Toolhost chat stop)', vim.log.levels.WARN)
    return cb and cb('a prompt is running')
  end
  if type(task) ~= 'string' or vim.trim(task) == '' then
    local whom = opts.agent and opts.agent ~= 'toolhost' and opts.agent or 'toolhost'
    vim.ui.input({ prompt = ('Ask %s: '):format(whom) }, function(input)
      if type(input) == 'string' and vim.trim(input) ~= '' then
        M.ask(input, opts, cb)
      elseif cb then
        cb('no prompt')
      end
    end)
    return
  end
  local cfg = require('toolhost.config').get().chat or {}
  local mode = opts.mode or cfg.mode
  local model = opts.model or cfg.model
  local problem = mode_problem(mode)
  if problem then
    notify(problem, vim.log.levels.ERROR)
    return cb and cb(problem)
  end
  local c = opts.client or M.server()
  if not c then
    notify('no toolhost server for this buffer or directory', vim.log.levels.WARN)
    return cb and cb('no toolhost server')
  end
  local agent, fresh = agent_of(opts, c.id)
  if fresh then
    mark_new_chat(c)
    state.chat_id, state.options = nil, nil
  end
  state.client_id, state.agent = c.id, agent
  state.blocks = {}
  local header
  if agent then
    local agents = require('toolhost.agents')
    agents.list_sync(c) -- the title, asked once per server
    header = ('── %s ──'):format(agents.title(c.id, agent))
  end
  local buf = M.open(false)
  vim.b[buf].toolhost_client = c.id
  M.draw_header()
  local lines = {}
  for _, l in ipairs(vim.split(vim.trim(task), '\n', { plain = true })) do
    table.insert(lines, l == '' and '>' or ('> ' .. l))
  end
  edit(function(b)
    open_block(b, 'prompt')
    if header then
      highlight_lines(b, add_lines(b, { header }), 1, 'ToolhostChatAgent')
    end
    local row = add_lines(b, lines)
    highlight_lines(b, row, #lines, 'ToolhostChatPrompt')
  end)
  mark_attempt()
  ---@type toolhost.ChatRun
  local run = {
    client_id = c.id,
    prompt = task,
    usage = { promptTokens = 0, completionTokens = 0, totalTokens = 0, cachedTokens = 0 },
    streamed = false,
    agent = agent,
    cb = cb,
  }
  state.run = run
  require('toolhost.client').when_ready(c, function(client, err)
    if state.run ~= run then
      return -- stopped before it was sent
    end
    if not client then
      return finish(run, { '── error: ' .. tostring(err) }, err)
    end
    -- The permission mode and the model are the own agent's settings; a hosted agent has its
    -- own (`[acp.agents.<name>] mode`).
    local params = { prompt = task, chatId = state.chat_id, mode = mode, model = model }
    if agent then
      params = { prompt = task, chatId = state.chat_id, agent = agent }
    end
    local ok, id = client:request('toolhost/agentPrompt', params, function(rpc_err, result)
      on_result(run, rpc_err, result)
    end)
    if not ok then
      return finish(run, { '── error: the toolhost server is not running' }, 'not running')
    end
    run.request_id = id
  end)
end

--- Takes a hosted agent's settings (`toolhost/agentOptions`, `toolhost/agentSetOption`): the
--- chat becomes that agent's chat `result.chatId` (another one than the chat's starts a new chat,
--- as a prompt would), its next prompt continues it, and the header shows the settings.
---@param client vim.lsp.Client
---@param agent string
---@param result {chatId: string, options: toolhost.AgentOption[]}
function M.adopt_options(client, agent, result)
  local same = state.client_id == client.id and state.agent == agent
  if not (same and (state.chat_id == nil or state.chat_id == result.chatId)) then
    mark_new_chat(client)
    state.client_id, state.agent = client.id, agent
  end
  state.chat_id, state.options = result.chatId, result.options
  require('toolhost.agents').list_sync(client) -- the title, asked once per server
  local buf = M.open(false)
  vim.b[buf].toolhost_client = client.id
  M.draw_header()
end

--- Stops the running prompt: cancels its request (`$/cancelRequest`; the server stops the run,
--- records it as cancelled and keeps the chat) and ends it here with `── cancelled`. Calls
--- already running finish; their lines still get ✓/✗.
---@return boolean stopped false when no prompt was running
function M.stop()
  local run = state.run
  if not run then
    notify('no prompt is running')
    return false
  end
  local c = vim.lsp.get_client_by_id(run.client_id)
  if c and run.request_id and not c:is_stopped() then
    c:cancel_request(run.request_id)
  end
  local parts = { '── cancelled' }
  if run.usage.totalTokens > 0 or run.usage.promptTokens > 0 then
    table.insert(parts, M.usage_text(run.usage))
  end
  finish(run, { table.concat(parts, ' · ') }, 'cancelled')
  return true
end

--- Forgets the chat: the next prompt starts a new one, with toolhost's own agent unless
--- |:Toolhost-agent| names another (|:Toolhost-chat| `new`).
function M.new()
  if state.run then
    notify('a prompt is still running (stop it first)', vim.log.levels.WARN)
    return
  end
  if state.chat_id and buf_valid() and not is_empty(state.buf --[[@as integer]]) then
    note({ '── new chat' }, 'footer')
  end
  state.chat_id, state.agent, state.options = nil, nil, nil
  M.draw_header()
end

--- <CR> in the chat buffer: on a call's line, the call's card in the cards buffer.
function M.jump()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local entry = vim.api.nvim_get_current_buf() == state.buf and state.rows[row] or nil
  if not entry then
    return notify('no call on this line')
  end
  local c = vim.lsp.get_client_by_id(entry.client_id)
  if not c or c:is_stopped() then
    return notify('the server of this call is not running', vim.log.levels.WARN)
  end
  local cards = require('toolhost.cards')
  local buf = cards.open_live(c)
  local card_row = cards.row_of(buf, entry.call_id)
  if card_row then
    vim.api.nvim_win_set_cursor(0, { card_row, 0 })
  else
    notify(('no card of call %s yet'):format(entry.call_id))
  end
end

--- The server of a chat exited: its running prompt ends, the next prompt starts a new chat.
---@param client_id integer
function M.forget(client_id)
  if state.run and state.run.client_id == client_id then
    finish(state.run, { '── stopped: the server exited' }, 'the server exited')
  end
  if state.client_id == client_id then
    state.client_id, state.chat_id, state.agent, state.options = nil, nil, nil, nil
    M.draw_header()
  end
end

--- Parses the arguments of `:Toolhost ask`: leading `mode={mode}` and `model={model}`, then
--- the task.
---@param args string
---@return string task
---@return toolhost.AskOpts? opts nil when invalid
---@return string? problem
function M.parse(args)
  local opts = {}
  local rest = vim.trim(args)
  while true do
    local key, value, tail = rest:match('^(%a+)=(%S*)%s*(.*)$')
    if key ~= 'mode' and key ~= 'model' then
      break
    end
    if key == 'mode' then
      local problem = mode_problem(value)
      if problem then
        return rest, nil, problem
      end
    elseif value == '' then
      return rest, nil, 'model= needs a model name'
    end
    opts[key] = value
    rest = tail
  end
  return rest, opts
end

--- Parses the arguments of `:Toolhost agent`: the agent's name, then the task (may be empty:
--- asked for).
---@param args string
---@return string? name nil when missing
---@return string task
function M.parse_agent(args)
  local name, task = vim.trim(args):match('^(%S+)%s*(.-)$')
  return name, task or ''
end

--- Completion of `:Toolhost agent`: the server's agents' names for the first word.
---@param arg_lead string
---@param line string
---@return string[]
function M.complete_agent(arg_lead, line)
  if line:match('^%s*%S+%s+%S+%s+%S+%s') then
    return {}
  end
  return require('toolhost.agents').complete(arg_lead)
end

--- Completion of `:Toolhost ask`: the options while only options precede the word.
---@param arg_lead string
---@param line string
---@return string[]
function M.complete(arg_lead, line)
  local typed = line:match('^%s*%S+%s+%S+%s+(.*)$') or ''
  local before = typed:sub(1, #typed - #arg_lead)
  local used = {}
  for word in before:gmatch('%S+') do
    local key = word:match('^(%a+)=')
    if key ~= 'mode' and key ~= 'model' then
      return {}
    end
    used[key] = true
  end
  local words = {}
  if not used.mode then
    for _, m in ipairs(M.MODES) do
      table.insert(words, 'mode=' .. m)
    end
  end
  if not used.model then
    table.insert(words, 'model=')
  end
  return vim.tbl_filter(function(w)
    return vim.startswith(w, arg_lead)
  end, words)
end

return M
