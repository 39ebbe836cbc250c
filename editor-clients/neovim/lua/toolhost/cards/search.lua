--- toolhost.cards.search: The view of `search` cards (`glob`, `grep`, `lsp`): drawn from
--- `rendered`, whose line `i + 1` is the card's location `i`.

local M = {}

--- The location a line of a search card points at; nil for the title (the first location then).
---@param card toolhost.Card
---@param index integer 1-based line of `rendered`
---@return string? path
---@return integer? line
function M.target(card, index)
  local loc = index > 1 and (card.locations or {})[index - 1] or nil
  if loc then
    return loc.path, loc.line
  end
  return nil
end

return M
