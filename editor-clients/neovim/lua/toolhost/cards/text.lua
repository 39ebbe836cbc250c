--- toolhost.cards.text: Text helpers every card view uses: `rendered` split into lines, command
--- output made fit for a buffer (ANSI escapes stripped, carriage returns applied), and the caller
--- label at the end of a title line.

local M = {}

--- Output lines a terminal or MCP card shows; longer output is cut to its tail with a `… N more
--- lines` line (the whole of it is one <CR> away).
M.TAIL_LINES = 20

--- The caller label at the end of a card's title line: the 0-based byte column where
--- ` · <caller>` starts and where the name starts, or nil when the card has no caller (a call of
--- this editor) or its title line does not end with it.
---@param card toolhost.Card
---@param title string the first line of `rendered`
---@return integer? start column of ` · `
---@return integer? name column of the caller's name
function M.caller_span(card, title)
  local caller = card.caller
  if type(caller) ~= 'string' or caller == '' then
    return nil
  end
  local suffix = ' · ' .. caller
  if #title < #suffix or title:sub(-#suffix) ~= suffix then
    return nil
  end
  return #title - #suffix, #title - #caller
end

--- Splits `rendered` into buffer lines (exactly: joining them with "\n" gives it back).
---@param text string
---@return string[]
function M.split(text)
  return vim.split(text, '\n', { plain = true })
end

--- Removes ANSI escape sequences (colours, cursor moves, titles, hyperlinks): a buffer would show
--- them as `^[[31m`.
---@param text string
---@return string
function M.strip_ansi(text)
  return (
    text
      :gsub('\27%][^\7\27]*\7', '') -- OSC ended by BEL (window titles)
      :gsub('\27%][^\7\27]*\27\\', '') -- OSC ended by ST (hyperlinks)
      :gsub('\27[PX^_][^\27]*\27\\', '') -- DCS, SOS, PM, APC
      :gsub('\27%[[0-?]*[ -/]*[@-~]', '') -- CSI (SGR colours, cursor and erase)
      :gsub('\27[ -/]*[0-~]', '') -- the rest (`ESC ( B`, `ESC =`, `ESC 7`, …)
  )
end

--- Command output as buffer lines: ANSI stripped; a carriage return overwrites the line as a
--- terminal would (progress bars); other control characters dropped; no empty line for the
--- final newline.
---@param text string
---@return string[]
function M.output_lines(text)
  if text == '' then
    return {}
  end
  local out = M.split(M.strip_ansi(text))
  if out[#out] == '' then
    table.remove(out)
  end
  for i, l in ipairs(out) do
    l = l:gsub('\r+$', '')
    l = l:match('[^\r]*$')
    out[i] = l:gsub('[%z\1-\8\11-\31\127]', '')
  end
  return out
end

--- `… 3 more lines (<CR> for all)`: what a card leaves out.
---@param n integer
---@return string
function M.more(n)
  return ('… %d more line%s (<CR> for all)'):format(n, n == 1 and '' or 's')
end

--- Appends the last |M.TAIL_LINES| lines of `output` (role `output`), after a `… N more lines`
--- line (role `more`) when some are left out — those cut here and `dropped` more.
---@param output string[]
---@param dropped integer lines already cut off before `output`
---@param add fun(line: string, role: string)
function M.tail(output, dropped, add)
  local hidden = math.max(#output - M.TAIL_LINES, 0) + dropped
  if hidden > 0 then
    add(M.more(hidden), 'more')
  end
  for i = math.max(#output - M.TAIL_LINES + 1, 1), #output do
    add(output[i], 'output')
  end
end

--- Appends the Native text of a failed card (its error), line by line (role `error`).
---@param card toolhost.Card
---@param add fun(line: string, role: string)
function M.failure(card, add)
  if card.status == 'failed' and type(card.text) == 'string' and card.text ~= '' then
    for _, l in ipairs(M.split(card.text)) do
      add(l, 'error')
    end
  end
end

--- A collector of lines and their roles: `add(line, role)` appends to both.
---@return string[] lines
---@return toolhost.LineRole[] roles
---@return fun(line: string, role: string) add
function M.collector()
  local lines, roles = {}, {}
  return lines, roles, function(line, role)
    table.insert(lines, line)
    table.insert(roles, { role = role })
  end
end

--- The title line of a card: the first line of `rendered`.
---@param card toolhost.Card
---@return string
function M.title(card)
  return M.split(card.rendered or '')[1] or ''
end

return M
