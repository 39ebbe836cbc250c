--- toolhost.agent_options: `:Toolhost agent-options` — the settings a hosted ACP agent offers
--- for its chat (its mode, its model, its effort; |:Toolhost-agent-options|). The settings are asked
--- with `toolhost/agentOptions` (which starts the agent and opens its chat when it has none yet),
--- one is chosen with two |vim.ui.select()| pickers (the setting, then its value) and set with
--- `toolhost/agentSetOption`. The chat keeps what the server answers (`toolhost.chat`): its
--- header shows the mode and the model, and its next prompt continues that chat.

local M = {}

---@class toolhost.AgentOptionValue
---@field value string the id `toolhost/agentSetOption` takes
---@field name string how the agent names it
---@field description? string
---@field group? string

---@class toolhost.AgentOption
---@field id string
---@field name string
---@field description? string
---@field category? string `mode`, `model`, `thought_level`, or the agent's own word
---@field current string|boolean a value id (a select) or on/off
---@field values toolhost.AgentOptionValue[] empty for an on/off setting

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO)
end

--- The options of a `toolhost/agentOptions` answer (or of an `options` update) that are well
--- formed; the rest is dropped.
---@param value any
---@return toolhost.AgentOption[]
function M.valid(value)
  local out = {}
  for _, o in ipairs(type(value) == 'table' and value or {}) do
    if type(o) == 'table' and type(o.id) == 'string' and o.current ~= nil then
      local values = {}
      for _, v in ipairs(type(o.values) == 'table' and o.values or {}) do
        if type(v) == 'table' and type(v.value) == 'string' then
          table.insert(values, v)
        end
      end
      table.insert(out, vim.tbl_extend('force', o, { values = values }))
    end
  end
  return out
end

--- Whether a JSON value is meant (an absent `description` decodes as vim.NIL).
---@param v any
---@return boolean
local function given(v)
  return type(v) == 'string' and v ~= ''
end

--- How an option's current value reads: the name of the chosen value (its id when the agent did
--- not list it), `true`/`false` for an on/off setting.
---@param option toolhost.AgentOption
---@return string
function M.current_name(option)
  if type(option.current) == 'boolean' then
    return tostring(option.current)
  end
  for _, v in ipairs(option.values) do
    if v.value == option.current then
      return given(v.name) and v.name or v.value
    end
  end
  return tostring(option.current)
end

--- An option as the first picker and the chat's header show it: `Model: Opus`.
---@param option toolhost.AgentOption
---@return string
function M.label(option)
  return ('%s: %s'):format(given(option.name) and option.name or option.id, M.current_name(option))
end

--- A value as the second picker shows it: `[{group}] {name} — {description}`, ` (current)` on the
--- value in effect.
---@param option toolhost.AgentOption
---@param value toolhost.AgentOptionValue|boolean
---@return string
function M.value_label(option, value)
  if type(value) == 'boolean' then
    return tostring(value) .. (value == option.current and ' (current)' or '')
  end
  local text = given(value.name) and value.name or value.value
  if given(value.group) then
    text = ('[%s] %s'):format(value.group, text)
  end
  if given(value.description) then
    text = text .. ' — ' .. value.description:gsub('%s*\n%s*', ' ')
  end
  return text .. (value.value == option.current and ' (current)' or '')
end

--- The options the chat's header names, in this order: the mode, then the model.
M.HEADER_CATEGORIES = { 'mode', 'model' }

--- The header's part for a chat's settings: `Mode: Default · Model: Opus` (the options of
--- category mode and model; empty when the agent offers neither).
---@param options? toolhost.AgentOption[]
---@return string
function M.summary(options)
  local parts = {}
  for _, category in ipairs(M.HEADER_CATEGORIES) do
    for _, o in ipairs(options or {}) do
      if o.category == category then
        table.insert(parts, M.label(o))
        break
      end
    end
  end
  return table.concat(parts, ' · ')
end

--- Sends a request whose answer is the chat's settings (`toolhost/agentOptions`,
--- `toolhost/agentSetOption`); `cb(err, result)` with the JSON-RPC error's message.
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param cb fun(err: string?, result: {chatId: string, options: toolhost.AgentOption[]}?)
local function request(client, method, params, cb)
  require('toolhost.client').when_ready(client, function(c, ready_err)
    if not c then
      return cb(tostring(ready_err))
    end
    local ok = c:request(method, params, function(err, result)
      if err then
        return cb(err.message or vim.inspect(err))
      end
      if type(result) ~= 'table' or type(result.chatId) ~= 'string' then
        return cb('the server sent no settings')
      end
      cb(nil, { chatId = result.chatId, options = M.valid(result.options) })
    end)
    if not ok then
      cb('the toolhost server is not running')
    end
  end)
