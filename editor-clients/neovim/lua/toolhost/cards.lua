--- toolhost.cards: Cards: the store of a session and the cards scratch buffer

---@class toolhost.CardLocation
---@field path string Absolute path.
---@field line integer 1-based line.

---@class toolhost.HunkLine
---@field op ' '|'+'|'-'
---@field text string

---@class toolhost.Hunk
---@field path string
---@field oldStart integer meaningless (0) in a preview hunk
---@field oldLines integer
---@field newStart integer meaningless (0) in a preview hunk
---@field newLines integer
---@field lines toolhost.HunkLine[]
---@field header? string The header line as the server writes it (`@@ -a,b +c,d @@`, `@@ preview -b +d @@`).
---@field preview? boolean A pending change whose place in the file is not known yet.

---@class toolhost.Card
---@field callId string
---@field tool string
---@field status 'pending'|'completed'|'failed'
---@field kind string Open: diff, read, search, terminal, todo, question, fetch, structured, generic
---  or a tool's own kind; a kind without a view here is drawn as generic (its `rendered` text).
---@field title string
---@field caller? string Who made the call when it was not this editor: the agent's MCP
---  `clientInfo.name` (e.g. `claude-code`) for calls that came through `toolhost mcp`; the title
---  line of `rendered` then ends with ` · <caller>`.
---@field text string
---@field rendered string The one plain-text rendering; shown byte for byte.
---@field locations toolhost.CardLocation[]
---@field hunks? toolhost.Hunk[]
---@field stats? {additions: integer, deletions: integer}
---@field read? table read cards: {path, offset, lines, totalLines, lang?}
---@field search? table search cards: {shape, paths?, files?, locations?, truncated, total}
---@field data? any presentation meta of kinds without a view of their own here

---@class toolhost.LineRole
---@field role 'title'|'header'|'+'|'-'|' '|'text'
---@field hunk? toolhost.Hunk the hunk of a diff line
---@field line? integer for diff lines: the line in the new file (nil in a preview hunk)

---@class toolhost.Store
---@field order string[] callIds, oldest first
---@field by_id table<string, toolhost.Card>

---@class toolhost.LineInfo
---@field card toolhost.Card
---@field index integer 1-based line index inside the card's `rendered`

local M = {}

local ns = vim.api.nvim_create_namespace('toolhost_cards')

---@type table<integer, toolhost.Store>
local stores = {}

---@type table<integer, toolhost.LineInfo[]>  cards buffer -> per-line info
local line_info = {}

---@type table<integer, integer> client id -> live cards buffer
local live_bufs = {}

