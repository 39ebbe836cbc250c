--- toolhost.review: Review mode: the person accepts or rejects each hunk of a `write`/`edit`
--- before anything is written (`toolhost/review`, a server→client request).
---
--- The server asks with the whole change (`before`, `after`, `hunks`); the answer is
--- `{accepted = {0-based hunk indexes}, comment?}`. The request handler runs in the coroutine
--- Neovim gives every server request and yields until the person submits, so the editor stays
--- usable for as long as the question is open (minutes, possibly). A review is only a question:
--- closing its window answers nothing — it stays pending (|:Toolhost-review| reopens it) until the
--- server's timeout, when the server withdraws it (`$/cancelRequest`) and its fallback applies.
---
--- Reviews wait in the queue they share with questions (|toolhost.pending|): one request is on
--- screen at a time, in arrival order.

local M = {}

---@class toolhost.ReviewLine
---@field op ' '|'+'|'-'
---@field text string

---@class toolhost.ReviewHunk
---@field path string relative to the workspace root
---@field oldStart integer
---@field oldLines integer
---@field newStart integer
---@field newLines integer
---@field header? string `@@ -a,b +c,d @@` as the server writes it
---@field lines toolhost.ReviewLine[]

---@class toolhost.ReviewParams
---@field requestId? integer|string the JSON-RPC id of this request (Neovim does not tell handlers)
---@field callId string the call's id; its pending card has the same one
---@field tool string
---@field title string
---@field caller? string the agent that made the call (MCP clientInfo.name)
---@field path string absolute path of the file
---@field before string LF-normalized whole text before ("" for a new file)
---@field after string LF-normalized whole text if every hunk is accepted
---@field hunks toolhost.ReviewHunk[] in file order; decisions refer to their indexes

---@class toolhost.ReviewResult
---@field accepted integer[] 0-based indexes into `hunks` of the hunks to write
---@field comment? string shown to the model

---@class toolhost.ReviewScript
---@field result? toolhost.ReviewResult answer with this at once
---@field ignore? boolean never answer (the server's timeout and fallback apply)
---@field error? string answer with this error (InternalError): the server's fallback applies

---@class toolhost.Review: toolhost.Pending
---@field params toolhost.ReviewParams
---@field decisions table<integer, boolean> 1-based hunk index -> accepted; absent: undecided
---@field comment? string
---@field buf? integer its review buffer while one exists (the buffer is only a view)
---@field hunk_rows integer[] buffer row (1-based) of each hunk's header, as last drawn
---@field told? boolean the person was told it arrived

local pending = require('toolhost.pending')
local view = require('toolhost.review.view')

local ns = vim.api.nvim_create_namespace('toolhost_review')

--- Where a review opens when it arrives (config `review_open`).
M.OPEN_MODES = { 'split', 'focus', 'notify' }

--- The marks of a hunk's decision (|toolhost.review.view|).
M.MARKS = view.MARKS

--- Buffer-local actions of a review buffer, their default keys and what they do
--- (|toolhost.review.view|).
M.ACTIONS = view.ACTIONS

M.label = view.label
M.status = view.status
M.view = view.view
local plural, counts = view.plural, view.counts

--- Test hook, set by the conformance runner (tests/conformance.lua): called with every review
--- before any UI; a returned script answers (or ignores) it instead of the person. nil: the UI.
---@type (fun(params: toolhost.ReviewParams, client_id: integer): toolhost.ReviewScript?)?
M.responder = nil

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO, { title = 'toolhost' })
end

--- What is wrong with a request's params, or nil.
---@param params any
---@return string?
local function invalid(params)
  if type(params) ~= 'table' then
    return 'params must be an object'
  end
  if type(params.hunks) ~= 'table' then
    return '`hunks` must be an array'
  end
  for i, h in ipairs(params.hunks) do
    if type(h) ~= 'table' or type(h.lines) ~= 'table' then
      return ('hunk %d has no `lines`'):format(i - 1)
    end
  end
  if type(params.path) ~= 'string' then
    return '`path` must be a string'
  end
  return nil
end

--- The reviews waiting for the person, oldest first (scripted ones are not listed).
---@return toolhost.Review[]
function M.pending()
  return pending.list('review') --[=[@as toolhost.Review[]]=]
end

--- A pending review by key, or nil.
---@param key string
---@return toolhost.Review?
local function get(key)
  local r = pending.get(key)
  return (r and r.kind.name == 'review') and r --[=[@as toolhost.Review]=] or nil
end

