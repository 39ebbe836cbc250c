--- toolhost.cards: Cards, the one view model of every call: what the rest of the plugin calls.
--- The work is done by the modules under `toolhost.cards.*`: the store of each session's cards
--- (|toolhost.cards.store|) and the live output of running calls (`live`), the cards buffers
--- (`buffer`), one view per card kind chosen by the card's `kind` (`views`: `diff`, `read`,
--- `search`, `terminal`, `todo`, `question`, `plan`, `fetch`, `mcp`; any other kind is drawn by
--- `generic`), a program's nested calls drawn under its card (`tree`; a workflow's children by
--- phase, with their labels and usage: `groups`), the full-output buffers
--- (`output`) and what the keys of a cards buffer do (`actions`). This module ties them together
--- when a card or live output arrives.

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
---@field parentCallId? string the call this one ran under (a `run_code` program's, for its nested
---  calls `<parent>:code:<n>`; a subagent's): drawn under that card (|toolhost.cards.tree|)
---@field group? {phase?: string, label?: string} where the call's caller put it among its
---  parent's children (a workflow child's phase and label, a ralph round's `round <n>`): grouped
---  under a phase heading, the label at the end of its title line (|toolhost.cards.groups|)
---@field usage? {tokens: integer, cost?: number} what the call used (a child agent's, or a
---  workflow's or ralph's sum), at the end of its title line
---@field locations toolhost.CardLocation[]
---@field hunks? toolhost.Hunk[]
---@field stats? {additions: integer, deletions: integer}
---@field read? table read cards: {path, offset, lines, totalLines, lang?}
---@field search? table search cards: {shape, paths?, files?, locations?, truncated, total}
---@field terminal? toolhost.TerminalView terminal cards (`bash`)
---@field data? any what todo, question, plan and mcp cards are drawn from (their views, the
---  `{server, tool, structuredContent?}` of an MCP tool's card), the recorded value of a
---  structured card, or the meta of other kinds

---@class toolhost.LineRole
---@field role string lines of `rendered`: 'title', 'file', 'header', '+', '-', ' ', 'text'; of a terminal view
---  (|toolhost.cards.terminal|) also 'command', 'meta', 'more', 'output', 'running', 'exit-ok', 'exit-error', 'exit-warn';
---  of a todo, question or plan view also 'counts', 'todo-done', 'todo-active', 'todo-pending', 'question',
---  'answer', 'option', 'waiting', 'approved', 'error', 'md-heading', 'md-code', 'md-quote'; of an MCP
---  card's view also 'section' (`structured:`) and 'json'; the count of a program's nested calls
---  'children'
---@field hunk? toolhost.Hunk the hunk of a diff line (of a `file` line: that file's first hunk)
---@field line? integer for diff lines: the line in the new file (nil in a preview hunk)

---@class toolhost.Store
---@field order string[] callIds, oldest first
---@field by_id table<string, toolhost.Card>

---@class toolhost.LineInfo
---@field card toolhost.Card
---@field index integer 1-based line index inside the card's `rendered` (a card its view draws:
---  inside the lines of that view)
---@field role? toolhost.LineRole the line's role when it is not read off `rendered` (terminal
---  cards, cards drawn from their data, the pinned todo list)
---@field pinned? boolean a line of the todo list pinned at the top (|toolhost.cards.todo|)
---@field depth? integer how deep the card is nested: 0 a top-level card, 1 a call made under it, …
---@field indent? integer the bytes of tree marks in front of the line (a nested call's lines)
---@field suffix? integer the bytes of label and usage at the end of a title line (|toolhost.cards.groups|)

---@class toolhost.LiveOutput
---@field text string the `toolhost/callOutput` text received so far (its tail, see LIVE_CAP)
---@field dropped integer lines cut off the front of `text` to keep it under LIVE_CAP

---@field dropped integer lines cut off the front of `text` to keep it under its cap

local actions = require('toolhost.cards.actions')
local buffer = require('toolhost.cards.buffer')
local highlights = require('toolhost.cards.highlights')
local live = require('toolhost.cards.live')
local output = require('toolhost.cards.output')
local store = require('toolhost.cards.store')
local terminal = require('toolhost.cards.terminal')
local text = require('toolhost.cards.text')
local todo = require('toolhost.cards.todo')
local views = require('toolhost.cards.views')

local M = {}

--- Records a card (`toolhost/card` or a `toolhost/callTool` response): stores it (a known callId
--- is replaced in place), drops its live output once it ended, reloads the files a completed
--- diff card changed (the first time it is seen completed) and redraws what shows it.
---@param client_id integer
---@param card toolhost.Card
function M.on_card(client_id, card)
  if type(card) ~= 'table' or type(card.callId) ~= 'string' then
    return
  end
  local old = store.record(client_id, card)
  if card.status ~= 'pending' then
    -- The final card's output replaces the live text.
    live.drop(client_id, card.callId)
  end
  if store.changes_files(card) and not (old and old.status == 'completed') then
    -- The root resolves the hunks' relative paths: a card may change several files (a revert
    -- since a call), each of which reloads.
    local client = vim.lsp.get_client_by_id(client_id)
    require('toolhost.inline').on_file_card(card, client and client.root_dir or nil)
  end
  buffer.redraw(client_id)
  output.refresh_output(card.callId)
end

--- `toolhost/callOutput {callId, text}`: text a running call appended (bash's stdout and stderr),
--- shown in its pending card until the final card replaces it.
---@param client_id integer
---@param params {callId: string, text: string}
function M.on_output(client_id, params)
  if type(params) ~= 'table' or type(params.callId) ~= 'string' or type(params.text) ~= 'string' then
    return
  end
  local card = store.get(client_id, params.callId)
  if card and card.status ~= 'pending' then
    return -- late text of a finished call: its final card is authoritative
  end
  live.append(client_id, params.callId, params.text)
  buffer.redraw_soon(client_id)
end

--- Adds the earlier cards of a resumed session (oldest first) before every card seen live.
---@param client_id integer
---@param cards toolhost.Card[]
function M.seed(client_id, cards)
  if store.seed(client_id, cards) > 0 then
    buffer.redraw(client_id)
  end
end

--- Drops a client's cards, live output and cards buffer (its server exited).
---@param client_id integer
function M.forget(client_id)
  store.forget(client_id)
  live.forget(client_id)
  buffer.forget(client_id)
end

--- The lines of a card and their roles when its view draws it (a terminal, MCP, todo, question
--- or plan card its view can read), else nil: it is drawn from `rendered` (|M.layout|).
---@param card toolhost.Card
---@param client_id? integer the client whose live output a running call shows
---@param full? boolean a todo card with its whole list (echo), not only its counts
---@param pinned_id? string the call whose todo list is pinned at the top of the buffer
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.view(card, client_id, full, pinned_id)
  return views.draw(card, { live = live.get(client_id, card.callId), full = full, pinned_id = pinned_id })
end

--- The view of a card drawn from its `data` (docs/protocol.md, the `toolhost/card` table): a
--- todo, question or plan card; nil for other kinds and for data of another shape.
---@param card toolhost.Card
---@param full? boolean
---@param pinned_id? string
---@return string[]? lines
---@return toolhost.LineRole[]? roles
function M.data_view(card, full, pinned_id)
  if card.kind ~= 'todo' and card.kind ~= 'question' and card.kind ~= 'plan' then
    return nil
  end
  return views.draw(card, { full = full, pinned_id = pinned_id })
end

--- The file and line a cards-buffer line points at.
---@param li toolhost.LineInfo
---@return string? path
---@return integer? line
function M.target(li)
  return views.target(li.card, li.index)
end

--- The web page a cards-buffer line points at (|toolhost.cards.fetch|), or nil.
---@param li toolhost.LineInfo
---@return string? url
function M.url_at(li)
  return li and li.card and views.url(li.card, li.index) or nil
end

--- Echoes a card with the same highlights as the cards buffer.
---@param card toolhost.Card
function M.echo(card)
  local lines, layout = M.view(card, nil, true)
  if not (lines and layout) then
    lines, layout = text.split(card.rendered or ''), views.layout(card)
  end
  local chunks = {}
  for i, l in ipairs(lines) do
    local group = layout[i] and highlights.ROLE_GROUPS[layout[i].role] or nil
    local nl = i < #lines and '\n' or ''
    local col = 0
    for _, span in ipairs(i == 1 and views.title_spans(card, l) or {}) do
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

-- The names the rest of the plugin (and its tests) use, from the modules that own them.
M.define_highlights = highlights.define_highlights
M.store, M.list, M.get = store.store, store.list, store.get
M.revert_refusal, M.revertible = store.revert_refusal, store.revertible
M.live_output = live.get
M.caller_span, M.split, M.strip_ansi, M.output_lines = text.caller_span, text.split, text.strip_ansi, text.output_lines
M.TAIL_LINES = text.TAIL_LINES
M.is_terminal, M.terminal_view = terminal.is_terminal, terminal.terminal_view
M.todos, M.todo_counts, M.latest_todos, M.pinned_view =
  todo.todos, todo.todo_counts, todo.latest_todos, todo.pinned_view
M.layout = views.layout
M.is_web_url = require('toolhost.cards.fetch').is_web_url
M.lines, M.render = buffer.lines, buffer.render
M.is_cards_buffer, M.card_at, M.row_of = buffer.is_cards_buffer, buffer.card_at, buffer.row_of
M.open_live, M.open_replay = buffer.open_live, buffer.open_replay
M.refresh_output, M.open_output = output.refresh_output, output.open_output
M.jump, M.call_to_stop = actions.jump, actions.call_to_stop
M.namespace = buffer.namespace

return M
