--- toolhost.cards.plan: The view of `plan` cards (`exit_plan_mode`): the plan as markdown, then
--- whether it was approved.

local text = require('toolhost.cards.text')

local M = {}

--- A markdown line's role (cheap: headings, fences and what they hold, quotes).
---@param line string
---@param in_code boolean inside a fenced block before this line
---@return string role
---@return boolean in_code after this line
local function markdown_role(line, in_code)
  if line:match('^%s*```') or line:match('^%s*~~~') then
    return 'md-code', not in_code
  elseif in_code then
    return 'md-code', true
  elseif line:match('^#+%s') then
    return 'md-heading', false
  elseif line:match('^%s*>') then
    return 'md-quote', false
  end
  return 'text', false
end

--- A plan card's lines: the title, the plan's markdown (headings, code and quotes set apart),
--- then `→ Approved`, `waiting for the review…` while pending, or a failed card's error. Nil
--- when its data has no plan (drawn from `rendered`).
---@param card toolhost.Card
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.draw(card)
  local data = card.data
  if type(data) ~= 'table' or type(data.plan) ~= 'string' then
    return nil
  end
  local lines, roles, add = text.collector()
  add(text.title(card), 'title')
  local in_code = false
  for _, l in ipairs(text.split((data.plan:gsub('%s+$', '')))) do
    local role
    role, in_code = markdown_role(l, in_code)
    add(l, role)
  end
  if data.approved == true then
    add('→ Approved', 'approved')
  elseif card.status == 'pending' then
    add('waiting for the review…', 'waiting')
  end
  text.failure(card, add)
  return lines, roles
end

return M
