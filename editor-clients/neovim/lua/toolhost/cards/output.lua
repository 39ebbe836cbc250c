--- toolhost.cards.output: The full output of a terminal or MCP card (<CR> on it): the spill file
--- the server kept, else `toolhost://output/<callId>`, which follows a running call's live output.

local live = require('toolhost.cards.live')
local store = require('toolhost.cards.store')
local views = require('toolhost.cards.views')

local M = {}

---@type table<string, {buf: integer, client_id?: integer, card: toolhost.Card}> callId -> its output buffer
local output_bufs = {}

--- Fills the full-output buffer of a call (|M.open_output|) with its output now: the live text
--- while it runs, `terminal.output` (or the failed call's text) once it ended; an MCP card's
--- text and its whole structured content. A window whose cursor is on the last line follows the
--- end, like `tail -f`.
---@param call_id string
function M.refresh_output(call_id)
  local ob = output_bufs[call_id]
  if not ob then
    return
  end
  if not vim.api.nvim_buf_is_valid(ob.buf) then
    output_bufs[call_id] = nil
    return
  end
  local card = ob.client_id and store.get(ob.client_id, call_id) or ob.card
  ob.card = card
  local lines = views.full_output(card, card.status == 'pending' and live.get(ob.client_id, call_id) or nil)
  local following = {}
  local old_last = vim.api.nvim_buf_line_count(ob.buf)
  for _, win in ipairs(vim.fn.win_findbuf(ob.buf)) do
    following[win] = vim.api.nvim_win_get_cursor(win)[1] >= old_last
  end
  vim.bo[ob.buf].modifiable = true
  vim.api.nvim_buf_set_lines(ob.buf, 0, -1, false, lines)
  vim.bo[ob.buf].modifiable = false
  vim.bo[ob.buf].modified = false
  for win, follow in pairs(following) do
    if follow then
      pcall(vim.api.nvim_win_set_cursor, win, { math.max(#lines, 1), 0 })
    end
  end
end

--- Opens the full output of a terminal or MCP card in a window split off the previous window (or
--- above the cards window): the first spill file (`terminal.spillPaths[1]`, the whole stream the
--- server kept on disk) when there is one, else `toolhost://output/<callId>` (filetype
--- `toolhost-output`, ANSI stripped), which keeps following a running call's live output.
---@param card toolhost.Card
---@param client_id? integer the client whose live output a running call shows
---@return integer buf
function M.open_output(card, client_id)
  local t = type(card.terminal) == 'table' and card.terminal or {}
  local spill = type(t.spillPaths) == 'table' and t.spillPaths[1] or nil
  local cards_win = vim.api.nvim_get_current_win()
  vim.cmd('wincmd p')
  vim.cmd(vim.api.nvim_get_current_win() == cards_win and 'aboveleft split' or 'split')
  if type(spill) == 'string' and vim.uv.fs_stat(spill) then
    vim.cmd.edit(vim.fn.fnameescape(spill))
    vim.bo.readonly = true -- the session's copy of the output, not a file to edit
    return vim.api.nvim_get_current_buf()
  end
  local buf = require('toolhost.cards.buffer').named_scratch('toolhost://output/' .. card.callId, 'toolhost-output')
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, desc = 'toolhost: close the output window' })
  output_bufs[card.callId] = { buf = buf, client_id = client_id, card = card }
  vim.api.nvim_win_set_buf(0, buf)
  M.refresh_output(card.callId)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
  return buf
end

--- Refreshes the open full-output buffers of a client's calls.
---@param client_id integer
function M.refresh_client(client_id)
  for call_id, ob in pairs(output_bufs) do
    if ob.client_id == client_id then
      M.refresh_output(call_id)
    end
  end
end

return M
