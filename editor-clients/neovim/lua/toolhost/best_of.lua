--- toolhost.best_of: |:Toolhost-best-of| — one task run by N of toolhost's own agents at once, each
--- in a worktree session of its own (`toolhost agent --best-of N`), in a terminal split: the runs,
--- then the table of what each changed and whether its check passed, and the question which one to
--- apply (hunk by hunk, on that terminal). The runs' worktree sessions are ordinary worktree
--- sessions afterwards: |:Toolhost-worktrees| shows their cards, |:Toolhost-worktree-apply| and
--- |:Toolhost-worktree-discard| take them.

local M = {}

--- The most runs the command line takes.
M.MAX_RUNS = 8

--- Parses `N <task>`: the number of runs and the task; nil and why when it is not that.
---@param args string
---@return integer? runs
---@return string? task_or_problem
function M.parse(args)
  local n, task = vim.trim(args):match('^(%d+)%s+(.+)$')
  n = tonumber(n)
  if not n or n < 2 or n > M.MAX_RUNS then
    return nil, ('usage: :Toolhost best-of {2-%d} {task}'):format(M.MAX_RUNS)
  end
  return n, task
end

--- The command line of the runs: the server's program with `agent --best-of`.
---@param program string the toolhost executable the plugin starts
---@param runs integer
---@param task string
---@param check? string a command run in each worktree afterwards (empty or nil: none)
---@return string[]
function M.argv(program, runs, task, check)
  local argv = { program, 'agent', '--best-of', tostring(runs), task }
  if check and vim.trim(check) ~= '' then
    vim.list_extend(argv, { '--check', check })
  end
  return argv
end

--- Starts the runs in a terminal split at the server's workspace, after asking for the check
--- command (empty: none).
---@param args string `N <task>`
---@param opts? {client?: vim.lsp.Client}
function M.run(args, opts)
  opts = opts or {}
  local runs, task = M.parse(args)
  if not runs then
    vim.notify('toolhost: ' .. task, vim.log.levels.ERROR)
    return
  end
  local client = require('toolhost.client').current_or_warn(opts.client)
  if not client then
    return
  end
  local cmd = client.config.cmd
  local program = type(cmd) == 'table' and cmd[1] or 'toolhost'
  local root = client.root_dir or client.config.root_dir or vim.fn.getcwd()
  vim.ui.input({ prompt = 'Check command in each worktree (empty: none): ' }, function(check)
    if check == nil then
      return -- dismissed
    end
    vim.cmd('botright new')
    local argv = M.argv(program, runs, task, check)
    local job = vim.fn.jobstart(argv, { term = true, cwd = root })
    if job <= 0 then
      vim.notify('toolhost: cannot start ' .. program, vim.log.levels.ERROR)
      return
    end
    vim.api.nvim_buf_set_name(0, ('toolhost best of %d'):format(runs))
    vim.cmd('startinsert')
  end)
end

return M
