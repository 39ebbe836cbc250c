--- toolhost.cards.read: The view of `read` cards: drawn from `rendered`; a numbered line
--- (`12: …`) points at that line of the file.

local text = require('toolhost.cards.text')

local M = {}

--- The file and line a line of a read card points at: a numbered line's line; nil elsewhere
--- (the card's location then).
---@param card toolhost.Card
---@param index integer 1-based line of `rendered`
---@return string? path
---@return integer? line
function M.target(card, index)
  local first = (card.locations or {})[1]
  if index > 1 and first then
    local n = (text.split(card.rendered or '')[index] or ''):match('^(%d+): ')
    if n then
      return first.path, tonumber(n)
    end
  end
  return nil
end

return M