--- The review a review buffer shows, or nil.
---@param buf? integer
---@return toolhost.Review?
function M.of_buf(buf)
  buf = (buf == nil or buf == 0) and vim.api.nvim_get_current_buf() or buf
  local key = vim.b[buf].toolhost_review
  return key and get(key) or nil
end

--- The hunk (1-based) row `row` belongs to: the one whose header is at or above it, else the
--- first (the cursor in the lines above the first hunk).
---@param review toolhost.Review
---@param row integer
---@return integer
local function hunk_at(review, row)
  local found = 1
  for i, r in ipairs(review.hunk_rows) do
    if r <= row then
      found = i
    end
  end
  return found
end

--- Draws a review into its buffer (when it has one), keeping the cursor.
---@param review toolhost.Review
local function redraw(review)
  local buf = review.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  local lines, marks, hunk_rows = M.view(review)
  review.hunk_rows = hunk_rows
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, m in ipairs(marks) do
    if m.col then
      vim.api.nvim_buf_set_extmark(buf, ns, m.row, m.col, { end_col = m.end_col, hl_group = m.group })
    else
      vim.api.nvim_buf_set_extmark(buf, ns, m.row, 0, { line_hl_group = m.group })
    end
  end
end

--- `toolhost://review/{title}`, unique among buffers (two reviews may share a title).
---@param review toolhost.Review
---@return string
local function buf_name(review)
  local base = 'toolhost://review/' .. tostring(review.params.title or review.params.path)
  local taken = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    taken[vim.api.nvim_buf_get_name(b)] = true
  end
  if not taken[base] then
    return base
  end
  local name = ('%s (%s)'):format(base, tostring(review.id))
  local n = 2
  while taken[name] do
    name = ('%s (%s.%d)'):format(base, tostring(review.id), n)
    n = n + 1
  end
  return name
end

--- The review buffer of a review (created when it has none).
---@param review toolhost.Review
---@return integer buf
local function ensure_buf(review)
  if review.buf and vim.api.nvim_buf_is_valid(review.buf) then
    return review.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, buf_name(review))
  -- acwrite: `:w` submits through BufWriteCmd (a `nofile` buffer refuses to be written).
  vim.bo[buf].buftype = 'acwrite'
  -- The review object keeps the decisions; the buffer is only a view, rebuilt on reopening.
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.b[buf].toolhost_review = review.key
  -- Commands run in this buffer (e.g. `:Toolhost review-mode`) go to the review's server.
  vim.b[buf].toolhost_client = review.client_id
  review.buf = buf
  for name, lhs in pairs(view.action_keys()) do
    local desc
    for _, a in ipairs(M.ACTIONS) do
      if a[1] == name then
        desc = a[3]
      end
    end
    vim.keymap.set('n', lhs, function()
      M.action(name)
    end, { buffer = buf, nowait = true, desc = 'toolhost review: ' .. desc })
  end
  local group = vim.api.nvim_create_augroup('toolhost_review_' .. buf, { clear = true })
  vim.api.nvim_create_autocmd('BufWriteCmd', {
    group = group,
    buffer = buf,
    callback = function()
      vim.bo[buf].modified = false
      -- Not inside the write: submitting deletes this buffer.
      vim.schedule(function()
        M.submit(review.key)
      end)
    end,
  })
  vim.api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = buf,
    callback = function()
      if review.buf == buf then
        review.buf = nil
      end
      pcall(vim.api.nvim_del_augroup_by_id, group)
      -- Its window closed unanswered (`q`, `:close`): it stays pending, and the next request
      -- in the queue may have the screen.
      pending.release(review)
    end,
  })
  redraw(review)
  -- Last: a FileType autocommand of the user's sees the buffer filled.
  vim.bo[buf].filetype = 'toolhost-review'
  return buf
end

--- Window options of a review window, local to the review buffer in it (`:setlocal`), so a
--- window later split off it or showing another buffer in it keeps the person's own.
---@param win integer
local function style(win)
  local wo = vim.wo[win][0]
  wo.wrap = false
  wo.number = false
  wo.relativenumber = false
  wo.cursorline = true
  wo.foldenable = false
end

--- Shows a review in a window: the window that shows it already, else a new split at the
--- bottom. With `enter` the cursor goes there.
---@param review toolhost.Review
---@param enter boolean
---@return integer win
function M.show(review, enter)
  local buf = ensure_buf(review)
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local height = math.min(math.max(vim.api.nvim_buf_line_count(buf), 8), math.max(math.floor(vim.o.lines / 2), 8))
    win = vim.api.nvim_open_win(buf, enter, { split = 'below', win = -1, height = height })
    style(win)
    pcall(vim.api.nvim_win_set_cursor, win, { review.hunk_rows[1] or 1, 0 })
  elseif enter then
    vim.api.nvim_set_current_win(win)
  end
  return win
