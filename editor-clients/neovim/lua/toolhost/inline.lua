--- toolhost.inline: Inline cards: hunks as virtual lines in the edited buffer

require('toolhost.cards.highlights') -- highlight groups

local M = {}

local ns = vim.api.nvim_create_namespace('toolhost_inline')
M.namespace = ns

---@class toolhost.InlineGroup
---@field buf integer
---@field marks integer[] every extmark of the group (span included)
---@field span integer extmark covering the hunk's new lines (for dismiss-on-edit)
---@field card_id string

---@type table<integer, toolhost.InlineGroup[]>
local groups = {}

---@type table<integer, boolean> buffers with an on_lines watcher
local watched = {}

---@type table<integer, boolean> buffers being reloaded by us
local reloading = {}

---@param group toolhost.InlineGroup
local function remove_group(group)
  if vim.api.nvim_buf_is_valid(group.buf) then
    for _, id in ipairs(group.marks) do
      pcall(vim.api.nvim_buf_del_extmark, group.buf, ns, id)
    end
  end
  local list = groups[group.buf] or {}
  for i, g in ipairs(list) do
    if g == group then
      table.remove(list, i)
      break
    end
  end
end

---@param buf integer
local function watch(buf)
  if watched[buf] then
    return
  end
  watched[buf] = true
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function(_, b, _, first, last_old)
      if reloading[b] then
        return
      end
      local hit = {}
      for _, g in ipairs(groups[b] or {}) do
        local pos = vim.api.nvim_buf_get_extmark_by_id(b, ns, g.span, { details = true })
        if pos[1] then
          local top = pos[1]
          local bottom = (pos[3] and pos[3].end_row) or top
          local last = math.max(last_old, first + 1) - 1
          if first <= bottom and last >= top then
            table.insert(hit, g)
          end
        end
      end
      if #hit > 0 then
        vim.schedule(function()
          for _, g in ipairs(hit) do
            remove_group(g)
          end
        end)
      end
      if not groups[b] or #groups[b] == 0 then
        watched[b] = nil
        return true -- detach
      end
    end,
    on_detach = function(_, b)
      watched[b] = nil
    end,
  })
end

--- The header virtual line of a hunk: `<tool> <title>  <hunk.header>  +A -D` (the hunk
--- header exactly as the server wrote it; left out when the hunk has none). A call an agent made
--- through `toolhost mcp` names it after the title, as the card's title line does:
--- `<tool> <title> · <caller>  <hunk.header>  +A -D`.
---@param card toolhost.Card
---@param hunk toolhost.Hunk
---@return string
function M.header(card, hunk)
  local add, del = 0, 0
  for _, l in ipairs(hunk.lines) do
    if l.op == '+' then
      add = add + 1
    elseif l.op == '-' then
      del = del + 1
    end
  end
  local header = type(hunk.header) == 'string' and hunk.header ~= '' and ('  ' .. hunk.header) or ''
  local caller = type(card.caller) == 'string' and card.caller ~= '' and (' · ' .. card.caller) or ''
  return ('%s %s%s%s  +%d -%d'):format(card.tool, card.title, caller, header, add, del)
end

--- Whether a hunk can be placed in the file: a preview hunk (a pending change whose place is
--- not known yet; its starts are 0) cannot, so it is never anchored at a made-up line.
---@param hunk toolhost.Hunk
---@return boolean
function M.placeable(hunk)
  return type(hunk) == 'table' and not hunk.preview and type(hunk.lines) == 'table' and type(hunk.newStart) == 'number'
end

