--- toolhost.ask: Questions for the person (`toolhost/askUser`, a server→client request) from
--- `ask_user_question` (intent `question`) and the plan review of `exit_plan_mode` (intent
--- `plan-review`).
---
--- Every question is asked with |vim.ui.select()| and |vim.ui.input()| only, so whatever picker
--- the person installed (telescope, fzf-lua, snacks, dressing, mini.pick…) draws it. Questions
--- come one after another:
---   - options, single choice: a select over the options and a last entry `Other…` that asks for
---     free text (`custom`, `selected = {}`);
---   - options, several choices: a select shown again after every pick, its entries marked
---     `[x]`/`[ ]` and toggled by picking them, then `Done` and `Other…`;
---   - no options: an input;
---   - a plan review: the plan in a markdown buffer (a split at the top), then a select over
---     `Approve` / `Keep planning`; keeping planning asks for feedback (an input).
--- Picking nothing (<Esc>, a nil choice) anywhere but in an `Other…`/feedback input dismisses the
--- whole question: `{dismissed = true}`.
---
--- Questions wait in the queue they share with reviews (|toolhost.pending|): one request is on
--- screen at a time, in arrival order; a question that arrives while another request is shown is
--- announced and asked once that one is answered. When the server withdraws the question
--- (`$/cancelRequest` naming the params' `requestId`) the windows the pickers opened are closed and
--- its request handler is dropped without being resumed: no reply is ever sent for it.

local M = {}

---@class toolhost.QuestionOption
---@field label string
---@field description? string

---@class toolhost.Question
---@field id string names the answer
---@field question string
---@field header? string a short label (the picker's title)
---@field options? toolhost.QuestionOption[] none: free text only
---@field multiSelect? boolean

---@class toolhost.AskParams
---@field requestId? integer|string the JSON-RPC id of this request (Neovim does not tell handlers)
---@field callId string the call's id; its pending card has the same one
---@field tool string
---@field title string
---@field caller? string
---@field intent? 'question'|'plan-review'
---@field questions toolhost.Question[]
---@field plan? string markdown, for `plan-review`

---@class toolhost.Answer
---@field id string
---@field selected string[] labels chosen
---@field custom? string free text

---@class toolhost.AskResult
---@field answers? toolhost.Answer[]
---@field dismissed? boolean

---@class toolhost.AskScript
---@field result? toolhost.AskResult answer with this at once
---@field ignore? boolean never answer (the server's timeout applies)
---@field error? string answer with this error

---@class toolhost.Ask: toolhost.Pending
---@field params toolhost.AskParams
---@field answers toolhost.Answer[] answers given so far, in question order
---@field wins integer[] windows the pickers opened (closed when the question is withdrawn)
---@field plan_buf? integer the plan's buffer (plan review)

local pending = require('toolhost.pending')

--- The entries a plan review offers (the server's option labels).
M.APPROVE = 'Approve'
M.KEEP_PLANNING = 'Keep planning'

--- Labels of the extra entries of a select.
M.OTHER = 'Other…'
M.DONE = 'Done'

--- Test hook, set by the conformance runner (tests/conformance.lua): called with every question
--- before any UI; a returned script answers (or ignores) it instead of the person. nil: the UI.
---@type (fun(params: toolhost.AskParams, client_id: integer): toolhost.AskScript?)?
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
  if type(params.questions) ~= 'table' then
    return '`questions` must be an array'
  end
  for i, q in ipairs(params.questions) do
    if type(q) ~= 'table' or type(q.id) ~= 'string' or type(q.question) ~= 'string' then
      return ('question %d needs a string `id` and `question`'):format(i - 1)
    end
    if q.options ~= nil and type(q.options) ~= 'table' then
      return ('question %d: `options` must be an array'):format(i - 1)
    end
    for j, o in ipairs(q.options or {}) do
      if type(o) ~= 'table' or type(o.label) ~= 'string' then
        return ('question %d, option %d has no `label`'):format(i - 1, j - 1)
      end
    end
  end
  return nil
end

--- `ask_user_question Ask: DB · claude-code`: the question's call as cards name it.
---@param ask toolhost.Ask
---@return string
function M.label(ask)
  local p = ask.params
  local s = ('%s %s'):format(tostring(p.tool or 'call'), tostring(p.title or ''))
  if type(p.caller) == 'string' and p.caller ~= '' then
    s = s .. ' · ' .. p.caller
  end
  return s
end

--- The questions waiting for the person, oldest first (scripted ones are not listed).
---@return toolhost.Ask[]
function M.pending()
  return pending.list('question') --[=[@as toolhost.Ask[]]=]
end

--- `Header: question (2/3)`: a picker's prompt.
---@param ask toolhost.Ask
---@param i integer
---@return string
local function prompt_of(ask, i)
  local q = ask.params.questions[i]
  local s = q.question
  if type(q.header) == 'string' and q.header ~= '' then
    s = q.header .. ': ' .. s
  end
  local n = #ask.params.questions
  if n > 1 then
    s = ('%s (%d/%d)'):format(s, i, n)
  end
  return s
end

--- `label — description`.
---@param o toolhost.QuestionOption
---@return string
local function option_text(o)
  if type(o.description) == 'string' and o.description ~= '' then
    return o.label .. ' — ' .. o.description
  end
  return o.label
end

--- Every window (a picker may open its windows in another tab page).
---@return table<integer, true>
local function window_set()
  local out = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    out[w] = true
  end
  return out
end

--- Runs a picker, remembering the windows it opened while it was called (an asynchronous picker
--- opens its windows and returns), so a withdrawn question can close them. Its callback runs on
--- a later tick: some pickers call it while still closing their own windows, where opening the
--- next picker fails.
---@param ask toolhost.Ask
---@param open fun(cb: fun(...))
---@param cb fun(...) not called once the question is done
local function picker(ask, open, cb)
  local before = window_set()
  local ok, err = pcall(open, function(...)
    local args = { n = select('#', ...), ... }
    vim.schedule(function()
      if ask.done then
        return
      end
      local cb_ok, cb_err = pcall(cb, unpack(args, 1, args.n))
      if not cb_ok then
        M.fail(ask, cb_err)
      end
    end)
  end)
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if not before[w] then
      table.insert(ask.wins, w)
    end
  end
  if not ok then
    -- A broken picker must not leave the agent waiting until the server's timeout.
    M.fail(ask, err)
  end
end

--- Closes the plan window and what the pickers left open.
---@param ask toolhost.Ask
local function close_views(ask)
  local closed = false
  for _, w in ipairs(ask.wins) do
    if vim.api.nvim_win_is_valid(w) then
      closed = pcall(vim.api.nvim_win_close, w, true) or closed
    end
  end
  ask.wins = {}
  if closed and vim.api.nvim_get_mode().mode:sub(1, 1) == 'i' then
    vim.cmd.stopinsert() -- a picker's prompt was in Insert mode
  end
  local buf = ask.plan_buf
  ask.plan_buf = nil
  if buf and vim.api.nvim_buf_is_valid(buf) then
    for _, w in ipairs(vim.fn.win_findbuf(buf)) do
      if #vim.api.nvim_tabpage_list_wins(vim.api.nvim_win_get_tabpage(w)) > 1 then
        pcall(vim.api.nvim_win_close, w, true)
      end
    end
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
end

--- Ends a question with an answer (`'answer', result`) or an error (`'error', message`).
---@param ask toolhost.Ask
---@param how 'answer'|'error'
---@param result toolhost.AskResult|string
local function finish(ask, how, result)
  pending.finish(ask, how, result)
end

--- Answers a question with an error (a picker failed): the call fails `ASK_CANCELLED` with it.
---@param ask toolhost.Ask
---@param err any
function M.fail(ask, err)
  notify('toolhost/askUser: ' .. tostring(err), vim.log.levels.ERROR)
  finish(ask, 'error', 'toolhost/askUser: ' .. tostring(err))
end

---@param ask toolhost.Ask
local function dismiss(ask)
  finish(ask, 'answer', { dismissed = true })
end

--- Shows the plan of a plan review in a markdown buffer, in a split at the top of the screen the
--- cursor stays out of (a picker opens from where the person was).
---@param ask toolhost.Ask
local function show_plan(ask)
  local plan = ask.params.plan
  if type(plan) ~= 'string' or plan == '' then
    return
  end
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, ('toolhost://plan/%s'):format(tostring(ask.params.callId or ask.id)))
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  local lines = vim.split(plan, '\n', { plain = true })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  vim.b[buf].toolhost_client = ask.client_id
  vim.bo[buf].filetype = 'markdown'
  ask.plan_buf = buf
  local height = math.min(math.max(#lines, 5), math.max(math.floor(vim.o.lines / 2), 5))
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, { split = 'above', win = -1, height = height })
  if ok then
    vim.wo[win][0].wrap = true
    vim.wo[win][0].linebreak = true
    vim.wo[win][0].number = false
    vim.wo[win][0].relativenumber = false
    vim.wo[win][0].winfixheight = true
  end
end

--- Asks question `i` and then the next ones.
---@param ask toolhost.Ask
---@param i integer
local function ask_question(ask, i)
  if ask.done then
    return
  end
  local q = ask.params.questions[i]
  if not q then
    return finish(ask, 'answer', { answers = ask.answers })
  end
  local function answered(answer)
    table.insert(ask.answers, answer)
    ask_question(ask, i + 1)
  end
  local again = function()
    ask_question(ask, i)
  end
  local options = type(q.options) == 'table' and q.options or {}
  local prompt = prompt_of(ask, i)

  if #options == 0 then
    picker(ask, function(cb)
      vim.ui.input({ prompt = prompt .. ' ' }, cb)
    end, function(text)
      if text == nil then
        return dismiss(ask)
      end
      answered({ id = q.id, selected = {}, custom = text })
    end)
    return
  end

  if ask.params.intent == 'plan-review' then
    -- Approve, or keep planning with feedback; no `Other…`: feedback is what keeping planning asks.
    picker(ask, function(cb)
      vim.ui.select(options, { prompt = prompt, kind = 'toolhost-plan-review', format_item = option_text }, cb)
    end, function(choice)
      if choice == nil then
        return dismiss(ask)
      end
      if choice.label == M.APPROVE then
        return answered({ id = q.id, selected = { choice.label } })
      end
      picker(ask, function(cb)
        vim.ui.input({ prompt = 'What should change in the plan? ' }, cb)
      end, function(text)
        if text == nil then
          return again() -- back to the choice
        end
        local answer = { id = q.id, selected = { choice.label } }
        if vim.trim(text) ~= '' then
          answer.custom = text
        end
        answered(answer)
      end)
    end)
    return
  end

  local other = { other = true }
  if not q.multiSelect then
    local items = vim.list_extend(vim.list_slice(options), { other })
    picker(ask, function(cb)
      vim.ui.select(items, {
        prompt = prompt,
        kind = 'toolhost-ask',
        format_item = function(item)
          return item.other and M.OTHER or option_text(item)
        end,
      }, cb)
    end, function(choice)
      if choice == nil then
        return dismiss(ask)
      end
      if not choice.other then
        return answered({ id = q.id, selected = { choice.label } })
      end
      picker(ask, function(cb)
        vim.ui.input({ prompt = prompt .. ' ' }, cb)
      end, function(text)
        if text == nil or text == '' then
          return again() -- back to the options
        end
        -- A single choice's free text replaces the choice.
        answered({ id = q.id, selected = {}, custom = text })
      end)
    end)
    return
  end

  -- Several choices: the select comes back after each pick with the marks toggled.
  local chosen, custom = {}, nil
  local done = { done = true }
  local function multi()
    if ask.done then
      return
    end
    local items = {}
    for idx, o in ipairs(options) do
      table.insert(items, { index = idx, option = o })
    end
    vim.list_extend(items, { done, other })
    picker(ask, function(cb)
      vim.ui.select(items, {
        prompt = prompt .. ' (pick to toggle, then Done)',
        kind = 'toolhost-ask-multi',
        format_item = function(item)
          if item.done then
            local n = vim.tbl_count(chosen)
            return n > 0 and ('%s (%d selected)'):format(M.DONE, n) or M.DONE
          elseif item.other then
            return custom and ('%s (%q)'):format(M.OTHER, custom) or M.OTHER
          end
          return (chosen[item.index] and '[x] ' or '[ ] ') .. option_text(item.option)
        end,
      }, cb)
    end, function(choice)
      if choice == nil then
        return dismiss(ask)
      end
      if choice.done then
        local selected = {}
        for idx, o in ipairs(options) do
          if chosen[idx] then
            table.insert(selected, o.label)
          end
        end
        return answered({ id = q.id, selected = selected, custom = custom })
      elseif choice.other then
        picker(ask, function(cb)
          vim.ui.input({ prompt = prompt .. ' ', default = custom }, cb)
        end, function(text)
          if text ~= nil then
            custom = text ~= '' and text or nil
          end
          multi()
        end)
        return
      end
      chosen[choice.index] = not chosen[choice.index] or nil
      multi()
    end)
  end
  multi()
end

--- Shows a question: the plan of a plan review, then its first picker.
---@param ask toolhost.Ask
---@return boolean shown
local function present(ask)
  local ok, err = pcall(function()
    if ask.params.intent == 'plan-review' then
      show_plan(ask)
    end
    ask_question(ask, 1)
  end)
  if not ok then
    M.fail(ask, err)
  end
  return true
end

--- A question that must wait for the request on screen is announced, so the person knows it is
--- there (and how many are pending).
---@param ask toolhost.Ask
local function arrived(ask)
  local before = pending.ahead(ask)
  if before then
    notify(
      ('question waiting: %s%s — asked once the %s before it is answered'):format(
        M.label(ask),
        pending.more(ask),
        before.kind.name
      )
    )
  end
end

---@type toolhost.PendingKind
local kind = {
  name = 'question',
  method = 'toolhost/askUser',
  invalid = invalid,
  script = function(params, client_id)
    return M.responder and M.responder(params, client_id) or nil
  end,
  init = function(ask)
    ask.answers = {}
    ask.wins = {}
  end,
  arrived = arrived,
  present = present,
  close = close_views,
  withdrawn = function(ask)
    notify(('question withdrawn: %s (the call was cancelled or timed out)'):format(M.label(ask)), vim.log.levels.WARN)
  end,
}

--- Answers `toolhost/askUser`: queues the question (|toolhost.pending|), asks it in its turn and
--- waits (yielding) until the person answers or dismisses it. A withdrawn question never returns.
---@param params toolhost.AskParams
---@param ctx? table handler context ({client_id})
---@return toolhost.AskResult? result
---@return lsp.ResponseError? err
function M.handle(params, ctx)
  return pending.handle(kind, params, ctx)
end

--- The server withdrew question `params.id` (`$/cancelRequest`: the call was cancelled or timed
--- out): close its pickers and plan without answering, and say so.
---@param client_id integer
---@param params any
function M.on_cancel(client_id, params)
  pending.on_cancel(client_id, params, 'question')
end

--- Drops a client's questions (its server exited): their views close; nothing can be answered.
---@param client_id integer
function M.forget(client_id)
  pending.forget(client_id, 'question')
end

return M
