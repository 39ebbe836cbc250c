--- toolhost.provider: The editor-backed lsp provider (`toolhost/lspQuery`)
---
--- The server asks `{operation, uri, position}` (0-based, UTF-16 code units); the answer comes
--- from the language servers attached to that file in Neovim, each spoken to in its own
--- `offset_encoding`, normalized to `{kind: "locations", locations}` or
--- `{kind: "hover", hover: {contents, range?} | null}` with UTF-16 positions.

---@class toolhost.Position
---@field line integer 0-based
---@field character integer 0-based, in the encoding named alongside

---@class toolhost.Range
---@field start toolhost.Position
---@field end toolhost.Position

---@class toolhost.LspQueryParams
---@field operation string goToDefinition|findReferences|goToImplementation|hover
---@field uri string
---@field position toolhost.Position UTF-16

local M = {}

--- Operations (the `lsp` tool's names) and the LSP methods that answer them.
M.operations = {
  goToDefinition = 'textDocument/definition',
  findReferences = 'textDocument/references',
  goToImplementation = 'textDocument/implementation',
  hover = 'textDocument/hover',
}

local ErrorCodes = vim.lsp.protocol.ErrorCodes

--- How often |M.wait| yielded (non-blocking) or blocked with |vim.wait|, and how many queries
--- the server cancelled (for tests).
M.stats = { yielded = 0, blocked = 0, cancelled = 0 }

---@class toolhost.QueryToken
---@field id? integer|string the JSON-RPC id of the query (nil when unknown)
---@field cancelled boolean
---@field cancels (fun())[] run once when the server cancels the query

---@type table<integer, table<integer|string, toolhost.QueryToken>> client id -> query id -> token
local inflight = {}

--- The server stopped waiting for query `params.id` (`$/cancelRequest`): stop its work.
---@param client_id integer
---@param params any
function M.on_cancel(client_id, params)
  local id = type(params) == 'table' and params.id or nil
  local token = id ~= nil and inflight[client_id] and inflight[client_id][id] or nil
  if not token or token.cancelled then
    return
  end
  token.cancelled = true
  M.stats.cancelled = M.stats.cancelled + 1
  for _, cancel in ipairs(token.cancels) do
    pcall(cancel)
  end
end

--- Drops a client's query bookkeeping (its server exited).
---@param client_id integer
function M.forget(client_id)
  inflight[client_id] = nil
end

--- Queries in flight (for tests and :checkhealth): client id -> ids.
---@return table<integer, (integer|string)[]>
function M.inflight()
  local out = {}
  for cid, tokens in pairs(inflight) do
    out[cid] = vim.tbl_keys(tokens)
  end
  return out
end

---@param code integer
---@param message string
---@param data? table
local function rpc_error(code, message, data)
  return nil, vim.lsp.rpc_response_error(code, message, data)
end

--- Waits until `pred()` (or the timeout). Inside a coroutine (Neovim runs server→client request
--- handlers in one) it yields, so the editor stays responsive; elsewhere it uses |vim.wait|.
---@param timeout_ms integer
---@param pred fun(): boolean
---@return boolean
function M.wait(timeout_ms, pred)
  if pred() then
    return true
  end
  local co = coroutine.running()
  if co and coroutine.isyieldable and coroutine.isyieldable() then
    local deadline = vim.uv.now() + timeout_ms
    local timer = assert(vim.uv.new_timer())
    local resumed = false
    timer:start(
      5,
      5,
      vim.schedule_wrap(function()
        if resumed then
          return
        end
        if pred() or vim.uv.now() >= deadline then
          resumed = true
          timer:stop()
          timer:close()
          local ok, err = coroutine.resume(co)
          if not ok then
            vim.notify('toolhost: lspQuery: ' .. tostring(err), vim.log.levels.ERROR)
          end
        end
      end)
    )
    M.stats.yielded = M.stats.yielded + 1
    coroutine.yield()
    return pred()
  end
  M.stats.blocked = M.stats.blocked + 1
  return vim.wait(timeout_ms, pred, 5)
end

--- Converts a character offset on `line` between encodings ('utf-8', 'utf-16', 'utf-32').
---@param line string
---@param character integer
---@param from string
---@param to string
---@return integer
function M.convert(line, character, from, to)
  if from == to then
    return character
  end
  local byte = from == 'utf-8' and math.min(character, #line)
    or vim.str_byteindex(line, from --[[@as 'utf-16']], character, false)
  if to == 'utf-8' then
    return byte
  end
  return vim.str_utfindex(line, to --[[@as 'utf-16']], byte, false)
end

--- Lines of a file, from its loaded buffer (what the language servers see) or the disk.
---@param path string
---@param cache table<string, string[]>
---@return string[]
local function file_lines(path, cache)
  if cache[path] then
    return cache[path]
  end
  local lines
  local buf = require('toolhost.client').find_buf(path)
  if buf and vim.api.nvim_buf_is_loaded(buf) then
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  else
    local ok, read = pcall(vim.fn.readfile, path)
    lines = ok and read or {}
  end
  cache[path] = lines
  return lines
end

---@param uri string
---@param pos table
---@param from string
---@param cache table<string, string[]>
---@return toolhost.Position?
local function position_to_utf16(uri, pos, from, cache)
  if type(pos) ~= 'table' or type(pos.line) ~= 'number' or type(pos.character) ~= 'number' then
    return nil
  end
  if from == 'utf-16' or not uri:match('^file:') then
    return { line = pos.line, character = pos.character }
  end
  local line = file_lines(vim.uri_to_fname(uri), cache)[pos.line + 1]
  if not line then
    return { line = pos.line, character = pos.character }
  end
  return { line = pos.line, character = M.convert(line, pos.character, from, 'utf-16') }
end

---@param uri string
---@param range table
---@param from string
---@param cache table<string, string[]>
---@return toolhost.Range?
local function range_to_utf16(uri, range, from, cache)
  if type(range) ~= 'table' then
    return nil
  end
  local s = position_to_utf16(uri, range.start, from, cache)
  local e = position_to_utf16(uri, range['end'], from, cache)
  if not s or not e then
    return nil
  end
  return { start = s, ['end'] = e }
end

--- Normalizes Location | Location[] | LocationLink[] | null into `{uri, range}` items (UTF-16).
---@param result any
---@param encoding string the answering client's offset_encoding
---@param cache table<string, string[]>
---@return {uri: string, range: toolhost.Range}[]? locations nil when malformed
function M.normalize_locations(result, encoding, cache)
  cache = cache or {}
  if result == nil or result == vim.NIL then
    return {}
  end
  if type(result) ~= 'table' then
    return nil
  end
  local items = vim.islist(result) and result or { result }
  local out = {}
  for _, item in ipairs(items) do
    if type(item) ~= 'table' then
      return nil
    end
    local uri, range
    if type(item.targetUri) == 'string' then
      uri = item.targetUri
      range = item.targetSelectionRange or item.targetRange
    else
      uri, range = item.uri, item.range
    end
    if type(uri) ~= 'string' then
      return nil
    end
    local r = range_to_utf16(uri, range, encoding, cache)
    if not r then
      return nil
    end
    table.insert(out, { uri = uri, range = r })
  end
  return out
end

--- Hover contents as one string (MarkupContent value, MarkedString, or a list joined by a blank
--- line); nil when empty.
---@param contents any
---@return string?
function M.hover_text(contents)
  local function one(c)
    if type(c) == 'string' then
      return c
    elseif type(c) == 'table' and type(c.value) == 'string' then
      if c.kind == nil and type(c.language) == 'string' then
        return ('```%s\n%s\n```'):format(c.language, c.value)
      end
      return c.value
    end
    return nil
  end
  local text
  if type(contents) == 'table' and vim.islist(contents) then
    local parts = {}
    for _, c in ipairs(contents) do
      local t = one(c)
      if t and t ~= '' then
        table.insert(parts, t)
      end
    end
    text = table.concat(parts, '\n\n')
  else
    text = one(contents)
  end
  if text == nil or text == '' then
    return nil
  end
  return text
end

--- The language-server clients (not toolhost) attached to `buf` that support `method`.
---@param buf integer
---@param method string
---@return vim.lsp.Client[]
local function servers(buf, method)
  local out = {}
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    if c.name ~= 'toolhost' and not c:is_stopped() and c.initialized and c:supports_method(method, buf) then
      table.insert(out, c)
    end
  end
  return out
end

--- The clients attached to `buf`, those still initializing included (Neovim 0.11's
--- get_clients() leaves them out unless asked).
---@param buf integer
---@return vim.lsp.Client[]
local function attached(buf)
  ---@diagnostic disable-next-line: invisible
  return vim.lsp.get_clients({ bufnr = buf, _uninitialized = true })
end

--- Any non-toolhost client attached to `buf` that is still starting.
---@param buf integer
---@return boolean
local function starting(buf)
  for _, c in ipairs(attached(buf)) do
    if c.name ~= 'toolhost' and not c:is_stopped() and not c.initialized then
      return true
    end
  end
  return false
end

--- Loads the buffer of `path` (firing the autocommands that start language servers).
---@param path string
---@return integer buf
local function load(path)
  local buf = vim.fn.bufadd(path)
  if not vim.api.nvim_buf_is_loaded(buf) then
    vim.fn.bufload(buf)
  end
  if vim.bo[buf].filetype == '' then
    local ft = vim.filetype.match({ buf = buf })
    if ft then
      vim.bo[buf].filetype = ft
    end
  end
  return buf
end

---@return nil
---@return lsp.ResponseError
local function cancelled()
  return rpc_error(ErrorCodes.RequestCancelled, 'toolhost/lspQuery cancelled by the server')
end

---@param params toolhost.LspQueryParams
---@param token toolhost.QueryToken
---@return table? result
---@return lsp.ResponseError? err
local function answer(params, token)
  local cfg = require('toolhost.config').get()
  if not cfg.lsp_provider then
    return rpc_error(ErrorCodes.MethodNotFound, 'the editor-backed lsp provider is disabled')
  end
  if type(params) ~= 'table' or type(params.uri) ~= 'string' or type(params.position) ~= 'table' then
    return rpc_error(ErrorCodes.InvalidParams, 'expected {operation, uri, position: {line, character}}')
  end
  local method = M.operations[params.operation]
  if not method then
    return rpc_error(
      ErrorCodes.InvalidParams,
      ('unsupported operation %s'):format(vim.inspect(params.operation)),
      { code = 'LSP_UNSUPPORTED_OPERATION' }
    )
  end
  local line, character = params.position.line, params.position.character
  if type(line) ~= 'number' or type(character) ~= 'number' or line < 0 or character < 0 then
    return rpc_error(ErrorCodes.InvalidParams, 'position must hold non-negative line and character')
  end
  local path = vim.uri_to_fname(params.uri)
  local buf = load(path)
  local timeout = cfg.lsp_timeout_ms
  -- Language servers start on FileType; wait for one that answers this method.
  -- Some setups start them from a scheduled callback, hence a short grace when none is attached.
  local started = vim.uv.now()
  M.wait(timeout, function()
    if token.cancelled or #servers(buf, method) > 0 then
      return true
    end
    if starting(buf) then
      return false
    end
    local others = 0
    for _, c in ipairs(attached(buf)) do
      if c.name ~= 'toolhost' then
        others = others + 1
      end
    end
    return others > 0 or vim.uv.now() - started > 300
  end)
  if token.cancelled then
    return cancelled()
  end
  local clients = servers(buf, method)
  if #clients == 0 then
    return rpc_error(
      ErrorCodes.RequestFailed,
      ('no language server attached to %s answers %s'):format(path, method),
      { code = 'LSP_UNAVAILABLE' }
    )
  end
  local text = vim.api.nvim_buf_get_lines(buf, line, line + 1, false)[1] or ''
  local pending, answers = #clients, {}
  for i, c in ipairs(clients) do
    local p = {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = line, character = M.convert(text, character, 'utf-16', c.offset_encoding) },
    }
    if method == 'textDocument/references' then
      p.context = { includeDeclaration = true }
    end
    local ok, request_id = c:request(method, p, function(err, result)
      if answers[i] then
        return
      end
      answers[i] = { err = err, result = result, encoding = c.offset_encoding, name = c.name }
      pending = pending - 1
    end, buf)
    if not ok then
      answers[i] = { err = { message = c.name .. ' is not running' } }
      pending = pending - 1
    elseif request_id then
      -- The server stopped waiting: stop the language server's work too.
      table.insert(token.cancels, function()
        if not answers[i] and not c:is_stopped() then
          c:cancel_request(request_id)
        end
      end)
    end
  end
  M.wait(timeout, function()
    return pending == 0 or token.cancelled
  end)
  if token.cancelled then
    return cancelled()
  end
  local cache, errors = {}, {}
  if params.operation == 'hover' then
    for i = 1, #clients do
      local a = answers[i]
      if a and a.err then
        table.insert(errors, ('%s: %s'):format(a.name or '?', a.err.message or vim.inspect(a.err)))
      elseif a and type(a.result) == 'table' then
        local contents = M.hover_text(a.result.contents)
        if contents then
          local hover = { contents = contents }
          if a.result.range then
            hover.range = range_to_utf16(params.uri, a.result.range, a.encoding, cache)
          end
          return { kind = 'hover', hover = hover }
        end
      end
    end
    if #errors == #clients and #errors > 0 then
      return rpc_error(ErrorCodes.RequestFailed, table.concat(errors, '; '), { code = 'LSP_UNAVAILABLE' })
    end
    return { kind = 'hover', hover = vim.NIL }
  end
  local locations, seen = {}, {}
  for i = 1, #clients do
    local a = answers[i]
    if a and a.err then
      table.insert(errors, ('%s: %s'):format(a.name or '?', a.err.message or vim.inspect(a.err)))
    elseif a then
      local locs = M.normalize_locations(a.result, a.encoding, cache)
      if not locs then
        table.insert(errors, ('%s: malformed %s response'):format(a.name, method))
      else
        for _, l in ipairs(locs) do
          local key = ('%s:%d:%d:%d:%d'):format(
            l.uri,
            l.range.start.line,
            l.range.start.character,
            l.range['end'].line,
            l.range['end'].character
          )
          if not seen[key] then
            seen[key] = true
            table.insert(locations, l)
          end
        end
      end
    else
      table.insert(errors, ('%s: no answer within %d ms'):format(clients[i].name, timeout))
    end
  end
  if #locations == 0 and #errors > 0 then
    return rpc_error(ErrorCodes.RequestFailed, table.concat(errors, '; '), { code = 'LSP_UNAVAILABLE' })
  end
  return { kind = 'locations', locations = locations }
end

--- Answers one `toolhost/lspQuery`. Returns the result, or nil and an LSP ResponseError. When
--- the server cancels the query (`$/cancelRequest` with its id) the language servers' requests
--- still running are cancelled and the answer is the error `-32800` (RequestCancelled) at once:
--- Neovim answers every server request, so that is the only reply the server gets, never a late
--- result.
---@param params toolhost.LspQueryParams
---@param ctx? table handler context ({client_id})
---@return table? result
---@return lsp.ResponseError? err
function M.handle(params, ctx)
  local client_id = type(ctx) == 'table' and ctx.client_id or nil
  -- Neovim does not tell a request handler its request's id; the server puts it in the params
  -- (`requestId`), so a later `$/cancelRequest` can name this query.
  local id = type(params) == 'table' and params.requestId or nil
  ---@type toolhost.QueryToken
  local token = { id = id, cancelled = false, cancels = {} }
  if id ~= nil then
    inflight[client_id] = inflight[client_id] or {}
    inflight[client_id][id] = token
  end
  -- No pcall around it: the handler yields while it waits (see M.wait).
  local result, err = answer(params, token)
  if id ~= nil and inflight[client_id] then
    inflight[client_id][id] = nil
    if next(inflight[client_id]) == nil then
      inflight[client_id] = nil
    end
  end
  return result, err
end

return M
