--- toolhost.cards.mcp: The view of `mcp` cards, the calls of external MCP servers' tools
--- (`mcp__<server>__<tool>`, |toolhost-mcp-cards|): the server as a badge, the tool's own name,
--- the text the model saw (the live output while it runs) and the structured content as pretty
--- JSON. <CR> opens all of it.

local text = require('toolhost.cards.text')

local M = {}

--- Lines of structured content a card shows; the rest is one <CR> away, like a terminal card's
--- long output.
M.STRUCTURED_LINES = 20

--- Whether a card is an MCP card with the data its kind promises (`{server, tool}`); another
--- card of kind `mcp` is drawn as generic.
---@param card toolhost.Card
---@return boolean
function M.is_card(card)
  local d = card.data
  return card.kind == 'mcp' and type(d) == 'table' and type(d.server) == 'string' and type(d.tool) == 'string'
end

--- The header line of an MCP card, `[<server>] <tool> · <status>` (` · <caller>` when an agent
--- made the call), and the byte length of its badge `[<server>]`.
---@param card toolhost.Card an MCP card (|M.is_card|)
---@return string line
---@return integer badge_end
function M.header(card)
  local badge = '[' .. card.data.server .. ']'
  local line = ('%s %s · %s'):format(badge, card.data.tool, tostring(card.status))
  if type(card.caller) == 'string' and card.caller ~= '' then
    line = line .. ' · ' .. card.caller
  end
  return (line:gsub('\n', ' ')), #badge
end

--- The structured content of an MCP card as JSON lines, or nil when it has none.
---@param card toolhost.Card
---@return string[]?
local function structured(card)
  local value = card.data.structuredContent
  if value == nil or value == vim.NIL then
    return nil
  end
  return require('toolhost.json').lines(value)
end

--- The lines of an MCP card in the cards buffer and their roles: the header (the server as a
--- badge, the tool's own name), the text the model saw (a failed card's error), the live output
--- and `running…` while it runs, and a `structured:` section with the structured content as
--- pretty JSON, cut after |M.STRUCTURED_LINES| lines (<CR> shows all).
---@param card toolhost.Card an MCP card (|M.is_card|)
---@param live? toolhost.LiveOutput
---@return string[] lines
---@return toolhost.LineRole[] roles
function M.card_view(card, live)
  local lines, roles, add = text.collector()
  add(M.header(card), 'title')
  if card.status == 'pending' then
    text.tail(text.output_lines(live and live.text or ''), live and live.dropped or 0, add)
    add('running… (<C-c> or :ToolhostStop stops it)', 'running')
  elseif type(card.text) == 'string' and card.text ~= '' then
    for _, l in ipairs(text.split((card.text:gsub('\n$', '')))) do
      add(l, card.status == 'failed' and 'error' or 'text')
    end
  end
  local json = structured(card)
  if json then
    add('structured:', 'section')
    for i = 1, math.min(#json, M.STRUCTURED_LINES) do
      add(json[i], 'json')
    end
    local rest = #json - M.STRUCTURED_LINES
    if rest > 0 then
      add(text.more(rest), 'more')
    end
  end
  return lines, roles
end

--- Everything an MCP card holds, for its full-output buffer: the text (the live output while it
--- runs) and the whole structured content.
---@param card toolhost.Card an MCP card (|M.is_card|)
---@param live? toolhost.LiveOutput
---@return string[]
function M.full_lines(card, live)
  local lines = text.output_lines(card.status == 'pending' and live and live.text or card.text or '')
  if card.status == 'pending' and live and live.dropped > 0 then
    table.insert(lines, 1, ('[… %d earlier lines not kept while the call runs]'):format(live.dropped))
  end
  local json = structured(card)
  if json then
    if #lines > 0 then
      table.insert(lines, '')
    end
    table.insert(lines, 'structured:')
    vim.list_extend(lines, json)
  end
  return lines
end

--- An MCP card's lines in the cards buffer; nil for a card of kind `mcp` without the data its
--- kind promises (drawn from `rendered` then).
---@param card toolhost.Card
---@param ctx toolhost.CardViewContext
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.draw(card, ctx)
  if not M.is_card(card) then
    return nil
  end
  return M.card_view(card, ctx.live)
end

--- Whether <CR> on a card opens its full output: an MCP card with its data.
M.has_full_output = M.is_card

--- The lines of an MCP card's full-output buffer (|M.full_lines|).
---@param card toolhost.Card
---@param live? toolhost.LiveOutput
---@return string[]
function M.full_output(card, live)
  return M.full_lines(card, live)
end

--- The server badge at the start of an MCP card's title line.
---@param card toolhost.Card
---@return {[1]: integer, [2]: integer, [3]: string}[] 0-based start and end columns, group
function M.title_spans(card)
  if not M.is_card(card) then
    return {}
  end
  local _, badge_end = M.header(card)
  return { { 0, badge_end, 'ToolhostMcpServer' } }
end

return M
