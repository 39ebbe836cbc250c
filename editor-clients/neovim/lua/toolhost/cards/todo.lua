--- toolhost.cards.todo: The view of `todo` cards (`todo_write`) and the session's todo list
--- pinned at the top of a cards buffer: a session has one todo list, which every `todo_write`
--- replaces, so only its latest state is drawn in full; each todo card shows its counts.

local text = require('toolhost.cards.text')

local M = {}

--- The todos of a todo card's data (`{todos = {{content, status}}}`), or nil when its data does
--- not have that shape (the card is then drawn from `rendered`).
---@param card toolhost.Card
---@return {content: string, status: string}[]?
function M.todos(card)
  local data = card.data
  if card.kind ~= 'todo' or type(data) ~= 'table' or type(data.todos) ~= 'table' then
    return nil
  end
  local out = {}
  for _, t in ipairs(data.todos) do
    if type(t) == 'table' then
      local status = (t.status == 'completed' or t.status == 'in_progress') and t.status or 'pending'
      table.insert(out, { content = tostring(t.content or ''), status = status })
    end
  end
  return out
end

--- `1/3 completed · 1 in progress · 1 pending` (counted here: a pending card's call-time data
--- has no counts).
---@param todos {status: string}[]
---@return string
function M.todo_counts(todos)
  local c = { completed = 0, in_progress = 0, pending = 0 }
  for _, t in ipairs(todos) do
    c[t.status] = c[t.status] + 1
  end
  return ('%d/%d completed · %d in progress · %d pending'):format(c.completed, #todos, c.in_progress, c.pending)
end

local TODO_MARKS = { completed = '[x]', in_progress = '[>]', pending = '[ ]' }
local TODO_ROLES = { completed = 'todo-done', in_progress = 'todo-active', pending = 'todo-pending' }

--- Appends a checklist (`[x]` done, `[>]` in progress, `[ ]` pending).
---@param todos {content: string, status: string}[]
---@param add fun(line: string, role: string)
local function checklist(todos, add)
  if #todos == 0 then
    add('(the todo list is empty)', 'todo-pending')
  end
  for _, t in ipairs(todos) do
    for i, l in ipairs(text.split(t.content)) do
      add((i == 1 and TODO_MARKS[t.status] .. ' ' or '    ') .. l, TODO_ROLES[t.status])
    end
  end
end

--- The latest todo list among `cards` (newest first): the newest completed todo card with a list.
--- A failed `todo_write` changed nothing and a pending one is about to be replaced by its result.
---@param cards toolhost.Card[]
---@return toolhost.Card? card
---@return {content: string, status: string}[]? todos
function M.latest_todos(cards)
  for _, card in ipairs(cards) do
    if card.kind == 'todo' and card.status == 'completed' then
      local todos = M.todos(card)
      if todos then
        return card, todos
      end
    end
  end
  return nil
end

--- The todo list pinned at the top of a cards buffer: a session has one todo list, which every
--- `todo_write` replaces, so only its latest state is drawn in full (the todo cards below show
--- their counts).
---@param card toolhost.Card
---@param todos {content: string, status: string}[]
---@return string[] lines
---@return toolhost.LineRole[] roles
function M.pinned_view(card, todos)
  local lines, roles, add = text.collector()
  add('Todos · ' .. M.todo_counts(todos), 'title')
  checklist(todos, add)
  return lines, roles
end

--- A todo card's lines: its title and counts (`ctx.full`, or a failed card: and its checklist),
--- saying where the list is when only the counts are shown. Nil when its data is not a todo list
--- (drawn from `rendered` then).
---@param card toolhost.Card
---@param ctx toolhost.CardViewContext
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.draw(card, ctx)
  local todos = M.todos(card)
  if not todos then
    return nil
  end
  local lines, roles, add = text.collector()
  add(text.title(card), 'title')
  if ctx.full or card.status == 'failed' then
    add(M.todo_counts(todos), 'counts')
    checklist(todos, add)
  else
    local where = ''
    if ctx.pinned_id == card.callId then
      where = ' (the list is at the top)'
    elseif ctx.pinned_id and card.status == 'completed' then
      where = ' (replaced by a later list)'
    end
    add(M.todo_counts(todos) .. where, 'counts')
  end
  return lines, roles
end

return M
