--- toolhost.chat_state: how the chat (`toolhost.chat`) draws a hosted agent's state, apart from
--- what it streams: its plan (`[x]`/`[>]`/`[ ]` lines) and its context window (`context: 12,345 /
--- 200,000 tokens`) — blocks of the exchange that a newer report replaces in place, placed by the
--- chat — and its settings: the header in the chat window's winbar (`Claude Code · Mode: Default ·
--- Model: Opus`, |toolhost-agents|).

local M = {}

--- The mark of a plan entry's status: `[x]` completed, `[>]` in progress, `[ ]` pending.
M.PLAN_MARKS = { completed = '[x]', in_progress = '[>]', pending = '[ ]' }

--- The lines of a hosted agent's plan (`{type = "plan", entries}`), one per entry, and the
--- highlight group of each: `[x] {content}` (done), `[>] {content}` (in progress), `[ ] {content}`.
---@param entries any the update's `entries`: `{content, status, priority}` each
---@return string[] lines
---@return (string|false)[] groups one per line (false: none)
function M.plan_lines(entries)
  local lines, groups = {}, {}
  for _, e in ipairs(type(entries) == 'table' and entries or {}) do
    if type(e) == 'table' then
      local content = type(e.content) == 'string' and e.content:gsub('%s*\n%s*', ' ') or ''
      table.insert(lines, ('%s %s'):format(M.PLAN_MARKS[e.status] or '[ ]', content))
      table.insert(
        groups,
        e.status == 'completed' and 'ToolhostTodoDone' or e.status == 'in_progress' and 'ToolhostTodoActive' or false
      )
    end
  end
  if #lines == 0 then
    return { 'plan: no entries' }, { 'ToolhostChatNote' }
  end
  return lines, groups
end

--- `12345` → `12,345`.
---@param n number
---@return string
local function thousands(n)
  local digits = tostring(math.floor(n))
  local sign, rest = digits:match('^(-?)(%d+)$')
  if not rest then
    return digits
  end
  return sign .. rest:reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^,', '')
end

--- The line of a context-window report (`{type = "context", used, size, cost?}`):
--- `context: 12,345 / 200,000 tokens · $0.0123` (a currency other than USD by its code).
---@param update table
---@return string
function M.context_text(update)
  local used, size = thousands(tonumber(update.used) or 0), thousands(tonumber(update.size) or 0)
  local text = ('context: %s / %s tokens'):format(used, size)
  local cost = type(update.cost) == 'table' and tonumber(update.cost.amount) or nil
  if cost then
    local currency = type(update.cost.currency) == 'string' and update.cost.currency or 'USD'
    text = text .. (currency == 'USD' and (' · $%.4f'):format(cost) or (' · %.4f %s'):format(cost, currency))
  end
  return text
end

--- The lines of a context-window report and their highlight groups (one block of one line).
---@param update table
---@return string[] lines
---@return string[] groups
function M.context_lines(update)
  return { M.context_text(update) }, { 'ToolhostChatNote' }
end

--- The header of a hosted agent's chat: its title and its mode and model as far as known
--- (`Claude Code · Mode: Default · Model: Opus`).
---@param client_id integer the chat's server
---@param agent string
---@param options? toolhost.AgentOption[] the chat's settings (nil: not known)
---@return string
function M.header(client_id, agent, options)
  local title = require('toolhost.agents').title(client_id, agent)
  local settings = require('toolhost.agent_options').summary(options)
  return settings == '' and title or (title .. ' · ' .. settings)
end

--- Shows `header` in the winbar of the windows showing `buf` (the chat's state stays in sight
--- while its lines scroll); nil (toolhost's own agent) gives them the global winbar back.
---@param buf integer the chat buffer
---@param header? string
function M.draw_header(buf, header)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if header then
      vim.wo[win][0].winbar = '%#ToolhostChatAgent#' .. header:gsub('%%', '%%%%')
    else
      vim.api.nvim_win_call(win, function()
        vim.cmd('setlocal winbar<')
      end)
    end
  end
end

return M
