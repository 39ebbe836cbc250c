-- Headless tests of |:Toolhost-best-of|: the arguments it takes, the command line it starts in a
-- terminal split at the server's workspace (the real server attached; the job's start captured),
-- the check command asked first and left out when empty, and a dismissed question starting
-- nothing. The runs themselves are the CLI's (`toolhost agent --best-of`), tested end to end in
-- the Rust suite (tests/tests/integration/worktrees.rs). Registered by tests/run.lua.

local H = require('helpers')

return function(test)
  test('best-of: its arguments, the command line and the check asked first', function()
    local best_of = require('toolhost.best_of')
    H.eq({ best_of.parse('3 fix the flaky test') }, { 3, 'fix the flaky test' }, 'N and the task')
    local bad = { '1 task', '9 task', 'three task', '3', '' }
    for _, args in ipairs(bad) do
      local n, why = best_of.parse(args)
      H.eq(n, nil, args)
      H.check(why:find('usage: :Toolhost best%-of {2%-8} {task}') ~= nil, why)
    end
    H.eq(
      best_of.argv('/bin/toolhost', 2, 'do it', 'cargo test'),
      { '/bin/toolhost', 'agent', '--best-of', '2', 'do it', '--check', 'cargo test' },
      'with a check'
    )
    H.eq(best_of.argv('toolhost', 2, 'do it', '  '), { 'toolhost', 'agent', '--best-of', '2', 'do it' }, 'no check')

    local ws, sessions = H.workspace({ ['a.txt'] = 'alpha\n' })
    H.setup(sessions)
    vim.cmd.edit(ws .. '/a.txt')
    local client = H.client()
    local started, inputs = {}, {}
    local orig = { jobstart = vim.fn.jobstart, input = vim.ui.input }
    vim.fn.jobstart = function(argv, opts)
      table.insert(started, { argv = argv, cwd = opts.cwd, term = opts.term })
      return 42
    end
    local answer
    vim.ui.input = function(opts, on_confirm)
      table.insert(inputs, opts.prompt)
      on_confirm(answer)
    end
    local ok, err = pcall(function()
      answer = 'grep -q x a.txt'
      best_of.run('3 rename bravo', { client = client })
      H.eq(#started, 1, 'one terminal job')
      H.eq(started[1].argv[1], client.config.cmd[1], 'the server program')
      H.eq(vim.list_slice(started[1].argv, 2), { 'agent', '--best-of', '3', 'rename bravo', '--check', 'grep -q x a.txt' })
      H.eq(started[1].cwd, ws, 'at the workspace')
      H.eq(started[1].term, true, 'in a terminal')
      H.eq(inputs[1], 'Check command in each worktree (empty: none): ')
      vim.cmd('close')
      answer = nil
      best_of.run('2 rename bravo', { client = client })
      H.eq(#started, 1, 'a dismissed question starts nothing')
    end)
    vim.fn.jobstart, vim.ui.input = orig.jobstart, orig.input
    assert(ok, err)
  end)
end