end

--- The chat whose settings `:Toolhost agent-options` reads: the chat's own hosted agent and chat
--- (`agent` nil or the chat's), else `agent` in a new chat (no agent: nil — toolhost's own agent
--- has no settings there).
---@param client_id integer the server asked
---@param agent? string
---@return {agent: string?, chat_id: string?, fresh: boolean}
local function target(client_id, agent)
  local chat = require('toolhost.chat').state()
  local ours = chat.client_id == client_id
  if agent == 'toolhost' or agent == '' then
    agent = nil
  end
  if agent == nil or (ours and agent == chat.agent) then
    return { agent = ours and chat.agent or nil, chat_id = ours and chat.chat_id or nil, fresh = false }
  end
  return { agent = agent, chat_id = nil, fresh = true }
end

---@class toolhost.AgentOptionsOpts
---@field agent? string the hosted agent (default: the chat's); another than the chat's opens a new chat
---@field client? vim.lsp.Client the server (default: the chat's, else the current one)

--- `:Toolhost agent-options [{name}]`: asks the settings of the chat's hosted agent (or of
--- `opts.agent`, in a new chat), lets the person pick one setting and its value, and sets it.
--- Errors are notified at ERROR level. `cb(err, result)` with the settings as set (err `no
--- choice` when a picker was dismissed, the settings as they were).
---@param opts? toolhost.AgentOptionsOpts
---@param cb? fun(err: string?, result: table?)
function M.choose(opts, cb)
  opts = opts or {}
  local chat = require('toolhost.chat')
  local function fail(msg)
    notify(msg, vim.log.levels.ERROR)
    if cb then
      cb(msg)
    end
  end
  local c = opts.client or chat.server()
  if not c then
    return fail('no toolhost server for this buffer or directory')
  end
  local chosen = target(c.id, opts.agent)
  if not chosen.agent then
    return fail('the chat has no hosted agent; name one: :Toolhost agent-options {name}')
  end
  if chosen.fresh and chat.running() then
    return fail('a prompt is still running (stop it first)')
  end
  local agent = chosen.agent --[[@as string]]
  local params = { agent = agent, chatId = chosen.chat_id }
  request(c, 'toolhost/agentOptions', params, function(err, result)
    if err or not result then
      return fail(('the settings of %s: %s'):format(agent, tostring(err)))
    end
    chat.adopt_options(c, agent, result)
    local options = result.options
    if #options == 0 then
      return fail(('%s offers no settings'):format(agent))
    end
    local title = require('toolhost.agents').title(c.id, agent)
    vim.ui.select(options, { prompt = title .. ' setting: ', format_item = M.label }, function(option)
      if not option then
        return cb and cb('no choice', result)
      end
      local values = #option.values > 0 and option.values or { true, false }
      local pick_prompt = (given(option.name) and option.name or option.id) .. ': '
      vim.ui.select(values, {
        prompt = pick_prompt,
        format_item = function(v)
          return M.value_label(option, v)
        end,
      }, function(value)
        if value == nil then
          return cb and cb('no choice', result)
        end
        M.set(c, agent, result.chatId, option.id, type(value) == 'table' and value.value or value, cb)
      end)
    end)
  end)
end

--- Sets one setting of a hosted agent's chat (`toolhost/agentSetOption`); the chat takes the
--- settings the server answers. Errors are notified at ERROR level.
---@param client vim.lsp.Client
---@param agent string
---@param chat_id string
---@param option string the option's id
---@param value string|boolean a value id, or on/off
---@param cb? fun(err: string?, result: table?)
function M.set(client, agent, chat_id, option, value, cb)
  local params = { chatId = chat_id, option = option, value = value }
  request(client, 'toolhost/agentSetOption', params, function(err, result)
    if err or not result then
      notify(('setting %s of %s failed: %s'):format(option, agent, tostring(err)), vim.log.levels.ERROR)
      return cb and cb(err)
    end
    require('toolhost.chat').adopt_options(client, agent, result)
    if cb then
      cb(nil, result)
    end
  end)
end

return M
