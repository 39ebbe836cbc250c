--- toolhost.cards: Cards: the store of a session and the cards scratch buffer (with the
--- session's todo list pinned at the top)

---@class toolhost.CardLocation
---@field path string Absolute path.
---@field line integer 1-based line.

---@class toolhost.HunkLine
---@field op ' '|'+'|'-'
---@field text string

---@class toolhost.Hunk
---@field path string
---@field oldStart integer meaningless (0) in a preview hunk
---@field oldLines integer
---@field newStart integer meaningless (0) in a preview hunk
---@field newLines integer
---@field lines toolhost.HunkLine[]
---@field header? string The header line as the server writes it (`@@ -a,b +c,d @@`, `@@ preview -b +d @@`).
---@field preview? boolean A pending change whose place in the file is not known yet.

---@class toolhost.TerminalView
---@field command string
---@field description? string
---@field cwd? string
---@field output string Empty while the command runs (the live text comes in `toolhost/callOutput`).
---@field exitCode? integer
---@field signal? string e.g. `SIGTERM`
---@field timedOut? boolean
---@field spillPaths? string[] files holding a stream's full output

---@class toolhost.Card
---@field callId string
---@field tool string
---@field status 'pending'|'completed'|'failed'
---@field kind string Open: diff, read, search, terminal, todo, question, plan, fetch, structured, mcp,
---  generic or a tool's own kind; a kind without a view here is drawn as generic (its `rendered` text).
---@field title string
---@field caller? string Who made the call when it was not this editor: the agent's MCP
---  `clientInfo.name` (e.g. `claude-code`) for calls that came through `toolhost mcp`; the title
---  line of `rendered` then ends with ` · <caller>`.
---@field text string
---@field rendered string The one plain-text rendering; shown byte for byte.
---@field locations toolhost.CardLocation[]
---@field hunks? toolhost.Hunk[]
---@field stats? {additions: integer, deletions: integer}
---@field read? table read cards: {path, offset, lines, totalLines, lang?}
---@field search? table search cards: {shape, paths?, files?, locations?, truncated, total}
---@field terminal? toolhost.TerminalView terminal cards (`bash`)
---@field data? any what todo, question, plan and mcp cards are drawn from (|M.data_view|, the
---  `{server, tool, structuredContent?}` of an MCP tool's card), the recorded value of a
---  structured card, or the meta of other kinds

---@class toolhost.LineRole
---@field role string lines of `rendered`: 'title', 'file', 'header', '+', '-', ' ', 'text'; of a terminal view
---  (|M.terminal_view|) also 'command', 'meta', 'more', 'output', 'running', 'exit-ok', 'exit-error', 'exit-warn';
---  of a data view (|M.data_view|) also 'counts', 'todo-done', 'todo-active', 'todo-pending', 'question',
---  'answer', 'option', 'waiting', 'approved', 'error', 'md-heading', 'md-code', 'md-quote'; of an MCP
---  card's view also 'section' (`structured:`) and 'json'
---@field hunk? toolhost.Hunk the hunk of a diff line (of a `file` line: that file's first hunk)
---@field line? integer for diff lines: the line in the new file (nil in a preview hunk)

---@class toolhost.Store
---@field order string[] callIds, oldest first
---@field by_id table<string, toolhost.Card>

---@class toolhost.LineInfo
---@field card toolhost.Card
---@field index integer 1-based line index inside the card's `rendered` (a terminal card: inside
---  its terminal view, see |M.terminal_view|)
---@field role? toolhost.LineRole the line's role when it is not read off `rendered` (terminal
---  cards, cards drawn from their data, the pinned todo list)
---@field pinned? boolean a line of the todo list pinned at the top (|M.pinned_view|)

---@class toolhost.LiveOutput
---@field text string the `toolhost/callOutput` text received so far (its tail, see LIVE_CAP)
---@field dropped integer lines cut off the front of `text` to keep it under LIVE_CAP

local M = {}

local ns = vim.api.nvim_create_namespace('toolhost_cards')

---@type table<integer, toolhost.Store>
local stores = {}

---@type table<integer, toolhost.LineInfo[]>  cards buffer -> per-line info
local line_info = {}

---@type table<integer, integer> client id -> live cards buffer
local live_bufs = {}

---@type table<integer, table<string, toolhost.LiveOutput>> client id -> callId -> live output
local outputs = {}

---@type table<string, {buf: integer, client_id?: integer, card: toolhost.Card}> callId -> its output buffer
local output_bufs = {}

---@type table<integer, boolean> clients with a cards redraw scheduled
local redraw_due = {}

--- Output lines a terminal card shows; longer output is cut to its tail with a `… N more
--- lines` line (the whole of it is one <CR> away).
M.TAIL_LINES = 20

--- Live text kept per running call. The final card carries the authoritative output (the
--- server keeps only a tail too), so an endless `yes` must not grow Neovim's memory meanwhile.
local LIVE_CAP = 256 * 1024

--- Redraws for live output are coalesced: the server sends at most ten texts a second per call,
--- but several calls (and servers) may run at once, and each redraw rewrites the whole buffer.
local REDRAW_MS = 50

--- Defines the highlight groups (default links, so colorschemes can override them).
function M.define_highlights()
  local links = {
    ToolhostDiffAdd = 'DiffAdd',
    ToolhostDiffDelete = 'DiffDelete',
    ToolhostCardTitle = 'Title',
    ToolhostCaller = 'Identifier',
    ToolhostHunkHeader = 'Special',
    ToolhostCardFile = 'Directory',
    ToolhostInlineHeader = 'DiagnosticVirtualTextInfo',
    ToolhostInlineDelete = 'DiffDelete',
    ToolhostInlineAdd = 'DiffAdd',
    ToolhostTerminalCommand = 'Statement',
    ToolhostTerminalInfo = 'Comment',
    ToolhostTerminalMore = 'Comment',
    ToolhostExitOk = 'DiagnosticOk',
    ToolhostExitError = 'DiagnosticError',
    ToolhostExitWarn = 'DiagnosticWarn',
    ToolhostReviewAccepted = 'DiagnosticOk',
    ToolhostReviewRejected = 'DiagnosticError',
    ToolhostReviewUndecided = 'DiagnosticWarn',
    ToolhostReviewInfo = 'Comment',
    ToolhostTodoDone = 'Comment',
    ToolhostTodoActive = 'DiagnosticWarn',
    ToolhostCardInfo = 'Comment',
    ToolhostTodoCounts = 'Comment',
    ToolhostQuestion = 'Question',
    ToolhostAnswer = 'DiagnosticOk',
    ToolhostPlanHeading = 'Title',
    ToolhostPlanCode = 'String',
    ToolhostPlanQuote = 'Comment',
    ToolhostMcpServer = 'PmenuSel',
    ToolhostChatPrompt = 'Question',
    ToolhostChatCall = 'Special',
    ToolhostChatReasoning = 'Comment',
    ToolhostChatNote = 'Comment',
    ToolhostChatFooter = 'Comment',
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

---@param client_id integer
---@return toolhost.Store
function M.store(client_id)
  stores[client_id] = stores[client_id] or { order = {}, by_id = {} }
  return stores[client_id]
end

--- The cards of a client, newest first.
---@param client_id integer
---@return toolhost.Card[]
function M.list(client_id)
  local s = M.store(client_id)
  local out = {}
  for i = #s.order, 1, -1 do
    table.insert(out, s.by_id[s.order[i]])
  end
  return out
end

--- Drops a client's cards (its server exited).
---@param client_id integer
function M.forget(client_id)
  stores[client_id] = nil
  live_bufs[client_id] = nil
  outputs[client_id] = nil
end

--- Whether a card reports files a call changed: a completed diff card (by kind, never by
--- tool name, so tools registered at run time count too) with a hunk placed in the file.
---@param card toolhost.Card
---@return boolean
local function changes_files(card)
  if card.status ~= 'completed' or card.kind ~= 'diff' or type(card.hunks) ~= 'table' then
    return false
  end
  for _, hunk in ipairs(card.hunks) do
    if type(hunk) == 'table' and not hunk.preview then
      return true
    end
  end
  return false
end

--- Records a card (notification or callTool response). A card with a known callId replaces the
--- earlier one in place; a new callId becomes the newest card.
---@param client_id integer
---@param card toolhost.Card
function M.on_card(client_id, card)
  if type(card) ~= 'table' or type(card.callId) ~= 'string' then
    return
  end
  local s = M.store(client_id)
  local old = s.by_id[card.callId]
  if not old then
    table.insert(s.order, card.callId)
  end
  s.by_id[card.callId] = card
  if card.status ~= 'pending' and outputs[client_id] then
    -- The final card's output replaces the live text.
    outputs[client_id][card.callId] = nil
  end
  local first_time_done = changes_files(card) and not (old and old.status == 'completed')
  if first_time_done then
    -- The root resolves the hunks' relative paths: a card may change several files (a revert
    -- since a call), each of which reloads.
    local client = vim.lsp.get_client_by_id(client_id)
    require('toolhost.inline').on_file_card(card, client and client.root_dir or nil)
  end
  local buf = live_bufs[client_id]
  if buf and vim.api.nvim_buf_is_valid(buf) then
    M.render(buf, M.list(client_id), client_id)
  end
  M.refresh_output(card.callId)
end

--- The live output of a running call (`toolhost/callOutput` text so far), or nil.
---@param client_id? integer
---@param call_id string
---@return toolhost.LiveOutput?
function M.live_output(client_id, call_id)
  return client_id and outputs[client_id] and outputs[client_id][call_id] or nil
end

--- Redraws a client's cards buffer (and the open full-output buffers) soon, once for every
--- burst of live output.
---@param client_id integer
local function redraw_soon(client_id)
  if redraw_due[client_id] then
    return
  end
  redraw_due[client_id] = true
  vim.defer_fn(function()
    redraw_due[client_id] = nil
    local buf = live_bufs[client_id]
    if buf and vim.api.nvim_buf_is_valid(buf) then
      M.render(buf, M.list(client_id), client_id)
    end
    for call_id, ob in pairs(output_bufs) do
      if ob.client_id == client_id then
        M.refresh_output(call_id)
      end
    end
  end, REDRAW_MS)
end

--- `toolhost/callOutput {callId, text}`: text a running call appended (bash's stdout and stderr),
--- shown in its pending card until the final card replaces it.
---@param client_id integer
---@param params {callId: string, text: string}
function M.on_output(client_id, params)
  if type(params) ~= 'table' or type(params.callId) ~= 'string' or type(params.text) ~= 'string' then
    return
  end
  local card = M.store(client_id).by_id[params.callId]
  if card and card.status ~= 'pending' then
    return -- late text of a finished call: its final card is authoritative
  end
  outputs[client_id] = outputs[client_id] or {}
  local live = outputs[client_id][params.callId] or { text = '', dropped = 0 }
  outputs[client_id][params.callId] = live
  live.text = live.text .. params.text
  if #live.text > LIVE_CAP then
    -- Keep the tail from a line start, counting the lines cut so `… N more lines` stays true.
    local cut = live.text:find('\n', #live.text - LIVE_CAP, true) or (#live.text - LIVE_CAP)
    local _, lines = live.text:sub(1, cut):gsub('\n', '')
    live.dropped = live.dropped + lines
    live.text = live.text:sub(cut + 1)
  end
  redraw_soon(client_id)
end

--- Adds the earlier cards of a resumed session (oldest first) before every card seen live.
---@param client_id integer
---@param cards toolhost.Card[]
function M.seed(client_id, cards)
  local s = M.store(client_id)
  local older = {}
  for _, card in ipairs(cards) do
    if type(card) == 'table' and type(card.callId) == 'string' and not s.by_id[card.callId] then
      table.insert(older, card.callId)
      s.by_id[card.callId] = card
    end
  end
  s.order = vim.list_extend(older, s.order)
  local buf = live_bufs[client_id]
  if #older > 0 and buf and vim.api.nvim_buf_is_valid(buf) then
    M.render(buf, M.list(client_id))
  end
end

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
--- and working directory, the last |M.TAIL_LINES| lines of output (with a `… N more lines (<CR>
--- for all)` line above them when there are more), and how it ended (`exit 0`, `exit 2`,
--- `killed by SIGTERM`, `timed out after 300ms`; `running…` while pending). While the call runs
--- the output is the live text (`live`); once it ended, `terminal.output`.
---@param card toolhost.Card a card with `terminal` (|M.is_terminal|)
---@param live? toolhost.LiveOutput
---@return string[] lines
---@return toolhost.LineRole[] roles
function M.terminal_view(card, live)
  local t = card.terminal
  local lines, roles = {}, {}
  local function add(line, role)
    table.insert(lines, line)
    table.insert(roles, { role = role })
  end
  add(M.split(card.rendered or '')[1] or '', 'title')
  for i, l in ipairs(M.output_lines(type(t.command) == 'string' and t.command or '')) do
    add((i == 1 and '$ ' or '  ') .. l, 'command')
  end
  for _, field in ipairs({ 'description', 'cwd' }) do
    local v = t[field]
    if type(v) == 'string' and v ~= '' then
      add((field == 'cwd' and '# in ' or '# ') .. table.concat(M.output_lines(v), ' '), 'meta')
    end
  end
  local pending = card.status == 'pending'
  local text = pending and live and live.text or (type(t.output) == 'string' and t.output or '')
  local output = M.output_lines(text)
  local status, status_role = exit_line(card, output)
  local hidden = math.max(#output - M.TAIL_LINES, 0) + (pending and live and live.dropped or 0)
  if hidden > 0 then
    add(('… %d more line%s (<CR> for all)'):format(hidden, hidden == 1 and '' or 's'), 'more')
  end
  for i = math.max(#output - M.TAIL_LINES + 1, 1), #output do
    add(output[i], 'output')
  end
  if status then
    add(status, status_role)
  end
  return lines, roles
end

--- The todos of a todo card's data (`{todos = {{content, status}}}`), or nil when its data does
--- not have that shape (the card is then drawn from `rendered`).
---@param card toolhost.Card
---@return {content: string, status: string}[]?
function M.todos(card)
  local data = card.data
  if card.kind ~= 'todo' or type(data) ~= 'table' or type(data.todos) ~= 'table' then
    return nil
  end
  local out = {}
  for _, t in ipairs(data.todos) do
    if type(t) == 'table' then
      local status = (t.status == 'completed' or t.status == 'in_progress') and t.status or 'pending'
      table.insert(out, { content = tostring(t.content or ''), status = status })
    end
  end
  return out
end

--- `1/3 completed · 1 in progress · 1 pending` (counted here: a pending card's call-time data
--- has no counts).
---@param todos {status: string}[]
---@return string
function M.todo_counts(todos)
  local c = { completed = 0, in_progress = 0, pending = 0 }
  for _, t in ipairs(todos) do
    c[t.status] = c[t.status] + 1
  end
  return ('%d/%d completed · %d in progress · %d pending'):format(c.completed, #todos, c.in_progress, c.pending)
end

local TODO_MARKS = { completed = '[x]', in_progress = '[>]', pending = '[ ]' }
local TODO_ROLES = { completed = 'todo-done', in_progress = 'todo-active', pending = 'todo-pending' }

--- Appends a checklist (`[x]` done, `[>]` in progress, `[ ]` pending).
---@param todos {content: string, status: string}[]
---@param add fun(line: string, role: string)
local function checklist(todos, add)
  if #todos == 0 then
    add('(the todo list is empty)', 'todo-pending')
  end
  for _, t in ipairs(todos) do
    for i, l in ipairs(M.split(t.content)) do
      add((i == 1 and TODO_MARKS[t.status] .. ' ' or '    ') .. l, TODO_ROLES[t.status])
    end
  end
end

--- The latest todo list among `cards` (newest first): the newest completed todo card with a list.
--- A failed `todo_write` changed nothing and a pending one is about to be replaced by its result.
---@param cards toolhost.Card[]
---@return toolhost.Card? card
---@return {content: string, status: string}[]? todos
function M.latest_todos(cards)
  for _, card in ipairs(cards) do
    if card.kind == 'todo' and card.status == 'completed' then
      local todos = M.todos(card)
      if todos then
        return card, todos
      end
    end
  end
  return nil
end

--- The todo list pinned at the top of a cards buffer: a session has one todo list, which every
--- `todo_write` replaces, so only its latest state is drawn in full (the todo cards below show
--- their counts).
---@param card toolhost.Card
---@param todos {content: string, status: string}[]
---@return string[] lines
---@return toolhost.LineRole[] roles
function M.pinned_view(card, todos)
  local lines, roles = {}, {}
  local function add(line, role)
    table.insert(lines, line)
    table.insert(roles, { role = role })
  end
  add('Todos · ' .. M.todo_counts(todos), 'title')
  checklist(todos, add)
  return lines, roles
end

--- Appends the Native text of a failed card (its error), line by line.
---@param card toolhost.Card
---@param add fun(line: string, role: string)
local function failure(card, add)
  if card.status == 'failed' and type(card.text) == 'string' and card.text ~= '' then
    for _, l in ipairs(M.split(card.text)) do
      add(l, 'error')
    end
  end
end

--- A markdown line's role (cheap: headings, fences and what they hold, quotes).
---@param line string
---@param in_code boolean inside a fenced block before this line
---@return string role
---@return boolean in_code after this line
local function markdown_role(line, in_code)
  if line:match('^%s*```') or line:match('^%s*~~~') then
    return 'md-code', not in_code
  elseif in_code then
    return 'md-code', true
  elseif line:match('^#+%s') then
    return 'md-heading', false
  elseif line:match('^%s*>') then
    return 'md-quote', false
  end
  return 'text', false
end

--- The view of a card drawn from its `data` (docs/protocol.md, the `toolhost/card` table): a
--- todo card's counts (`full`: and its checklist), a question card's questions with their
--- options while unanswered and their answers, a plan card's markdown with `→ Approved` or the
--- reason it was not. Nil for other kinds and for data of another shape: the card is drawn from
--- `rendered` (a structured card's `rendered` is already its value as pretty JSON).
---@param card toolhost.Card
---@param full? boolean a todo card with its whole list (echo), not only its counts
---@param pinned_id? string the call whose todo list is pinned at the top of the buffer
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.data_view(card, full, pinned_id)
  local data = card.data
  if type(data) ~= 'table' then
    return nil
  end
  local lines, roles = {}, {}
  local function add(line, role)
    table.insert(lines, line)
    table.insert(roles, { role = role })
  end
  local title = M.split(card.rendered or '')[1] or ''
  if card.kind == 'todo' then
    local todos = M.todos(card)
    if not todos then
      return nil
    end
    add(title, 'title')
    if full or card.status == 'failed' then
      add(M.todo_counts(todos), 'counts')
      checklist(todos, add)
    else
      local where = ''
      if pinned_id == card.callId then
        where = ' (the list is at the top)'
      elseif pinned_id and card.status == 'completed' then
        where = ' (replaced by a later list)'
      end
      add(M.todo_counts(todos) .. where, 'counts')
    end
  elseif card.kind == 'question' then
    if type(data.questions) ~= 'table' then
      return nil
    end
    add(title, 'title')
    local answers = type(data.answers) == 'table' and data.answers or {}
    for _, q in ipairs(data.questions) do
      if type(q) == 'table' then
        local head = (type(q.header) == 'string' and q.header ~= '') and ('[' .. q.header .. '] ') or ''
        add('? ' .. head .. table.concat(M.split(tostring(q.question or '')), ' '), 'question')
        local answer
        for _, a in ipairs(answers) do
          if type(a) == 'table' and a.id == q.id then
            answer = a
          end
        end
        if answer then
          local chosen = {}
          for _, label in ipairs(type(answer.selected) == 'table' and answer.selected or {}) do
            table.insert(chosen, tostring(label))
          end
          if type(answer.custom) == 'string' then
            table.insert(chosen, '"' .. answer.custom .. '"')
          end
          add('→ ' .. (#chosen > 0 and table.concat(chosen, ', ') or '(no answer)'), 'answer')
        elseif card.status == 'pending' then
          for _, o in ipairs(type(q.options) == 'table' and q.options or {}) do
            if type(o) == 'table' then
              local desc = (type(o.description) == 'string' and o.description ~= '') and (' — ' .. o.description) or ''
              add((q.multiSelect and '  [ ] ' or '  - ') .. tostring(o.label) .. desc, 'option')
            end
          end
        end
      end
    end
    if card.status == 'pending' then
      add('waiting for the answer…', 'waiting')
    end
    failure(card, add)
  elseif card.kind == 'plan' then
    if type(data.plan) ~= 'string' then
      return nil
    end
    add(title, 'title')
    local in_code = false
    for _, l in ipairs(M.split((data.plan:gsub('%s+$', '')))) do
      local role
      role, in_code = markdown_role(l, in_code)
      add(l, role)
    end
    if data.approved == true then
      add('→ Approved', 'approved')
    elseif card.status == 'pending' then
      add('waiting for the review…', 'waiting')
    end
    failure(card, add)
  else
    return nil
  end
  for i, l in ipairs(lines) do
    lines[i] = l:gsub('\n', ' ')
  end
  return lines, roles
end

--- The lines of a card and their roles when it is not drawn from `rendered` alone: a terminal
--- card's terminal view, an MCP card's view (|toolhost.mcp|), a todo/question/plan card's data
--- view; else nil.
---@param card toolhost.Card
---@param client_id? integer
---@param full? boolean see |M.data_view|
---@param pinned_id? string see |M.data_view|
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.view(card, client_id, full, pinned_id)
  if M.is_terminal(card) then
    return M.terminal_view(card, M.live_output(client_id, card.callId))
  end
  local mcp = require('toolhost.mcp')
  if mcp.is_card(card) then
    return mcp.card_view(card, M.live_output(client_id, card.callId))
  end
  return M.data_view(card, full, pinned_id)
end

--- The lines a cards buffer shows: the latest todo list pinned at the top (|M.pinned_view|),
--- then each card's `rendered`, one blank line between cards; a terminal card is drawn as its
--- terminal view (|M.terminal_view|), an MCP card as its view (|toolhost.mcp|), a todo, question
--- or plan card from its data (|M.data_view|).
---@param cards toolhost.Card[] newest first
---@param client_id? integer the client whose live output running terminal cards show
---@return string[] lines
---@return toolhost.LineInfo[] info
function M.lines(cards, client_id)
  local lines, info = {}, {}
  local pinned, todos = M.latest_todos(cards)
  if pinned and todos then
    local plines, roles = M.pinned_view(pinned, todos)
    for idx, l in ipairs(plines) do
      table.insert(lines, l)
      table.insert(info, { card = pinned, index = idx, role = roles[idx], pinned = true })
    end
  end
  for _, card in ipairs(cards) do
    if #lines > 0 then
      table.insert(lines, '')
      table.insert(info, false)
    end
    local vlines, roles = M.view(card, client_id, false, pinned and pinned.callId or nil)
    if vlines and roles then
      for idx, l in ipairs(vlines) do
        table.insert(lines, l)
        table.insert(info, { card = card, index = idx, role = roles[idx] })
      end
    else
      for idx, l in ipairs(M.split(card.rendered or '')) do
        table.insert(lines, l)
        table.insert(info, { card = card, index = idx })
      end
    end
  end
  return lines, info
end

--- The role of each line of a card's `rendered` (index 1 is the title). A diff card's lines are
--- read off its hunks — each hunk's `header` as the server wrote it, then its lines — so a
--- hunk header is never formatted or guessed here. A card whose hunks are of several files (a
--- revert since a call) names the file, its hunks' `path`, on a line of its own before them,
--- as the server's `card::to_text` does: role `file`. When `rendered` does not have that shape the
--- lines starting with `@@ `, `+` and `-` are taken for diff lines. Every other kind (including
--- kinds this plugin does not know) is the generic view: a title and text.
---@param card toolhost.Card
---@return toolhost.LineRole[]
function M.layout(card)
  local lines = M.split(card.rendered or '')
  local out = { { role = 'title' } }
  for i = 2, #lines do
    out[i] = { role = 'text' }
  end
  if card.kind ~= 'diff' then
    return out
  end
  local planned, idx, fits = {}, 1, type(card.hunks) == 'table'
  local several, last_path, first_path = false, nil, nil
  for i, hunk in ipairs(fits and card.hunks or {}) do
    local path = type(hunk) == 'table' and hunk.path or nil
    first_path = i == 1 and path or first_path
    several = several or path ~= first_path
  end
  for _, hunk in ipairs(fits and card.hunks or {}) do
    if type(hunk) ~= 'table' then
      fits = false
      break
    end
    if several and hunk.path ~= last_path then
      idx = idx + 1
      if lines[idx] ~= tostring(hunk.path) then
        fits = false
        break
      end
      last_path = hunk.path
      planned[idx] = { role = 'file', hunk = hunk, line = (not hunk.preview) and tonumber(hunk.newStart) or nil }
    end
    idx = idx + 1
    local header = type(hunk.header) == 'string' and hunk.header ~= '' and hunk.header or nil
    if type(hunk.lines) ~= 'table' or lines[idx] == nil or (header and lines[idx] ~= header) then
      fits = false
      break
    end
    local new_line = (not hunk.preview) and tonumber(hunk.newStart) or nil
    planned[idx] = { role = 'header', hunk = hunk, line = new_line }
    for _, hl in ipairs(hunk.lines) do
      idx = idx + 1
      if lines[idx] ~= (tostring(hl.op) .. tostring(hl.text)) then
        fits = false
        break
      end
      local op = (hl.op == '+' or hl.op == '-') and hl.op or ' '
      planned[idx] = { role = op, hunk = hunk, line = new_line }
      if new_line and op ~= '-' then
        new_line = new_line + 1
      end
    end
    if not fits then
      break
    end
  end
  if fits and idx == #lines then
    for i, role in pairs(planned) do
      out[i] = role
    end
    return out
  end
  for i = 2, #lines do
    local l = lines[i]
    local c = l:sub(1, 1)
    out[i] = { role = (l:sub(1, 3) == '@@ ' and 'header') or ((c == '+' or c == '-') and c) or 'text' }
  end
  return out
end

---@type table<string, string>
local role_groups = {
  title = 'ToolhostCardTitle',
  file = 'ToolhostCardFile',
  header = 'ToolhostHunkHeader',
  ['+'] = 'ToolhostDiffAdd',
  ['-'] = 'ToolhostDiffDelete',
  command = 'ToolhostTerminalCommand',
  meta = 'ToolhostTerminalInfo',
  more = 'ToolhostTerminalMore',
  running = 'ToolhostTerminalInfo',
  ['exit-ok'] = 'ToolhostExitOk',
  ['exit-error'] = 'ToolhostExitError',
  ['exit-warn'] = 'ToolhostExitWarn',
  ['todo-done'] = 'ToolhostTodoDone',
  ['todo-active'] = 'ToolhostTodoActive',
  counts = 'ToolhostTodoCounts',
  question = 'ToolhostQuestion',
  answer = 'ToolhostAnswer',
  option = 'ToolhostCardInfo',
  waiting = 'ToolhostCardInfo',
  approved = 'ToolhostExitOk',
  error = 'ToolhostExitError',
  ['md-heading'] = 'ToolhostPlanHeading',
  ['md-code'] = 'ToolhostPlanCode',
  ['md-quote'] = 'ToolhostPlanQuote',
  section = 'ToolhostCardInfo',
}

--- The highlighted spans of a card's title line: an MCP card's server badge and the caller (the
--- agent) at its end.
---@param card toolhost.Card
---@param title string the card's first line as drawn
---@return {[1]: integer, [2]: integer, [3]: string}[] 0-based start and end columns, group
local function title_spans(card, title)
  local spans = {}
  local mcp = require('toolhost.mcp')
  if mcp.is_card(card) then
    local _, badge_end = mcp.header(card)
    table.insert(spans, { 0, badge_end, 'ToolhostMcpServer' })
  end
  local _, name_col = M.caller_span(card, title)
  if name_col then
    table.insert(spans, { name_col, #title, 'ToolhostCaller' })
  end
  return spans
end

--- What a line belongs to, for keeping the cursor there: its card, or the pinned todo list (the
--- same card drawn twice).
---@param li toolhost.LineInfo
---@return string
local function row_key(li)
  return li.pinned and ('\0pinned') or li.card.callId
end

--- Fills a cards buffer and its highlights.
---@param buf integer
---@param cards toolhost.Card[]
---@param client_id? integer the client whose live output running terminal cards show
function M.render(buf, cards, client_id)
  local lines, info = M.lines(cards, client_id)
  -- Live output redraws the buffer several times a second and new cards arrive at the top: keep
  -- every window's cursor on the card line it was on (a full replacement would move it, and the
  -- same row would then show another card, which <C-c> would stop or `u` revert).
  local old_info = line_info[buf] or {}
  local cursors = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local pos = vim.api.nvim_win_get_cursor(win)
    local li = old_info[pos[1]]
    cursors[win] = { pos = pos, key = li and row_key(li) or nil, index = li and li.index or nil }
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local first_rows = {}
  for row, li in ipairs(info) do
    if li and not first_rows[row_key(li)] then
      first_rows[row_key(li)] = row
    end
  end
  for win, cur in pairs(cursors) do
    local row = cur.pos[1]
    local first = cur.key and first_rows[cur.key]
    if first then
      -- The same line of that card, or its last line when the card got shorter.
      row = first + cur.index - 1
      while row > first and not (info[row] and row_key(info[row]) == cur.key) do
        row = row - 1
      end
    end
    pcall(vim.api.nvim_win_set_cursor, win, { math.max(math.min(row, #lines), 1), cur.pos[2] })
  end
  line_info[buf] = info
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local layouts = {}
  for row, li in ipairs(info) do
    local group
    if li then
      local role = li.role
      if not role then
        layouts[li.card] = layouts[li.card] or M.layout(li.card)
        role = layouts[li.card][li.index]
      end
      group = role and role_groups[role.role] or nil
    end
    if group then
      vim.api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { line_hl_group = group, priority = 100 })
    end
    if li and li.index == 1 then
      for _, span in ipairs(title_spans(li.card, lines[row])) do
        vim.api.nvim_buf_set_extmark(buf, ns, row - 1, span[1], {
          end_col = span[2],
          hl_group = span[3],
          priority = 110,
        })
      end
    end
  end
end

--- The file of a diff card's hunk: its `path` when absolute, else the card's location that
--- ends with it. The server makes each location `<root>/<path>`, so of several matches the
--- shortest is that one (a longer one is a file of the same name deeper down: `sub/b.txt` when
--- the hunk is of `b.txt`). Nil when no location matches.
---@param card toolhost.Card
---@param hunk toolhost.Hunk
---@return string? path absolute
local function hunk_file(card, hunk)
  local p = type(hunk.path) == 'string' and hunk.path:gsub('^%./', '') or ''
  if p == '' then
    return nil
  end
  local best
  for _, loc in ipairs(card.locations or {}) do
    local lp = type(loc) == 'table' and loc.path or nil
    if type(lp) == 'string' and (lp == p or vim.endswith(lp, '/' .. p)) and (not best or #lp < #best) then
      best = lp
    end
  end
  return best
end

--- The file and line a cards-buffer line points at.
---@param li toolhost.LineInfo
---@return string? path
---@return integer? line
function M.target(li)
  local card = li.card
  local locs = card.locations or {}
  local first = locs[1]
  if li.index > 1 and card.kind == 'diff' and first then
    -- A diff line: its line in its hunk's file (a card may change several files); a preview
    -- hunk has no line: the card's location.
    local role = M.layout(card)[li.index]
    if role and role.line then
      return role.hunk and hunk_file(card, role.hunk) or first.path, math.max(role.line, 1)
    end
  elseif li.index > 1 and card.kind == 'search' and locs[li.index - 1] then
    local loc = locs[li.index - 1]
    return loc.path, loc.line
  elseif li.index > 1 and card.kind == 'read' and first then
    local text = M.split(card.rendered)[li.index] or ''
    local n = text:match('^(%d+): ')
    if n then
      return first.path, tonumber(n)
    end
  end
  if first then
    return first.path, first.line
  end
  return nil
end

--- Whether `url` is one a cards buffer may hand to |vim.ui.open()|: an absolute `http://` or
--- `https://` URL with a host and no whitespace or control characters (never `javascript:`,
--- `file:` or a path).
---@param url any
---@return boolean
function M.is_web_url(url)
  if type(url) ~= 'string' or url:find('[%s%c]') then
    return false
  end
  local scheme, rest = url:match('^(%a[%w+.-]*)://(.*)$')
  scheme = scheme and scheme:lower()
  return (scheme == 'http' or scheme == 'https') and rest:match('^[^/?#]') ~= nil
end

--- The web page a cards-buffer line of a `fetch` card (`web_search`, `web_fetch`) points at: on a
--- search card's source line (`- <title or url> <<url>>`) that source's URL, on a fetch card's
--- header line (`<url> · HTTP 200 · …`) the page it ended at (`finalUrl`, else `url`). Only
--- http(s) URLs (|M.is_web_url|); nil on any other line or card.
---@param li toolhost.LineInfo
---@return string? url
function M.url_at(li)
  local card = li and li.card
  if not card or card.kind ~= 'fetch' or li.index < 2 or type(card.data) ~= 'table' then
    return nil
  end
  local data = card.data
  local line = M.split(card.rendered or '')[li.index]
  if not line then
    return nil
  end
  if type(data.sources) == 'table' then
    -- The source whose line this is: `rendered` writes `- ` .. (title or url) .. ` <` .. url .. `>`.
    for _, source in ipairs(data.sources) do
      local url = type(source) == 'table' and source.url or nil
      if type(url) == 'string' and vim.startswith(line, '- ') and vim.endswith(line, ' <' .. url .. '>') then
        return M.is_web_url(url) and url or nil
      end
    end
    return nil
  end
  if li.index == 2 and card.status == 'completed' and type(data.url) == 'string' and vim.startswith(line, data.url) then
    local final = type(data.finalUrl) == 'string' and data.finalUrl ~= '' and data.finalUrl or data.url
    return M.is_web_url(final) and final or nil
  end
  return nil
end

--- Creates (or finds) a `nofile` scratch buffer named `name`.
---@param name string
---@param filetype string
---@return integer buf
local function named_scratch(name, filetype)
  local buf
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name then
      buf = b
    end
  end
  if not buf then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  return buf
end

--- Fills the full-output buffer of a call (|M.open_output|) with its output now: the live text
--- while it runs, `terminal.output` (or the failed call's text) once it ended; an MCP card's
--- text and its whole structured content. A window whose cursor is on the last line follows the
--- end, like `tail -f`.
---@param call_id string
function M.refresh_output(call_id)
  local ob = output_bufs[call_id]
  if not ob then
    return
  end
  if not vim.api.nvim_buf_is_valid(ob.buf) then
    output_bufs[call_id] = nil
    return
  end
  local card = ob.client_id and stores[ob.client_id] and stores[ob.client_id].by_id[call_id] or ob.card
  ob.card = card
  local live = card.status == 'pending' and M.live_output(ob.client_id, call_id) or nil
  local lines
  local mcp = require('toolhost.mcp')
  if mcp.is_card(card) then
    lines = mcp.full_lines(card, live)
    live = nil -- its lines say what was dropped
  elseif M.is_terminal(card) then
    lines = M.output_lines(live and live.text or card.terminal.output or '')
  else
    lines = M.output_lines(card.text or '')
  end
  if live and live.dropped > 0 then
    table.insert(lines, 1, ('[… %d earlier lines not kept while the command runs]'):format(live.dropped))
  end
  local following = {}
  local old_last = vim.api.nvim_buf_line_count(ob.buf)
  for _, win in ipairs(vim.fn.win_findbuf(ob.buf)) do
    following[win] = vim.api.nvim_win_get_cursor(win)[1] >= old_last
  end
  vim.bo[ob.buf].modifiable = true
  vim.api.nvim_buf_set_lines(ob.buf, 0, -1, false, lines)
  vim.bo[ob.buf].modifiable = false
  vim.bo[ob.buf].modified = false
  for win, follow in pairs(following) do
    if follow then
      pcall(vim.api.nvim_win_set_cursor, win, { math.max(#lines, 1), 0 })
    end
  end
end

--- Opens the full output of a terminal or MCP card in a window split off the previous window (or
--- above the cards window): the first spill file (`terminal.spillPaths[1]`, the whole stream the
--- server kept on disk) when there is one, else `toolhost://output/<callId>` (filetype
--- `toolhost-output`, ANSI stripped), which keeps following a running call's live output.
---@param card toolhost.Card
---@param client_id? integer the client whose live output a running call shows
---@return integer buf
function M.open_output(card, client_id)
  local t = type(card.terminal) == 'table' and card.terminal or {}
  local spill = type(t.spillPaths) == 'table' and t.spillPaths[1] or nil
  local cards_win = vim.api.nvim_get_current_win()
  vim.cmd('wincmd p')
  vim.cmd(vim.api.nvim_get_current_win() == cards_win and 'aboveleft split' or 'split')
  if type(spill) == 'string' and vim.uv.fs_stat(spill) then
    vim.cmd.edit(vim.fn.fnameescape(spill))
    vim.bo.readonly = true -- the session's copy of the output, not a file to edit
    return vim.api.nvim_get_current_buf()
  end
  local buf = named_scratch('toolhost://output/' .. card.callId, 'toolhost-output')
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, desc = 'toolhost: close the output window' })
  output_bufs[card.callId] = { buf = buf, client_id = client_id, card = card }
  vim.api.nvim_win_set_buf(0, buf)
  M.refresh_output(card.callId)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
  return buf
end

--- <CR> in a cards buffer: on a web card's source or page line, open that URL with
--- |vim.ui.open()| (|M.url_at|); else open the card's location in the previous window; on a
--- terminal or MCP card, its full output (|M.open_output|).
---@param buf? integer
function M.jump(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local li = (line_info[buf] or {})[row]
  if not li then
    return
  end
  local url = M.url_at(li)
  if url then
    local ok, cmd, err = pcall(vim.ui.open, url)
    if not ok or (cmd == nil and err) then
      vim.notify(('toolhost: cannot open %s: %s'):format(url, tostring(ok and err or cmd)), vim.log.levels.WARN)
    end
    return
  end
  if M.is_terminal(li.card) or require('toolhost.mcp').is_card(li.card) then
    M.open_output(li.card, vim.b[buf].toolhost_client)
    return
  end
  local path, line = M.target(li)
  if not path then
    vim.notify('toolhost: this card has no location', vim.log.levels.INFO)
    return
  end
  local cards_win = vim.api.nvim_get_current_win()
  vim.cmd('wincmd p')
  if vim.api.nvim_get_current_win() == cards_win then
    vim.cmd('aboveleft split')
  end
  vim.cmd.edit(vim.fn.fnameescape(path))
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { math.min(math.max(line or 1, 1), last), 0 })
end

--- The call that <C-c> in a cards buffer and |:ToolhostStop| stop: the pending card under the
--- cursor of cards buffer `buf`, else the newest pending card of `client_id`, else of any client.
---@param buf? integer
---@param row? integer 1-based cursor line in `buf`
---@param client_id? integer
---@return integer? client_id
---@return string? call_id
function M.call_to_stop(buf, row, client_id)
  local li = buf and row and (line_info[buf] or {})[row] or nil
  if li and li.card.status == 'pending' and (vim.b[buf].toolhost_client or client_id) then
    return vim.b[buf].toolhost_client or client_id, li.card.callId
  end
  local ids = client_id and { client_id } or {}
  for id in pairs(stores) do
    if id ~= client_id then
      table.insert(ids, id)
    end
  end
  for _, id in ipairs(ids) do
    local s = stores[id] or { order = {}, by_id = {} }
    for i = #s.order, 1, -1 do
      local card = s.by_id[s.order[i]]
      if card.status == 'pending' then
        return id, card.callId
      end
    end
  end
  return nil
end

--- Why a card cannot be reverted, or nil when it can. Only a completed card of kind `diff` can
--- (the cards the server offers Revert on): decided by the kind, never by the tool's name, so a
--- tool registered at run time and a revert's own card count too.
---@param card toolhost.Card
---@return string? reason
function M.revert_refusal(card)
  if card.status == 'pending' then
    return 'it is still running'
  elseif card.status == 'failed' then
    return 'it failed'
  elseif card.kind ~= 'diff' then
    return ('it is a %s card, not a file change'):format(tostring(card.kind))
  elseif card.status ~= 'completed' then
    return ('its status is %s'):format(tostring(card.status))
  end
  return nil
end

--- The card of a call in a client's session, or nil.
---@param client_id integer
---@param call_id string
---@return toolhost.Card?
function M.get(client_id, call_id)
  local s = stores[client_id]
  return s and s.by_id[call_id] or nil
end

--- The cards of a client that can be reverted (|M.revert_refusal|), newest first.
---@param client_id integer
---@return toolhost.Card[]
function M.revertible(client_id)
  return vim.tbl_filter(function(card)
    return M.revert_refusal(card) == nil
  end, M.list(client_id))
end

--- Whether `buf` is a cards buffer (live or replay).
---@param buf integer
---@return boolean
function M.is_cards_buffer(buf)
  return line_info[buf] ~= nil and vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].filetype == 'toolhost-cards'
end

--- The card shown on a line of a cards buffer, or nil (the blank line between cards).
---@param buf integer
---@param row integer 1-based
---@return toolhost.Card?
function M.card_at(buf, row)
  local li = (line_info[buf] or {})[row]
  return li and li.card or nil
end

--- The first line (1-based) of a call's card in a cards buffer, or nil (not shown there).
---@param buf integer
---@param call_id string
---@return integer?
function M.row_of(buf, call_id)
  for row, li in ipairs(line_info[buf] or {}) do
    if li and not li.pinned and li.card.callId == call_id then
      return row
    end
  end
  return nil
end

--- Creates (or finds) a scratch cards buffer named `name`.
---@param name string
---@return integer buf
local function scratch(name)
  local buf = named_scratch(name, 'toolhost-cards')
  vim.keymap.set('n', '<CR>', function()
    M.jump(buf)
  end, { buffer = buf, desc = 'toolhost: open what the line points at (its location, full output or web page)' })
  vim.keymap.set('n', '<C-c>', function()
    require('toolhost').stop_call()
  end, { buffer = buf, desc = 'toolhost: stop the running call under the cursor (or the newest one)' })
  -- Buffer-local like <CR> and <C-c>: the plugin maps no global key unless asked (`keymaps`).
  vim.keymap.set('n', 'u', function()
    require('toolhost').revert()
  end, { buffer = buf, desc = 'toolhost: revert the file changes of the card under the cursor' })
  vim.keymap.set('n', 'U', function()
    require('toolhost').revert_since()
  end, { buffer = buf, desc = 'toolhost: revert every file change since the card under the cursor (asks first)' })
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, desc = 'toolhost: close the cards window' })
  return buf
end

---@param buf integer
local function show(buf)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
  end
  vim.wo.wrap = false
  vim.wo.number = false
  vim.wo.relativenumber = false
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
end

--- Opens the live cards buffer of a client (`toolhost://cards/<session>`).
---@param client vim.lsp.Client
---@return integer buf
function M.open_live(client)
  local session = require('toolhost.client').state(client.id).session_id or tostring(client.id)
  local buf = scratch('toolhost://cards/' .. session)
  live_bufs[client.id] = buf
  vim.b[buf].toolhost_client = client.id
  M.render(buf, M.list(client.id), client.id)
  show(buf)
  return buf
end

--- Opens a replay buffer (`toolhost://replay/<session>`) with cards from the log (oldest first
--- as the server sends them; shown newest first like the live buffer).
---@param session_id string
---@param cards toolhost.Card[]
---@param client_id? integer the client that replayed it
---@return integer buf
function M.open_replay(session_id, cards, client_id)
  local buf = scratch('toolhost://replay/' .. session_id)
  vim.b[buf].toolhost_client = client_id
  -- Only calls of the session the server is running can be reverted: `u` in the replay of
  -- another session is refused by name (|toolhost-revert|).
  vim.b[buf].toolhost_session = session_id
  local newest_first = {}
  for i = #cards, 1, -1 do
    table.insert(newest_first, cards[i])
  end
  M.render(buf, newest_first)
  show(buf)
  return buf
end

--- Echoes a card with the same highlights as the cards buffer.
---@param card toolhost.Card
function M.echo(card)
  local lines, layout = M.view(card, nil, true)
  if not (lines and layout) then
    lines, layout = M.split(card.rendered or ''), M.layout(card)
  end
  local chunks = {}
  for i, l in ipairs(lines) do
    local group = layout[i] and role_groups[layout[i].role] or nil
    local nl = i < #lines and '\n' or ''
    local col = 0
    for _, span in ipairs(i == 1 and title_spans(card, l) or {}) do
      if span[1] > col then
        table.insert(chunks, { l:sub(col + 1, span[1]), group })
      end
      table.insert(chunks, { l:sub(span[1] + 1, span[2]), span[3] })
      col = span[2]
    end
    local rest = l:sub(col + 1)
    if rest == '' and col > 0 then
      chunks[#chunks][1] = chunks[#chunks][1] .. nl
    else
      table.insert(chunks, { rest .. nl, group })
    end
  end
  vim.api.nvim_echo(chunks, true, {})
end

M.namespace = ns
M.define_highlights()

return M
