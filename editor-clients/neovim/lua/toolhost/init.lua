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
  local c = require('toolhost.client').current(0, start ~= false)
  if not c then
    notify('no toolhost server for this buffer or directory', vim.log.levels.WARN)
  end
  return c
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
    if cb then
      cb(nil, buf)
    end
  end)
end

--- Removes the inline cards from every buffer.
function M.clear()
  require('toolhost.inline').clear()
end

---@type table<string, {run: fun(args: string), complete?: fun(arg_lead: string, line: string): string[], desc: string}>
M.subcommands = {
  call = {
    desc = 'call {tool} {json}: run a tool and show its card',
    run = function(args)
      local tool, json = args:match('^(%S+)%s*(.*)$')
      if not tool then
        return notify('usage: :Toolhost call {tool} {json}', vim.log.levels.ERROR)
      end
      local arguments = vim.empty_dict()
      if json ~= '' then
        local ok, decoded = pcall(vim.json.decode, json)
        if not ok or type(decoded) ~= 'table' then
          return notify('the arguments must be a JSON object: ' .. tostring(decoded), vim.log.levels.ERROR)
        end
        arguments = decoded
      end
      M.call(tool, arguments)
    end,
    complete = function(arg_lead, line)
      if line:match('^%s*%S+%s+call%s+%S+%s') then
        return {}
      end
      local c = require('toolhost.client').current(0, false)
      local names = c and require('toolhost.client').tool_names(c) or {}
      return vim.tbl_filter(function(n)
        return vim.startswith(n, arg_lead)
      end, names)
    end,
  },
  tools = {
    desc = 'list the tools',
    run = function()
      M.tools()
    end,
  },
  cards = {
    desc = 'open the cards of this session (newest first)',
    run = function()
      M.cards()
    end,
  },
  replay = {
    desc = 'replay {session}: the cards of a past session',
    run = function(args)
      local id = vim.trim(args)
      if id == '' then
        local c = require('toolhost.client').current(0, false)
        id = c and require('toolhost.client').state(c.id).session_id or ''
      end
      if id == '' then
        return notify('usage: :Toolhost replay {session}', vim.log.levels.ERROR)
      end
      M.replay(id)
    end,
    complete = function(arg_lead)
      local cl = require('toolhost.client')
      local c = cl.current(0, false)
      if not c then
        return {}
      end
      local err, res = cl.request_sync(c, 'toolhost/listSessions', vim.empty_dict(), 2000)
      local out = {}
      for _, s in ipairs((not err and res and res.sessions) or {}) do
        if vim.startswith(s.id, arg_lead) then
          table.insert(out, s.id)
        end
      end
      return out
    end,
  },
  sessions = {
    desc = 'list the sessions of this workspace',
    run = function()
      M.sessions()
    end,
  },
  clear = {
    desc = 'remove the inline cards',
    run = function()
      M.clear()
    end,
  },
  start = {
    desc = 'start the server for this buffer (or the working directory)',
    run = function()
      M.start()
    end,
  },
  stop = {
    desc = 'stop the servers',
    run = function()
      M.stop()
    end,
  },
}

--- `:Toolhost` without arguments: the subcommands and the running servers.
function M.status()
  local cl = require('toolhost.client')
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  local chunks = { { 'Toolhost subcommands:\n', 'Title' } }
  for _, n in ipairs(names) do
    table.insert(chunks, { ('  %-9s %s\n'):format(n, M.subcommands[n].desc) })
  end
  local clients = cl.clients()
  if #clients == 0 then
    table.insert(chunks, { 'no toolhost server running' })
  end
  for i, c in ipairs(clients) do
    table.insert(chunks, {
      ('server %d: root %s, session %s%s'):format(
        c.id,
        c.root_dir or '?',
        cl.state(c.id).session_id or '?',
        i < #clients and '\n' or ''
      ),
    })
  end
  vim.api.nvim_echo(chunks, false, {})
end

--- `:Toolhost {subcommand} [args]`.
---@param opts {args: string, fargs: string[]}
function M.command(opts)
  local sub, rest = opts.args:match('^%s*(%S+)%s*(.-)%s*$')
  if not sub then
    return M.status()
  end
  local entry = M.subcommands[sub]
  if not entry then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return notify(
      ('unknown subcommand %s; one of: %s'):format(vim.inspect(sub or ''), table.concat(names, ', ')),
      vim.log.levels.ERROR
    )
  end
  entry.run(rest or '')
end

--- Completion of `:Toolhost`.
---@param arg_lead string
---@param line string
---@return string[]
function M.complete(arg_lead, line)
  local sub = line:match('^%s*%S+%s+(%S+)%s')
  if sub then
    local entry = M.subcommands[sub]
    return entry and entry.complete and entry.complete(arg_lead, line) or {}
  end
  local names = vim.tbl_filter(function(n)
    return vim.startswith(n, arg_lead)
  end, vim.tbl_keys(M.subcommands))
  table.sort(names)
  return names
end

return M
