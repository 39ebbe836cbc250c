--- toolhost.checkpoints: named points of the session and going back to one
--- (|:Toolhost-checkpoint|, |:Toolhost-checkpoints|, |:Toolhost-checkpoint-restore|), through the
--- server's internal `checkpoint` tool called like any tool (`toolhost/callTool`). A checkpoint
--- is a named one or the start of an own-agent turn (named by its run id). A restore is one
--- recorded call undoing every file change after the checkpoint: its card is a diff card like a
--- revert's, so reverting it (`u` on it in a cards buffer, |:Toolhost-revert|) brings the changes
--- back. Every call's card reaches the cards buffer as any call's does.

local M = {}

---@class toolhost.Checkpoint
---@field name string the checkpoint's name, or the turn's run id
---@field kind 'named'|'turn'
---@field prompt? string what the turn was asked
---@field changedAfter integer how many calls changed files since

---@class toolhost.CheckpointOpts
---@field client? vim.lsp.Client the server to ask (default: the current buffer's, started if needed)
---@field confirm? boolean ask before a restore (default true; `:Toolhost!` skips it)

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO)
end

--- The server of `opts` or of the current buffer (nil reported).
---@param opts toolhost.CheckpointOpts
---@return vim.lsp.Client?
local function server(opts)
  return require('toolhost.client').current_or_warn(opts.client)
end

local text_of = require('toolhost.result_text')

