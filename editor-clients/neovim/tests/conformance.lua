-- Replays every conformance scenario (editor-clients/conformance/NNN-name/) through the plugin's
-- `toolhost` client: one server per scenario (session "conformance"), each tool step a real
-- `toolhost/callTool` request sent by Neovim, comparing result and card as the Rust runner does
-- (editor-clients/harness/src/runner.rs, scenario.rs), then the workspace afterwards.
-- Review mode: a `{"setReview": {…}}` step sends `toolhost/setReview`; a tool step's `review`
-- script answers the `toolhost/review` question of its call through the plugin's own handler
-- (lua/toolhost/review.lua, its `responder` hook), bypassing the review buffer.
-- Questions: a tool step's `askUser` (an AskUserResult, or `{ignore: true}`) answers the
-- `toolhost/askUser` question of its call through lua/toolhost/ask.lua's `responder` hook,
-- bypassing the pickers; `{"setPlanMode": {…}}` and `{"structuredOutput": {…}}` steps send those
-- requests. A step's `args` are sent as written in steps.json (their keys in the file's order).
--
-- Run: TOOLHOST_BIN=… nvim --clean --headless -l tests/conformance.lua [scenario dir]
-- Prints `N passed, N failed`; exits non-zero on any failure.
local here = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
package.path = here .. '/?.lua;' .. package.path
local H = require('helpers')
H.load_plugin()

local uv = vim.uv
local BASE_MTIME = 1700000000
local SESSION_ID = 'conformance'
local dir = _G.arg and _G.arg[1]
  or vim.env.TOOLHOST_CONFORMANCE_DIR
  or vim.fs.joinpath(vim.fs.dirname(H.plugin_dir), 'conformance')
local bin = H.bin()

---@param path string
---@return any? decoded (nil when the file does not exist)
local function read_json(path)
  local text = H.read(path)
  if text == nil then
    return nil
  end
  return vim.json.decode(text)
end

