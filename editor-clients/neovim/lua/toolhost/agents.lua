--- toolhost.agents: the ACP agents a server hosts (`toolhost/listAgents`, |toolhost-agents|):
--- Claude Code, Codex, Gemini CLI and the user's `[acp.agents.<name>]`. The list is asked once
--- per server and kept (the server reads it from its configuration at start), so completing
--- `:Toolhost agent {name}` and naming the agent in the chat header cost no request each time.

local M = {}

---@class toolhost.HostedAgent
---@field name string what `agent =` of `toolhost/agentPrompt` names it
---@field title string how it calls itself (`Claude Code`)
---@field command? string the program the server starts
---@field installed boolean whether that program was found
---@field package? string the npm package that installs it
---@field configured? boolean from the user's `[acp.agents.<name>]`

---@type table<integer, toolhost.HostedAgent[]> by client id
local cache = {}

---@param value any
---@return toolhost.HostedAgent[]
local function agents_of(value)
  local out = {}
  for _, a in ipairs(type(value) == 'table' and type(value.agents) == 'table' and value.agents or {}) do
    if type(a) == 'table' and type(a.name) == 'string' then
      table.insert(out, a)
    end
  end
  return out
end

--- The agents of a server as far as this editor knows them (nil before the first answer).
---@param client_id integer
---@return toolhost.HostedAgent[]?
function M.cached(client_id)
  return cache[client_id]
end

--- Records a `toolhost/listAgents` answer (tests, a caller that asked itself).
---@param client_id integer
---@param result table `{agents = …}`
---@return toolhost.HostedAgent[]
function M.remember(client_id, result)
  cache[client_id] = agents_of(result)
  return cache[client_id]
end

--- The agents of `client`: the kept list, else asked now. `cb(err, agents)`.
---@param client vim.lsp.Client
---@param cb fun(err: string?, agents: toolhost.HostedAgent[]?)
function M.list(client, cb)
  if cache[client.id] then
    return cb(nil, cache[client.id])
  end
  require('toolhost.client').when_ready(client, function(c, ready_err)
    if not c then
      return cb(tostring(ready_err))
    end
    local ok = c:request('toolhost/listAgents', vim.empty_dict(), function(err, result)
      if err then
        return cb(err.message or vim.inspect(err))
      end
      cb(nil, M.remember(c.id, result))
    end)
    if not ok then
      cb('the toolhost server is not running')
    end
  end)
end

--- The agents of `client`, asked and waited for when not kept yet (completion, the chat header):
--- nil when the server did not answer within `ms`.
---@param client vim.lsp.Client
---@param ms? integer
---@return toolhost.HostedAgent[]?
function M.list_sync(client, ms)
  if cache[client.id] or not client.initialized then
    return cache[client.id]
  end
  local cl = require('toolhost.client')
  local err, result = cl.request_sync(client, 'toolhost/listAgents', vim.empty_dict(), ms or 2000)
  if err or type(result) ~= 'table' then
    return nil
  end
  return M.remember(client.id, result)
end

--- The agent `name` of a server's list, or nil.
---@param client_id integer
---@param name string
---@return toolhost.HostedAgent?
function M.find(client_id, name)
  for _, a in ipairs(cache[client_id] or {}) do
    if a.name == name then
      return a
    end
  end
  return nil
end

--- How the chat names an agent: its title when known, else its name.
---@param client_id integer
---@param name string
---@return string
function M.title(client_id, name)
  local a = M.find(client_id, name)
  return a and type(a.title) == 'string' and a.title ~= '' and a.title or name
end

--- One line of `:Toolhost agents`: `claude  Claude Code  installed`, or the install command.
---@param agent toolhost.HostedAgent
---@param width integer the widest name
---@return string
function M.line(agent, width)
  local state
  if agent.installed then
    state = 'installed'
  elseif type(agent.package) == 'string' and agent.package ~= '' then
    state = 'npm install -g ' .. agent.package
  else
    state = 'not installed: ' .. tostring(agent.command or '?')
  end
  local configured = agent.configured and ' (configured)' or ''
  return ('%-' .. width .. 's  %s  %s%s'):format(agent.name, tostring(agent.title or agent.name), state, configured)
end

--- `:Toolhost agents`: the server's agents, one line each, echoed.
---@param client vim.lsp.Client
---@param cb? fun(err: string?, lines: string[]?)
function M.show(client, cb)
  M.list(client, function(err, agents)
    if err or not agents then
      vim.notify('toolhost: listing the agents failed: ' .. tostring(err), vim.log.levels.ERROR)
      return cb and cb(err)
    end
    local width = 0
    for _, a in ipairs(agents) do
      width = math.max(width, #a.name)
    end
    local lines = {}
    for _, a in ipairs(agents) do
      table.insert(lines, M.line(a, width))
    end
    local chunks = { { 'ACP agents (:Toolhost agent {name} {task}):', 'Title' } }
    for _, l in ipairs(#lines > 0 and lines or { 'none' }) do
      table.insert(chunks, { '\n  ' .. l })
    end
    vim.api.nvim_echo(chunks, false, {})
    if cb then
      cb(nil, lines)
    end
  end)
end

--- The names completing `arg_lead` among the current server's agents.
---@param arg_lead string
---@return string[]
function M.complete(arg_lead)
  local c = require('toolhost.client').current(0, false)
  local out = {}
  for _, a in ipairs(c and M.list_sync(c) or {}) do
    if vim.startswith(a.name, arg_lead) then
      table.insert(out, a.name)
    end
  end
  return out
end

--- Drops a server's list (it exited; a new one may be configured otherwise).
---@param client_id integer
function M.forget(client_id)
  cache[client_id] = nil
end

return M
