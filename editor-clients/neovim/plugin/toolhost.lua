-- toolhost: the agent tool host as an LSP client. Logic lives in lua/toolhost/ (lazy require).
if vim.g.loaded_toolhost or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_toolhost = true

vim.api.nvim_create_user_command('Toolhost', function(opts)
  require('toolhost').command(opts)
end, {
  nargs = '*',
  bang = true, -- `:Toolhost! revert-since`: no confirmation; `:Toolhost! ask`: a new chat
  desc = 'toolhost: ask|chat|call|tools|cards|replay|revert|revert-since|review|review-mode|plan-mode|mcp-servers|sessions|clear|start|stop|help',
  complete = function(arg_lead, line)
    return require('toolhost').complete(arg_lead, line)
  end,
})

vim.api.nvim_create_user_command('ToolhostStop', function()
  require('toolhost').stop_call()
end, { desc = 'toolhost: stop the running call under the cursor (or the newest one)' })

local plugs = {
  cards = 'cards',
  clear = 'clear',
  tools = 'tools',
  sessions = 'sessions',
  revert = 'revert',
  ['revert-since'] = 'revert_since',
  review = 'review',
  ['mcp-servers'] = 'show_mcp_servers',
}
for name, fn in pairs(plugs) do
  vim.keymap.set('n', ('<Plug>(toolhost-%s)'):format(name), function()
    require('toolhost')[fn]()
  end, { desc = 'toolhost: ' .. name })
end

-- The actions of a review buffer (|toolhost-review-keys|), for users who map their own keys.
for _, action in ipairs({
  'next',
  'prev',
  'accept',
  'reject',
  'accept-all',
  'reject-all',
  'comment',
  'submit',
  'open-file',
  'close',
}) do
  vim.keymap.set('n', ('<Plug>(toolhost-review-%s)'):format(action), function()
    require('toolhost.review').action(action)
  end, { desc = 'toolhost review: ' .. action })
end

local group = vim.api.nvim_create_augroup('toolhost', { clear = true })

---@param buf integer
local function on_buffer(buf)
  local g = vim.g.toolhost
  local auto = not (type(g) == 'table' and g.auto_start == false)
  if package.loaded['toolhost.config'] then
    auto = require('toolhost.config').get().auto_start
  end
  if vim.bo[buf].buftype ~= '' then
    return
  end
  -- vim.lsp.enable('toolhost') (Neovim 0.11): the client starts from lsp/toolhost.lua; the
  -- plugin still attaches what Neovim's FileType trigger misses (files without a filetype).
  local lsp = package.loaded['vim.lsp']
  local enabled = lsp ~= nil
    and (
      (type(lsp.is_enabled) == 'function' and lsp.is_enabled('toolhost'))
      or (type(lsp._enabled_configs) == 'table' and lsp._enabled_configs.toolhost ~= nil)
    )
  -- Attach to a running client even when auto-start is off.
  if auto or enabled or package.loaded['toolhost.client'] then
    require('toolhost.client').attach(buf, auto)
  end
end

vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
  group = group,
  desc = 'toolhost: attach file buffers under a workspace root',
  callback = function(ev)
    on_buffer(ev.buf)
  end,
})

-- Loaded late (a lazy-loading plugin manager): take the file buffers already open.
if vim.v.vim_did_enter == 1 then
  vim.schedule(function()
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) ~= '' then
        on_buffer(buf)
      end
    end
  end)
end

vim.api.nvim_create_autocmd('LspAttach', {
  group = group,
  desc = 'toolhost: session and resumed cards of a toolhost client, however it started',
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'toolhost' then
      require('toolhost.client').ready(client)
    end
  end,
})

vim.api.nvim_create_autocmd('ColorScheme', {
  group = group,
  callback = function()
    if package.loaded['toolhost.cards.highlights'] then
      require('toolhost.cards.highlights').define_highlights()
    end
  end,
})

if vim.g.toolhost and type(vim.g.toolhost) == 'table' and vim.g.toolhost.keymaps then
  require('toolhost').apply_keymaps()
end
