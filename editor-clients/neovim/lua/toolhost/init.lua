--- toolhost: toolhost for Neovim: the agent tool host as an LSP client, with cards
---
--- Works without |toolhost.setup()|: the plugin file starts the `toolhost` client for file
--- buffers under a workspace root. `setup()` (or `vim.g.toolhost`) only overrides defaults.

local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO)
end

--- Overrides defaults (see |toolhost-config|). Optional.
---@param opts? toolhost.Config|table
function M.setup(opts)
  require('toolhost.config').set(opts)
  -- vim.lsp.config.toolhost (lsp/toolhost.lua) takes its defaults from this configuration:
  -- have Neovim resolve it again (an empty override changes nothing else).
  local lsp = package.loaded['vim.lsp']
  if lsp and lsp.config and getmetatable(lsp.config) then
    pcall(lsp.config, 'toolhost', {})
  end
  M.apply_keymaps()
end

--- Sets the user's key mappings to the <Plug> mappings when `keymaps` is enabled.
function M.apply_keymaps()
  local config = require('toolhost.config')
  local km = config.get().keymaps
  if not km then
    return
  end
  local lhs = km == true and config.default_keymaps or vim.tbl_extend('force', config.default_keymaps, km)
  for name, key in pairs(lhs) do
    if type(key) == 'string' and key ~= '' then
      vim.keymap.set('n', key, ('<Plug>(toolhost-%s)'):format(name), { desc = 'toolhost: ' .. name })
    end
  end
end

--- Starts (or reuses) the client of the current buffer's root (or the working directory).
---@param root? string
---@param client_config? table overrides of the LSP client config
---@return vim.lsp.Client?
function M.start(root, client_config)
  local client = require('toolhost.client')
  local buf = vim.api.nvim_get_current_buf()
  local id
  if root then
    id = client.start(root, { config = client_config })
    local path = client.buf_path(buf)
    if id and path and client.contains(vim.lsp.get_client_by_id(id).root_dir, path) then
      vim.lsp.buf_attach_client(buf, id)
    end
  else
    local c = client.current(buf, true)
    id = c and c.id
  end
  if not id then
    notify('could not start the server', vim.log.levels.ERROR)
    return nil
  end
  -- Attach every loaded file buffer under the root.
  local c = vim.lsp.get_client_by_id(id)
  if c then
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local path = vim.api.nvim_buf_is_loaded(b) and client.buf_path(b)
      if path and client.contains(c.root_dir, path) and not c.attached_buffers[b] then
        vim.lsp.buf_attach_client(b, id)
      end
    end
  end
  return c
end

--- Stops the toolhost clients.
function M.stop()
  require('toolhost.client').stop()
end

---@param start? boolean
---@return vim.lsp.Client?
local function current(start)
  return require('toolhost.client').current_or_warn(nil, start)
end

--- Runs a tool through `toolhost/callTool`. `cb(err, response)` gets `{sessionId, callId,
--- result, card}`; the card is recorded, echoed (`echo_cards`) and shown inline.
---@param tool string
---@param arguments table|any a JSON object (anything else is sent as is and refused by the server)
---@param opts? {client?: vim.lsp.Client, echo?: boolean}
---@param cb? fun(err: string?, response: table?)
function M.call(tool, arguments, opts, cb)
  opts = opts or {}
  local c = opts.client or current()
  if not c then
    if cb then
      cb('no toolhost server')
    end
    return
  end
  if type(arguments) == 'table' and next(arguments) == nil and getmetatable(arguments) == nil then
    arguments = vim.empty_dict() -- `{}` from Lua means an empty object, not an array
  end
  require('toolhost.client').request(c, 'toolhost/callTool', { name = tool, arguments = arguments }, function(err, res)
    if err then
      notify(err, vim.log.levels.ERROR)
    elseif type(res) == 'table' and type(res.card) == 'table' then
      require('toolhost.cards').on_card(c.id, res.card)
      local echo = opts.echo
      if echo == nil then
        echo = require('toolhost.config').get().echo_cards
      end
      if echo then
        require('toolhost.cards').echo(res.card)
      end
    end
    if cb then
      cb(err, res)
    end
  end)
end

