--- toolhost.review.view: What a review buffer shows (|toolhost-review|): the call, the file, the
--- count of decisions, the comment, the keys, then each hunk with its decision's mark. Pure: the
--- lines and their highlights from a review's params and decisions.

local M = {}

--- The marks of a hunk's decision, in front of its header.
M.MARKS = { undecided = '[ ]', accepted = '[✓]', rejected = '[✗]' }

--- Buffer-local actions of a review buffer, their default keys (config `review_keys`) and what
--- they do. The `<Plug>(toolhost-review-{name})` mappings (plugin/toolhost.lua) run the same.
---@type {[1]: string, [2]: string, [3]: string}[] name, default key, description
M.ACTIONS = {
  { 'next', ']h', 'go to the next hunk' },
  { 'prev', '[h', 'go to the previous hunk' },
  { 'accept', 'a', 'accept the hunk under the cursor (and go to the next)' },
  { 'reject', 'r', 'reject the hunk under the cursor (and go to the next)' },
  { 'accept-all', 'A', 'accept every hunk' },
  { 'reject-all', 'R', 'reject every hunk' },
  { 'comment', 'c', 'set the comment for the model' },
  { 'submit', '<CR>', 'send the decisions (undecided hunks count as rejected)' },
  { 'open-file', 'gf', "open the file at the hunk's line" },
  { 'close', 'q', 'close the window without answering (the review stays pending)' },
}

--- `2 hunks`, `1 hunk`.
---@param n integer
---@param word string
---@return string
function M.plural(n, word)
  return ('%d %s%s'):format(n, word, n == 1 and '' or 's')
end

--- `edit Edit a.txt · claude-code`: the review's call as cards name it.
---@param review toolhost.Review
---@return string
function M.label(review)
  local p = review.params
  local s = ('%s %s'):format(tostring(p.tool or 'call'), tostring(p.title or p.path))
  if type(p.caller) == 'string' and p.caller ~= '' then
    s = s .. ' · ' .. p.caller
  end
  return s
end

--- The decision of hunk `i` (1-based): 'accepted', 'rejected' or 'undecided'.
---@param review toolhost.Review
---@param i integer
---@return 'accepted'|'rejected'|'undecided'
function M.status(review, i)
  local d = review.decisions[i]
  if d == true then
    return 'accepted'
  elseif d == false then
    return 'rejected'
  end
  return 'undecided'
end

--- Counts of decisions.
---@param review toolhost.Review
---@return {accepted: integer, rejected: integer, undecided: integer}
function M.counts(review)
  local out = { accepted = 0, rejected = 0, undecided = 0 }
  for i = 1, #review.params.hunks do
    local s = M.status(review, i)
    out[s] = out[s] + 1
  end
  return out
end

--- A hunk's header: the server's, else formatted like it (older servers).
---@param h toolhost.ReviewHunk
---@return string
function M.header(h)
  if type(h.header) == 'string' and h.header ~= '' then
    return h.header
  end
  return ('@@ -%d,%d +%d,%d @@'):format(h.oldStart or 0, h.oldLines or 0, h.newStart or 0, h.newLines or 0)
end

local mark_groups = {
  accepted = 'ToolhostReviewAccepted',
  rejected = 'ToolhostReviewRejected',
  undecided = 'ToolhostReviewUndecided',
}

--- The key of each action in review buffers (config `review_keys`; false: none).
---@return table<string, string>
function M.action_keys()
  local keys = require('toolhost.config').get().review_keys
  local out = {}
  if keys == false then
    return out
  end
  for _, a in ipairs(M.ACTIONS) do
    local lhs = a[2]
    if type(keys) == 'table' and keys[a[1]] ~= nil then
      lhs = keys[a[1]] -- false or '' unmaps this one
    end
    if type(lhs) == 'string' and lhs ~= '' then
      out[a[1]] = lhs
    end
  end
  return out
end

--- The lines of a review buffer and their highlights.
---@param review toolhost.Review
---@return string[] lines
---@return {row: integer, group: string, col?: integer, end_col?: integer}[] marks 0-based rows
---@return integer[] hunk_rows 1-based row of each hunk's header
function M.view(review)
  local p = review.params
  local lines, marks, hunk_rows = {}, {}, {}
  ---@param text string
  ---@param group? string whole-line highlight
  local function add(text, group)
    -- A line of the file may hold a `\r` or another control character; only `\n` cannot be in
    -- a buffer line.
    table.insert(lines, (text:gsub('\n', '\\n')))
    if group then
      table.insert(marks, { row = #lines - 1, group = group })
    end
  end
  local c = M.counts(review)
  add('Review ' .. M.label(review), 'ToolhostCardTitle')
  add(p.path, 'ToolhostCardFile')
  add(
    ('%s: %d accepted, %d rejected, %d undecided'):format(
      M.plural(#p.hunks, 'hunk'),
      c.accepted,
      c.rejected,
      c.undecided
    ),
    'ToolhostReviewInfo'
  )
  add('Comment: ' .. (review.comment or '(none; c sets one)'), 'ToolhostReviewInfo')
  local keys = M.action_keys()
  if next(keys) then
    local k = function(name)
      return keys[name] or '-'
    end
    add(
      ('%s accept  %s reject  %s/%s all  %s/%s move  %s comment  %s or :w submit  %s close, answer later'):format(
        k('accept'),
        k('reject'),
        k('accept-all'),
        k('reject-all'),
        k('next'),
        k('prev'),
        k('comment'),
        k('submit'),
        k('close')
      ),
      'ToolhostReviewInfo'
    )
  end
  for i, h in ipairs(p.hunks) do
    add('')
    local status = M.status(review, i)
    local mark = M.MARKS[status]
    add(mark .. ' ' .. M.header(h))
    hunk_rows[i] = #lines
    table.insert(marks, { row = #lines - 1, group = mark_groups[status], col = 0, end_col = #mark })
    table.insert(marks, { row = #lines - 1, group = 'ToolhostHunkHeader', col = #mark + 1, end_col = #lines[#lines] })
    for _, l in ipairs(h.lines) do
      local op = type(l) == 'table' and tostring(l.op or ' ') or ' '
      local text = type(l) == 'table' and tostring(l.text or '') or ''
      add(op .. text, op == '+' and 'ToolhostDiffAdd' or op == '-' and 'ToolhostDiffDelete' or nil)
    end
  end
  if #p.hunks == 0 then
    add('')
    add('(no hunks: the file does not change)', 'ToolhostReviewInfo')
  end
  return lines, marks, hunk_rows
end

return M
