--- toolhost.cards.store: The cards of each client's session: one card per call, in the order the
--- calls started, a later card of a call replacing the earlier one in place; the earlier cards of
--- a resumed session before them. What can be reverted is decided here, by the card's kind.

local M = {}

---@type table<integer, toolhost.Store>
local stores = {}

---@param client_id integer
---@return toolhost.Store
function M.store(client_id)
  stores[client_id] = stores[client_id] or { order = {}, by_id = {} }
  return stores[client_id]
end

--- The clients that have cards.
---@return integer[]
function M.clients()
  return vim.tbl_keys(stores)
end

--- The cards of a client, newest first.
---@param client_id integer
---@return toolhost.Card[]
function M.list(client_id)
  local s = M.store(client_id)
  local out = {}
  for i = #s.order, 1, -1 do
    table.insert(out, s.by_id[s.order[i]])
  end
  return out
end

--- The card of a call in a client's session, or nil.
---@param client_id integer
---@param call_id string
---@return toolhost.Card?
function M.get(client_id, call_id)
  local s = stores[client_id]
  return s and s.by_id[call_id] or nil
end

--- Records a card (notification or callTool response). A card with a known callId replaces the
--- earlier one in place; a new callId becomes the newest card.
---@param client_id integer
---@param card toolhost.Card
---@return toolhost.Card? old the card it replaced
function M.record(client_id, card)
  local s = M.store(client_id)
  local old = s.by_id[card.callId]
  if not old then
    table.insert(s.order, card.callId)
  end
  s.by_id[card.callId] = card
  return old
end

--- Adds the earlier cards of a resumed session (oldest first) before every card seen live.
---@param client_id integer
---@param cards toolhost.Card[]
---@return integer added
function M.seed(client_id, cards)
  local s = M.store(client_id)
  local older = {}
  for _, card in ipairs(cards) do
    if type(card) == 'table' and type(card.callId) == 'string' and not s.by_id[card.callId] then
      table.insert(older, card.callId)
      s.by_id[card.callId] = card
    end
  end
  s.order = vim.list_extend(older, s.order)
  return #older
end

--- Drops a client's cards (its server exited).
---@param client_id integer
function M.forget(client_id)
  stores[client_id] = nil
end

--- Whether a card reports files a call changed: a completed diff card (by kind, never by
--- tool name, so tools registered at run time count too) with a hunk placed in the file.
---@param card toolhost.Card
---@return boolean
function M.changes_files(card)
  if card.status ~= 'completed' or card.kind ~= 'diff' or type(card.hunks) ~= 'table' then
    return false
  end
  for _, hunk in ipairs(card.hunks) do
    if type(hunk) == 'table' and not hunk.preview then
      return true
    end
  end
  return false
end

--- Why a card cannot be reverted, or nil when it can. Only a completed card of kind `diff` can
--- (the cards the server offers Revert on): decided by the kind, never by the tool's name, so a
--- tool registered at run time and a revert's own card count too.
---@param card toolhost.Card
---@return string? reason
function M.revert_refusal(card)
  if card.status == 'pending' then
    return 'it is still running'
  elseif card.status == 'failed' then
    return 'it failed'
  elseif card.kind ~= 'diff' then
    return ('it is a %s card, not a file change'):format(tostring(card.kind))
  elseif card.status ~= 'completed' then
    return ('its status is %s'):format(tostring(card.status))
  end
  return nil
end

--- The cards of a client that can be reverted (|M.revert_refusal|), newest first.
---@param client_id integer
---@return toolhost.Card[]
function M.revertible(client_id)
  return vim.tbl_filter(function(card)
    return M.revert_refusal(card) == nil
  end, M.list(client_id))
end

return M