--- Stops a running call with `toolhost/cancelCall` (whoever started it: this editor or an agent
--- through `toolhost mcp`): in a cards buffer the pending card under the cursor, else the newest
--- pending call (|:ToolhostStop|, <C-c> in a cards buffer). `cb(err, cancelled)`; `cancelled` is
--- false when the call had already ended.
---@param cb? fun(err: string?, cancelled: boolean?)
function M.stop_call(cb)
  local cl = require('toolhost.client')
  local buf = vim.api.nvim_get_current_buf()
  local cur = cl.current(buf, false)
  local client_id, call_id =
    require('toolhost.cards').call_to_stop(buf, vim.api.nvim_win_get_cursor(0)[1], cur and cur.id)
  local c = client_id and vim.lsp.get_client_by_id(client_id)
  if not (c and call_id) or c:is_stopped() then
    notify('no running call to stop')
    return cb and cb('no running call')
  end
  cl.request(c, 'toolhost/cancelCall', { callId = call_id }, function(err, res)
    local cancelled = type(res) == 'table' and res.cancelled == true
    if err then
      notify(err, vim.log.levels.ERROR)
    elseif not cancelled then
      -- Not an error: the Stop may race the end of the call.
      notify(('call %s is not running (it may just have ended)'):format(call_id))
    end
    if cb then
      cb(err, cancelled)
    end
  end)
end

---@class toolhost.RevertOpts
---@field since? boolean undo every file change of the session from that call on, newest first
---@field confirm? boolean ask before a `since` revert (default true; `:Toolhost!` skips it)
---@field client? vim.lsp.Client the server to ask (default: as |:Toolhost-revert| picks it)

---@param card toolhost.Card
---@return string `call_abc (edit Edit a.txt)`
local function describe(card)
  return ('%s (%s %s)'):format(card.callId, tostring(card.tool), tostring(card.title))
end

--- The call a revert undoes and the server to ask. With `call_id`: that call's card in the
--- server's session (looked up in every server's cards when none is given). Without: in a cards
--- buffer the card under the cursor; elsewhere the newest card that can be reverted.
---@param call_id? string
---@param client? vim.lsp.Client
---@return vim.lsp.Client? client
---@return toolhost.Card? card nil with a client: a call id this editor has no card of (the
---  server answers `REVERT_UNKNOWN_CALL` if its session has no such call either)
---@return string? problem why there is nothing to revert
local function revert_target(call_id, client)
  local cl = require('toolhost.client')
  local cards = require('toolhost.cards')
  local buf = vim.api.nvim_get_current_buf()
  local cur = client or cl.current(buf, false)
  local ids = cur and { cur.id } or {}
  if not client then
    -- Like :ToolhostStop: the current server first, then any other running one.
    for _, c in ipairs(cl.clients()) do
      if not cur or c.id ~= cur.id then
        table.insert(ids, c.id)
      end
    end
  end
  if call_id then
    for _, id in ipairs(ids) do
      local card = cards.get(id, call_id)
      if card then
        return vim.lsp.get_client_by_id(id), card
      end
    end
    if not cur then
      return nil, nil, 'no toolhost server for this buffer or directory'
    end
    return cur, nil
  end
  if not client and cards.is_cards_buffer(buf) then
    local card = cards.card_at(buf, vim.api.nvim_win_get_cursor(0)[1])
    if not card then
      return nil, nil, 'no card under the cursor'
    end
    local owner = vim.b[buf].toolhost_client
    local c = owner and vim.lsp.get_client_by_id(owner)
    if not c or c:is_stopped() then
      return nil, nil, 'the server of this cards buffer is not running'
    end
    local shown, running = vim.b[buf].toolhost_session, cl.state(c.id).session_id
    if shown and running and shown ~= running then
      local why = '%s is a call of session %s; only calls of the running session %s can be reverted'
      return nil, nil, why:format(card.callId, shown, running)
    end
    return c, card
  end
  for _, id in ipairs(ids) do
    local card = cards.revertible(id)[1]
    if card then
      return vim.lsp.get_client_by_id(id), card
    end
  end
  return nil, nil, 'no file change to revert (only completed diff cards can be reverted)'
end