--- `<tmp>/.tmpXXXXXX`, like the Rust runners (same path lengths, so spill previews match).
local function scratch_dir()
  local tmp = (vim.env.TMPDIR and vim.env.TMPDIR ~= '' and vim.env.TMPDIR or '/tmp'):gsub('/+$', '')
  local alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  math.randomseed(uv.hrtime() % 2147483647 + uv.os_getpid())
  while true do
    local name = {}
    for i = 1, 6 do
      local k = math.random(1, #alphabet)
      name[i] = alphabet:sub(k, k)
    end
    local path = tmp .. '/.tmp' .. table.concat(name)
    if uv.fs_mkdir(path, 448) then
      return path
    end
  end
end

--- Relative paths of every regular file under `root`, sorted.
local function list_files(root)
  local out = {}
  for name, kind in vim.fs.dir(root, { depth = math.huge }) do
    if kind == 'file' then
      table.insert(out, name)
    end
  end
  table.sort(out)
  return out
end

local function copy_tree(from, to)
  for name, kind in vim.fs.dir(from, { depth = math.huge }) do
    if kind == 'directory' then
      vim.fn.mkdir(to .. '/' .. name, 'p')
    elseif kind == 'file' then
      vim.fn.mkdir(vim.fs.dirname(to .. '/' .. name), 'p')
      assert(uv.fs_copyfile(from .. '/' .. name, to .. '/' .. name))
    end
  end
end

local function set_mtime(path, secs)
  local st = assert(uv.fs_stat(path))
  assert(uv.fs_utime(path, st.atime.sec, secs))
end

local function rm_rf(path)
  vim.fn.delete(path, 'rf')
end

--- Replaces `${WORKSPACE}` / `${SPILL}` in every string.
local function substitute(v, ws, spill)
  if type(v) == 'string' then
    local s = v:gsub('%${WORKSPACE}', function()
      return ws
    end)
    if spill then
      s = s:gsub('%${SPILL}', function()
        return spill
      end)
    end
    return s
  elseif type(v) == 'table' then
    local out = {}
    for k, x in pairs(v) do
      out[k] = substitute(x, ws, spill)
    end
    return setmetatable(out, getmetatable(v))
  end
  return v
end

--- The spill locator a result's text names (`… stored at: <locator>. …`).
local function spill_locator(result)
  for _, block in ipairs(type(result.content) == 'table' and result.content or {}) do
    local text = type(block) == 'table' and block.text or ''
    if type(text) == 'string' then
      local i = text:find('stored at: ', 1, true)
      if i then
        local rest = text:sub(i + #'stored at: ')
        local e = rest:find('. ', 1, true)
        return e and rest:sub(1, e - 1) or rest
      end
    end
  end
end

local function is_null(v)
  return v == nil or v == vim.NIL
end

local function is_object(t)
  return getmetatable(t) == getmetatable(vim.empty_dict()) or (next(t) ~= nil and not vim.islist(t))
end

--- Exact JSON equality of an expected value (read from steps.json) and a value Neovim's LSP
--- client decoded. One allowance: Neovim decodes a `null` object member as an absent key
--- (`luanil.object`), so an expected `null` member matches a missing one.
local function same(want, got)
  if is_null(want) or is_null(got) then
    return is_null(want) and is_null(got)
  end
  if type(want) ~= type(got) then
    return false
  end
  if type(want) ~= 'table' then
    return want == got
  end
  if next(want) == nil or next(got) == nil then
    return next(want) == nil and next(got) == nil and is_object(want) == is_object(got)
  end
  if vim.islist(want) ~= vim.islist(got) then
    return false
  end
  for k, w in pairs(want) do
    if not same(w, got[k]) then
      return false
    end
  end
  for k in pairs(got) do
    if want[k] == nil then
      return false
    end
  end
  return true
end

local function show(v)
  if v == nil then
    return 'null'
  end
  local ok, s = pcall(vim.json.encode, v)
  return ok and s or vim.inspect(v)
end

--- The raw JSON text of each step's `args` in steps.json (by step index), so arguments go to the
--- server with their keys in the file's order, as the Rust runners send them: a Lua table has no
--- key order, and the server keeps the order it is given (a structured_output value's rendering
--- follows it).
---@param text string the whole steps.json
---@return table<integer, string>
local function raw_step_args(text)
  local pos = 1
  local function space()
    pos = text:find('[^ \t\r\n]', pos) or (#text + 1)
  end
  local function skip_string()
    local i = pos + 1
    while true do
      local c = text:sub(i, i)
      if c == '\\' then
        i = i + 2
      elseif c == '"' then
        pos = i + 1
        return
      elseif c == '' then
        error('steps.json: unterminated string')
      else
        i = i + 1
      end
    end
  end
  local skip_value
  --- Walks an object or array at `pos`; `on_member(key_text, value_start, value_end)` for members.
  local function walk(on_member)
    local open = text:sub(pos, pos)
    local close = open == '{' and '}' or ']'
    pos = pos + 1
    space()
    if text:sub(pos, pos) == close then
      pos = pos + 1
      return
    end
    while true do
      space()
      local key
      if open == '{' then
        local k = pos
        skip_string()
        key = text:sub(k, pos - 1)
        space()
        pos = pos + 1 -- the colon
      end
      space()
      local start = pos
      skip_value()
      if on_member then
        on_member(key, start, pos - 1)
      end
      space()
      local c = text:sub(pos, pos)
      pos = pos + 1
      if c == close then
        return
      elseif c ~= ',' then
        error('steps.json: unexpected ' .. c)
      end
    end
  end
  skip_value = function()
    space()
    local c = text:sub(pos, pos)
    if c == '"' then
      skip_string()
    elseif c == '{' or c == '[' then
      walk(nil)
    else
      pos = text:find('[,%]}%s]', pos) or (#text + 1) -- a number or literal
    end
  end
  local out, idx = {}, 0
  space()
  if text:sub(pos, pos) ~= '[' then
    return out
  end
  pos = pos + 1
  space()
  while pos <= #text and text:sub(pos, pos) ~= ']' do
    idx = idx + 1
    space()
    if text:sub(pos, pos) == '{' then
      walk(function(key, a, b)
        if key == '"args"' then
          out[idx] = text:sub(a, b)
        end
      end)
    else
      skip_value()
    end
    space()
    if text:sub(pos, pos) == ',' then
      pos = pos + 1
    end
    space()
  end
  return out
end

--- Runs `send` with the JSON of `arguments` in every message it encodes replaced by `raw`.
---@param arguments string a placeholder passed as the arguments
---@param raw string
---@param send fun()
local function with_raw_arguments(arguments, raw, send)
  local encode = vim.json.encode
  local placeholder = encode(arguments)
  vim.json.encode = function(...)
    local text = encode(...)
    local i, j = text:find(placeholder, 1, true)
    if i then
      text = text:sub(1, i - 1) .. raw .. text:sub(j + 1)
    end
    return text
  end
  local ok, err = pcall(send)
  vim.json.encode = encode
  assert(ok, err)
end

--- scenario.rs `check_step`.
local function check_step(expect, result, card, ws)
  local spill = spill_locator(result)
  local problems = {}
  if expect.isError ~= nil and expect.isError ~= vim.NIL then
    if result.isError ~= expect.isError then
      table.insert(
        problems,
        ('isError: expected %s, got %s (content: %s)'):format(
          tostring(expect.isError),
          tostring(result.isError),
          show(result.content)
        )
      )
    end
  end
  for _, key in ipairs({ 'value', 'content', 'meta' }) do
    if expect[key] ~= nil then
      local want = substitute(expect[key], ws, spill)
      if not same(want, result[key]) then
        table.insert(problems, ('%s: expected %s, got %s'):format(key, show(want), show(result[key])))
      end
    end
  end
  for field, source in pairs({ error = result.error or {}, card = card or {} }) do
    if type(expect[field]) == 'table' then
      for key, w in pairs(expect[field]) do
        local want = substitute(w, ws, spill)
        if not same(want, source[key]) then
          table.insert(problems, ('%s.%s: expected %s, got %s'):format(field, key, show(want), show(source[key])))
        end
      end
    end
  end
  return problems
end

--- scenario.rs `check_after`.
local function check_after(scenario_dir, root)
  local expected_dir = uv.fs_stat(scenario_dir .. '/after') and (scenario_dir .. '/after')
    or (scenario_dir .. '/before')
  local expected = {}
  if uv.fs_stat(expected_dir) then
    for _, rel in ipairs(list_files(expected_dir)) do
      expected[rel] = H.read(expected_dir .. '/' .. rel)
    end
  end
  local problems = {}
  local actual = {}
  for _, rel in ipairs(list_files(root)) do
    actual[rel] = H.read(root .. '/' .. rel)
  end
  local rels = vim.tbl_keys(expected)
  table.sort(rels)
  for _, rel in ipairs(rels) do
    if actual[rel] == nil then
      table.insert(problems, 'workspace-after: missing ' .. rel)
    elseif actual[rel] ~= expected[rel] then
      table.insert(
        problems,
        ('workspace-after: %s differs: expected %q, got %q'):format(rel, expected[rel], actual[rel])
      )
    end
  end
  for _, rel in ipairs(list_files(root)) do
    if expected[rel] == nil then
      table.insert(problems, 'workspace-after: unexpected file ' .. rel)
    end
  end
  return problems
end

local function apply_external(root, ext)
  if type(ext.write) == 'string' then
    local target = root .. '/' .. ext.write
    H.write(target, type(ext.content) == 'string' and ext.content or '')
    set_mtime(target, BASE_MTIME + 1000)
  end
  if type(ext.touch) == 'string' then
    set_mtime(root .. '/' .. ext.touch, BASE_MTIME + 2000)
  end
end

--- Runs one scenario; returns its problems.
local function run_scenario(sdir, scratch)
  local steps = assert(read_json(sdir .. '/steps.json'), 'missing steps.json')
  local ok_raw, raw_args = pcall(raw_step_args, H.read(sdir .. '/steps.json') or '')
  raw_args = ok_raw and raw_args or {}
  vim.fn.mkdir(scratch .. '/workspace', 'p')
  vim.fn.mkdir(scratch .. '/sessions', 'p')
  local root = assert(uv.fs_realpath(scratch .. '/workspace'))
  if uv.fs_stat(sdir .. '/before') then
    copy_tree(sdir .. '/before', root)
  end
  for _, rel in ipairs(list_files(root)) do
    set_mtime(root .. '/' .. rel, BASE_MTIME)
  end
  for rel, secs in pairs(read_json(sdir .. '/mtimes.json') or {}) do
    set_mtime(root .. '/' .. rel, secs)
  end
  local ok_init, init = pcall(read_json, sdir .. '/config.json')
  init = (ok_init and type(init) == 'table') and init or {}
  init.session_id = SESSION_ID

  local id = require('toolhost.client').start(root, {
    config = { cmd = { bin, 'serve', '--session-dir', scratch .. '/sessions' }, init_options = init },
  })
  assert(id, 'the client did not start')
  local client = assert(vim.lsp.get_client_by_id(id))
  local problems = {}
  local ok, err = pcall(function()
    H.wait(function()
      return client.initialized
    end, 'initialize')
    local review = require('toolhost.review')
    local ask = require('toolhost.ask')
    --- Sends a request step (`setReview`, `setPlanMode`, `structuredOutput`) and records a failure.
    local function request_step(idx, name, method, params)
      if type(params) ~= 'table' or next(params) == nil then
        params = vim.empty_dict() -- `{}` reads the state; an empty Lua table would be `[]`
      end
      local err = require('toolhost.client').request_sync(client, method, params, 10000)
      if err then
        table.insert(problems, ('step %d (%s): %s'):format(idx - 1, name, err))
      end
    end
    for idx, step in ipairs(steps) do
      -- As the Rust runner: the step's script answers its call's question; a question no step
      -- scripted is answered with an error (the server's fallback applies).
      local script, asked = step.review, false
      review.responder = function()
        asked = true
        if type(script) ~= 'table' then
          return { error = 'no review was scripted for this step' }
        end
        if script.ignore == true then
          return { ignore = true }
        end
        if type(script.external) == 'table' then
          apply_external(root, script.external)
        end
        local answer = { accepted = type(script.accepted) == 'table' and script.accepted or {} }
        if type(script.comment) == 'string' then
          answer.comment = script.comment
        end
        return { result = answer }
      end
      local ask_script, ask_asked = step.askUser, false
      ask.responder = function()
        ask_asked = true
        if type(ask_script) ~= 'table' then
          return { error = 'no askUser answer was scripted for this step' }
        end
        if ask_script.ignore == true then
          return { ignore = true }
        end
        return { result = ask_script }
      end
      if step.external then
        apply_external(root, step.external)
      elseif step.setReview then
        request_step(idx, 'setReview', 'toolhost/setReview', step.setReview)
      elseif step.setPlanMode then
        request_step(idx, 'setPlanMode', 'toolhost/setPlanMode', step.setPlanMode)
      elseif step.structuredOutput then
        request_step(idx, 'structuredOutput', 'toolhost/structuredOutput', step.structuredOutput)
      else
        local done, call_err, res = false, nil, nil
        local function on_done(e, r)
          done, call_err, res = true, e, r
        end
        local raw = raw_args[idx]
        if raw then
          local ws = vim.json.encode(root):sub(2, -2) -- the root as it stands inside a JSON string
          raw = raw:gsub('%${WORKSPACE}', function()
            return ws
          end)
          local placeholder = 'toolhost-conformance-arguments-' .. idx
          with_raw_arguments(placeholder, raw, function()
            require('toolhost').call(step.tool, placeholder, { client = client, echo = false }, on_done)
          end)
        else
          require('toolhost').call(step.tool, substitute(step.args, root), { client = client, echo = false }, on_done)
        end
        H.wait(function()
          return done
        end, 'toolhost/callTool ' .. step.tool, 30000)
        if type(script) == 'table' and script.ignore ~= true and not asked then
          table.insert(problems, ('step %d (%s): the scripted review was never asked'):format(idx - 1, step.tool))
        end
        if type(ask_script) == 'table' and ask_script.ignore ~= true and not ask_asked then
          table.insert(problems, ('step %d (%s): the scripted askUser question never came'):format(idx - 1, step.tool))
        end
        if call_err then
          table.insert(problems, ('step %d (%s): %s'):format(idx - 1, step.tool, call_err))
        else
          for _, p in ipairs(check_step(step.expect or {}, res.result or {}, res.card, root)) do
            table.insert(problems, ('step %d (%s): %s'):format(idx - 1, step.tool, p))
          end
          -- the plugin's card store holds the same card the response carried
          local stored = require('toolhost.cards').store(client.id).by_id[res.callId]
          if not (stored and stored.rendered == res.card.rendered) then
            table.insert(
              problems,
              ('step %d (%s): the cards store does not hold the response card'):format(idx - 1, step.tool)
            )
          end
        end
      end
    end
  end)
  require('toolhost.review').responder = nil
  require('toolhost.ask').responder = nil
  client:stop()
  vim.wait(5000, function()
    return client:is_stopped()
  end, 10)
  if not ok then
    table.insert(problems, tostring(err))
  end
  vim.list_extend(problems, check_after(sdir, root))
  return problems
end

local names = {}
for name, kind in vim.fs.dir(dir) do
  if kind == 'directory' and uv.fs_stat(dir .. '/' .. name .. '/steps.json') then
    table.insert(names, name)
  end
end
table.sort(names)

local filter = vim.env.TOOLHOST_TEST_FILTER
local passed, failed = 0, 0
local start = uv.hrtime()
for _, name in ipairs(names) do
  if not filter or name:find(filter, 1, true) then
    local sdir = dir .. '/' .. name
    local problems
    local requires = read_json(sdir .. '/requires.json') or {}
    for _, program in ipairs(requires) do
      if vim.fn.executable(program) ~= 1 then
        problems = { ('required program `%s` is not installed'):format(program) }
        break
      end
    end
    if not problems then
      local scratch = scratch_dir()
      local ok, res = pcall(run_scenario, sdir, scratch)
      problems = ok and res or { tostring(res) }
      rm_rf(scratch)
    end
    if #problems == 0 then
      passed = passed + 1
    else
      failed = failed + 1
      io.stdout:write(('FAILED %s:\n  %s\n'):format(name, table.concat(problems, '\n  ')))
    end
  end
end
io.stdout:write(
  ('conformance (neovim client, %d ms): %d passed, %d failed\n'):format((uv.hrtime() - start) / 1e6, passed, failed)
)
vim.cmd((failed == 0 and (passed > 0 or filter)) and 'qall!' or 'cquit 1')