--- Defines the highlight groups (default links, so colorschemes can override them).
function M.define_highlights()
  local links = {
    ToolhostDiffAdd = 'DiffAdd',
    ToolhostDiffDelete = 'DiffDelete',
    ToolhostCardTitle = 'Title',
    ToolhostCaller = 'Identifier',
    ToolhostHunkHeader = 'Special',
    ToolhostInlineHeader = 'DiagnosticVirtualTextInfo',
    ToolhostInlineDelete = 'DiffDelete',
    ToolhostInlineAdd = 'DiffAdd',
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

---@param client_id integer
---@return toolhost.Store
function M.store(client_id)
  stores[client_id] = stores[client_id] or { order = {}, by_id = {} }
  return stores[client_id]
end

--- The cards of a client, newest first.
---@param client_id integer
---@return toolhost.Card[]
function M.list(client_id)
  local s = M.store(client_id)
  local out = {}
  for i = #s.order, 1, -1 do
    table.insert(out, s.by_id[s.order[i]])
  end
  return out
end

--- Drops a client's cards (its server exited).
---@param client_id integer
function M.forget(client_id)
  stores[client_id] = nil
  live_bufs[client_id] = nil
end

--- Whether a card reports files a call changed: a completed diff card (by kind, never by
--- tool name, so tools registered at run time count too) with a hunk placed in the file.
---@param card toolhost.Card
---@return boolean
local function changes_files(card)
  if card.status ~= 'completed' or card.kind ~= 'diff' or type(card.hunks) ~= 'table' then
    return false
  end
  for _, hunk in ipairs(card.hunks) do
    if type(hunk) == 'table' and not hunk.preview then
      return true
    end
  end
  return false
end

--- Records a card (notification or callTool response). A card with a known callId replaces the
--- earlier one in place; a new callId becomes the newest card.
---@param client_id integer
---@param card toolhost.Card
function M.on_card(client_id, card)
  if type(card) ~= 'table' or type(card.callId) ~= 'string' then
    return
  end
  local s = M.store(client_id)
  local old = s.by_id[card.callId]
  if not old then
    table.insert(s.order, card.callId)
  end
  s.by_id[card.callId] = card
  local first_time_done = changes_files(card) and not (old and old.status == 'completed')
  if first_time_done then
    require('toolhost.inline').on_file_card(card)
  end
  local buf = live_bufs[client_id]
  if buf and vim.api.nvim_buf_is_valid(buf) then
    M.render(buf, M.list(client_id))
  end
end

--- Adds the earlier cards of a resumed session (oldest first) before every card seen live.
---@param client_id integer
---@param cards toolhost.Card[]
function M.seed(client_id, cards)
  local s = M.store(client_id)
  local older = {}
  for _, card in ipairs(cards) do
    if type(card) == 'table' and type(card.callId) == 'string' and not s.by_id[card.callId] then
      table.insert(older, card.callId)
      s.by_id[card.callId] = card
    end
  end
  s.order = vim.list_extend(older, s.order)
  local buf = live_bufs[client_id]
  if #older > 0 and buf and vim.api.nvim_buf_is_valid(buf) then
    M.render(buf, M.list(client_id))
  end
end

--- The caller label at the end of a card's title line: the 0-based byte column where
--- ` · <caller>` starts and where the name starts, or nil when the card has no caller (a call of
--- this editor) or its title line does not end with it.
---@param card toolhost.Card
---@param title string the first line of `rendered`
---@return integer? start column of ` · `
---@return integer? name column of the caller's name
function M.caller_span(card, title)
  local caller = card.caller
  if type(caller) ~= 'string' or caller == '' then
    return nil
  end
  local suffix = ' · ' .. caller
  if #title < #suffix or title:sub(-#suffix) ~= suffix then
    return nil
  end
  return #title - #suffix, #title - #caller
end

--- Splits `rendered` into buffer lines (exactly: joining them with "\n" gives it back).
---@param text string
---@return string[]
function M.split(text)
  return vim.split(text, '\n', { plain = true })
end

--- The lines a cards buffer shows: each card's `rendered`, one blank line between cards.
---@param cards toolhost.Card[]
---@return string[] lines
---@return toolhost.LineInfo[] info
function M.lines(cards)
  local lines, info = {}, {}
  for i, card in ipairs(cards) do
    if i > 1 then
      table.insert(lines, '')
      table.insert(info, false)
    end
    for idx, l in ipairs(M.split(card.rendered or '')) do
      table.insert(lines, l)
      table.insert(info, { card = card, index = idx })
    end
  end
  return lines, info
end

--- The role of each line of a card's `rendered` (index 1 is the title). A diff card's lines are
--- read off its hunks — each hunk's `header` as the server wrote it, then its lines — so a
--- hunk header is never formatted or guessed here. When `rendered` does not have that shape the
--- lines starting with `@@ `, `+` and `-` are taken for diff lines. Every other kind (including
--- kinds this plugin does not know) is the generic view: a title and text.
---@param card toolhost.Card
---@return toolhost.LineRole[]
function M.layout(card)
  local lines = M.split(card.rendered or '')
  local out = { { role = 'title' } }
  for i = 2, #lines do
    out[i] = { role = 'text' }
  end
  if card.kind ~= 'diff' then
    return out
  end
  local planned, idx, fits = {}, 1, type(card.hunks) == 'table'
  for _, hunk in ipairs(fits and card.hunks or {}) do
    idx = idx + 1
    local header = type(hunk.header) == 'string' and hunk.header ~= '' and hunk.header or nil
    if type(hunk.lines) ~= 'table' or lines[idx] == nil or (header and lines[idx] ~= header) then
      fits = false
      break
    end
    local new_line = (not hunk.preview) and tonumber(hunk.newStart) or nil
    planned[idx] = { role = 'header', hunk = hunk, line = new_line }
    for _, hl in ipairs(hunk.lines) do
      idx = idx + 1
      if lines[idx] ~= (tostring(hl.op) .. tostring(hl.text)) then
        fits = false
        break
      end
      local op = (hl.op == '+' or hl.op == '-') and hl.op or ' '
      planned[idx] = { role = op, hunk = hunk, line = new_line }
      if new_line and op ~= '-' then
        new_line = new_line + 1
      end
    end
    if not fits then
      break
    end
  end
  if fits and idx == #lines then
    for i, role in pairs(planned) do
      out[i] = role
    end
    return out
  end
  for i = 2, #lines do
    local l = lines[i]
    local c = l:sub(1, 1)
    out[i] = { role = (l:sub(1, 3) == '@@ ' and 'header') or ((c == '+' or c == '-') and c) or 'text' }
  end
  return out
end

---@type table<string, string>
local role_groups = {
  title = 'ToolhostCardTitle',
  header = 'ToolhostHunkHeader',
  ['+'] = 'ToolhostDiffAdd',
  ['-'] = 'ToolhostDiffDelete',
}

--- Fills a cards buffer and its highlights.
---@param buf integer
---@param cards toolhost.Card[]
function M.render(buf, cards)
  local lines, info = M.lines(cards)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  line_info[buf] = info
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local layouts = {}
  for row, li in ipairs(info) do
    local group
    if li then
      layouts[li.card] = layouts[li.card] or M.layout(li.card)
      local role = layouts[li.card][li.index]
      group = role and role_groups[role.role] or nil
    end
    if group then
      vim.api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { line_hl_group = group, priority = 100 })
    end
    if li and li.index == 1 then
      local _, name_col = M.caller_span(li.card, lines[row])
      if name_col then
        vim.api.nvim_buf_set_extmark(buf, ns, row - 1, name_col, {
          end_col = #lines[row],
          hl_group = 'ToolhostCaller',
          priority = 110,
        })
      end
    end
  end
