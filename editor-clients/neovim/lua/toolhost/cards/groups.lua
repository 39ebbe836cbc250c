--- toolhost.cards.groups: Orchestrated calls. A `workflow` or `ralph` run's children are
--- `subagent` cards under the run's card, each with the `group` its caller put it in
--- (`{phase?, label?}`: a workflow child's phase and label, a ralph round's `round <n>`) and, once
--- it ended, its `usage` (`{tokens, cost?}`); the run's card carries the sum. This module reads
--- those two fields (only in their shapes: they end up in the buffer), says them the way the
--- cards buffer shows them at the end of a title line (` · draft 0 · 1,234 tokens · $0.01`), and
--- splits a parent's children into sections: a child without a phase on its own, the children of
--- one phase under one heading line (`  ▸ draft`), in the order phases first appear.

local M = {}

--- A card's group: its non-empty string `phase` and `label`, or nil when it has neither.
---@param card toolhost.Card
---@return {phase?: string, label?: string}?
function M.group(card)
  local g = card.group
  if type(g) ~= 'table' then
    return nil
  end
  local phase = type(g.phase) == 'string' and g.phase ~= '' and g.phase or nil
  local label = type(g.label) == 'string' and g.label ~= '' and g.label or nil
  if not phase and not label then
    return nil
  end
  return { phase = phase, label = label }
end

--- A card's usage: a whole, non-negative token count and, when there is one, a finite,
--- non-negative cost.
---@param card toolhost.Card
---@return {tokens: integer, cost?: number}?
function M.usage(card)
  local u = card.usage
  if type(u) ~= 'table' or type(u.tokens) ~= 'number' or u.tokens < 0 or u.tokens % 1 ~= 0 then
    return nil
  end
  local cost = u.cost
  if type(cost) ~= 'number' or cost ~= cost or cost < 0 or cost == math.huge then
    cost = nil
  end
  return { tokens = u.tokens, cost = cost }
end

--- `1234567` → `1,234,567`.
---@param n integer
---@return string
local function thousands(n)
  local s = ('%d'):format(n)
  local out = s:reverse():gsub('(%d%d%d)', '%1,'):reverse()
  return (out:gsub('^,', ''))
end

--- Dollars: cents from a cent on, two significant digits below it (`$0.00031`).
---@param cost number
---@return string
function M.cost_label(cost)
  if cost == 0 then
    return '$0'
  end
  if cost >= 0.01 then
    return ('$%.2f'):format(cost)
  end
  local decimals = 1 - math.floor(math.log(cost, 10))
  local s = ('%.' .. decimals .. 'f'):format(cost):gsub('0+$', '')
  return '$' .. s
end

--- `1,234 tokens · $0.01` (the cost only when there is one).
---@param usage {tokens: integer, cost?: number}
---@return string
function M.usage_label(usage)
  local tokens = thousands(usage.tokens) .. (usage.tokens == 1 and ' token' or ' tokens')
  return usage.cost and (tokens .. ' · ' .. M.cost_label(usage.cost)) or tokens
end

--- What the title line of a card gets at its end: its label and its usage (` · round 2 · 305
--- tokens`), or ''.
---@param card toolhost.Card
---@return string
function M.suffix(card)
  local parts = {}
  local group = M.group(card)
  if group and group.label then
    table.insert(parts, group.label)
  end
  local usage = M.usage(card)
  if usage then
    table.insert(parts, M.usage_label(usage))
  end
  return #parts == 0 and '' or (' · ' .. table.concat(parts, ' · '))
end

---@class toolhost.ChildSection
---@field phase? string the phase of the children (nil: one child without a phase)
---@field nodes toolhost.CardNode[]

--- A parent's children (oldest first) as they are drawn: each phase's children together, where
--- its first child came, and the children without a phase where they are.
---@param children toolhost.CardNode[]
---@return toolhost.ChildSection[]
function M.sections(children)
  local sections, by_phase = {}, {}
  for _, node in ipairs(children) do
    local group = M.group(node.card)
    local phase = group and group.phase
    if not phase then
      table.insert(sections, { nodes = { node } })
    elseif by_phase[phase] then
      table.insert(by_phase[phase].nodes, node)
    else
      by_phase[phase] = { phase = phase, nodes = { node } }
      table.insert(sections, by_phase[phase])
    end
  end
  return sections
end

--- The heading line of a phase, after the parent's indent.
---@param indent string
---@param phase string
---@return string
function M.heading(indent, phase)
  return indent .. '  ▸ ' .. phase
end

return M
