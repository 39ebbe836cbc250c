--- toolhost.cards.tree: Nested calls. A card with a `parentCallId` (a `run_code` program's nested
--- call, a subagent's call) is drawn under its parent's card, indented, with tree marks
--- (`  ├ read Read a.txt · completed`, `  │ …` for its other lines, `  └ ` for the last one),
--- after a line counting them (`  3 calls · 1 failed`). The store keeps every card flat, so the
--- tree is rebuilt from the whole list at each draw: live, a program's nested calls arrive before
--- its final card, in a replay before its result, and a card whose parent is not in the list (an
--- older session, a view of part of one) is drawn at the top.

local M = {}

--- The call a card ran under, when it names one other than itself.
---@param card toolhost.Card
---@return string?
function M.parent_id(card)
  local parent = card.parentCallId
  if type(parent) == 'string' and parent ~= '' and parent ~= card.callId then
    return parent
  end
  return nil
end

--- The card `card` is drawn under, among `by_id`, or nil: none, not there, or a loop of parents
--- (a malformed log must not hide cards).
---@param card toolhost.Card
---@param by_id table<string, toolhost.Card>
---@return toolhost.Card?
function M.drawn_parent(card, by_id)
  local id = M.parent_id(card)
  local parent = id and by_id[id] or nil
  if not parent then
    return nil
  end
  local seen = { [card.callId] = true }
  local at = parent
  while at do
    if seen[at.callId] then
      return nil
    end
    seen[at.callId] = true
    local up = M.parent_id(at)
    at = up and by_id[up] or nil
  end
  return parent
end

--- The place a child's id gives it among its siblings: `n` of `<parent>:<kind>:<n>` (a program's
--- nested call `:code:<n>`, a workflow's child `:agent:<n>`), numbered in the order its parent
--- made them; nil for other ids.
---@param parent_id string
---@param child_id string
---@return integer?
function M.step(parent_id, child_id)
  if child_id:sub(1, #parent_id + 1) ~= parent_id .. ':' then
    return nil
  end
  local n = child_id:sub(#parent_id + 2):match('^[a-z_]+:(%d+)$')
  return n and tonumber(n) or nil
end

--- Puts siblings in the order their parent made them when their ids say it (calls started
--- together — a workflow's parallel children — may send their first cards, and be logged, in
--- either order); the others keep their order (a stable insertion sort: table.sort is not stable).
---@param parent_id string
---@param children toolhost.CardNode[]
local function by_step(parent_id, children)
  for i = 2, #children do
    local node = children[i]
    local n = M.step(parent_id, node.card.callId)
    local j = i - 1
    while n and j >= 1 do
      local m = M.step(parent_id, children[j].card.callId)
      if not m or m <= n then
        break
      end
      children[j + 1] = children[j]
      j = j - 1
    end
    children[j + 1] = node
  end
end

---@class toolhost.CardNode
---@field card toolhost.Card
---@field children toolhost.CardNode[] the calls made under it, oldest first

--- The cards (newest first, as the buffers show them) as trees: the top-level cards in that
--- order, each with the cards made under it, oldest first (the order the program made them, which
--- their ids give when their cards came in another order).
---@param cards toolhost.Card[] newest first
---@return toolhost.CardNode[]
function M.build(cards)
  local by_id, nodes = {}, {}
  for _, card in ipairs(cards) do
    by_id[card.callId] = card
    nodes[card.callId] = { card = card, children = {} }
  end
  local roots = {}
  for _, card in ipairs(cards) do
    local parent = M.drawn_parent(card, by_id)
    if parent then
      -- newest first here: children go in front, so they end up oldest first
      table.insert(nodes[parent.callId].children, 1, nodes[card.callId])
    else
      table.insert(roots, nodes[card.callId])
    end
  end
  for id, node in pairs(nodes) do
    by_step(id, node.children)
  end
  return roots
end

--- What a parent's count line says: `3 calls`, then how many failed and how many still run.
---@param children toolhost.CardNode[]
---@return string
function M.label(children)
  local failed, running = 0, 0
  for _, node in ipairs(children) do
    if node.card.status == 'failed' then
      failed = failed + 1
    elseif node.card.status == 'pending' then
      running = running + 1
    end
  end
  local label = ('%d call%s'):format(#children, #children == 1 and '' or 's')
  if failed > 0 then
    label = label .. (' · %d failed'):format(failed)
  end
  if running > 0 then
    label = label .. (' · %d running'):format(running)
  end
  return label
end

--- The marks in front of a child's lines: its first line (`├ `, the last child `└ `) and the
--- others (`│ `, the last child's `  `), after the parent's own indent.
---@param indent string the parent's continuation indent
---@param last boolean the parent's last child
---@return string first
---@return string rest
function M.marks(indent, last)
  return indent .. (last and '  └ ' or '  ├ '), indent .. (last and '    ' or '  │ ')
end

return M
