--- toolhost.cards.watched: The other session a client's live cards buffer shows instead of its
--- own — a worktree session's, chosen with |:Toolhost-worktrees| — and that session's cards as
--- its log last replayed them. While one is set the buffer draws these; the client's own cards
--- keep arriving in the store meanwhile and are drawn again once it is cleared.

---@class toolhost.WatchedSession
---@field session_id string
---@field name string the worktree session's name
---@field cards toolhost.Card[] newest first (empty until the first replay answers)

local M = {}

---@type table<integer, toolhost.WatchedSession>
local watched = {}

--- The session client `client_id`'s live cards buffer shows, when it is not the client's own.
---@param client_id integer
---@return toolhost.WatchedSession?
function M.get(client_id)
  return watched[client_id]
end

---@param client_id integer
---@param session toolhost.WatchedSession
function M.set(client_id, session)
  watched[client_id] = session
end

--- Back to the client's own cards (also when its server exited).
---@param client_id integer
function M.clear(client_id)
  watched[client_id] = nil
end

return M
