--- toolhost.mcp: The MCP bridge in Neovim: the status of the external MCP servers whose tools
--- the server offers (`toolhost/mcpServers`, `toolhost/mcpServersChanged`), its view
--- `:Toolhost mcp-servers` and its health report. Their tools' cards (kind `mcp`, tools named
--- `mcp__<server>__<tool>`) are drawn by |toolhost.cards.mcp|.

---@class toolhost.McpServerStatus
---@field name string
---@field transport 'stdio'|'streamable-http'
---@field state 'idle'|'starting'|'ready'|'reconnecting'|'failed'|'stopped'
---@field tools string[] public names (`mcp__<server>__<tool>`)
---@field protocolVersion? string
---@field error? string
---@field attempts integer

---@class toolhost.McpCardData
---@field server string
---@field tool string the tool's own (raw) name at its server
---@field structuredContent? any

local M = {}

local card_view = require('toolhost.cards.mcp')

--- The card view of MCP tools' calls lives with the other card views (|toolhost.cards.mcp|);
--- these names stay for callers of this module.
M.STRUCTURED_LINES = card_view.STRUCTURED_LINES
M.is_card = card_view.is_card
M.header = card_view.header
M.card_view = card_view.card_view
M.full_lines = card_view.full_lines

--- A JSON value as pretty-printed lines (|toolhost.json|).
M.json_lines = require('toolhost.json').lines

local ns = vim.api.nvim_create_namespace('toolhost_mcp_servers')

---@type table<integer, integer> client id -> its `:Toolhost mcp-servers` buffer
local views = {}

--- The latest status of a client's MCP servers (from `toolhost/mcpServers` or
--- `toolhost/mcpServersChanged`), or nil when the server has not told yet.
---@param client_id integer
---@return toolhost.McpServerStatus[]?
function M.servers(client_id)
  return require('toolhost.client').state(client_id).mcp_servers
end

--- Only well-formed entries, by name: the server's order is not promised, and a view that
--- reorders on every notification would move under the cursor.
---@param servers table
---@return toolhost.McpServerStatus[]
local function normalize(servers)
  local out = {}
  for _, s in ipairs(servers) do
    if type(s) == 'table' and type(s.name) == 'string' then
      table.insert(out, s)
    end
  end
  table.sort(out, function(a, b)
    return a.name < b.name
  end)
  return out
end

--- Records a client's MCP server status and redraws its view.
---@param client_id integer
---@param servers table
function M.set(client_id, servers)
  require('toolhost.client').state(client_id).mcp_servers = normalize(servers)
  local buf = views[client_id]
  if buf and vim.api.nvim_buf_is_valid(buf) then
    M.render(buf, client_id)
  end
end

--- `toolhost/mcpServersChanged {servers}`: a server's state or tool list changed.
---@param client_id integer
---@param params any
function M.on_changed(client_id, params)
  if type(params) == 'table' and type(params.servers) == 'table' then
    M.set(client_id, params.servers)
  end
end

--- Why a `toolhost/mcpServers` request failed, in words; a server without the method (one from
--- before the MCP bridge) is named as such.
---@param err {code?: integer, message?: string}
---@return string
function M.describe_error(err)
  if type(err) == 'table' and err.code == vim.lsp.protocol.ErrorCodes.MethodNotFound then
    return 'this toolhost server does not report MCP servers (toolhost/mcpServers: method not found; an older toolhost?)'
  end
  local msg = type(err) == 'table' and err.message or nil
  return 'toolhost/mcpServers failed: ' .. tostring(msg or vim.inspect(err))
end