--- The question a revert since `card` asks: what it will undo, as far as this editor's cards
--- tell (the server decides; it reverts all or nothing).
---@param client_id integer
---@param card? toolhost.Card
---@param call_id string
---@return string
local function since_question(client_id, card, call_id)
  if not card then
    return ('Revert every file change of this session since %s, newest first?'):format(call_id)
  end
  local s = require('toolhost.cards').store(client_id)
  local count, from = 0, nil
  for i, id in ipairs(s.order) do
    if id == call_id then
      from = i
    end
    if from and require('toolhost.cards').revert_refusal(s.by_id[id]) == nil then
      count = count + 1
    end
  end
  return ('Revert every file change since %s: %d call%s, newest first?'):format(
    describe(card),
    count,
    count == 1 and '' or 's'
  )
end

--- Reverts the file changes of a call with the `revert` tool (`toolhost/callTool`): with
--- `opts.since`, every file change of the session from that call on (after a confirmation
--- unless `opts.confirm == false`). Without `call_id`: the card under the cursor in a cards
--- buffer, else the newest completed diff card. Only completed cards of kind `diff` can be
--- reverted; another card is refused here with a message. A failed revert (a conflict, unsaved
--- changes in a buffer, …) is reported with |vim.notify()| at ERROR level. `cb(err, response)`.
---@param call_id? string
---@param opts? toolhost.RevertOpts
---@param cb? fun(err: string?, response: table?)
function M.revert(call_id, opts, cb)
  opts = opts or {}
  cb = cb or function() end
  if call_id == '' then
    call_id = nil
  end
  local c, card, problem = revert_target(call_id, opts.client)
  if not c then
    notify(problem or 'nothing to revert', vim.log.levels.WARN)
    return cb(problem or 'nothing to revert')
  end
  if card then
    local refusal = require('toolhost.cards').revert_refusal(card)
    if refusal then
      local msg = ('%s cannot be reverted: %s (only completed file changes, diff cards, can be)'):format(
        describe(card),
        refusal
      )
      notify(msg, vim.log.levels.WARN)
      return cb(msg)
    end
    call_id = card.callId
  end
  ---@cast call_id string
  if opts.since and opts.confirm ~= false then
    local choice = vim.fn.confirm(since_question(c.id, card, call_id), '&Revert\n&Cancel', 2, 'Question')
    if choice ~= 1 then
      notify('revert cancelled')
      return cb('cancelled')
    end
  end
  local arguments = { call_id = call_id, since = opts.since and true or nil }
  -- The revert's card arrives like any card: a completed diff card reloads the reverted files.
  M.call('revert', arguments, { client = c, echo = false }, function(err, res)
    if err then
      return cb(err, res) -- reported by M.call
    end
    local result = type(res) == 'table' and res.result or nil
    if type(result) ~= 'table' then
      notify('revert: the server sent no result', vim.log.levels.ERROR)
      return cb('no result', res)
    end
    if result.isError then
      local e = type(result.error) == 'table' and result.error or {}
      local msg = type(e.message) == 'string' and e.message or vim.inspect(result.error)
      notify(('revert %s failed: %s'):format(call_id, msg), vim.log.levels.ERROR)
      return cb(msg, res)
    end
    local text = require('toolhost.result_text')(result)
    notify(text ~= '' and text or ('reverted ' .. call_id))
    cb(nil, res)
  end)
end

--- |M.revert| with `since`: every file change of the session from that call on, newest first,
--- all or nothing (asks first unless `opts.confirm == false`).
---@param call_id? string
---@param opts? toolhost.RevertOpts
---@param cb? fun(err: string?, response: table?)
function M.revert_since(call_id, opts, cb)
  M.revert(call_id, vim.tbl_extend('force', opts or {}, { since = true }), cb)
end

