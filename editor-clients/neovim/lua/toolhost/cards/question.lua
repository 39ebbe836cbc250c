--- toolhost.cards.question: The view of `question` cards (`ask_user_question`): each question,
--- its options while it waits for the answer, then the answer given.

local text = require('toolhost.cards.text')

local M = {}

--- A question card's lines: the title, `? [header] question` for each question, then its answer
--- (`→ label, "free text"`) or, while the card is pending, its options and `waiting for the
--- answer…`; a failed card's error. Nil when its data has no questions (drawn from `rendered`).
---@param card toolhost.Card
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.draw(card)
  local data = card.data
  if type(data) ~= 'table' or type(data.questions) ~= 'table' then
    return nil
  end
  local lines, roles, add = text.collector()
  add(text.title(card), 'title')
  local answers = type(data.answers) == 'table' and data.answers or {}
  for _, q in ipairs(data.questions) do
    if type(q) == 'table' then
      local head = (type(q.header) == 'string' and q.header ~= '') and ('[' .. q.header .. '] ') or ''
      add('? ' .. head .. table.concat(text.split(tostring(q.question or '')), ' '), 'question')
      local answer
      for _, a in ipairs(answers) do
        if type(a) == 'table' and a.id == q.id then
          answer = a
        end
      end
      if answer then
        local chosen = {}
        for _, label in ipairs(type(answer.selected) == 'table' and answer.selected or {}) do
          table.insert(chosen, tostring(label))
        end
        if type(answer.custom) == 'string' then
          table.insert(chosen, '"' .. answer.custom .. '"')
        end
        add('→ ' .. (#chosen > 0 and table.concat(chosen, ', ') or '(no answer)'), 'answer')
      elseif card.status == 'pending' then
        for _, o in ipairs(type(q.options) == 'table' and q.options or {}) do
          if type(o) == 'table' then
            local desc = (type(o.description) == 'string' and o.description ~= '') and (' — ' .. o.description) or ''
            add((q.multiSelect and '  [ ] ' or '  - ') .. tostring(o.label) .. desc, 'option')
          end
        end
      end
    end
  end
  if card.status == 'pending' then
    add('waiting for the answer…', 'waiting')
  end
  text.failure(card, add)
  return lines, roles
end

return M
