--- toolhost.cards.buffer: The cards buffers: `toolhost://cards/<session>` (a client's cards as they
--- arrive, newest first, with the session's todo list pinned at the top) and
--- `toolhost://replay/<session>` (a session's cards rebuilt from its log). Each line knows the card
--- it belongs to, so the keys of the buffer act on the card under the cursor — on a program's
--- nested call drawn under its card, that call — and the cursor stays on its card while live
--- output and new cards redraw the buffer. Each card is a fold holding its nested calls. The live
--- buffer may show another session's cards instead (a worktree session's,
--- |toolhost.cards.watched|); its winbar names the session it shows.

local groups = require('toolhost.cards.groups')
local highlights = require('toolhost.cards.highlights')
local live = require('toolhost.cards.live')
local store = require('toolhost.cards.store')
local text = require('toolhost.cards.text')
local todo = require('toolhost.cards.todo')
local tree = require('toolhost.cards.tree')
local views = require('toolhost.cards.views')
local watched = require('toolhost.cards.watched')

local M = {}

local ns = vim.api.nvim_create_namespace('toolhost_cards')

--- The namespace of the cards buffers' highlights.
M.namespace = ns

---@type table<integer, toolhost.LineInfo[]>  cards buffer -> per-line info
local line_info = {}

---@type table<integer, integer> client id -> live cards buffer
local live_bufs = {}

---@type table<integer, boolean> clients with a cards redraw scheduled
local redraw_due = {}

--- Redraws for live output are coalesced: the server sends at most ten texts a second per call,
--- but several calls (and servers) may run at once, and each redraw rewrites the whole buffer.
local REDRAW_MS = 50

--- A card's lines and their roles: as its view draws it, else its `rendered` (roles nil: read
--- off `rendered` by |toolhost.cards.views| when highlighting).
---@param card toolhost.Card
---@param client_id? integer
---@param pinned_id? string
---@return string[] lines
---@return toolhost.LineRole[]? roles
local function card_lines(card, client_id, pinned_id)
  local vlines, roles = views.draw(card, { live = live.get(client_id, card.callId), pinned_id = pinned_id })
  if vlines and roles then
    return vlines, roles
  end
  return text.split(card.rendered or ''), nil
end

