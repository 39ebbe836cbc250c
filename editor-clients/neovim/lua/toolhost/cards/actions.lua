--- toolhost.cards.actions: What the keys of a cards buffer act on: <CR> opens what the line under
--- the cursor points at, <C-c> (and |:ToolhostStop|) finds the running call to stop.

local buffer = require('toolhost.cards.buffer')
local store = require('toolhost.cards.store')
local tree = require('toolhost.cards.tree')
local views = require('toolhost.cards.views')

local M = {}

--- <CR> in a cards buffer: on a web card's source or page line, open that URL with
--- |vim.ui.open()| (|toolhost.cards.fetch|); else open the card's location in the previous window; on a
--- terminal or MCP card, its full output (|toolhost.cards.output|).
---@param buf? integer
function M.jump(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local li = buffer.line_at(buf, row)
  if not li then
    return
  end
  local url = views.url(li.card, li.index)
  if url then
    local ok, cmd, err = pcall(vim.ui.open, url)
    if not ok or (cmd == nil and err) then
      vim.notify(('toolhost: cannot open %s: %s'):format(url, tostring(ok and err or cmd)), vim.log.levels.WARN)
    end
    return
  end
  if views.has_full_output(li.card) then
    require('toolhost.cards.output').open_output(li.card, vim.b[buf].toolhost_client)
    return
  end
  local path, line = views.target(li.card, li.index)
  if not path then
    vim.notify('toolhost: this card has no location', vim.log.levels.INFO)
    return
  end
  local cards_win = vim.api.nvim_get_current_win()
  vim.cmd('wincmd p')
  if vim.api.nvim_get_current_win() == cards_win then
    vim.cmd('aboveleft split')
  end
  vim.cmd.edit(vim.fn.fnameescape(path))
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { math.min(math.max(line or 1, 1), last), 0 })
end

--- The call that <C-c> in a cards buffer and |:ToolhostStop| stop: the pending card under the
--- cursor of cards buffer `buf` (a nested call drawn under its program: that call), else the
--- newest pending top-level card of `client_id`, else of any client.
---@param buf? integer
---@param row? integer 1-based cursor line in `buf`
---@param client_id? integer
---@return integer? client_id
---@return string? call_id
function M.call_to_stop(buf, row, client_id)
  local li = buf and row and buffer.line_at(buf, row) or nil
  if li and li.card.status == 'pending' and (vim.b[buf].toolhost_client or client_id) then
    return vim.b[buf].toolhost_client or client_id, li.card.callId
  end
  local ids = client_id and { client_id } or {}
  for _, id in ipairs(store.clients()) do
    if id ~= client_id then
      table.insert(ids, id)
    end
  end
  for _, id in ipairs(ids) do
    local s = store.store(id)
    for _, card in ipairs(store.list(id)) do
      -- a program's nested call stops with the program: stop the call at the top
      if card.status == 'pending' and not tree.drawn_parent(card, s.by_id) then
        return id, card.callId
      end
    end
  end
  return nil
end

return M
