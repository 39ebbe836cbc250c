--- toolhost.cards.terminal: The view of `terminal` cards (`bash`): the command, its description
--- and working directory, the tail of its output (the live output while it runs) and how it
--- ended. <CR> opens the whole output.

local text = require('toolhost.cards.text')

local M = {}

--- Whether a card is drawn as a terminal: kind `terminal` with its `terminal` view (a failed
--- call is `generic`; a terminal card without the view is drawn from `rendered` too).
---@param card toolhost.Card
---@return boolean
function M.is_terminal(card)
  return card.kind == 'terminal' and type(card.terminal) == 'table'
end

--- The status line of a terminal card and its role.
---@param card toolhost.Card
---@param output string[] the output lines (a final `[timed out after …]` line is taken out)
---@return string? line
---@return string? role
local function exit_line(card, output)
  local t = card.terminal
  if card.status == 'pending' then
    return 'running… (<C-c> or :ToolhostStop stops it)', 'running'
  end
  if t.timedOut then
    -- The server leaves its `[timed out after Nms]` line in the output; it is the status here.
    local after = output[#output] and output[#output]:match('^%[timed out after (.-)%]$')
    if after then
      table.remove(output)
    end
    return 'timed out' .. (after and (' after ' .. after) or ''), 'exit-warn'
  end
  if type(t.signal) == 'string' and t.signal ~= '' then
    return 'killed by ' .. t.signal, 'exit-warn'
  end
  if type(t.exitCode) == 'number' then
    return ('exit %d'):format(t.exitCode), t.exitCode == 0 and 'exit-ok' or 'exit-error'
  end
  return nil
end

--- The lines of a terminal card: the title line of `rendered`, `$ <command>`, its description
--- and working directory, the last `TAIL_LINES` lines of output (|toolhost.cards.text|; with a
--- `… N more lines (<CR> for all)` line above them when there are more), and how it ended (`exit 0`, `exit 2`,
--- `killed by SIGTERM`, `timed out after 300ms`; `running…` while pending). While the call runs
--- the output is the live text (`live`); once it ended, `terminal.output`.
---@param card toolhost.Card a card with `terminal` (|M.is_terminal|)
---@param live? toolhost.LiveOutput
---@return string[] lines
---@return toolhost.LineRole[] roles
function M.terminal_view(card, live)
  local t = card.terminal
  local lines, roles, add = text.collector()
  add(text.title(card), 'title')
  for i, l in ipairs(text.output_lines(type(t.command) == 'string' and t.command or '')) do
    add((i == 1 and '$ ' or '  ') .. l, 'command')
  end
  for _, field in ipairs({ 'description', 'cwd' }) do
    local v = t[field]
    if type(v) == 'string' and v ~= '' then
      add((field == 'cwd' and '# in ' or '# ') .. table.concat(text.output_lines(v), ' '), 'meta')
    end
  end
  local pending = card.status == 'pending'
  local out = pending and live and live.text or (type(t.output) == 'string' and t.output or '')
  local output = text.output_lines(out)
  local status, status_role = exit_line(card, output)
  text.tail(output, pending and live and live.dropped or 0, add)
  if status then
    add(status, status_role)
  end
  return lines, roles
end

--- A terminal card's lines in the cards buffer; nil for a terminal card without its `terminal`
--- view (drawn from `rendered` then).
---@param card toolhost.Card
---@param ctx toolhost.CardViewContext
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.draw(card, ctx)
  if not M.is_terminal(card) then
    return nil
  end
  return M.terminal_view(card, ctx.live)
end

--- Whether <CR> on a card opens its full output: a terminal card with its view.
M.has_full_output = M.is_terminal

--- The lines of a terminal card's full-output buffer: the live output while it runs (with how
--- many earlier lines were not kept), else `terminal.output`.
---@param card toolhost.Card
---@param live? toolhost.LiveOutput
---@return string[]
function M.full_output(card, live)
  local lines = text.output_lines(live and live.text or card.terminal.output or '')
  if live and live.dropped > 0 then
    table.insert(lines, 1, ('[… %d earlier lines not kept while the command runs]'):format(live.dropped))
  end
  return lines
end

return M
