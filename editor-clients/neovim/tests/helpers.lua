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
  for m in pairs(H.mcps) do
    m:close()
  end
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

--- Starts tests/model_server.py (with `args`), points the user configuration's `[agent]` at it
--- (mode auto, a price), runs `fn(record)` — `record` the file of the request bodies, one JSON
--- line each — and then removes the configuration and stops the model server.
---@param args string[]
---@param fn fun(record: string)
function H.with_model(args, fn)
  local record = vim.fn.tempname() .. '-bodies.jsonl'
  local out = ''
  local cmd = vim.list_extend({ 'python3', H.plugin_dir .. '/tests/model_server.py', '--record', record }, args)
  local proc = vim.system(cmd, {
    stdout = function(_, data)
      out = out .. (data or '')
    end,
  })
  local user_config = vim.env.XDG_CONFIG_HOME .. '/toolhost/config.toml'
  local ok, err = pcall(function()
    H.wait(function()
      return out:find('\n', 1, true)
    end, 'the model server’s port')
    local port = assert(tonumber(out:match('^(%d+)')), out)
    H.check(H.read(user_config) == nil, 'no user config to overwrite at ' .. user_config)
    H.write(
      user_config,
      ('[agent]\nbase_url = "http://127.0.0.1:%d/v1"\napi_key_env = ""\nmode = "auto"\n\n'):format(port)
        .. '[agent.price]\ninput = 1.0\noutput = 2.0\n'
    )
    fn(record)
  end)
  os.remove(user_config)
  proc:kill(9)
  proc:wait(2000)
  if not ok then
    error(err, 0)
  end
end

---@param record string
---@return table[] the request bodies the model server received
function H.model_requests(record)
  local out = {}
  for _, line in ipairs(vim.split(H.read(record) or '', '\n', { trimempty = true })) do
    table.insert(out, vim.json.decode(line))
  end
  return out
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

---@type table<toolhost.test.Mcp, true> `toolhost mcp` processes still open (closed by H.reset)
H.mcps = {}

---@class toolhost.test.Mcp
---@field proc vim.SystemObj
---@field out string stdout not yet split into lines
---@field err string[] stderr chunks
---@field messages table[] every message received, in order
---@field next_id integer
local Mcp = {}
Mcp.__index = Mcp

--- Starts `<binary> mcp [args]` the way an agent does (an MCP server over stdio, newline-delimited
--- JSON-RPC) in `cwd`, with the environment the suite gives the plugin's server (its
--- XDG_STATE_HOME, where the server's attach socket lives, and XDG_CONFIG_HOME), so it attaches
--- to the editor's `toolhost serve` of that workspace. Neovim keeps running its event loop while
--- the requests wait (|vim.wait()|), so the cards and `toolhost/lspQuery` requests the calls cause
--- reach the plugin as they would with a real agent.
---@param cwd string
---@param args? string[] extra arguments after `mcp`
---@return toolhost.test.Mcp
function H.mcp(cwd, args)
  local self = setmetatable({ out = '', err = {}, messages = {}, next_id = 0 }, Mcp)
  H.mcps[self] = true
  local cmd = vim.list_extend({ H.bin(), 'mcp' }, args or {})
  self.proc = vim.system(cmd, {
    cwd = cwd,
    env = {
      XDG_STATE_HOME = vim.env.XDG_STATE_HOME,
      XDG_CONFIG_HOME = vim.env.XDG_CONFIG_HOME,
      HOME = vim.env.HOME,
    },
    stdin = true,
    stdout = function(_, data)
      if data then
        self.out = self.out .. data -- a luv callback: parsed on the main loop (Mcp:poll)
      end
    end,
    stderr = function(_, data)
      if data then
        table.insert(self.err, data)
      end
    end,
  })
  return self
end

--- Moves the complete lines received so far into `messages`.
function Mcp:poll()
  while true do
    local nl = self.out:find('\n', 1, true)
    if not nl then
      return
    end
    local line = self.out:sub(1, nl - 1)
    self.out = self.out:sub(nl + 1)
    if line ~= '' then
      table.insert(self.messages, vim.json.decode(line, { luanil = { object = true, array = true } }))
    end
  end
end

---@param msg table
function Mcp:send(msg)
  msg.jsonrpc = '2.0'
  self.proc:write(vim.json.encode(msg) .. '\n')
end

--- Sends a notification.
---@param method string
---@param params? table
function Mcp:notify(method, params)
  self:send({ method = method, params = params })
end

--- Sends a request and waits for its response (the whole message: `result` or `error`).
---@param method string
---@param params table
---@param ms? integer
---@return table
function Mcp:request(method, params, ms)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self:send({ id = id, method = method, params = params })
  local response
  local ok = vim.wait(ms or 30000, function()
    self:poll()
    for _, m in ipairs(self.messages) do
      if m.id == id and (m.result ~= nil or m.error ~= nil) then
        response = m
        return true
      end
    end
    return false
  end, 5)
  if not ok then
    error(('toolhost mcp: no answer to %s (stderr: %s)'):format(method, table.concat(self.err)), 2)
  end
  return response
end

--- `initialize` as the agent `name`, then `notifications/initialized`; returns the result.
---@param name string the MCP client's `clientInfo.name`
---@return table
function Mcp:initialize(name)
  local res = self:request('initialize', {
    protocolVersion = '2025-11-25',
    capabilities = vim.empty_dict(),
    clientInfo = { name = name, version = '1.0.0' },
  })
  assert(res.result, 'initialize failed: ' .. vim.inspect(res.error))
  self:notify('notifications/initialized')
  return res.result
end

--- `tools/call`; returns the call's result `{content, isError, _meta}`.
---@param tool string
---@param arguments table
---@return table
function Mcp:call(tool, arguments)
  local res = self:request('tools/call', { name = tool, arguments = arguments })
  assert(res.result, 'tools/call ' .. tool .. ': ' .. vim.inspect(res.error))
  return res.result
end

--- The text of a `tools/call` result's content blocks.
---@param result table
---@return string
function H.mcp_text(result)
  local parts = {}
  for _, block in ipairs(result.content or {}) do
    if block.type == 'text' then
      table.insert(parts, block.text)
    end
  end
  return table.concat(parts, '\n')
end

--- Closes stdin (the agent went away) and waits for the process to exit (killed after 5 s).
---@return vim.SystemCompleted
function Mcp:close()
  H.mcps[self] = nil
  if not self.proc:is_closing() then
    pcall(self.proc.write, self.proc, nil)
  end
  return self.proc:wait(5000)
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