--- Plans the extmarks of one hunk in a buffer of `line_count` lines (pure; used by tests).
--- Returns blocks `{row, above, lines = {{text, hl}...}}` (0-based rows), the added rows and the
--- span `{top, bottom}` of the hunk's new lines. A preview hunk gets no plan (nil).
---@param card toolhost.Card
---@param hunk toolhost.Hunk
---@param line_count integer
---@return {row: integer, above: boolean, lines: string[][]}[]? blocks
---@return integer[]? added_rows
---@return integer? top
---@return integer? bottom
function M.plan(card, hunk, line_count)
  if not M.placeable(hunk) then
    return nil
  end
  local blocks, added = {}, {}
  local pending = { { M.header(card, hunk), 'ToolhostInlineHeader' } }
  local new_line = hunk.newStart
  if hunk.newLines == 0 then
    -- unified-diff numbering: the new side is empty, newStart is the line before it
    new_line = hunk.newStart + 1
  end
  local function clamp(row)
    return math.max(0, math.min(row, math.max(line_count - 1, 0)))
  end
  local function flush_above(row)
    if #pending > 0 then
      if row > line_count - 1 then
        table.insert(blocks, { row = clamp(row), above = false, lines = pending })
      else
        table.insert(blocks, { row = clamp(row), above = true, lines = pending })
      end
      pending = {}
    end
  end
  for _, l in ipairs(hunk.lines) do
    if l.op == '-' then
      table.insert(pending, { l.text, 'ToolhostInlineDelete' })
    else
      flush_above(new_line - 1)
      if l.op == '+' and new_line - 1 <= line_count - 1 then
        table.insert(added, new_line - 1)
      end
      new_line = new_line + 1
    end
  end
  if #pending > 0 then
    -- removed lines at the end of the hunk: below the hunk's last new line
    local row = new_line - 2
    if row < 0 then
      table.insert(blocks, { row = 0, above = true, lines = pending })
    else
      table.insert(blocks, { row = clamp(row), above = false, lines = pending })
    end
  end
  local top = clamp(math.max(hunk.newStart, 1) - 1)
  local bottom = clamp(math.max(hunk.newStart + hunk.newLines - 1, 1) - 1)
  return blocks, added, top, math.max(top, bottom)
end

--- Shows a card's hunks (or `hunks`, those of this buffer's file) in `buf` as virtual lines.
---@param buf integer
---@param card toolhost.Card
---@param hunks? toolhost.Hunk[] default: every hunk of the card
function M.show(buf, card, hunks)
  local count = vim.api.nvim_buf_line_count(buf)
  groups[buf] = groups[buf] or {}
  for _, hunk in ipairs(hunks or card.hunks or {}) do
    local blocks, added, top, bottom = M.plan(card, hunk, count)
    if blocks and added and top and bottom then
      M.place(buf, card, blocks, added, top, bottom)
    end
  end
  watch(buf)
end

--- Sets the extmarks of one planned hunk.
---@param buf integer
---@param card toolhost.Card
---@param blocks {row: integer, above: boolean, lines: string[][]}[]
---@param added integer[]
---@param top integer
---@param bottom integer
function M.place(buf, card, blocks, added, top, bottom)
  groups[buf] = groups[buf] or {}
  local marks = {}
  for _, b in ipairs(blocks) do
    local virt = {}
    for _, l in ipairs(b.lines) do
      table.insert(virt, { { l[1], l[2] } })
    end
    table.insert(
      marks,
      vim.api.nvim_buf_set_extmark(buf, ns, b.row, 0, {
        virt_lines = virt,
        virt_lines_above = b.above,
        right_gravity = false,
      })
    )
  end
  for _, row in ipairs(added) do
    table.insert(
      marks,
      vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { line_hl_group = 'ToolhostInlineAdd', priority = 90 })
    )
  end
  local span = vim.api.nvim_buf_set_extmark(buf, ns, top, 0, {
    end_row = bottom,
    end_col = 0,
    right_gravity = false,
    end_right_gravity = true,
  })
  table.insert(marks, span)
  table.insert(groups[buf], { buf = buf, marks = marks, span = span, card_id = card.callId })
end

--- Reloads (checktime) an unmodified buffer so it matches the disk.
---@param buf integer
function M.reload(buf)
  if not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].modified then
    return
  end
  local save = vim.o.autoread
  vim.o.autoread = true
  reloading[buf] = true
  local ok, err
  if vim.b[buf].toolhost_deferred then
    -- The file did not exist when the buffer was opened: checktime does not reload such a
    -- buffer, so read the new file into it (its BufReadPost attaches the toolhost client).
    ok, err = pcall(vim.api.nvim_buf_call, buf, function()
      vim.cmd('silent edit')
    end)
  elseif not vim.uv.fs_stat(vim.api.nvim_buf_get_name(buf)) then
    -- The tool removed the file (a revert of the call that created it): checktime would only
    -- warn. Empty the buffer as for a file that does not exist; the server counts an empty
    -- buffer of a missing file as clean, so a later write can create the file again.
    ok, err = pcall(vim.api.nvim_buf_call, buf, function()
      vim.cmd('silent edit!')
    end)
  else
    local tick = vim.api.nvim_buf_get_changedtick(buf)
    ok, err = pcall(vim.cmd.checktime, buf)
    if ok and vim.api.nvim_buf_get_changedtick(buf) == tick and not vim.bo[buf].modified then
      -- checktime compares mtime and size only: an edit that keeps the size and lands in the
      -- same filesystem clock tick as the buffer's last read or :write looks unchanged to it.
      -- The card says the tool changed the file, so re-read it (`:edit!` loses nothing in an
      -- unmodified buffer and 'undoreload' keeps the old text undoable).
      ok, err = pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('silent edit!')
      end)
    end
  end
  reloading[buf] = nil
  vim.o.autoread = save
  if not ok then
    vim.notify('toolhost: reloading ' .. vim.api.nvim_buf_get_name(buf) .. ': ' .. tostring(err), vim.log.levels.WARN)
  end
