--- toolhost.pending: The requests that wait for the person — questions (`toolhost/askUser`,
--- |toolhost.ask|) and reviews (`toolhost/review`, |toolhost.review|) — in one queue.
---
--- Both are server→client requests whose handler runs in the coroutine Neovim gives every server
--- request and yields until the person answers, so the editor stays usable meanwhile. This module
--- owns what they share: the entries keyed by client and request id, the arrival order across both
--- kinds, the one request on screen at a time (the "front"), withdrawal by the server
--- (`$/cancelRequest` naming the params' `requestId`), a server that exits, and the count of what
--- is pending. A kind (ask, review) only says how its request is validated, shown, closed and
--- told about.
---
--- Presenting: the oldest pending request is shown; the next one waits until it is answered,
--- withdrawn, or set aside (a review whose window the person closed stays pending but no longer
--- holds the screen). A request its kind only announces (a review with `review_open = 'notify'`)
--- is set aside at once. Nothing is shown while a command line is being typed.

local M = {}

---@class toolhost.PendingKind
---@field name string `question` or `review`: what notices call it
---@field method string the request's method, for error messages
---@field invalid fun(params: any): string? what is wrong with the params, or nil
---@field script? fun(params: table, client_id: integer): table? the test hook (a kind's `responder`):
---  `{result}` answers at once, `{error}` answers with that error, `{ignore = true}` never answers
---@field init? fun(entry: toolhost.Pending) adds the kind's own fields to a new entry
---@field arrived? fun(entry: toolhost.Pending) tells the person (called before it is shown)
---@field present fun(entry: toolhost.Pending): boolean shows it; false: it was only told about
---  (it is then set aside)
---@field close fun(entry: toolhost.Pending, successor?: toolhost.Pending) closes the views of a
---  finished entry; may show `successor` in their place (then it calls |M.take|)
---@field withdrawn? fun(entry: toolhost.Pending) tells the person the server withdrew it
---@field reply_when_withdrawn? boolean a withdrawn request is still answered (RequestCancelled);
---  otherwise its handler is never resumed and nothing is sent

---@class toolhost.Pending
---@field key string `<client id>:<request id>`
---@field client_id integer
---@field id integer|string the request id (what `$/cancelRequest` names)
---@field kind toolhost.PendingKind
---@field params table
---@field co thread the suspended request handler
---@field done boolean answered or withdrawn
---@field hidden boolean answered by a script: never shown, never listed
---@field aside boolean pending but not shown by itself again (the person set it aside)
---@field seq integer arrival order, across kinds

local ErrorCodes = vim.lsp.protocol.ErrorCodes

---@type table<string, toolhost.Pending>
local entries = {}

---@type toolhost.Pending? the request on screen
local front = nil

local seq = 0

--- Whether an advance is scheduled (one at a time: arrivals and ends come in bursts).
local advancing = false

---@param client_id integer
---@param id integer|string
---@return string
local function key_of(client_id, id)
  return ('%s:%s'):format(tostring(client_id), tostring(id))
end

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO, { title = 'toolhost' })
end

--- The requests waiting for the person, oldest first (scripted ones are not listed).
---@param kind? string only this kind (`question`, `review`)
---@return toolhost.Pending[]
function M.list(kind)
  local out = {}
  for _, e in pairs(entries) do
    if not e.done and not e.hidden and (kind == nil or e.kind.name == kind) then
      table.insert(out, e)
    end
  end
  table.sort(out, function(a, b)
    return a.seq < b.seq
  end)
  return out
end

--- How many requests wait for the person, of both kinds.
---@return integer
function M.count()
  return #M.list()
end

--- The others pending besides `entry`: `, 2 more pending`, or `` when there are none.
---@param entry toolhost.Pending
---@return string
function M.more(entry)
  local n = 0
  for _, e in ipairs(M.list()) do
    if e ~= entry then
      n = n + 1
    end
  end
  return n > 0 and (', %d more pending'):format(n) or ''
end

--- A pending request by key, or nil (answered, withdrawn or unknown).
---@param key string
---@return toolhost.Pending?
function M.get(key)
  local e = entries[key]
  return (e and not e.done) and e or nil
end

--- The request on screen, or nil.
---@return toolhost.Pending?
function M.front()
  return (front and not front.done) and front or nil
end

--- Whether windows may not be opened now: while a command line is being typed (or in the
--- command-line window) a new window would disturb it.
---@return boolean
function M.busy()
  local mode = vim.api.nvim_get_mode().mode
  return mode:sub(1, 1) == 'c' or mode:sub(1, 1) == 'r' or vim.fn.getcmdwintype() ~= ''
end

--- The oldest request that may be shown by itself.
---@return toolhost.Pending?
local function next_up()
  for _, e in ipairs(M.list()) do
    if not e.aside then
      return e
    end
  end
  return nil
end

--- The request that goes before `entry`: the one on screen, else the oldest waiting one when
--- that is not `entry`; nil when `entry` is shown next.
---@param entry toolhost.Pending
---@return toolhost.Pending?
function M.ahead(entry)
  local first = M.front() or next_up()
  return first ~= entry and first or nil
end

local advance

--- Shows the oldest waiting request when none is on screen (on a later tick: a request handler
--- must have yielded before its request can be answered).
function M.advance()
  if advancing then
    return
  end
  advancing = true
  vim.schedule(advance)
end

advance = function()
  advancing = false
  if M.front() then
    return
  end
  front = nil
  local nxt = next_up()
  if not nxt then
    return
  end
  if M.busy() then
    advancing = true
    vim.defer_fn(advance, 250)
    return
  end
  front = nxt
  local ok, shown = pcall(nxt.kind.present, nxt)
  if not ok then
    -- A view that cannot open must not hold the queue: the request stays listed.
    notify(('%s: %s'):format(nxt.kind.method, tostring(shown)), vim.log.levels.ERROR)
    shown = false
  end
  if not shown and front == nxt then
    nxt.aside = true
    front = nil
    return advance()
  end
end

--- `entry` is on screen now, shown by its kind out of turn (e.g. in the window of the request
--- answered before it): it holds the screen like one the queue showed.
---@param entry toolhost.Pending
function M.take(entry)
  if not entry.done then
    entry.aside = false
    front = entry
  end
end

--- The person set `entry` aside (closed its window without answering): it stays pending, is
--- not shown by itself again, and the next request is shown.
---@param entry toolhost.Pending
function M.release(entry)
  if entry.done then
    return
  end
  entry.aside = true
  if front == entry then
    front = nil
    M.advance()
  end
end

--- Ends a request: forgets it, closes its views (offering the next request their place) and,
--- unless it was withdrawn without a reply or its server is gone, resumes its handler with
--- `how, result`.
---@param entry toolhost.Pending
---@param how 'answer'|'error'|'withdrawn'|'forgotten'
---@param result? any the answer, or the error's message
function M.finish(entry, how, result)
  if entry.done then
    return
  end
  entry.done = true
  entries[entry.key] = nil
  if front == entry then
    front = nil
  end
  local successor = (how ~= 'forgotten' and not M.front()) and next_up() or nil
  local ok, err = pcall(entry.kind.close, entry, successor)
  if not ok then
    notify(('%s: %s'):format(entry.kind.method, tostring(err)), vim.log.levels.ERROR)
  end
  local reply = how == 'answer' or how == 'error' or (how == 'withdrawn' and entry.kind.reply_when_withdrawn)
  if reply and coroutine.status(entry.co) == 'suspended' then
    local resumed, rerr = coroutine.resume(entry.co, how, result)
    if not resumed then
      notify(('%s: %s'):format(entry.kind.method, tostring(rerr)), vim.log.levels.ERROR)
    end
  end
  M.advance()
end

--- Answers a request of `kind`: registers it, has it shown in its turn and waits (yielding)
--- until it is answered. Returns the result, or nil and an LSP error (a withdrawn request of a
--- kind that replies: `RequestCancelled`; the server has stopped waiting by then and drops it).
---@param kind toolhost.PendingKind
---@param params any
---@param ctx? table handler context ({client_id})
---@return any result
---@return lsp.ResponseError? err
function M.handle(kind, params, ctx)
  local problem = kind.invalid(params)
  if problem then
    return nil, vim.lsp.rpc_response_error(ErrorCodes.InvalidParams, kind.method .. ': ' .. problem)
  end
  local co = coroutine.running()
  if not co or not coroutine.isyieldable() then
    -- Blocking the editor until the person answers is never right.
    return nil, vim.lsp.rpc_response_error(ErrorCodes.RequestFailed, kind.method .. ': cannot wait here')
  end
  local client_id = type(ctx) == 'table' and ctx.client_id or 0
  seq = seq + 1
  -- Neovim does not tell a request handler its request's id; the server repeats it in the
  -- params (`requestId`), so a later `$/cancelRequest` can name this request.
  local id = params.requestId
  if id == nil or id == vim.NIL then
    id = 'local-' .. seq
  end
  ---@type toolhost.Pending
  local entry = {
    key = key_of(client_id, id),
    client_id = client_id,
    id = id,
    kind = kind,
    params = params,
    co = co,
    done = false,
    hidden = false,
    aside = false,
    seq = seq,
  }
  if kind.init then
    kind.init(entry)
  end
  local script = kind.script and kind.script(params, client_id) or nil
  if script and script.result then
    return script.result
  end
  if script and script.error then
    return nil, vim.lsp.rpc_response_error(ErrorCodes.InternalError, script.error)
  end
  entry.hidden = script ~= nil and script.ignore == true
  entries[entry.key] = entry
  if not entry.hidden then
    if kind.arrived then
      kind.arrived(entry)
    end
    M.advance()
  end
  local how, result = coroutine.yield()
  if how == 'answer' then
    return result
  elseif how == 'error' then
    return nil, vim.lsp.rpc_response_error(ErrorCodes.InternalError, tostring(result))
  end
  return nil, vim.lsp.rpc_response_error(ErrorCodes.RequestCancelled, kind.method .. ' withdrawn by the server')
end

--- The server withdrew request `params.id` (`$/cancelRequest`: the call was cancelled or timed
--- out): close it, answer it only if its kind does, and say so.
---@param client_id integer
---@param params any
---@param kind? string only a request of this kind
function M.on_cancel(client_id, params, kind)
  local id = type(params) == 'table' and params.id or nil
  local entry = id ~= nil and M.get(key_of(client_id, id)) or nil
  if not entry or (kind and entry.kind.name ~= kind) then
    return
  end
  local hidden = entry.hidden
  M.finish(entry, 'withdrawn')
  if not hidden and entry.kind.withdrawn then
    entry.kind.withdrawn(entry)
  end
end

--- Drops a client's requests (its server exited): their views close; nothing can be answered.
---@param client_id integer
---@param kind? string only requests of this kind
function M.forget(client_id, kind)
  for _, entry in pairs(vim.tbl_values(entries)) do
    if entry.client_id == client_id and (kind == nil or entry.kind.name == kind) then
      M.finish(entry, 'forgotten')
    end
  end
end

return M