--- Runs the `checkpoint` tool. A failed call is reported at ERROR level with the server's message
--- and its code (`CHECKPOINT_UNKNOWN`, …), which the message alone does not name.
--- `cb(err, value, response)`: `value` the call's value; `response` `{sessionId, callId, result,
--- card}`.
---@param client vim.lsp.Client
---@param arguments {action: string, name?: string}
---@param cb fun(err: string?, value: table?, response: table?)
local function run(client, arguments, cb)
  require('toolhost').call('checkpoint', arguments, { client = client, echo = false }, function(err, res)
    if err then
      return cb(err, nil, res) -- reported by call()
    end
    local result = type(res) == 'table' and res.result or nil
    if type(result) ~= 'table' then
      notify('checkpoint: the server sent no result', vim.log.levels.ERROR)
      return cb('no result', nil, res)
    end
    if result.isError then
      local e = type(result.error) == 'table' and result.error or {}
      local msg = type(e.message) == 'string' and e.message or vim.inspect(result.error)
      local code = type(e.info) == 'table' and type(e.info.code) == 'string' and e.info.code or nil
      msg = code and ('%s (%s)'):format(msg, code) or msg
      notify(('checkpoint %s failed: %s'):format(arguments.action, msg), vim.log.levels.ERROR)
      return cb(msg, nil, res)
    end
    cb(nil, type(result.value) == 'table' and result.value or {}, res)
  end)
end

--- `:Toolhost checkpoint [name]`: makes a checkpoint here (without `name` it is asked for with
--- |vim.ui.input()|) and says so with the server's text. `cb(err, response)`.
---@param name? string
---@param opts? toolhost.CheckpointOpts
---@param cb? fun(err: string?, response: table?)
function M.create(name, opts, cb)
  opts, cb = opts or {}, cb or function() end
  local c = server(opts)
  if not c then
    return cb('no toolhost server')
  end
  local function create(chosen)
    if not chosen or vim.trim(chosen) == '' then
      notify('checkpoint cancelled')
      return cb('cancelled')
    end
    run(c, { action = 'create', name = vim.trim(chosen) }, function(err, _, res)
      if not err then
        notify(text_of(res.result))
      end
      cb(err, res)
    end)
  end
  if name and name ~= '' then
    return create(name)
  end
  vim.ui.input({ prompt = 'Checkpoint name: ' }, create)
end

--- The session's checkpoints, oldest first (asking is itself a recorded call, with a card).
--- `cb(err, checkpoints)`.
---@param opts? toolhost.CheckpointOpts
---@param cb fun(err: string?, checkpoints: toolhost.Checkpoint[]?)
function M.list(opts, cb)
  local c = server(opts or {})
  if not c then
    return cb('no toolhost server')
  end
  run(c, { action = 'list' }, function(err, value)
    if err then
      return cb(err)
    end
    local out = {}
    for _, cp in ipairs(type(value.checkpoints) == 'table' and value.checkpoints or {}) do
      if type(cp) == 'table' and type(cp.name) == 'string' then
        table.insert(out, cp)
      end
    end
    cb(nil, out)
  end)
end

--- A turn's prompt on one line, shortened: a picker item must stay one line.
---@param prompt string
---@return string
local function short(prompt)
  local line = vim.trim((prompt:gsub('%s+', ' ')))
  if vim.fn.strchars(line) > 60 then
    return vim.fn.strcharpart(line, 0, 59) .. '…'
  end
  return line
end

--- How a checkpoint reads in the list and the picker: `cp1: 2 calls changed files since`,
--- `run_… before the turn “fix the test”: 0 calls changed files since`.
---@param cp toolhost.Checkpoint
---@return string
function M.describe(cp)
  local turn = ''
  if cp.kind == 'turn' and type(cp.prompt) == 'string' then
    turn = (' before the turn “%s”'):format(short(cp.prompt))
  end
  local n = tonumber(cp.changedAfter) or 0
  return ('%s%s: %d call%s changed files since'):format(cp.name, turn, n, n == 1 and '' or 's')
end

--- `:Toolhost checkpoints`: the session's checkpoints, oldest first, one line each, echoed.
--- `cb(err, lines)`.
---@param opts? toolhost.CheckpointOpts
---@param cb? fun(err: string?, lines: string[]?)
function M.show(opts, cb)
  M.list(opts, function(err, checkpoints)
    if err or not checkpoints then
      return cb and cb(err)
    end
    local lines = vim.tbl_map(M.describe, checkpoints)
    local chunks = { { 'Checkpoints, oldest first (:Toolhost checkpoint-restore {name}):', 'Title' } }
    for _, l in ipairs(#lines > 0 and lines or { 'none (:Toolhost checkpoint {name} makes one)' }) do
      table.insert(chunks, { '\n  ' .. l })
    end
    vim.api.nvim_echo(chunks, false, {})
    if cb then
      cb(nil, lines)
    end
  end)
end

--- The checkpoints a restore can pick from, newest first (the likely choice on top). Of several
--- named alike only the newest: restoring a name goes back to its latest checkpoint.
---@param checkpoints toolhost.Checkpoint[] oldest first
---@return toolhost.Checkpoint[]
local function choices(checkpoints)
  local out, seen = {}, {}
  for i = #checkpoints, 1, -1 do
    local cp = checkpoints[i]
    if not seen[cp.name] then
      seen[cp.name] = true
      table.insert(out, cp)
    end
  end
  return out
end

--- `:Toolhost[!] checkpoint-restore [name]`: undoes every file change after the checkpoint
--- `name` (without it one is picked with |vim.ui.select()| from the list), after a confirmation
--- unless `opts.confirm == false`. The restore's card is a diff card; reverting it brings the
--- changes back. `cb(err, response)`: `response.callId` is the restoring call.
---@param name? string
---@param opts? toolhost.CheckpointOpts
---@param cb? fun(err: string?, response: table?)
function M.restore(name, opts, cb)
  opts, cb = opts or {}, cb or function() end
  local c = server(opts)
  if not c then
    return cb('no toolhost server')
  end
  local function restore(chosen)
    if opts.confirm ~= false then
      local question = ('Restore checkpoint %s? Every change after it is undone (revertible)'):format(chosen)
      if vim.fn.confirm(question, '&Restore\n&Cancel', 2, 'Question') ~= 1 then
        notify('restore cancelled')
        return cb('cancelled')
      end
    end
    run(c, { action = 'restore', name = chosen }, function(err, _, res)
      if not err then
        notify(text_of(res.result))
      end
      cb(err, res)
    end)
  end
  if name and name ~= '' then
    return restore(name)
  end
  M.list({ client = c }, function(err, checkpoints)
    if err or not checkpoints then
      return cb(err)
    end
    if #checkpoints == 0 then
      notify('no checkpoint in this session (:Toolhost checkpoint {name} makes one)', vim.log.levels.WARN)
      return cb('no checkpoint')
    end
    vim.ui.select(choices(checkpoints), {
      prompt = 'Restore which checkpoint?',
      format_item = M.describe,
      kind = 'toolhost.checkpoint',
    }, function(cp)
      if not cp then
        notify('restore cancelled')
        return cb('cancelled')
      end
      restore(cp.name)
    end)
  end)
end

return M
