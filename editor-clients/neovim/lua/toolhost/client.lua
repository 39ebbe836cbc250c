--- toolhost.client: The `toolhost` LSP client: one per workspace root

local config = require('toolhost.config')

local M = {}

--- The LSP client name.
M.NAME = 'toolhost'

---@class toolhost.ClientState
---@field session_id? string Reported by the server in its initialize result.
---@field tools? table[] Cached `toolhost/listTools` result.
---@field mcp_servers? toolhost.McpServerStatus[] The latest status of the server's MCP servers.

---@type table<integer, toolhost.ClientState>
local states = {}

---@type table<string, boolean> programs already reported missing
local warned = {}

--- Per-client state (session id, cached tools).
---@param client_id integer
---@return toolhost.ClientState
function M.state(client_id)
  states[client_id] = states[client_id] or {}
  return states[client_id]
end

---@param path string
---@return string
local function normalize(path)
  local real = vim.uv.fs_realpath(path)
  return vim.fs.normalize(real or path)
end

--- Whether `path` is `root` or lies beneath it.
---@param root string
---@param path string
---@return boolean
function M.contains(root, path)
  if path == root then
    return true
  end
  local prefix = root:sub(-1) == '/' and root or (root .. '/')
  return path:sub(1, #prefix) == prefix
end

--- The file a buffer edits, or nil for scratch/special buffers.
---@param bufnr integer
---@return string?
function M.buf_path(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return normalize(name)
end

--- The buffer of a file (by name, or by resolved path), or nil.
---@param path string
---@return integer?
function M.find_buf(path)
  local real
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name ~= '' and vim.bo[b].buftype == '' then
      if name == path then
        return b
      end
      real = real or vim.uv.fs_realpath(path) or false
      if real and vim.uv.fs_realpath(name) == real then
        return b
      end
    end
  end
  return nil
end

--- Every running toolhost client (with `starting`, also those still initializing).
---@param starting? boolean
---@return vim.lsp.Client[]
function M.clients(starting)
  local out = {}
  ---@diagnostic disable-next-line: invisible
  for _, c in ipairs(vim.lsp.get_clients({ name = M.NAME, _uninitialized = starting or nil })) do
    if not c:is_stopped() then
      table.insert(out, c)
    end
  end
  return out
end

--- Whether the user enabled the `toolhost` LSP config with `vim.lsp.enable('toolhost')`
--- (Neovim 0.11+, config from `lsp/toolhost.lua`). Then clients start from that config.
---@return boolean
function M.enabled()
  if not package.loaded['vim.lsp'] and not rawget(vim, 'lsp') then
    return false
  end
  local lsp = vim.lsp
  if type(lsp.is_enabled) == 'function' then
    return lsp.is_enabled(M.NAME) == true
  end
  ---@diagnostic disable-next-line: invisible
  return type(lsp._enabled_configs) == 'table' and lsp._enabled_configs[M.NAME] ~= nil
end

--- The resolved `vim.lsp.config.toolhost` (lsp/toolhost.lua merged with the user's
--- `vim.lsp.config()` overrides), or nil before Neovim 0.11 or when it cannot be resolved.
---@return table?
function M.lsp_config()
  if type(vim.lsp.config) ~= 'table' and type(vim.lsp.config) ~= 'userdata' then
    return nil
  end
  local ok, resolved = pcall(function()
    return vim.lsp.config[M.NAME]
  end)
  return ok and type(resolved) == 'table' and resolved or nil
end

--- Root markers: those of the enabled `vim.lsp.config.toolhost`, else the plugin's.
---@return string[]
function M.root_markers()
  if M.enabled() then
    local resolved = M.lsp_config()
    if resolved and type(resolved.root_markers) == 'table' then
      return resolved.root_markers
    end
  end
  return config.get().root_markers
end

--- The running client whose root holds `path` (the deepest root wins).
---@param path string
---@param starting? boolean also clients still initializing
---@return vim.lsp.Client?
function M.for_path(path, starting)
  local best, best_len = nil, -1
  for _, c in ipairs(M.clients(starting)) do
    if c.root_dir and M.contains(c.root_dir, path) and #c.root_dir > best_len then
      best, best_len = c, #c.root_dir
    end
  end
  return best
end

--- The workspace root of a buffer: the directory holding a root marker, else nil.
---@param bufnr integer
---@return string?
function M.find_root(bufnr)
  local path = M.buf_path(bufnr)
  if not path then
    return nil
  end
  local root = vim.fs.root(path, M.root_markers())
  return root and normalize(root) or nil
end

--- `initializationOptions` from the configuration (`init_options` plus `session_id`).
---@param cfg toolhost.Config
---@return table
local function init_options(cfg)
  local out = vim.deepcopy(cfg.init_options or {})
  if cfg.session_id then
    out.session_id = cfg.session_id
  end
  if next(out) == nil then
    out = vim.empty_dict()
  end
  return out
end

--- The client capabilities toolhost reads (`experimental.toolhost`): the editor-backed lsp
--- provider (`lspProvider`), review mode (`review`: this editor answers `toolhost/review`) and
--- questions for the person (`askUser`: this editor answers `toolhost/askUser`).
---@param cfg toolhost.Config
---@return table
local function capabilities(cfg)
  return {
    experimental = {
      toolhost = { lspProvider = cfg.lsp_provider, review = cfg.review, askUser = cfg.ask_user },
    },
  }
end

--- The handlers of a toolhost client: cards and the live output of running calls, the server's
--- notices, a watched worktree session's log growing (|toolhost-worktrees|), the status of its MCP
--- servers, what a chat prompt streams (|toolhost-chat|), the
--- editor-backed lsp provider, review mode, questions for the person and the server's
--- `$/cancelRequest` of a request it no longer waits for (a query, a review or a question).
---@return table<string, function>
function M.handlers()
  return {
    ['toolhost/card'] = function(_, card, ctx)
      require('toolhost.cards').on_card(ctx.client_id, card)
    end,
    ['toolhost/callOutput'] = function(_, params, ctx)
      require('toolhost.cards').on_output(ctx.client_id, params)
    end,
    ['toolhost/notice'] = function(_, params)
      -- e.g. a background job ended: the person should know even with no cards buffer open.
      if type(params) == 'table' and type(params.text) == 'string' and params.text ~= '' then
        vim.notify(params.text, vim.log.levels.INFO, { title = 'toolhost' })
      end
    end,
    ['toolhost/sessionChanged'] = function(_, params, ctx)
      -- Only a worktree session this editor chose to show is watched: the module is loaded.
      if package.loaded['toolhost.worktrees'] then
        require('toolhost.worktrees').on_session_changed(ctx.client_id, params)
      end
    end,
    ['toolhost/mcpServersChanged'] = function(_, params, ctx)
      require('toolhost.mcp').on_changed(ctx.client_id, params)
    end,
    ['toolhost/agentUpdate'] = function(_, params, ctx)
      -- Only a prompt of this editor streams updates: the chat module is loaded by then.
      if package.loaded['toolhost.chat'] then
        require('toolhost.chat').on_update(ctx.client_id, params)
      end
    end,
    ['toolhost/lspQuery'] = function(_, params, ctx)
      return require('toolhost.provider').handle(params, ctx)
    end,
    ['toolhost/review'] = function(_, params, ctx)
      return require('toolhost.review').handle(params, ctx)
    end,
    ['toolhost/askUser'] = function(_, params, ctx)
      return require('toolhost.ask').handle(params, ctx)
    end,
    ['$/cancelRequest'] = function(_, params, ctx)
      -- Runs in the RPC reader (a fast event): only schedule. The request's handler was
      -- scheduled before, so it has registered its id by the time this runs. The id names a
      -- query, or a review or question of the pending queue; each ignores ids it does not know.
      vim.schedule(function()
        require('toolhost.provider').on_cancel(ctx.client_id, params)
        if package.loaded['toolhost.pending'] then
          require('toolhost.pending').on_cancel(ctx.client_id, params)
        end
      end)
    end,
  }
end

--- Everything the plugin needs once a client is initialized (idempotent: called from
--- `on_init`, `on_attach` and the plugin's LspAttach autocommand, so a user's own `on_init` in
--- `vim.lsp.config('toolhost', …)` cannot lose it): the session id and the earlier cards of a
--- resumed session.
---@param client vim.lsp.Client
---@param result? table the initialize result
function M.ready(client, result)
  if client.name ~= M.NAME then
    return
  end
  local st = M.state(client.id)
  if st.ready then
    return
  end
  local caps = (result and result.capabilities) or client.server_capabilities
  local exp = type(caps) == 'table' and caps.experimental or nil
  local th = type(exp) == 'table' and exp.toolhost or nil
  local session = type(th) == 'table' and th.sessionId or nil
  if not session and not client.initialized and not result then
    return -- not initialized yet: a later call records it
  end
  st.ready = true
  st.session_id = session
  local init = client.config.init_options
  local resumed = type(init) == 'table' and init.session_id
  if session and resumed then
    -- A resumed session: its earlier cards come from the log.
    client:request('toolhost/replaySession', { sessionId = session }, function(err, res)
      if not err and type(res) == 'table' and type(res.cards) == 'table' then
        require('toolhost.cards').seed(client.id, res.cards)
      end
    end)
  end
end

--- Forgets a client's cards and state (its server exited).
---@param client_id integer
function M.forget(client_id)
  vim.schedule(function()
    require('toolhost.cards').forget(client_id)
    require('toolhost.provider').forget(client_id)
    if package.loaded['toolhost.pending'] then
      require('toolhost.pending').forget(client_id) -- its reviews and questions
    end
    if package.loaded['toolhost.mcp'] then
      require('toolhost.mcp').forget(client_id)
    end
    if package.loaded['toolhost.chat'] then
      require('toolhost.chat').forget(client_id)
    end
    if package.loaded['toolhost.agents'] then
      require('toolhost.agents').forget(client_id)
    end
    states[client_id] = nil
  end)
end

--- The `toolhost` config for |vim.lsp.config()| / |vim.lsp.enable()| (what `lsp/toolhost.lua`
--- returns), built from the plugin's configuration (|toolhost-config|). `root_dir` decides per
--- buffer (file buffers under a marker root, or under the root of a running toolhost client;
--- a file that does not exist yet waits until it does), so `filetypes` is nil: every file.
---@return vim.lsp.Config
function M.enable_config()
  local cfg = config.get()
  return {
    cmd = cfg.cmd,
    cmd_env = cfg.cmd_env,
    filetypes = nil,
    root_markers = cfg.root_markers,
    root_dir = function(bufnr, on_dir)
      local root = M.enable_root(bufnr)
      if root then
        on_dir(root)
      end
    end,
    workspace_required = true,
    init_options = init_options(cfg),
    capabilities = capabilities(cfg),
    handlers = M.handlers(),
    on_init = { M.ready },
    on_attach = {
      function(client)
        M.ready(client)
      end,
    },
    on_exit = {
      function(_, _, client_id)
        M.forget(client_id)
      end,
    },
  }
end

--- The workspace root `vim.lsp.enable('toolhost')` starts (or reuses) a client for, or nil:
--- the root of a running client that holds the file, else the nearest marker root. A buffer of
--- a file that does not exist yet gets nil now and attaches once the file exists or the user
--- types (an empty new buffer would count as unsaved text and block the agent's write).
---@param bufnr integer
---@return string?
function M.enable_root(bufnr)
  local path = M.buf_path(bufnr)
  if not path then
    return nil
  end
  if not vim.uv.fs_stat(path) and not vim.bo[bufnr].modified then
    M.defer(bufnr, true)
    return nil
  end
  local existing = M.for_path(path, true)
  if existing then
    return existing.root_dir
  end
  return M.find_root(bufnr)
end

---@param root string
---@param overrides? table Client config fields that replace the computed ones (tests, API users).
---@return vim.lsp.ClientConfig
function M.make_config(root, overrides)
  local cfg = config.get()
  ---@type table
  local base
  local resolved = M.enabled() and M.lsp_config() or nil
  if resolved then
    -- vim.lsp.enable('toolhost'): one source of truth, the user's vim.lsp.config.
    base = vim.deepcopy(resolved)
    base.root_markers = nil
    base.filetypes = nil
  else
    base = {
      cmd = cfg.cmd,
      cmd_env = cfg.cmd_env,
      init_options = init_options(cfg),
      capabilities = capabilities(cfg),
      handlers = M.handlers(),
      on_init = M.ready,
      on_exit = function(_, _, client_id)
        M.forget(client_id)
      end,
    }
  end
  base.capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), base.capabilities or {})
  base.name = M.NAME
  base.cmd_cwd = root
  base.root_dir = root
  base.workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } }
  return vim.tbl_extend('force', base, overrides or {})