end

---@class toolhost.CardFile
---@field path string absolute
---@field hunks toolhost.Hunk[] the card's hunks of this file

--- The files a diff card changed, each with its hunks, in the card's order: its locations
--- (absolute paths) and its hunks' paths (a relative one resolved against `root`, the
--- workspace root). A hunk whose path cannot be resolved belongs to the first file, as in a
--- card of one file.
---@param card toolhost.Card
---@param root? string
---@return toolhost.CardFile[]
function M.files(card, root)
  local files, by_path = {}, {}
  ---@param path string
  ---@return toolhost.CardFile
  local function file(path)
    local key = vim.uv.fs_realpath(path) or vim.fs.normalize(path)
    if not by_path[key] then
      by_path[key] = { path = path, hunks = {} }
      table.insert(files, by_path[key])
    end
    return by_path[key]
  end
  for _, loc in ipairs(type(card.locations) == 'table' and card.locations or {}) do
    if type(loc) == 'table' and type(loc.path) == 'string' and loc.path ~= '' then
      file(loc.path)
    end
  end
  for _, hunk in ipairs(type(card.hunks) == 'table' and card.hunks or {}) do
    local p = type(hunk) == 'table' and hunk.path or nil
    local abs
    if type(p) == 'string' and p ~= '' then
      if p:sub(1, 1) == '/' then
        abs = p
      elseif root then
        abs = root .. '/' .. (p:gsub('^%./', ''))
      end
    end
    local target = abs and file(abs) or files[1]
    if target then
      table.insert(target.hunks, hunk)
    end
  end
  return files
end

--- Handles a completed card of kind `diff` (a write, an edit, a revert — whatever the tool):
--- reload the buffer of each file it changed, then show that file's hunks inline if the buffer
--- is in a window. Earlier inline cards of those buffers are replaced (their line numbers
--- refer to the text before this change).
---@param card toolhost.Card
---@param root? string the workspace root, for hunks with relative paths
function M.on_file_card(card, root)
  local cfg = require('toolhost.config').get()
  local cl = require('toolhost.client')
  -- Two paths may name one buffer (a symlink, the root spelled two ways): group by buffer, so
  -- one buffer is reloaded once and its inline hunks are not cleared by its second path.
  local bufs, hunks_of = {}, {}
  for _, f in ipairs(M.files(card, root)) do
    local buf = cl.find_buf(f.path)
    if buf and vim.api.nvim_buf_is_loaded(buf) then
      if not hunks_of[buf] then
        hunks_of[buf] = {}
        table.insert(bufs, buf)
      end
      vim.list_extend(hunks_of[buf], f.hunks)
    end
  end
  for _, buf in ipairs(bufs) do
    if not vim.bo[buf].modified then -- never touch unsaved work
      if cfg.reload then
        M.reload(buf)
      end
      M.clear(buf)
      if cfg.inline and vim.fn.bufwinid(buf) ~= -1 then
        M.show(buf, card, hunks_of[buf])
      end
    end
  end
end

--- Removes the inline cards of `buf` (every buffer when nil).
---@param buf? integer
function M.clear(buf)
  local bufs = buf and { buf } or vim.tbl_keys(groups)
  for _, b in ipairs(bufs) do
    if vim.api.nvim_buf_is_valid(b) then
      vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
    end
    groups[b] = nil
  end
end

--- The inline extmarks of a buffer (for tests and statuslines).
---@param buf integer
---@return vim.api.keyset.get_extmark_item[]
function M.marks(buf)
  return vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
end

return M