--- Lists the tools of the current server.
---@param cb? fun(err: string?, tools: table[]?)
function M.tools(cb)
  local c = current()
  if not c then
    return
  end
  require('toolhost.client').request(c, 'toolhost/listTools', vim.empty_dict(), function(err, res)
    local tools = res and res.tools or nil
    if tools then
      require('toolhost.client').state(c.id).tools = tools
    end
    if cb then
      return cb(err, tools)
    end
    if err then
      return notify(err, vim.log.levels.ERROR)
    end
    local chunks = {}
    for i, t in ipairs(tools or {}) do
      local first = (t.description or ''):match('^[^\n]*') or ''
      table.insert(chunks, { t.name, 'Identifier' })
      table.insert(chunks, { '  ' .. first .. (i < #tools and '\n' or '') })
    end
    vim.api.nvim_echo(chunks, true, {})
  end)
end

--- Opens the cards buffer of the current session (newest first).
---@return integer? buf
function M.cards()
  local c = current()
  if not c then
    return nil
  end
  return require('toolhost.cards').open_live(c)
end

--- Lists the sessions of this workspace.
---@param cb? fun(err: string?, sessions: table[]?)
function M.sessions(cb)
  local c = current()
  if not c then
    return
  end
  require('toolhost.client').request(c, 'toolhost/listSessions', vim.empty_dict(), function(err, res)
    local sessions = res and res.sessions or nil
    if cb then
      return cb(err, sessions)
    end
    if err then
      return notify(err, vim.log.levels.ERROR)
    end
    local current_id = require('toolhost.client').state(c.id).session_id
    local chunks = {}
    for i, s in ipairs(sessions or {}) do
      local when = os.date('%Y-%m-%d %H:%M:%S', math.floor((s.createdAt or 0) / 1000))
      table.insert(chunks, { s.id, s.id == current_id and 'Title' or 'Identifier' })
      table.insert(
        chunks,
        { ('  %s  %d call%s%s'):format(when, s.calls or 0, s.calls == 1 and '' or 's', i < #sessions and '\n' or '') }
      )
    end
    if #chunks == 0 then
      chunks = { { 'no sessions' } }
    end
    vim.api.nvim_echo(chunks, true, {})
  end)
end

--- Shows the cards of a past session, rebuilt from its log, in `toolhost://replay/<id>`.
---@param session_id string
---@param cb? fun(err: string?, buf: integer?)
function M.replay(session_id, cb)
  local c = current()
  if not c then
    return
  end
  require('toolhost.client').request(c, 'toolhost/replaySession', { sessionId = session_id }, function(err, res)
    if err then
      notify(err, vim.log.levels.ERROR)
      return cb and cb(err)
    end
    local buf = require('toolhost.cards').open_replay(session_id, res and res.cards or {}, c.id)
    if type(res) == 'table' and type(res.damage) == 'table' and type(res.damage.notice) == 'string' then
      -- The cards are what could be read; say what was skipped and how to repair the log.
      notify(res.damage.notice, vim.log.levels.WARN)
    end
    if cb then
      cb(nil, buf)
    end
  end)
end

--- Removes the inline cards from every buffer.
function M.clear()
  require('toolhost.inline').clear()
end

--- `:Toolhost review [call]`: shows a pending review (|toolhost-review|) and moves the cursor
--- there: the one of call `call_id`, the only one, or one picked with |vim.ui.select()|.
---@param call_id? string
---@param cb? fun(review: toolhost.Review?)
function M.review(call_id, cb)
  require('toolhost.review').open(call_id, cb)
end

---@class toolhost.ReviewSettings
---@field mode? 'off'|'ask'
---@field timeoutMs? integer how long the server waits for an answer
---@field fallback? 'deny'|'accept' what happens without one

--- Describes review settings: `review mode ask (timeout 300000 ms, fallback deny)`.
---@param s table
---@return string
local function describe_review(s)
  return ('review mode %s (timeout %s ms, fallback %s)'):format(
    tostring(s.mode),
    tostring(s.timeoutMs),
    tostring(s.fallback)
  )
end

--- Changes (or, with no `mode`/`timeoutMs`/`fallback`, reads) the session's review settings
--- with `toolhost/setReview` and reports them. `cb(err, settings)` gets the settings after the
--- change.
---@param settings? toolhost.ReviewSettings
---@param opts? {client?: vim.lsp.Client, quiet?: boolean}
---@param cb? fun(err: string?, settings: toolhost.ReviewSettings?)
function M.set_review(settings, opts, cb)
  opts = opts or {}
  local c = opts.client or current()
  if not c then
    return cb and cb('no toolhost server')
  end
  local params = vim.deepcopy(settings or {})
  if next(params) == nil then
    params = vim.empty_dict() -- `{}` reads the settings; an empty Lua table would be `[]`
  end
  require('toolhost.client').request(c, 'toolhost/setReview', params, function(err, res)
    if err then
      notify(err, vim.log.levels.ERROR)
    elseif type(res) == 'table' then
      require('toolhost.client').state(c.id).review = res
      if not opts.quiet then
        notify(describe_review(res))
      end
    end
    if cb then
      cb(err, res)
    end
  end)
end

--- Switches the session's plan mode on or off (`active` nil: reads it) with
--- `toolhost/setPlanMode` and reports it. In plan mode the server refuses the tools that change
--- things until the person approves a plan (`exit_plan_mode`, |toolhost-ask|). `cb(err, state)`
--- gets `{active}` after the change.
---@param active? boolean
---@param opts? {client?: vim.lsp.Client, quiet?: boolean}
---@param cb? fun(err: string?, state: {active: boolean}?)
function M.set_plan_mode(active, opts, cb)
  opts = opts or {}
  local c = opts.client or current()
  if not c then
    return cb and cb('no toolhost server')
  end
  local params = active == nil and vim.empty_dict() or { active = active }
  require('toolhost.client').request(c, 'toolhost/setPlanMode', params, function(err, res)
    if err then
      notify(err, vim.log.levels.ERROR)
    elseif type(res) == 'table' then
      require('toolhost.client').state(c.id).plan_mode = res.active
      if not opts.quiet then
        notify(res.active and 'plan mode on (changes wait for an approved plan)' or 'plan mode off')
      end
    end
    if cb then
      cb(err, res)
    end
  end)
end

--- The latest status of the MCP servers of a toolhost server (|toolhost-mcp-servers|): what its
--- last `toolhost/mcpServers` answer or `toolhost/mcpServersChanged` notification said. Nil when
--- it has not told yet (or there is no server). Asks nothing: |M.show_mcp_servers| does.
---@param client? vim.lsp.Client|integer the server (default: the current one, none started)
---@return toolhost.McpServerStatus[]?
function M.mcp_servers(client)
  if type(client) == 'number' then
    client = vim.lsp.get_client_by_id(client)
  end
  local c = client or require('toolhost.client').current(0, false)
  if not c then
    return nil
  end
  return require('toolhost.mcp').servers(c.id)
end

--- |:Toolhost-mcp-servers|: asks the current server for the status of its MCP servers and shows
--- it in `toolhost://mcp-servers/<session>`, which follows every change while it exists.
--- `cb(err, buf)`.
---@param cb? fun(err: string?, buf: integer?)
function M.show_mcp_servers(cb)
  local c = current()
  if not c then
    return cb and cb('no toolhost server')
  end
  require('toolhost.mcp').open(c, cb)
end

--- `:Toolhost ask`: sends a task to toolhost's own agent and streams the run into the chat
--- buffer (|toolhost-chat|). `opts.new` starts a new chat; without `task` it is asked for with
--- |vim.ui.input()|. `cb(err, result)` gets the `toolhost/agentPrompt` result.
---@param task? string
---@param opts? toolhost.AskOpts
---@param cb? fun(err: string?, result: table?)
function M.ask(task, opts, cb)
  require('toolhost.chat').ask(task, opts, cb)
end

--- Stops the running chat prompt (|:Toolhost-chat| `stop`); false when none runs.
---@return boolean
function M.stop_ask()
  return require('toolhost.chat').stop()
end

---@type table<string, toolhost.Subcommand>

--- The subcommands of `:Toolhost` (|toolhost.commands|).
M.subcommands = require('toolhost.commands').COMMANDS

--- `:Toolhost` without arguments: the subcommands and the running servers.
function M.status()
  require('toolhost.commands').status()
end

--- `:Toolhost[!] {subcommand} [args]` (|toolhost.commands|).
---@param opts {args: string, fargs: string[], bang?: boolean}
function M.command(opts)
  require('toolhost.commands').command(opts)
end

--- Completion of `:Toolhost`.
---@param arg_lead string
---@param line string
---@return string[]
function M.complete(arg_lead, line)
  return require('toolhost.commands').complete(arg_lead, line)
end

return M