end

--- Starts (or reuses) the client for `root`. With `bufnr`, attaches that buffer.
---@param root string
---@param opts? {bufnr?: integer, config?: table}
---@return integer? client_id
function M.start(root, opts)
  opts = opts or {}
  root = normalize(root)
  local problems = config.problems(config.get())
  if #problems > 0 then
    vim.notify('toolhost: invalid configuration: ' .. table.concat(problems, '; '), vim.log.levels.ERROR)
    return nil
  end
  local cfg = M.make_config(root, opts.config)
  local program = type(cfg.cmd) == 'table' and cfg.cmd[1] or nil
  if type(program) == 'string' and vim.fn.executable(program) == 0 then
    if not warned[program] then
      warned[program] = true
      vim.notify(
        ('toolhost: `%s` is not executable; set `cmd` (see :help toolhost-config)'):format(program),
        vim.log.levels.WARN
      )
    end
    return nil
  end
  return vim.lsp.start(cfg, {
    bufnr = opts.bufnr,
    attach = opts.bufnr ~= nil,
    -- The same name and root: a client started by the plugin or by vim.lsp.enable('toolhost').
    reuse_client = function(client, c)
      return client.name == c.name and client.root_dir == c.root_dir and not client:is_stopped()
    end,
  })
end

--- Attaches `bufnr` once its file exists or the user types in it (see |M.attach|).
---@param bufnr integer
---@param start boolean
function M.defer(bufnr, start)
  if vim.b[bufnr].toolhost_deferred then
    return
  end
  vim.b[bufnr].toolhost_deferred = true
  local group = vim.api.nvim_create_augroup('toolhost_deferred_' .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'BufWritePost', 'BufReadPost' }, {
    group = group,
    buffer = bufnr,
    callback = function(ev)
      vim.api.nvim_del_augroup_by_id(group)
      vim.b[ev.buf].toolhost_deferred = nil
      M.attach(ev.buf, start)
    end,
  })
