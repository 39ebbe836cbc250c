--- toolhost.config: Defaults and user overrides

---@class toolhost.Keymaps
---@field cards? string  lhs for |<Plug>(toolhost-cards)|
---@field clear? string  lhs for |<Plug>(toolhost-clear)|
---@field tools? string  lhs for |<Plug>(toolhost-tools)|
---@field sessions? string lhs for |<Plug>(toolhost-sessions)|
---@field revert? string lhs for |<Plug>(toolhost-revert)| (no default key)
---@field ["revert-since"] string? lhs for |<Plug>(toolhost-revert-since)| (no default key)
---@field review? string lhs for |<Plug>(toolhost-review)|
---@field ["mcp-servers"] string? lhs for |<Plug>(toolhost-mcp-servers)| (no default key)

---@class toolhost.ReviewKeys Keys of a review buffer (buffer-local); `false` or `''`: none.
---@field next? string|false  default `]h`
---@field prev? string|false  default `[h`
---@field accept? string|false  default `a`
---@field reject? string|false  default `r`
---@field ["accept-all"] string|false? default `A`
---@field ["reject-all"] string|false? default `R`
---@field comment? string|false  default `c`
---@field submit? string|false  default `<CR>`
---@field ["open-file"] string|false? default `gf`
---@field close? string|false  default `q`

---@class toolhost.ChatConfig The prompts of |:Toolhost-ask| (|toolhost-chat|).
---@field mode? 'ask'|'accept-edits'|'plan'|'auto' permission mode (nil: the server's `[agent] mode`)
---@field model? string model (nil: the server's `[agent] model`)

---@class toolhost.Config
---@field cmd string[] Command that starts the server (`toolhost serve`).
---@field cmd_env? table<string,string> Extra environment for the server process.
---@field auto_start boolean Start/attach the client when a file buffer is read.
---@field root_markers string[] Files or directories that mark a workspace root.
---@field init_options table Sent as `initializationOptions` (toolhost.toml keys, snake_case).
---@field session_id? string Resume (or create) this session (`initializationOptions.session_id`).
---@field lsp_provider boolean Answer `toolhost/lspQuery` with the editor's language servers.
---@field lsp_timeout_ms integer How long the provider waits for the language servers.
---@field inline boolean Show write/edit hunks inline (virtual lines) in visible buffers.
---@field reload boolean `checktime` unmodified buffers of files a tool changed.
---@field echo_cards boolean Echo the card of a `:Toolhost call`.
---@field keymaps boolean|toolhost.Keymaps `false` (default): no keys; `true`: the defaults below.
---@field review boolean Answer `toolhost/review` (advertise `experimental.toolhost.review`).
---@field review_open 'split'|'focus'|'notify' What an arriving review does: a split the cursor
---  stays out of (default), a split the cursor moves into unless the person is typing, or only a
---  notification.
---@field review_keys boolean|toolhost.ReviewKeys Keys of review buffers: `true` (default) the
---  defaults, a table overrides some, `false` none (map the <Plug> mappings yourself).
---@field ask_user boolean Answer `toolhost/askUser` with |vim.ui.select()| / |vim.ui.input()|
---  (advertise `experimental.toolhost.askUser`).
---@field chat toolhost.ChatConfig Defaults of |:Toolhost-ask|: `mode`, `model`.

local M = {}

---@type toolhost.Config
M.defaults = {
  cmd = { 'toolhost', 'serve' },
  cmd_env = nil,
  auto_start = true,
  root_markers = { 'toolhost.toml', '.git' },
  init_options = {},
  session_id = nil,
  lsp_provider = true,
  lsp_timeout_ms = 5000,
  inline = true,
  reload = true,
  echo_cards = true,
  keymaps = false,
  review = true,
  review_open = 'split',
  review_keys = true,
  ask_user = true,
  chat = {},
}

---@type toolhost.Keymaps
M.default_keymaps = {
  cards = '<leader>tc',
  clear = '<leader>tx',
  tools = '<leader>tt',
  sessions = '<leader>ts',
  review = '<leader>tr',
}

---@type table?
local user = nil

--- Records overrides given to |toolhost.setup()|.
---@param opts? table
function M.set(opts)
  vim.validate('opts', opts, 'table', true)
  user = vim.tbl_deep_extend('force', user or {}, opts or {})
end

--- Forgets every `setup()` override (tests).
function M.reset()
  user = nil
end

--- The effective configuration: defaults < `vim.g.toolhost` < `setup()`.
---@return toolhost.Config
function M.get()
  local g = vim.g.toolhost
  local cfg = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), type(g) == 'table' and g or {}, user or {})
  -- Lists replace, they never merge index by index.
  for _, key in ipairs({ 'cmd', 'root_markers' }) do
    local v = (user and user[key]) or (type(g) == 'table' and g[key]) or nil
    if v ~= nil then
      cfg[key] = v
    end
  end
  return cfg
end

--- Validates a configuration; returns a list of problems (empty when fine).
---@param cfg toolhost.Config
---@return string[]
function M.problems(cfg)
  local out = {}
  local function check(name, value, kind)
    local ok, err = pcall(vim.validate, name, value, kind)
    if not ok then
      table.insert(out, tostring(err))
    end
  end
  check('cmd', cfg.cmd, 'table')
  if type(cfg.cmd) == 'table' and type(cfg.cmd[1]) ~= 'string' then
    table.insert(out, 'cmd: the first element must be the program (a string)')
  end
  check('auto_start', cfg.auto_start, 'boolean')
  check('root_markers', cfg.root_markers, 'table')
  check('init_options', cfg.init_options, 'table')
  check('lsp_provider', cfg.lsp_provider, 'boolean')
  check('lsp_timeout_ms', cfg.lsp_timeout_ms, 'number')
  check('inline', cfg.inline, 'boolean')
  check('reload', cfg.reload, 'boolean')
  check('keymaps', cfg.keymaps, { 'boolean', 'table' })
  check('review', cfg.review, 'boolean')
  check('review_keys', cfg.review_keys, { 'boolean', 'table' })
  check('ask_user', cfg.ask_user, 'boolean')
  check('chat', cfg.chat, 'table')
  if type(cfg.chat) == 'table' then
    local modes = { 'ask', 'accept-edits', 'plan', 'auto' }
    if cfg.chat.mode ~= nil and not vim.tbl_contains(modes, cfg.chat.mode) then
      table.insert(
        out,
        ('chat.mode: expected one of %s, got %s'):format(table.concat(modes, ', '), vim.inspect(cfg.chat.mode))
      )
    end
    if cfg.chat.model ~= nil and type(cfg.chat.model) ~= 'string' then
      table.insert(out, ('chat.model: expected a string, got %s'):format(vim.inspect(cfg.chat.model)))
    end
  end
  if not vim.tbl_contains({ 'split', 'focus', 'notify' }, cfg.review_open) then
    table.insert(
      out,
      ('review_open: expected "split", "focus" or "notify", got %s'):format(vim.inspect(cfg.review_open))
    )
  end
  return out
end

return M
