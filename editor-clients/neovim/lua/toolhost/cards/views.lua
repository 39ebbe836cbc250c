--- toolhost.cards.views: Which view draws a card — one module per card kind, chosen by the
--- card's declared `kind`, never by its tool's name — and what every view answers: a card's lines
--- and their roles, the roles of its `rendered` lines, the file and line or web page a line
--- points at, its full output. A kind without a module here, or a card its view cannot read, is
--- drawn by the generic view (|toolhost.cards.generic|): its `rendered` text, title and text.

---@class toolhost.CardViewContext
---@field live? toolhost.LiveOutput the live output of the running call
---@field full? boolean a todo card with its whole list (echo), not only its counts
---@field pinned_id? string the call whose todo list is pinned at the top of the buffer

---@class toolhost.CardView A card view module; every field is optional.
---@field draw? fun(card: toolhost.Card, ctx: toolhost.CardViewContext): string[]?, toolhost.LineRole[]?
---  the card's lines and their roles; nil: drawn from `rendered` with `layout`
---@field layout? fun(card: toolhost.Card): toolhost.LineRole[] the roles of the lines of `rendered`
---@field target? fun(card: toolhost.Card, index: integer): string?, integer? the file and line a
---  line of `rendered` points at; nil: the card's first location
---@field url? fun(card: toolhost.Card, index: integer): string? the web page a line points at
---@field has_full_output? fun(card: toolhost.Card): boolean <CR> opens the card's full output
---@field full_output? fun(card: toolhost.Card, live?: toolhost.LiveOutput): string[] its lines
---@field title_spans? fun(card: toolhost.Card, title: string): {[1]: integer, [2]: integer, [3]: string}[]
---  highlighted spans of the title line besides the caller

local generic = require('toolhost.cards.generic')
local text = require('toolhost.cards.text')

local M = {}

--- The view module of each kind drawn in its own way (docs/protocol.md, the `toolhost/card`
--- table). `structured` cards are drawn from `rendered` (already their value as pretty JSON).
M.KINDS = {
  diff = 'toolhost.cards.diff',
  read = 'toolhost.cards.read',
  search = 'toolhost.cards.search',
  terminal = 'toolhost.cards.terminal',
  todo = 'toolhost.cards.todo',
  question = 'toolhost.cards.question',
  plan = 'toolhost.cards.plan',
  fetch = 'toolhost.cards.fetch',
  mcp = 'toolhost.cards.mcp',
}

--- The view of a card: its kind's module, else the generic view.
---@param card toolhost.Card
---@return toolhost.CardView
function M.of(card)
  local name = type(card.kind) == 'string' and M.KINDS[card.kind] or nil
  return name and require(name) or generic
end

--- A card's lines and their roles when its view draws it (not only `rendered`), else nil.
---@param card toolhost.Card
---@param ctx? toolhost.CardViewContext
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.draw(card, ctx)
  local view = M.of(card)
  if not view.draw then
    return nil
  end
  local lines, roles = view.draw(card, ctx or {})
  if not (lines and roles) then
    return nil
  end
  for i, l in ipairs(lines) do
    lines[i] = l:gsub('\n', ' ') -- a buffer line cannot hold one
  end
  return lines, roles
end

--- The role of each line of a card's `rendered` (index 1 is the title).
---@param card toolhost.Card
---@return toolhost.LineRole[]
function M.layout(card)
  return (M.of(card).layout or generic.layout)(card)
end

--- The file and line line `index` of a card's `rendered` points at: what its view says, else the
--- card's first location.
---@param card toolhost.Card
---@param index integer
---@return string? path
---@return integer? line
function M.target(card, index)
  local view = M.of(card)
  if view.target then
    local path, line = view.target(card, index)
    if path then
      return path, line
    end
  end
  return generic.target(card)
end

--- The web page line `index` of a card points at, or nil.
---@param card toolhost.Card
---@param index integer
---@return string?
function M.url(card, index)
  local view = M.of(card)
  return view.url and view.url(card, index) or nil
end

--- Whether <CR> on a card opens its full output (a terminal or MCP card).
---@param card toolhost.Card
---@return boolean
function M.has_full_output(card)
  local view = M.of(card)
  return view.has_full_output ~= nil and view.has_full_output(card)
end

--- The lines of a card's full-output buffer: the live output while it runs, else its output.
---@param card toolhost.Card
---@param live? toolhost.LiveOutput
---@return string[]
function M.full_output(card, live)
  local view = M.of(card)
  if view.full_output and (not view.has_full_output or view.has_full_output(card)) then
    return view.full_output(card, live)
  end
  local lines = generic.full_output(card)
  if live and live.dropped > 0 then
    table.insert(lines, 1, ('[… %d earlier lines not kept while the command runs]'):format(live.dropped))
  end
  return lines
end

--- The highlighted spans of a card's title line: its view's (an MCP card's server badge) and the
--- caller (the agent) at its end.
---@param card toolhost.Card
---@param title string the card's first line as drawn
---@return {[1]: integer, [2]: integer, [3]: string}[] 0-based start and end columns, group
function M.title_spans(card, title)
  local view = M.of(card)
  local spans = view.title_spans and view.title_spans(card, title) or {}
  local _, name_col = text.caller_span(card, title)
  if name_col then
    table.insert(spans, { name_col, #title, 'ToolhostCaller' })
  end
  return spans
end

return M