end

--- The file and line a cards-buffer line points at.
---@param li toolhost.LineInfo
---@return string? path
---@return integer? line
function M.target(li)
  local card = li.card
  local locs = card.locations or {}
  local first = locs[1]
  if li.index > 1 and card.kind == 'diff' and first then
    -- A diff line: its line in the new file (a preview hunk has none: the card's location).
    local role = M.layout(card)[li.index]
    if role and role.line then
      return first.path, math.max(role.line, 1)
    end
  elseif li.index > 1 and card.kind == 'search' and locs[li.index - 1] then
    local loc = locs[li.index - 1]
    return loc.path, loc.line
  elseif li.index > 1 and card.kind == 'read' and first then
    local text = M.split(card.rendered)[li.index] or ''
    local n = text:match('^(%d+): ')
    if n then
      return first.path, tonumber(n)
    end
  end
  if first then
    return first.path, first.line
  end
  return nil
end

--- <CR> in a cards buffer: open the card's location in the previous window.
---@param buf? integer
function M.jump(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local li = (line_info[buf] or {})[row]
  if not li then
    return
  end
  local path, line = M.target(li)
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

--- Creates (or finds) a scratch cards buffer named `name`.
---@param name string
---@return integer buf
local function scratch(name)
  local buf
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name then
      buf = b
    end
  end
  if not buf then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'toolhost-cards'
  vim.keymap.set('n', '<CR>', function()
    M.jump(buf)
  end, { buffer = buf, desc = 'toolhost: jump to the card location' })
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, desc = 'toolhost: close the cards window' })
  return buf
end

---@param buf integer
local function show(buf)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
  end
  vim.wo.wrap = false
  vim.wo.number = false
  vim.wo.relativenumber = false
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
end

--- Opens the live cards buffer of a client (`toolhost://cards/<session>`).
---@param client vim.lsp.Client
---@return integer buf
function M.open_live(client)
  local session = require('toolhost.client').state(client.id).session_id or tostring(client.id)
  local buf = scratch('toolhost://cards/' .. session)
  live_bufs[client.id] = buf
  vim.b[buf].toolhost_client = client.id
  M.render(buf, M.list(client.id))
  show(buf)
  return buf
end

--- Opens a replay buffer (`toolhost://replay/<session>`) with cards from the log (oldest first
--- as the server sends them; shown newest first like the live buffer).
---@param session_id string
---@param cards toolhost.Card[]
---@param client_id? integer the client that replayed it
---@return integer buf
function M.open_replay(session_id, cards, client_id)
  local buf = scratch('toolhost://replay/' .. session_id)
  vim.b[buf].toolhost_client = client_id
  local newest_first = {}
  for i = #cards, 1, -1 do
    table.insert(newest_first, cards[i])
  end
  M.render(buf, newest_first)
  show(buf)
  return buf
end

--- Echoes a card with the same highlights as the cards buffer.
---@param card toolhost.Card
function M.echo(card)
  local lines = M.split(card.rendered or '')
  local layout = M.layout(card)
  local chunks = {}
  for i, l in ipairs(lines) do
    local group = layout[i] and role_groups[layout[i].role] or nil
    local nl = i < #lines and '\n' or ''
    local name_col = i == 1 and select(2, M.caller_span(card, l)) or nil
    if name_col then
      table.insert(chunks, { l:sub(1, name_col), group })
      table.insert(chunks, { l:sub(name_col + 1) .. nl, 'ToolhostCaller' })
    else
      table.insert(chunks, { l .. nl, group })
    end
  end
  vim.api.nvim_echo(chunks, true, {})
end

M.namespace = ns
M.define_highlights()

return M