end

--- Attaches a file buffer to the client of its root: an existing client whose root holds the
--- file, else (with `start`) a new client for the buffer's marker root.
---@param bufnr integer
---@param start boolean
---@return integer? client_id
function M.attach(bufnr, start)
  local path = M.buf_path(bufnr)
  if not path then
    return nil
  end
  if not vim.uv.fs_stat(path) and not vim.bo[bufnr].modified then
    -- A buffer for a file that does not exist yet is one empty line, which the server would
    -- count as unsaved text and so refuse to create the file. Attach once the user types or
    -- the file appears (a write, or a reload after an agent created it).
    M.defer(bufnr, start)
    return nil
  end
  local existing = M.for_path(path, true)
  if existing then
    if not existing.attached_buffers[bufnr] then
      vim.lsp.buf_attach_client(bufnr, existing.id)
    end
    return existing.id
  end
  -- With vim.lsp.enable('toolhost') the user asked for the server: start it even for buffers
  -- Neovim's FileType trigger never reaches (files without a filetype).
  if not start and not M.enabled() then
    return nil
  end
  local root = M.find_root(bufnr)
  if not root then
    return nil
  end
  return M.start(root, { bufnr = bufnr })
end

--- The client for the current context: the one attached to `bufnr`; for a cards buffer the
--- client it shows; else the one whose root holds the buffer's file or the working directory;
--- else the only running one. With `start`, one is started for the buffer's root (or the
--- working directory).
---@param bufnr? integer
---@param start? boolean
---@return vim.lsp.Client?
function M.current(bufnr, start)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local attached = vim.lsp.get_clients({ name = M.NAME, bufnr = bufnr })[1]
  if attached and not attached:is_stopped() then
    return attached
  end
  local owner = vim.b[bufnr].toolhost_client
  local owned = owner and vim.lsp.get_client_by_id(owner)
  if owned and not owned:is_stopped() then
    return owned
  end
  local path = M.buf_path(bufnr)
  local found = (path and M.for_path(path)) or M.for_path(normalize(vim.fn.getcwd()))
  if found then
    return found
  end
  local running = M.clients()
  if not path and #running == 1 then
    return running[1]
  end
  if not start then
    return nil
  end
  local id
  if path then
    id = M.attach(bufnr, true)
  end
  if not id then
    id = M.start(M.find_root(bufnr) or vim.fn.getcwd())
  end
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- The server `given`, else the current buffer's (started unless `start` is false); when there is
--- none, says so as a warning and returns nil.
---@param given? vim.lsp.Client
---@param start? boolean
---@return vim.lsp.Client?
function M.current_or_warn(given, start)
  local c = given or M.current(0, start ~= false)
  if not c then
    vim.notify('toolhost: no toolhost server for this buffer or directory', vim.log.levels.WARN)
  end
  return c
