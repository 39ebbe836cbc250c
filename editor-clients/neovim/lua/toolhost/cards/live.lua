--- toolhost.cards.live: The live output of running calls (`toolhost/callOutput`): the text a
--- call appended so far, shown in its pending card until the final card, whose output is
--- authoritative, replaces it.

local M = {}

---@type table<integer, table<string, toolhost.LiveOutput>> client id -> callId -> live output
local outputs = {}

--- Live text kept per running call. The final card carries the authoritative output (the
--- server keeps only a tail too), so an endless `yes` must not grow Neovim's memory meanwhile.
M.CAP = 256 * 1024

--- The live output of a running call, or nil.
---@param client_id? integer
---@param call_id string
---@return toolhost.LiveOutput?
function M.get(client_id, call_id)
  return client_id and outputs[client_id] and outputs[client_id][call_id] or nil
end

--- Appends text a running call wrote, keeping its tail under |M.CAP| from a line start and
--- counting the lines cut, so `… N more lines` stays true.
---@param client_id integer
---@param call_id string
---@param text string
function M.append(client_id, call_id, text)
  outputs[client_id] = outputs[client_id] or {}
  local live = outputs[client_id][call_id] or { text = '', dropped = 0 }
  outputs[client_id][call_id] = live
  live.text = live.text .. text
  if #live.text > M.CAP then
    local cut = live.text:find('\n', #live.text - M.CAP, true) or (#live.text - M.CAP)
    local _, lines = live.text:sub(1, cut):gsub('\n', '')
    live.dropped = live.dropped + lines
    live.text = live.text:sub(cut + 1)
  end
end

--- Drops a call's live output (its final card arrived).
---@param client_id integer
---@param call_id string
function M.drop(client_id, call_id)
  if outputs[client_id] then
    outputs[client_id][call_id] = nil
  end
end

--- Drops a client's live output (its server exited).
---@param client_id integer
function M.forget(client_id)
  outputs[client_id] = nil
end

return M
