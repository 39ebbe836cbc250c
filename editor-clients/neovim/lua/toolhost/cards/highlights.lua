--- toolhost.cards.highlights: The highlight groups of cards, inline cards, review buffers and the
--- chat (default links, so colorschemes can override them), and the group of each line role.

local M = {}

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
    ToolhostCardPhase = 'Special',
    ToolhostCardUsage = 'Comment',
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
    ToolhostChatAgent = 'Title',
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

--- The highlight group of each line role (|toolhost.LineRole|).
---@type table<string, string>
M.ROLE_GROUPS = {
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
  children = 'ToolhostCardInfo',
  phase = 'ToolhostCardPhase',
}

M.define_highlights()

return M