end

--- Whether the person is in the middle of something: any mode but plain Normal mode (Insert,
--- Replace, Visual, Operator-pending, Command-line, Terminal, `i_CTRL-O`), or the command-line
--- window.
---@return boolean
local function typing()
  return vim.api.nvim_get_mode().mode ~= 'n' or vim.fn.getcmdwintype() ~= ''
end

--- `review requested: edit Edit a.txt (2 hunks), 1 more pending`.
---@param review toolhost.Review
---@param what? string
---@return string
local function requested(review, what)
  return ('%s: %s (%s)%s'):format(
    what or 'review requested',
    M.label(review),
    plural(#review.params.hunks, 'hunk'),
    pending.more(review)
  )
end

--- Where window `win` is, from the current window's point of view: `at the bottom`, `below`,
--- `above`, `on the right`, `on the left`.
---@param win integer
---@return string
function M.where(win)
  local cur = vim.api.nvim_get_current_win()
  local row, col = unpack(vim.api.nvim_win_get_position(win))
  local crow, ccol = unpack(vim.api.nvim_win_get_position(cur))
  local bottom = row + vim.api.nvim_win_get_height(win)
  local last = true
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local r = vim.api.nvim_win_get_position(w)[1]
    if w ~= win and r >= bottom and vim.api.nvim_win_get_config(w).relative == '' then
      last = false
    end
  end
  if last and col == 0 and vim.api.nvim_win_get_width(win) >= vim.o.columns then
    return 'at the bottom'
  elseif row > crow then
    return 'below'
  elseif row < crow then
    return 'above'
  end
  return col > ccol and 'on the right' or 'on the left'
end

--- Tells the person a review is on screen. Shown without the cursor, the notice says where and
--- how to get there: single keys decide hunks in a review buffer, so the cursor stays where the
--- person was and keys typed meanwhile (`a`, `r`, …) still go to their buffer.
---@param review toolhost.Review
---@param win integer
local function tell_shown(review, win)
  if win ~= vim.api.nvim_get_current_win() then
    local n = vim.api.nvim_win_get_number(win)
    notify(
      ('%s — in window %d (%s), without the cursor: keys you type still go to your buffer. Go to the review with :Toolhost review (or %d<C-w>w)'):format(
        requested(review, review.told and 'review shown' or nil),
        n,
        M.where(win),
        n
      )
    )
  elseif not review.told then
    notify(requested(review) .. ' — :Toolhost review')
  end
  review.told = true
end

--- A review that cannot be shown at once (another request is on screen, `review_open =
--- 'notify'`, a command line is being typed) is announced on arrival.
---@param review toolhost.Review
local function arrived(review)
  if pending.ahead(review) or pending.busy() or require('toolhost.config').get().review_open == 'notify' then
    notify(requested(review) .. ' — :Toolhost review')
    review.told = true
  end
end

--- Shows a review in its turn as the configuration says (`review_open`): `split` (default) opens
--- a window below without moving the cursor, so a key being typed cannot decide a hunk; `focus`
--- moves the cursor there too, unless the person is typing; `notify` only told (it is set aside).
---@param review toolhost.Review
---@return boolean shown
local function present(review)
  local mode = require('toolhost.config').get().review_open
  if mode == 'notify' then
    return false
  end
  if review.buf and vim.fn.bufwinid(review.buf) ~= -1 then
    return true -- the person opened it already
  end
  local win = M.show(review, mode == 'focus' and not typing())
  tell_shown(review, win)
  return true
end

--- Closes the view of a finished review: its window shows the next request in the queue when
--- that is a review (so the person goes on where they are), else closes (unless it is the last
--- window).
---@param review toolhost.Review
---@param successor? toolhost.Pending
local function close_view(review, successor)
  local buf = review.buf
  review.buf = nil
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  local nxt = successor and successor.kind.name == 'review' and successor --[=[@as toolhost.Review]=] or nil
  if nxt and nxt.buf and vim.fn.bufwinid(nxt.buf) ~= -1 then
    nxt = nil
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if nxt then
      local nbuf = ensure_buf(nxt)
      vim.api.nvim_win_set_buf(win, nbuf)
      style(win)
      pcall(vim.api.nvim_win_set_cursor, win, { nxt.hunk_rows[1] or 1, 0 })
      pending.take(nxt)
      tell_shown(nxt, win)
      nxt = nil
    elseif #vim.api.nvim_tabpage_list_wins(vim.api.nvim_win_get_tabpage(win)) > 1 then
      pcall(vim.api.nvim_win_close, win, true)
    end
  end
  if vim.api.nvim_buf_is_valid(buf) then
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end

---@type toolhost.PendingKind
local kind = {
  name = 'review',
  method = 'toolhost/review',
  invalid = invalid,
  script = function(params, client_id)
    return M.responder and M.responder(params, client_id) or nil
  end,
  init = function(review)
    review.decisions = {}
    review.hunk_rows = {}
  end,
  arrived = arrived,
  present = present,
  close = close_view,
  withdrawn = function(review)
    notify(('review withdrawn: %s (the call was cancelled or timed out)'):format(M.label(review)), vim.log.levels.WARN)
  end,
  -- Neovim answers every server request: a withdrawn review is answered RequestCancelled.
  reply_when_withdrawn = true,
}

--- Answers `toolhost/review`: queues the review (|toolhost.pending|), shows it in its turn and
--- waits (yielding) until the person submits or the server withdraws it. Returns the result, or
--- nil and an LSP error: a withdrawn review is answered `-32800` (RequestCancelled) — the server
--- has stopped waiting by then and drops it.
---@param params toolhost.ReviewParams
---@param ctx? table handler context ({client_id})
---@return toolhost.ReviewResult? result
---@return lsp.ResponseError? err
function M.handle(params, ctx)
  return pending.handle(kind, params, ctx)
end

--- The server withdrew review `params.id` (`$/cancelRequest`: the call was cancelled or timed
--- out): close it without an answer and say so.
---@param client_id integer
---@param params any
function M.on_cancel(client_id, params)
  pending.on_cancel(client_id, params, 'review')
end

--- Drops a client's reviews (its server exited): their views close; nothing can be answered.
---@param client_id integer
function M.forget(client_id)
  pending.forget(client_id, 'review')
end

--- Sets the decision of hunks (1-based indexes) and redraws.
---@param review toolhost.Review
---@param indexes integer[]
---@param accepted boolean
function M.decide(review, indexes, accepted)
  for _, i in ipairs(indexes) do
    if review.params.hunks[i] then
      review.decisions[i] = accepted
    end
  end
  redraw(review)
end

--- The result the decisions make: accepted hunks as 0-based indexes (undecided ones count as
--- rejected) and the comment.
---@param review toolhost.Review
---@return toolhost.ReviewResult
function M.result(review)
  local accepted = {}
  for i = 1, #review.params.hunks do
    if review.decisions[i] == true then
      table.insert(accepted, i - 1)
    end
  end
  local out = { accepted = accepted }
  if review.comment and review.comment ~= '' then
    out.comment = review.comment
  end
  return out
end

--- Sends a review's decisions. Asks first (|confirm()|, Cancel the default) when some hunks are
--- undecided, since those count as rejected; `opts.confirm = false` does not ask.
---@param key? string the review (default: the current buffer's)
---@param opts? {confirm?: boolean}
---@return boolean sent
function M.submit(key, opts)
  local review = key and get(key) or M.of_buf(0)
  if not review then
    notify('no pending review here', vim.log.levels.WARN)
    return false
  end
  local c = counts(review)
  if c.undecided > 0 and not (opts and opts.confirm == false) then
    local question = ('%s of %d undecided: they count as rejected. Submit?'):format(
      plural(c.undecided, 'hunk'),
      #review.params.hunks
    )
    if vim.fn.confirm(question, '&Submit\n&Cancel', 2, 'Question') ~= 1 then
      notify('review not sent')
      return false
    end
  end
  local result = M.result(review)
  pending.finish(review, 'answer', result)
  notify(
    ('review sent: %d of %s accepted (%s)'):format(
      #result.accepted,
      plural(#review.params.hunks, 'hunk'),
      M.label(review)
    )
  )
  return true
end

--- Moves the cursor to the header of hunk `i` (clamped).
---@param review toolhost.Review
---@param i integer
local function goto_hunk(review, i)
  local row = review.hunk_rows[math.max(1, math.min(i, #review.hunk_rows))]
  if row then
    vim.api.nvim_win_set_cursor(0, { row, 0 })
  end
end

--- The line of the file (before the change) the cursor's row of a hunk stands for.
---@param review toolhost.Review
---@param i integer hunk
---@param row integer
---@return integer
local function file_line(review, i, row)
  local h = review.params.hunks[i]
  local line = math.max(h.oldStart or 1, 1)
  local first = review.hunk_rows[i] + 1
  for r = first, row - 1 do
    local l = h.lines[r - first + 1]
    if type(l) == 'table' and l.op ~= '+' then
      line = line + 1
    end
  end
  return line
end

--- Runs a review action (|M.ACTIONS|) in the current review buffer.
---@param name string
function M.action(name)
  local review = M.of_buf(0)
  if not review then
    notify('not in a pending review buffer (:Toolhost review opens one)', vim.log.levels.WARN)
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local n = #review.params.hunks
  local cur = hunk_at(review, row)
  if name == 'next' or name == 'prev' then
    local target
    if name == 'next' then
      target = row < (review.hunk_rows[1] or 0) and 1 or cur + vim.v.count1
    else
      -- On a hunk's body the first [h goes to its own header, like [[ in a file.
      target = row > (review.hunk_rows[cur] or 0) and cur - vim.v.count1 + 1 or cur - vim.v.count1
    end
    goto_hunk(review, target)
  elseif name == 'accept' or name == 'reject' then
    if n == 0 then
      return
    end
    M.decide(review, { cur }, name == 'accept')
    -- On to the next hunk, like `git add -p`: one key per hunk.
    goto_hunk(review, cur < n and cur + 1 or cur)
  elseif name == 'accept-all' or name == 'reject-all' then
    local all = {}
    for i = 1, n do
      all[i] = i
    end
    M.decide(review, all, name == 'accept-all')
  elseif name == 'comment' then
    vim.ui.input({ prompt = 'Comment for the model: ', default = review.comment or '' }, function(input)
      if input == nil or review.done then
        return -- cancelled, or the review ended meanwhile
      end
      review.comment = input ~= '' and input or nil
      redraw(review)
    end)
  elseif name == 'submit' then
    M.submit(review.key)
  elseif name == 'open-file' then
    if n == 0 then
      return
    end
    local line = file_line(review, cur, math.max(row, review.hunk_rows[cur] + 1))
    local win = vim.api.nvim_get_current_win()
    vim.cmd('wincmd p')
    if vim.api.nvim_get_current_win() == win then
      vim.cmd('aboveleft split')
    end
    vim.cmd.edit(vim.fn.fnameescape(review.params.path))
    pcall(vim.api.nvim_win_set_cursor, 0, { math.min(line, vim.api.nvim_buf_line_count(0)), 0 })
  elseif name == 'close' then
    local wins = vim.api.nvim_tabpage_list_wins(0)
    if #wins > 1 then
      vim.api.nvim_win_close(0, false)
    else
      vim.cmd('enew') -- the last window: leave the review (its buffer is wiped; it stays pending)
    end
    notify(('review still pending: %s — :Toolhost review reopens it'):format(M.label(review)))
  else
    notify('unknown review action ' .. name, vim.log.levels.ERROR)
  end
end

--- `:Toolhost review [callId]`: shows a pending review and moves the cursor there — the one of
--- call `call_id`, the only one, or one picked with |vim.ui.select()| among several.
---@param call_id? string
---@param cb? fun(review: toolhost.Review?)
function M.open(call_id, cb)
  ---@param review toolhost.Review
  local function go(review)
    M.show(review, true)
    if not pending.front() then
      -- Opened by the person: it holds the screen like one the queue showed.
      pending.take(review)
    end
  end
  local list = M.pending()
  if call_id and call_id ~= '' then
    list = vim.tbl_filter(function(r)
      return r.params.callId == call_id
    end, list)
    if #list == 0 then
      notify('no pending review of call ' .. call_id, vim.log.levels.WARN)
      return cb and cb(nil)
    end
  end
  if #list == 0 then
    notify('no review pending')
    return cb and cb(nil)
  end
  if #list == 1 then
    go(list[1])
    return cb and cb(list[1])
  end
  vim.ui.select(list, {
    prompt = 'Pending reviews',
    kind = 'toolhost-review',
    format_item = function(r)
      local c = counts(r)
      return ('%s (%s, %d undecided) %s'):format(
        M.label(r),
        plural(#r.params.hunks, 'hunk'),
        c.undecided,
        r.params.callId
      )
    end,
  }, function(choice)
    if choice and not choice.done then
      go(choice)
    end
    if cb then
      cb(choice)
    end
  end)
end

--- Completion of `:Toolhost review`: the call ids of the pending reviews.
---@param arg_lead string
---@return string[]
function M.complete(arg_lead)
  local out = {}
  for _, r in ipairs(M.pending()) do
    if type(r.params.callId) == 'string' and vim.startswith(r.params.callId, arg_lead) then
      table.insert(out, r.params.callId)
    end
  end
  return out
end

require('toolhost.cards.highlights') -- defines the highlight groups used here

M.namespace = ns

return M