end

--- Calls `fn(client)` once the client is initialized (or `fn(nil, err)` if it never is).
---@param client vim.lsp.Client
---@param fn fun(client: vim.lsp.Client?, err: string?)
---@param timeout_ms? integer
function M.when_ready(client, fn, timeout_ms)
  if client.initialized then
    return fn(client)
  end
  local deadline = vim.uv.now() + (timeout_ms or 10000)
  local timer = assert(vim.uv.new_timer())
  timer:start(
    10,
    10,
    vim.schedule_wrap(function()
      if timer:is_closing() then
        return
      end
      if client.initialized then
        timer:close()
        fn(client)
      elseif client:is_stopped() or vim.uv.now() > deadline then
        timer:close()
        fn(nil, 'the toolhost server did not start (see :checkhealth toolhost and :LspLog)')
      end
    end)
  )
end

--- Sends a request once the client is ready; `cb(err, result)` with err a string.
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param cb fun(err: string?, result: any)
function M.request(client, method, params, cb)
  M.when_ready(client, function(c, err)
    if not c then
      return cb(err)
    end
    local ok = c:request(method, params, function(rpc_err, result)
      if rpc_err then
        return cb(('%s failed: %s'):format(method, rpc_err.message or vim.inspect(rpc_err)))
      end
      cb(nil, result)
    end)
    if not ok then
      cb(method .. ': the toolhost server is not running')
    end
  end)
end

--- Synchronous form of |M.request| (waits with |vim.wait|).
---@param client vim.lsp.Client
---@param method string
---@param params table
---@param timeout_ms? integer
---@return string? err
---@return any result
function M.request_sync(client, method, params, timeout_ms)
  local done, err, result = false, nil, nil
  M.request(client, method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout_ms or 30000, function()
    return done
  end, 5) then
    return method .. ': timed out'
  end
  return err, result
end

--- Cached tool names of a client (fetched on first use).
---@param client vim.lsp.Client
---@param timeout_ms? integer
---@return string[]
function M.tool_names(client, timeout_ms)
  local st = M.state(client.id)
  if not st.tools then
    local err, res = M.request_sync(client, 'toolhost/listTools', vim.empty_dict(), timeout_ms or 2000)
    if err or type(res) ~= 'table' then
      return {}
    end
    st.tools = res.tools or {}
  end
  local names = {}
  for _, t in ipairs(st.tools) do
    table.insert(names, t.name)
  end
  return names
end

--- Stops every toolhost client (or the one for `root`).
---@param root? string
function M.stop(root)
  for _, c in ipairs(M.clients()) do
    if not root or c.root_dir == normalize(root) then
      c:stop()
    end
  end
end

return M
