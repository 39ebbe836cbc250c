--- toolhost.cards.generic: The generic card view: a card's `rendered` text as it is, its first
--- line the title and the rest text. Every kind without a view of its own — `structured`,
--- `generic`, a tool's own kind, a kind this plugin has never heard of — is drawn so, and so is a
--- card whose view cannot read its data (a terminal card without `terminal`, a todo card whose
--- data has another shape).

local text = require('toolhost.cards.text')

local M = {}

--- The roles of the lines of `rendered`: the title, then text.
---@param card toolhost.Card
---@return toolhost.LineRole[]
function M.layout(card)
  local out = { { role = 'title' } }
  for i = 2, #text.split(card.rendered or '') do
    out[i] = { role = 'text' }
  end
  return out
end

--- The file and line every line of a card points at: its first location.
---@param card toolhost.Card
---@return string? path
---@return integer? line
function M.target(card)
  local first = (card.locations or {})[1]
  if first then
    return first.path, first.line
  end
  return nil
end

--- The lines of a card's full-output buffer: its text (ANSI stripped).
---@param card toolhost.Card
---@return string[]
function M.full_output(card)
  return text.output_lines(card.text or '')
end

return M