--- Asks a client's server for the status of its MCP servers and records it.
---@param client vim.lsp.Client
---@param cb fun(err: string?, servers: toolhost.McpServerStatus[]?)
function M.fetch(client, cb)
  local cl = require('toolhost.client')
  cl.when_ready(client, function(c, err)
    if not c then
      return cb(err)
    end
    local ok = c:request('toolhost/mcpServers', vim.empty_dict(), function(rpc_err, res)
      if rpc_err then
        return cb(M.describe_error(rpc_err))
      end
      if type(res) ~= 'table' or type(res.servers) ~= 'table' then
        return cb('toolhost/mcpServers: the answer has no server list')
      end
      M.set(c.id, res.servers)
      cb(nil, M.servers(c.id))
    end)
    if not ok then
      cb('toolhost/mcpServers: the toolhost server is not running')
    end
  end)
end

---@param n integer
---@return string
local function tools_count(n)
  return ('%d tool%s'):format(n, n == 1 and '' or 's')
end

--- The highlight of a server's state: ready is fine, failed is an error, everything else is on
--- its way (or stopped on purpose) and worth a look.
---@param state string
---@return string
local function state_group(state)
  if state == 'ready' then
    return 'ToolhostExitOk'
  elseif state == 'failed' then
    return 'ToolhostExitError'
  end
  return 'ToolhostExitWarn'
end

---@alias toolhost.McpSpan {[1]: integer, [2]: integer, [3]: string} 0-based start, end and group

