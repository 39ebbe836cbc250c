--- toolhost.worktrees: worktree sessions (|toolhost-worktrees|): sessions working in a git
--- worktree of their own, so several agents work at once without touching the workspace; their
--- changes come back hunk by hunk through review. Made (`toolhost/worktreeNew`), listed
--- (`toolhost/listSessions`), shown live in the cards buffer (`toolhost/watchSession`, then a
--- replay of the session's log on each `toolhost/sessionChanged`), applied
--- (`toolhost/worktreeApply`: the hunks arrive as ordinary `toolhost/review` requests, the cards
--- as ordinary `toolhost/card`s) and discarded (`toolhost/worktreeDiscard`).

local M = {}

---@class toolhost.Worktree
---@field name string
---@field sessionId string
---@field root string the folder its session works in
---@field branch? string `toolhost/<name>`; absent for a copy of a folder outside git
---@field state 'inUse'|'idle' `inUse` while a toolhost process works in it
---@field changedFiles? integer files changed since it started (absent when git failed)
---@field agent? string who made its latest call
---@field createdAt integer epoch milliseconds

---@class toolhost.WorktreeOpts
---@field client? vim.lsp.Client the server to ask (default: the current buffer's, started if needed)
---@field confirm? boolean ask before a discard (default true; `:Toolhost!` skips it)

--- The item of the |:Toolhost-worktrees| picker that goes back to the workspace's own cards.
M.WORKSPACE = 'This workspace'

local watched = require('toolhost.cards.watched')

---@type table<integer, {again: boolean}> clients with a replay of their watched session on the way
local replaying = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO)
end

--- The server of `opts` or of the current buffer (nil reported).
---@param opts toolhost.WorktreeOpts
---@return vim.lsp.Client?
local function server(opts)
  return require('toolhost.client').current_or_warn(opts.client)
end

--- Sends a request once the client is ready. An error answer becomes its message followed by the
--- `data.code` the server adds (`WORKTREE_IN_USE`, `WORKTREE_UNKNOWN`, …), which the message
--- alone does not name. `cb(err, result)`.
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param cb fun(err: string?, result: any)
local function request(client, method, params, cb)
  require('toolhost.client').when_ready(client, function(c, not_ready)
    if not c then
      return cb(not_ready)
    end
    local sent = c:request(method, params, function(rpc_err, result)
      if not rpc_err then
        return cb(nil, result)
      end
      local msg = type(rpc_err.message) == 'string' and rpc_err.message or vim.inspect(rpc_err)
      local code = type(rpc_err.data) == 'table' and rpc_err.data.code or nil
      cb(type(code) == 'string' and ('%s (%s)'):format(msg, code) or msg)
    end)
    if not sent then
      cb(method .. ': the toolhost server is not running')
    end
  end)
end

--- The text blocks of a tool result, joined (an error's message when it has none).
---@param result table
---@return string
local function text_of(result)
  local text = require('toolhost.result_text')(result)
  if text == '' and type(result.error) == 'table' and type(result.error.message) == 'string' then
    return result.error.message
  end
  return text
end

--- What |:Toolhost-worktree-new| says of a new worktree session: its name, session, branch and
--- folder, and the line that starts an agent there.
---@param wt toolhost.Worktree
---@return string
function M.created_text(wt)
  local where = wt.branch and ('branch ' .. wt.branch) or 'a copy of the folder (no git)'
  return ('worktree session %s: session %s, %s, in %s\n'):format(wt.name, wt.sessionId, where, wt.root)
    .. ('an agent works there with: toolhost agent --session %s "…"'):format(wt.sessionId)
end

--- How a worktree session reads in the pickers: `w1 · toolhost/w1 · idle · 2 files · claude-code`
--- (the files and the agent only when the server knows them).
---@param wt toolhost.Worktree
---@return string
function M.describe(wt)
  local parts = { wt.name, wt.branch or 'copy', wt.state == 'inUse' and 'in use' or 'idle' }
  local files = tonumber(wt.changedFiles)
  if files then
    table.insert(parts, ('%d file%s'):format(files, files == 1 and '' or 's'))
  end
  if type(wt.agent) == 'string' and wt.agent ~= '' then
    table.insert(parts, wt.agent)
  end
  return table.concat(parts, ' · ')
end

--- `:Toolhost worktree-new [name]`: makes a worktree session (the server names it `wt-…` without
--- `name`) and says its name, session and the command that starts an agent there. `cb(err,
--- worktree)`.
---@param name? string
---@param opts? toolhost.WorktreeOpts
---@param cb? fun(err: string?, worktree: toolhost.Worktree?)
function M.new(name, opts, cb)
  cb = cb or function() end
  local c = server(opts or {})
  if not c then
    return cb('no toolhost server')
  end
  local params = (name and name ~= '') and { name = name } or vim.empty_dict()
  request(c, 'toolhost/worktreeNew', params, function(err, wt)
    if err then
      notify('worktree-new failed: ' .. err, vim.log.levels.ERROR)
      return cb(err)
    end
    notify(M.created_text(wt))
    cb(nil, wt)
  end)
end

--- The worktree sessions of the workspace (`toolhost/listSessions`). `cb(err, worktrees)`.
---@param opts? toolhost.WorktreeOpts
---@param cb fun(err: string?, worktrees: toolhost.Worktree[]?)
function M.list(opts, cb)
  local c = server(opts or {})
  if not c then
    return cb('no toolhost server')
  end
  request(c, 'toolhost/listSessions', vim.empty_dict(), function(err, res)
    if err then
      notify(err, vim.log.levels.ERROR)
      return cb(err)
    end
    local out = {}
    for _, wt in ipairs(type(res) == 'table' and type(res.worktrees) == 'table' and res.worktrees or {}) do
      if type(wt) == 'table' and type(wt.name) == 'string' and type(wt.sessionId) == 'string' then
        table.insert(out, wt)
      end
    end
    cb(nil, out)
  end)
end

--- Replays the session client `client`'s cards buffer watches and redraws the buffer with its
--- cards. A change announced while a replay is on its way replays once more after it, so the
--- last change is always shown and replays never pile up. `cb(err)` after the first.
---@param client vim.lsp.Client
---@param cb? fun(err: string?)
local function refresh(client, cb)
  local shown = watched.get(client.id)
  if not shown then
    return cb and cb('not watching')
  end
  if replaying[client.id] then
    replaying[client.id].again = true
    return cb and cb(nil)
  end
  replaying[client.id] = { again = false }
  request(client, 'toolhost/replaySession', { sessionId = shown.session_id }, function(err, res)
    local again = replaying[client.id].again
    replaying[client.id] = nil
    -- Another session may have been chosen meanwhile: this answer is stale, and the replay asked
    -- for that one (`again`) is still to be made.
    local current = watched.get(client.id) == shown
    if current and err then
      notify(('worktree session %s: %s'):format(shown.name, err), vim.log.levels.ERROR)
    elseif current then
      local cards = type(res) == 'table' and type(res.cards) == 'table' and res.cards or {}
      local newest_first = {}
      for i = #cards, 1, -1 do
        table.insert(newest_first, cards[i])
      end
      shown.cards = newest_first
      require('toolhost.cards.buffer').redraw(client.id)
    end
    if again then
      refresh(client)
    end
    if cb and current then
      cb(err)
    elseif cb then
      cb('switched')
    end
  end)
end

--- `toolhost/sessionChanged {sessionId}`: the log of the session a cards buffer watches grew (an
--- agent works there): replay it again. Another session's (a late one, after a switch) is
--- ignored.
---@param client_id integer
---@param params any
function M.on_session_changed(client_id, params)
  local shown = watched.get(client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if shown and client and type(params) == 'table' and params.sessionId == shown.session_id then
    refresh(client)
  end
end

--- Shows worktree session `wt`'s cards in the live cards buffer, kept current: the server is told
--- to watch its log (`toolhost/watchSession`) and each change it announces replays it again.
--- `cb(err, buf)` once its cards are drawn.
---@param client vim.lsp.Client
---@param wt toolhost.Worktree
---@param cb? fun(err: string?, buf: integer?)
function M.show(client, wt, cb)
  cb = cb or function() end
  watched.set(client.id, { session_id = wt.sessionId, name = wt.name, cards = {} })
  request(client, 'toolhost/watchSession', { sessionId = wt.sessionId }, function(err)
    if err then
      watched.clear(client.id)
      notify(('cannot follow worktree session %s: %s'):format(wt.name, err), vim.log.levels.ERROR)
      return cb(err)
    end
    refresh(client, function(replay_err)
      if replay_err then
        return cb(replay_err)
      end
      cb(nil, require('toolhost.cards').open_live(client))
    end)
  end)
end

--- The live cards buffer (when there is one) shows the workspace's own cards again, and the
--- server stops watching the other session. `cb(err)`.
---@param client vim.lsp.Client
---@param cb fun(err: string?)
local function unwatch(client, cb)
  watched.clear(client.id)
  require('toolhost.cards.buffer').redraw(client.id)
  request(client, 'toolhost/watchSession', vim.empty_dict(), function(err)
    if err then
      notify(err, vim.log.levels.ERROR)
    end
    cb(err)
  end)
end

--- Shows the workspace's own cards in the live cards buffer again, and tells the server to stop
--- watching the other session. `cb(err, buf)`.
---@param client vim.lsp.Client
---@param cb? fun(err: string?, buf: integer?)
function M.show_workspace(client, cb)
  watched.clear(client.id) -- before the buffer opens: it draws the workspace's cards at once
  local buf = require('toolhost.cards').open_live(client)
  unwatch(client, function(err)
    if cb then
      cb(err, buf)
    end
  end)
end

--- `:Toolhost worktrees`: picks "This workspace" or one of the worktree sessions with
--- |vim.ui.select()| and shows its cards in the live cards buffer (|M.show|,
--- |M.show_workspace|). `cb(err, buf)`.
---@param opts? toolhost.WorktreeOpts
---@param cb? fun(err: string?, buf: integer?)
function M.choose(opts, cb)
  cb = cb or function() end
  local c = server(opts or {})
  if not c then
    return cb('no toolhost server')
  end
  M.list({ client = c }, function(err, worktrees)
    if err or not worktrees then
      return cb(err)
    end
    local items = { M.WORKSPACE }
    vim.list_extend(items, worktrees)
    vim.ui.select(items, {
      prompt = 'Show the cards of which session?',
      format_item = function(item)
        return item == M.WORKSPACE and item or M.describe(item)
      end,
      kind = 'toolhost.worktree',
    }, function(item)
      if not item then
        return cb('cancelled')
      end
      if item == M.WORKSPACE then
        return M.show_workspace(c, cb)
      end
      M.show(c, item, cb)
    end)
  end)
end

--- Calls `fn(name)` with `name`, or with the name of a worktree session picked with
--- |vim.ui.select()| (`prompt`) when it is empty; nothing picked or none there is reported.
---@param client vim.lsp.Client
---@param name? string
---@param prompt string
---@param fn fun(name: string)
---@param cb fun(err: string?)
local function named(client, name, prompt, fn, cb)
  if name and name ~= '' then
    return fn(name)
  end
  M.list({ client = client }, function(err, worktrees)
    if err or not worktrees then
      return cb(err)
    end
    if #worktrees == 0 then
      notify('no worktree session in this workspace (:Toolhost worktree-new makes one)', vim.log.levels.WARN)
      return cb('no worktree session')
    end
    vim.ui.select(worktrees, { prompt = prompt, format_item = M.describe, kind = 'toolhost.worktree' }, function(wt)
      if not wt then
        notify('cancelled')
        return cb('cancelled')
      end
      fn(wt.name)
    end)
  end)
end

--- `:Toolhost worktree-open [name]`: a tab of its own for a worktree session — the tab's folder is
--- the worktree, and the toolhost started there continues the worktree session (the server does
--- so for a folder that is one), so the chat and the agents it hosts work in it while this
--- workspace follows its cards in |:Toolhost-worktrees|. `cb(err, client_id)`.
---@param name? string
---@param opts? toolhost.WorktreeOpts
---@param cb? fun(err: string?, client_id: integer?)
function M.open(name, opts, cb)
  cb = cb or function() end
  local c = server(opts or {})
  if not c then
    return cb('no toolhost server')
  end
  named(c, name, 'Open which worktree session in a tab?', function(chosen)
    M.list({ client = c }, function(err, worktrees)
      if err then
        return cb(err)
      end
      local wt
      for _, w in ipairs(worktrees or {}) do
        if w.name == chosen or w.sessionId == chosen then
          wt = w
        end
      end
      if not wt then
        notify(('no worktree session %s'):format(chosen), vim.log.levels.WARN)
        return cb('unknown')
      end
      vim.cmd.tabnew()
      vim.cmd.tcd(vim.fn.fnameescape(wt.root))
      local id = require('toolhost.client').start(wt.root)
      if not id then
        return cb('not started')
      end
      vim.b.toolhost_client = id
      notify(('worktree session %s in this tab (%s): :Toolhost chat and the agents work there'):format(wt.name, wt.root))
      cb(nil, id)
    end)
  end, cb)
end

--- `:Toolhost worktree-apply [name]`: brings a worktree session's changes into the workspace
--- (`toolhost/worktreeApply`). Its hunks come as the usual reviews (|toolhost-review|), its card
--- as any call's; the result's text is shown, as a warning when it lists conflicts (never
--- written). `cb(err, result)`: `result.call` absent when the session changed nothing.
---@param name? string
---@param opts? toolhost.WorktreeOpts
---@param cb? fun(err: string?, result: table?)
function M.apply(name, opts, cb)
  cb = cb or function() end
  local c = server(opts or {})
  if not c then
    return cb('no toolhost server')
  end
  named(c, name, 'Apply the changes of which worktree session?', function(chosen)
    request(c, 'toolhost/worktreeApply', { name = chosen }, function(err, res)
      if err then
        notify(('worktree-apply %s failed: %s'):format(chosen, err), vim.log.levels.ERROR)
        return cb(err)
      end
      local call = type(res) == 'table' and type(res.call) == 'table' and res.call or nil
      if not call then
        notify(('worktree session %s changed nothing'):format(chosen))
        return cb(nil, res)
      end
      if type(call.card) == 'table' then
        require('toolhost.cards').on_card(c.id, call.card)
      end
      local result = type(call.result) == 'table' and call.result or {}
      local text = text_of(result)
      local level = vim.log.levels.INFO
      if result.isError then
        level = vim.log.levels.ERROR
      elseif text:find('conflict at line', 1, true) then
        level = vim.log.levels.WARN
      end
      notify(text ~= '' and text or ('applied worktree session ' .. chosen), level)
      cb(nil, res)
    end)
  end, cb)
end

--- `:Toolhost[!] worktree-discard [name]`: removes a worktree session — its checkout, branch and
--- log — after a confirmation unless `opts.confirm == false`. A cards buffer showing it goes back
--- to the workspace's cards. Refused while an agent works there (`WORKTREE_IN_USE`). `cb(err)`.
---@param name? string
---@param opts? toolhost.WorktreeOpts
---@param cb? fun(err: string?)
function M.discard(name, opts, cb)
  opts, cb = opts or {}, cb or function() end
  local c = server(opts)
  if not c then
    return cb('no toolhost server')
  end
  named(c, name, 'Discard which worktree session?', function(chosen)
    if opts.confirm ~= false then
      local question = ('Discard worktree session %s? Its checkout, branch and session log are removed'):format(
        chosen
      )
      if vim.fn.confirm(question, '&Discard\n&Cancel', 2, 'Question') ~= 1 then
        notify('discard cancelled')
        return cb('cancelled')
      end
    end
    request(c, 'toolhost/worktreeDiscard', { name = chosen }, function(err)
      if err then
        notify(('worktree-discard %s failed: %s'):format(chosen, err), vim.log.levels.ERROR)
        return cb(err)
      end
      notify(('worktree session %s discarded'):format(chosen))
      local shown = watched.get(c.id)
      if shown and shown.name == chosen then
        -- its log is gone: nothing of it is left to show
        return unwatch(c, function()
          cb(nil)
        end)
      end
      cb(nil)
    end)
  end, cb)
end

--- Completion of a worktree session's name (the first argument).
---@param arg_lead string
---@param line string
---@return string[]
function M.complete(arg_lead, line)
  if line:match('^%s*%S+%s+%S+%s+%S+%s') then
    return {}
  end
  local cl = require('toolhost.client')
  local c = cl.current(0, false)
  if not c then
    return {}
  end
  local err, res = cl.request_sync(c, 'toolhost/listSessions', vim.empty_dict(), 2000)
  local out = {}
  for _, wt in ipairs((not err and type(res) == 'table' and res.worktrees) or {}) do
    if type(wt.name) == 'string' and vim.startswith(wt.name, arg_lead) then
      table.insert(out, wt.name)
    end
  end
  return out
end

return M