--- Adds a card and, under it, the calls made under it (|toolhost.cards.tree|): each line after
--- its tree marks (`first` on the card's first line, `rest` on the others), the count line, then
--- each child with its own marks one level deeper — a workflow's children under one heading line
--- per phase (|toolhost.cards.groups|). A card's title line ends with its label and usage, when
--- it has them.
---@param node toolhost.CardNode
---@param ctx {lines: string[], info: toolhost.LineInfo[], client_id?: integer, pinned_id?: string}
---@param first string
---@param rest string
---@param depth integer
local function add_node(node, ctx, first, rest, depth)
  local card = node.card
  local vlines, roles = card_lines(card, ctx.client_id, ctx.pinned_id)
  local suffix = groups.suffix(card)
  local first_row = #ctx.lines + 1
  for idx, l in ipairs(vlines) do
    local mark = idx == 1 and first or rest
    local tail = idx == 1 and suffix or ''
    table.insert(ctx.lines, mark .. l .. tail)
    table.insert(ctx.info, {
      card = card,
      index = idx,
      role = roles and roles[idx] or nil,
      depth = depth,
      indent = #mark,
      suffix = #tail > 0 and #tail or nil,
    })
  end
  if #node.children == 0 then
    return
  end
  -- The count line belongs to the parent: the keys act on it there.
  table.insert(ctx.lines, rest .. '  ' .. tree.label(node.children))
  table.insert(ctx.info, {
    card = card,
    index = #vlines + 1,
    role = { role = 'children' },
    depth = depth,
    indent = #rest,
  })
  local sections = groups.sections(node.children)
  for i, section in ipairs(sections) do
    if section.phase then
      -- The heading belongs to the parent, like the count line.
      table.insert(ctx.lines, groups.heading(rest, section.phase))
      table.insert(ctx.info, {
        card = card,
        -- its place in the card's lines, so the cursor stays on it when the buffer is redrawn
        index = #ctx.lines - first_row + 1,
        role = { role = 'phase' },
        depth = depth,
        indent = #rest,
      })
    end
    for j, child in ipairs(section.nodes) do
      local last = j == #section.nodes and (section.phase ~= nil or i == #sections)
      local cfirst, crest = tree.marks(rest, last)
      add_node(child, ctx, cfirst, crest, depth + 1)
    end
  end
end

--- The lines a cards buffer shows: the latest todo list pinned at the top
--- (|toolhost.cards.todo|), then each card as its view draws it (|toolhost.cards.views|; the
--- generic view: its `rendered`), one blank line between cards; the calls made under a card (a
--- program's nested calls) indented under it (|toolhost.cards.tree|).
---@param cards toolhost.Card[] newest first
---@param client_id? integer the client whose live output running terminal cards show
---@return string[] lines
---@return toolhost.LineInfo[] info
function M.lines(cards, client_id)
  local lines, info = {}, {}
  local pinned, todos = todo.latest_todos(cards)
  if pinned and todos then
    local plines, roles = todo.pinned_view(pinned, todos)
    for idx, l in ipairs(plines) do
      table.insert(lines, l)
      table.insert(info, { card = pinned, index = idx, role = roles[idx], pinned = true })
    end
  end
  local ctx = { lines = lines, info = info, client_id = client_id, pinned_id = pinned and pinned.callId or nil }
  for _, node in ipairs(tree.build(cards)) do
    if #lines > 0 then
      table.insert(lines, '')
      table.insert(info, false)
    end
    add_node(node, ctx, '', '', 0)
  end
  return lines, info
end

--- What a line belongs to, for keeping the cursor there: its card, or the pinned todo list (the
--- same card drawn twice).
---@param li toolhost.LineInfo
---@return string
local function row_key(li)
  return li.pinned and '\0pinned' or li.card.callId
end

--- The fold level of line `lnum` of the current cards buffer ('foldexpr'): each card is a fold
--- that starts at its title line and holds the calls made under it, each of them a fold one level
--- deeper; so `zc` on a program's card folds it with its nested calls, on a nested call only that.
---@param lnum integer
---@return string
function M.fold_level(lnum)
  local li = (line_info[vim.api.nvim_get_current_buf()] or {})[lnum]
  if not li or li.pinned then
    return '0'
  end
  local level = (li.depth or 0) + 1
  return li.index == 1 and ('>' .. level) or tostring(level)
end

--- The cards whose fold is closed in a window showing `buf`, by window: a redraw replaces every
--- line, and the folds a person closed must stay closed on the same cards.
---@param buf integer
---@param info toolhost.LineInfo[] what the buffer shows now
---@return table<integer, string[]>
local function closed_folds(buf, info)
  local out = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.wo[win].foldmethod == 'expr' then
      vim.api.nvim_win_call(win, function()
        for row, li in ipairs(info) do
          if li and not li.pinned and li.index == 1 and vim.fn.foldclosed(row) == row then
            out[win] = out[win] or {}
            table.insert(out[win], li.card.callId)
          end
        end
      end)
    end
  end
  return out
end

--- Closes again the folds of `closed` (|closed_folds|) on the cards' new title lines.
---@param buf integer
---@param info toolhost.LineInfo[]
---@param closed table<integer, string[]>
local function reclose_folds(buf, info, closed)
  if next(closed) == nil then
    return
  end
  local rows = {}
  for row, li in ipairs(info) do
    if li and not li.pinned and li.index == 1 then
      rows[li.card.callId] = row
    end
  end
  for win, ids in pairs(closed) do
    if vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_call(win, function()
        vim.cmd('normal! zx')
        -- innermost first: closing a parent first would hide its children's title lines
        for i = #ids, 1, -1 do
          local row = rows[ids[i]]
          if row then
            vim.cmd(('silent! %dfoldclose'):format(row))
          end
        end
      end)
    end
  end
end

--- Fills a cards buffer and its highlights.
---@param buf integer
---@param cards toolhost.Card[]
---@param client_id? integer the client whose live output running terminal cards show
function M.render(buf, cards, client_id)
  local lines, info = M.lines(cards, client_id)
  -- Live output redraws the buffer several times a second and new cards arrive at the top: keep
  -- every window's cursor on the card line it was on (a full replacement would move it, and the
  -- same row would then show another card, which <C-c> would stop or `u` revert).
  local old_info = line_info[buf] or {}
  local cursors = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local pos = vim.api.nvim_win_get_cursor(win)
    local li = old_info[pos[1]]
    cursors[win] = { pos = pos, key = li and row_key(li) or nil, index = li and li.index or nil }
  end
  local closed = closed_folds(buf, old_info)
  -- before the lines change: 'foldexpr' reads it while Neovim updates the folds
  line_info[buf] = info
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local first_rows = {}
  for row, li in ipairs(info) do
    if li and not first_rows[row_key(li)] then
      first_rows[row_key(li)] = row
    end
  end
  for win, cur in pairs(cursors) do
    local row = cur.pos[1]
    local first = cur.key and first_rows[cur.key]
    if first then
      -- The same line of that card, or its last line when the card got shorter.
      row = first + cur.index - 1
      while row > first and not (info[row] and row_key(info[row]) == cur.key) do
        row = row - 1
      end
    end
    pcall(vim.api.nvim_win_set_cursor, win, { math.max(math.min(row, #lines), 1), cur.pos[2] })
  end
  reclose_folds(buf, info, closed)
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local layouts = {}
  for row, li in ipairs(info) do
    local group
    if li then
      local role = li.role
      if not role then
        layouts[li.card] = layouts[li.card] or views.layout(li.card)
        role = layouts[li.card][li.index]
      end
      group = role and highlights.ROLE_GROUPS[role.role] or nil
    end
    if group then
      vim.api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { line_hl_group = group, priority = 100 })
    end
    if li and li.index == 1 then
      -- a nested call's title comes after its tree marks, and before its label and usage
      local indent = li.indent or 0
      local line = lines[row]
      local title_end = #line - (li.suffix or 0)
      for _, span in ipairs(views.title_spans(li.card, line:sub(indent + 1, title_end))) do
        vim.api.nvim_buf_set_extmark(buf, ns, row - 1, span[1] + indent, {
          end_col = span[2] + indent,
          hl_group = span[3],
          priority = 110,
        })
      end
      if li.suffix then
        vim.api.nvim_buf_set_extmark(buf, ns, row - 1, title_end, {
          end_col = #line,
          hl_group = 'ToolhostCardUsage',
          priority = 110,
        })
      end
    end
  end
end

--- What line `row` of cards buffer `buf` shows, or nil (the blank line between cards).
---@param buf integer
---@param row integer 1-based
---@return toolhost.LineInfo?
function M.line_at(buf, row)
  return (line_info[buf] or {})[row] or nil
end

--- Whether `buf` is a cards buffer (live or replay).
---@param buf integer
---@return boolean
function M.is_cards_buffer(buf)
  return line_info[buf] ~= nil and vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].filetype == 'toolhost-cards'
end

--- The card shown on a line of a cards buffer, or nil (the blank line between cards).
---@param buf integer
---@param row integer 1-based
---@return toolhost.Card?
function M.card_at(buf, row)
  local li = (line_info[buf] or {})[row]
  return li and li.card or nil
end

--- The first line (1-based) of a call's card in a cards buffer, or nil (not shown there).
---@param buf integer
---@param call_id string
---@return integer?
function M.row_of(buf, call_id)
  for row, li in ipairs(line_info[buf] or {}) do
    if li and not li.pinned and li.card.callId == call_id then
      return row
    end
  end
  return nil
end

--- Creates (or finds) a `nofile` scratch buffer named `name`.
---@param name string
---@param filetype string
---@return integer buf
function M.named_scratch(name, filetype)
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
  vim.bo[buf].filetype = filetype
  return buf
end

--- Creates (or finds) a scratch cards buffer named `name`.
---@param name string
---@return integer buf
local function scratch(name)
  local buf = M.named_scratch(name, 'toolhost-cards')
  vim.keymap.set('n', '<CR>', function()
    require('toolhost.cards.actions').jump(buf)
  end, { buffer = buf, desc = 'toolhost: open what the line points at (its location, full output or web page)' })
  vim.keymap.set('n', '<C-c>', function()
    require('toolhost').stop_call()
  end, { buffer = buf, desc = 'toolhost: stop the running call under the cursor (or the newest one)' })
  -- Buffer-local like <CR> and <C-c>: the plugin maps no global key unless asked (`keymaps`).
  vim.keymap.set('n', 'u', function()
    require('toolhost').revert()
  end, { buffer = buf, desc = 'toolhost: revert the file changes of the card under the cursor' })
  vim.keymap.set('n', 'U', function()
    require('toolhost').revert_since()
  end, { buffer = buf, desc = 'toolhost: revert every file change since the card under the cursor (asks first)' })
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
  -- each card a fold (with its nested calls), all open at first
  vim.wo.foldmethod = 'expr'
  vim.wo.foldexpr = "v:lua.require'toolhost.cards.buffer'.fold_level(v:lnum)"
  vim.wo.foldlevel = 99
  vim.wo.foldenable = true
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
end

--- What a client's live cards buffer shows: the client's own cards, or those of the session it
--- watches (|toolhost.cards.watched|), newest first; and the winbar naming that session.
---@param client_id integer
---@return toolhost.Card[] cards
---@return string winbar
---@return string? other_session the watched session's id (nil: the client's own)
local function live_view(client_id)
  local other = watched.get(client_id)
  if other then
    local winbar = ('toolhost cards · worktree %s · session %s'):format(other.name, other.session_id)
    return other.cards, winbar, other.session_id
  end
  local session = require('toolhost.client').state(client_id).session_id or '?'
  return store.list(client_id), ('toolhost cards · this workspace · session %s'):format(session), nil
end

--- Draws a client's live cards buffer: the cards it shows, and in every window showing it the
--- winbar naming their session. `vim.b.toolhost_session` is set while another session is shown,
--- so a revert there is refused (|toolhost-revert|): its calls are not the server's session's.
---@param buf integer
---@param client_id integer
local function draw_live(buf, client_id)
  local cards, winbar, other_session = live_view(client_id)
  vim.b[buf].toolhost_session = other_session
  vim.b[buf].toolhost_winbar = winbar
  M.render(buf, cards, client_id)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.wo[win][0].winbar = winbar:gsub('%%', '%%%%')
  end
end

--- Keeps the winbar on a live cards buffer in any window it is shown in later (`:buffer`, a
--- split), not only those |M.open_live| made.
---@param buf integer
local function winbar_follows(buf)
  vim.api.nvim_create_autocmd('BufWinEnter', {
    group = vim.api.nvim_create_augroup('toolhost_cards_winbar_' .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      local winbar = vim.b[buf].toolhost_winbar
      if winbar then
        vim.wo[0][0].winbar = winbar:gsub('%%', '%%%%')
      end
    end,
  })
end

--- Opens the live cards buffer of a client (`toolhost://cards/<session>`).
---@param client vim.lsp.Client
---@return integer buf
function M.open_live(client)
  local session = require('toolhost.client').state(client.id).session_id or tostring(client.id)
  local buf = scratch('toolhost://cards/' .. session)
  live_bufs[client.id] = buf
  vim.b[buf].toolhost_client = client.id
  winbar_follows(buf)
  show(buf)
  draw_live(buf, client.id)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
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
  -- Only calls of the session the server is running can be reverted: `u` in the replay of
  -- another session is refused by name (|toolhost-revert|).
  vim.b[buf].toolhost_session = session_id
  local newest_first = {}
  for i = #cards, 1, -1 do
    table.insert(newest_first, cards[i])
  end
  M.render(buf, newest_first)
  show(buf)
  return buf
end

--- Redraws a client's live cards buffer now (when it has one).
---@param client_id integer
function M.redraw(client_id)
  local buf = live_bufs[client_id]
  if buf and vim.api.nvim_buf_is_valid(buf) then
    draw_live(buf, client_id)
  end
end

--- Redraws a client's cards buffer (and the open full-output buffers) soon, once for every
--- burst of live output.
---@param client_id integer
function M.redraw_soon(client_id)
  if redraw_due[client_id] then
    return
  end
  redraw_due[client_id] = true
  vim.defer_fn(function()
    redraw_due[client_id] = nil
    M.redraw(client_id)
    require('toolhost.cards.output').refresh_client(client_id)
  end, REDRAW_MS)
end

--- Forgets a client's live cards buffer (its server exited).
---@param client_id integer
function M.forget(client_id)
  live_bufs[client_id] = nil
  watched.clear(client_id)
end

return M