--- The lines of the status view: per server `name  state  transport  N tools  [error]` (columns
--- aligned), its tools indented beneath; and the highlights of each line.
---@param servers? toolhost.McpServerStatus[]
---@return string[] lines
---@return table<integer, toolhost.McpSpan[]> spans by 1-based line
function M.status_lines(servers)
  if not servers then
    return { 'the server has not reported its MCP servers yet' }, {}
  end
  if #servers == 0 then
    local none = 'no MCP servers configured'
    return { none }, { { { 0, #none, 'ToolhostCardInfo' } } }
  end
  local widths = { 0, 0, 0 }
  local rows = {}
  for _, s in ipairs(servers) do
    local row = {
      s.name,
      tostring(s.state or '?'),
      tostring(s.transport or '?'),
      tools_count(type(s.tools) == 'table' and #s.tools or 0),
    }
    for i = 1, 3 do
      widths[i] = math.max(widths[i], vim.fn.strdisplaywidth(row[i]))
    end
    table.insert(rows, row)
  end
  local lines, spans = {}, {}
  for i, s in ipairs(servers) do
    local row = rows[i]
    local line, hl = '', {}
    for col = 1, 4 do
      local start = #line
      local cell = row[col]
      line = line .. cell
      if col == 1 then
        table.insert(hl, { start, #line, 'ToolhostMcpServer' })
      elseif col == 2 then
        table.insert(hl, { start, #line, state_group(cell) })
      end
      if col < 4 then
        line = line .. (' '):rep(widths[col] - vim.fn.strdisplaywidth(cell) + 2)
      end
    end
    if type(s.error) == 'string' and s.error ~= '' then
      line = line .. '  '
      local start = #line
      line = line .. (s.error:gsub('%s*\n%s*', ' '))
      table.insert(hl, { start, #line, 'ToolhostExitError' })
    end
    table.insert(lines, line)
    spans[#lines] = hl
    for _, tool in ipairs(type(s.tools) == 'table' and s.tools or {}) do
      table.insert(lines, '  ' .. tostring(tool))
    end
  end
  return lines, spans
end

--- Fills a status view with its client's latest status.
---@param buf integer
---@param client_id integer
function M.render(buf, client_id)
  local lines, spans = M.status_lines(M.servers(client_id))
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for row, hl in pairs(spans) do
    for _, span in ipairs(hl) do
      vim.api.nvim_buf_set_extmark(buf, ns, row - 1, span[1], { end_col = span[2], hl_group = span[3] })
    end
  end
end

--- Opens `toolhost://mcp-servers/<session>` for a client, asking its server first: the status
--- of its MCP servers, kept current by `toolhost/mcpServersChanged` while the buffer exists.
---@param client vim.lsp.Client
---@param cb? fun(err: string?, buf: integer?)
function M.open(client, cb)
  M.fetch(client, function(err)
    if err then
      vim.notify('toolhost: ' .. err, vim.log.levels.WARN)
      return cb and cb(err)
    end
    local session = require('toolhost.client').state(client.id).session_id or tostring(client.id)
    local name = 'toolhost://mcp-servers/' .. session
    local buf
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(b) == name then
        buf = b
      end
    end
    if not buf then
      buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_name(buf, name)
    end
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'toolhost-mcp-servers'
    vim.b[buf].toolhost_client = client.id
    vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, desc = 'toolhost: close the MCP servers window' })
    views[client.id] = buf
    M.render(buf, client.id)
    local win = vim.fn.bufwinid(buf)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
    else
      vim.cmd('botright split')
      vim.api.nvim_win_set_buf(0, buf)
    end
    vim.wo.wrap = false
    vim.wo.number = false
    vim.wo.relativenumber = false
    if cb then
      cb(nil, buf)
    end
  end)
end

--- Forgets a client's view (its server exited); the buffer says so instead of showing a status
--- that no longer changes.
---@param client_id integer
function M.forget(client_id)
  local buf = views[client_id]
  views[client_id] = nil
  if buf and vim.api.nvim_buf_is_valid(buf) then
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 'the toolhost server of this view has stopped' })
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  end
end

--- One health line per MCP server of a client's server.
---@param health table vim.health
---@param s toolhost.McpServerStatus
---@param prefix string the client, when several run
local function report(health, s, prefix)
  local transport = tostring(s.transport or '?')
  local attempts = tonumber(s.attempts) or 0
  local err = (type(s.error) == 'string' and s.error ~= '') and (': ' .. s.error) or ''
  if s.state == 'ready' then
    local proto = type(s.protocolVersion) == 'string' and (', protocol ' .. s.protocolVersion) or ''
    local n = type(s.tools) == 'table' and #s.tools or 0
    health.ok(('%s%s: ready, %s%s (%s)'):format(prefix, s.name, tools_count(n), proto, transport))
  elseif s.state == 'failed' then
    health.error(
      ('%s%s: failed after %d attempt%s (%s)%s'):format(
        prefix,
        s.name,
        attempts,
        attempts == 1 and '' or 's',
        transport,
        err ~= '' and err or ': no error reported'
      )
    )
  else
    health.warn(
      ('%s%s: %s, %d attempt%s (%s)%s'):format(
        prefix,
        s.name,
        tostring(s.state),
        attempts,
        attempts == 1 and '' or 's',
        transport,
        err
      )
    )
  end
end

--- The `MCP servers` section of `:checkhealth toolhost`: each running client's server is asked
--- (`toolhost/mcpServers`, synchronously, briefly) and every MCP server reported.
---@param timeout_ms? integer
function M.check(timeout_ms)
  local health = vim.health
  local cl = require('toolhost.client')
  health.start('toolhost: MCP servers')
  local clients = cl.clients(true)
  if #clients == 0 then
    health.info('no toolhost server running: a running server reports its MCP servers')
    return
  end
  for _, c in ipairs(clients) do
    local prefix = #clients > 1 and ('[%s] '):format(c.root_dir or tostring(c.id)) or ''
    if not c.initialized then
      health.info(prefix .. 'the server is still starting')
    else
      local res, why = c:request_sync('toolhost/mcpServers', vim.empty_dict(), timeout_ms or 2000)
      if not res then
        health.warn(prefix .. 'toolhost/mcpServers got no answer: ' .. tostring(why or 'the server is not running'))
      elseif res.err then
        health.warn(prefix .. M.describe_error(res.err))
      elseif type(res.result) ~= 'table' or type(res.result.servers) ~= 'table' then
        health.warn(prefix .. 'toolhost/mcpServers: the answer has no server list')
      else
        M.set(c.id, res.result.servers)
        local servers = M.servers(c.id) or {}
        if #servers == 0 then
          health.info(prefix .. 'no MCP servers configured')
        end
        for _, s in ipairs(servers) do
          report(health, s, prefix)
        end
      end
    end
  end
end

return M
