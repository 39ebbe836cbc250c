-- Shared helpers of the headless test suites (run.lua, conformance.lua).
local H = {}

H.plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')))

--- Puts the plugin on 'runtimepath' and sources plugin/toolhost.lua as Neovim's startup would.
function H.load_plugin()
  vim.opt.runtimepath:prepend(H.plugin_dir)
  vim.cmd.runtime('plugin/toolhost.lua')
end

--- The toolhost binary under test (absolute).
---@return string
function H.bin()
  local bin = vim.env.TOOLHOST_BIN
  assert(bin and bin ~= '', 'set TOOLHOST_BIN to the toolhost binary')
  local real = vim.uv.fs_realpath(bin)
  assert(real and vim.fn.executable(real) == 1, 'TOOLHOST_BIN is not executable: ' .. bin)
  return real
end

---@param cond boolean
---@param msg string
function H.check(cond, msg)
  if not cond then
    error(msg, 2)
  end
end

---@param got any
---@param want any
---@param what string
function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(('%s:\n  want %s\n  got  %s'):format(what, vim.inspect(want), vim.inspect(got)), 2)
  end
end

---@param pred fun(): any
---@param what string
---@param ms? integer
function H.wait(pred, what, ms)
  local ok = vim.wait(ms or 10000, function()
    return pred() and true or false
  end, 5)
  if not ok then
    error('timed out waiting for ' .. what, 2)
  end
end

--- Writes a file (creating parent directories), bytes verbatim.
---@param path string
---@param content string
function H.write(path, content)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(content)
  f:close()
end

---@param path string
---@return string?
function H.read(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- A fresh scratch directory with `workspace/` (holding `.git/` and `files`) and `sessions/`.
---@param files? table<string, string>
---@return string workspace
---@return string sessions
function H.workspace(files)
  local scratch = vim.fn.tempname()
  vim.fn.mkdir(scratch .. '/workspace/.git', 'p')
  vim.fn.mkdir(scratch .. '/sessions', 'p')
  local ws = assert(vim.uv.fs_realpath(scratch .. '/workspace'))
  for rel, content in pairs(files or {}) do
    H.write(ws .. '/' .. rel, content)
  end
  return ws, assert(vim.uv.fs_realpath(scratch .. '/sessions'))
end

--- Configures the plugin to start the binary under test with a private session directory.
---@param sessions string
---@param extra? table
function H.setup(sessions, extra)
  require('toolhost.config').reset()
  require('toolhost').setup(vim.tbl_extend('force', {
    cmd = { H.bin(), 'serve', '--session-dir', sessions },
    echo_cards = false,
  }, extra or {}))
end

--- Stops every LSP client and wipes every buffer (between tests).
function H.reset()
  -- Configs a test enabled (vim.lsp.enable) stay enabled otherwise.
  for _, name in ipairs({ 'toolhost', 'clangd' }) do
    if vim.lsp.is_enabled(name) then
      vim.lsp.enable(name, false)
    end
  end
  for _, c in ipairs(vim.lsp.get_clients()) do
    c:stop()
  end
  if not vim.wait(3000, function()
    return #vim.lsp.get_clients() == 0
  end, 10) then
    for _, c in ipairs(vim.lsp.get_clients()) do
      c:stop(true)
    end
    vim.wait(2000, function()
      return #vim.lsp.get_clients() == 0
    end, 10)
  end
  vim.cmd('silent! %bwipeout!')
  vim.cmd('silent! only')
  require('toolhost.inline').clear()
  require('toolhost.config').reset()
end

--- The running toolhost client attached to `buf` (waits until it is initialized).
---@param buf? integer
---@return vim.lsp.Client
function H.client(buf)
  local c
  H.wait(function()
    c = vim.lsp.get_clients({ name = 'toolhost', bufnr = buf or 0 })[1]
    return c and c.initialized
  end, 'the toolhost client')
  return c
end

--- Calls a tool through the plugin API and waits for the callTool response.
---@param tool string
---@param args table
---@param client? vim.lsp.Client
---@return table response {sessionId, callId, result, card}
function H.call(tool, args, client)
  local done, err, res = false, nil, nil
  require('toolhost').call(tool, args, { client = client }, function(e, r)
    done, err, res = true, e, r
  end)
  H.wait(function()
    return done
  end, 'toolhost/callTool ' .. tool, 30000)
  assert(not err, err)
  return res
end

--- Runs `:Toolhost call {tool} {json}` like a user and waits for the call's completed card.
---@param tool string
---@param json string
---@return toolhost.Card
function H.command_call(tool, json)
  local c = require('toolhost.client').current(0, true)
  assert(c, 'no toolhost client')
  local before = #require('toolhost.cards').store(c.id).order
  vim.cmd(('Toolhost call %s %s'):format(tool, json))
  local card
  H.wait(function()
    local s = require('toolhost.cards').store(c.id)
    if #s.order > before then
      card = s.by_id[s.order[#s.order]]
      return card.status ~= 'pending'
    end
  end, ':Toolhost call ' .. tool, 30000)
  return card
end

--- Lines of a buffer joined by "\n" (what `rendered` must equal).
---@param buf integer
---@return string
function H.buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

--- A runner: `tests` is a list of {name, fn}; prints `N passed, N failed` and returns counts.
--- Ends a test as skipped (only for a feature the server under test does not offer yet).
---@param why string
function H.skip(why)
  error({ skip = why }, 2)
end

---@param title string
---@param tests {[1]: string, [2]: fun()}[]
---@param after_each? fun()
---@return integer passed
---@return integer failed
function H.run(title, tests, after_each)
  local passed, failed, skipped = 0, 0, 0
  local filter = vim.env.TOOLHOST_TEST_FILTER
  for _, t in ipairs(tests) do
    if not filter or t[1]:find(filter, 1, true) then
      local start = vim.uv.hrtime()
      local ok, err = xpcall(t[2], function(e)
        return type(e) == 'table' and e or debug.traceback(e)
      end)
      if after_each then
        pcall(after_each)
      end
      local ms = (vim.uv.hrtime() - start) / 1e6
      if ok then
        passed = passed + 1
        io.stdout:write(('ok   %s (%d ms)\n'):format(t[1], ms))
      elseif type(err) == 'table' and err.skip then
        skipped = skipped + 1
        io.stdout:write(('skip %s: %s\n'):format(t[1], err.skip))
      else
        failed = failed + 1
        io.stdout:write(('FAIL %s (%d ms)\n     %s\n'):format(t[1], ms, tostring(err):gsub('\n', '\n     ')))
      end
    end
  end
  io.stdout:write(
    ('%s: %d passed, %d failed%s\n'):format(
      title,
      passed,
      failed,
      skipped > 0 and (' (%d skipped)'):format(skipped) or ''
    )
  )
  return passed, failed
end

return H
