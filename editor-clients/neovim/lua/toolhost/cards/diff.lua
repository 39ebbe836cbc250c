--- toolhost.cards.diff: The view of `diff` cards (`write`, `edit`, `revert`): drawn from
--- `rendered`, whose lines are read off the card's hunks — the file of each, the hunk headers as
--- the server wrote them, added and removed lines — so each line knows its hunk and its line in
--- the new file (<CR> goes there).

local generic = require('toolhost.cards.generic')
local text = require('toolhost.cards.text')

local M = {}

--- The role of each line of a card's `rendered` (index 1 is the title). A diff card's lines are
--- read off its hunks — each hunk's `header` as the server wrote it, then its lines — so a
--- hunk header is never formatted or guessed here. A card whose hunks are of several files (a
--- revert since a call) names the file, its hunks' `path`, on a line of its own before them,
--- as the server's `card::to_text` does: role `file`. When `rendered` does not have that shape the
--- lines starting with `@@ `, `+` and `-` are taken for diff lines.
---@param card toolhost.Card
---@return toolhost.LineRole[]
function M.layout(card)
  local lines = text.split(card.rendered or '')
  local out = generic.layout(card)
  local planned, idx, fits = {}, 1, type(card.hunks) == 'table'
  local several, last_path, first_path = false, nil, nil
  for i, hunk in ipairs(fits and card.hunks or {}) do
    local path = type(hunk) == 'table' and hunk.path or nil
    first_path = i == 1 and path or first_path
    several = several or path ~= first_path
  end
  for _, hunk in ipairs(fits and card.hunks or {}) do
    if type(hunk) ~= 'table' then
      fits = false
      break
    end
    if several and hunk.path ~= last_path then
      idx = idx + 1
      if lines[idx] ~= tostring(hunk.path) then
        fits = false
        break
      end
      last_path = hunk.path
      planned[idx] = { role = 'file', hunk = hunk, line = (not hunk.preview) and tonumber(hunk.newStart) or nil }
    end
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

--- The file of a diff card's hunk: its `path` when absolute, else the card's location that
--- ends with it. The server makes each location `<root>/<path>`, so of several matches the
--- shortest is that one (a longer one is a file of the same name deeper down: `sub/b.txt` when
--- the hunk is of `b.txt`). Nil when no location matches.
---@param card toolhost.Card
---@param hunk toolhost.Hunk
---@return string? path absolute
local function hunk_file(card, hunk)
  local p = type(hunk.path) == 'string' and hunk.path:gsub('^%./', '') or ''
  if p == '' then
    return nil
  end
  local best
  for _, loc in ipairs(card.locations or {}) do
    local lp = type(loc) == 'table' and loc.path or nil
    if type(lp) == 'string' and (lp == p or vim.endswith(lp, '/' .. p)) and (not best or #lp < #best) then
      best = lp
    end
  end
  return best
end

--- The file and line a line of a diff card points at: a diff line's line in its hunk's file (a
--- card may change several files); nil for the title and a preview hunk's lines (which have no
--- line yet): the card's location then.
---@param card toolhost.Card
---@param index integer 1-based line of `rendered`
---@return string? path
---@return integer? line
function M.target(card, index)
  local first = (card.locations or {})[1]
  if index > 1 and first then
    local role = M.layout(card)[index]
    if role and role.line then
      return role.hunk and hunk_file(card, role.hunk) or first.path, math.max(role.line, 1)
    end
  end
  return nil
end

return M
