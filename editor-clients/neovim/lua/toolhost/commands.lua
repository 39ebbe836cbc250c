--- toolhost.commands: `:Toolhost {subcommand}`: the table of subcommands (name → arguments,
--- description, what it runs, how its arguments complete) and what it drives: dispatch, completion,
--- usage messages and the listings of `:Toolhost` and `:Toolhost help`. The subcommands only parse
--- their arguments; the work is the Lua API's (|toolhost-api|).

local M = {}

---@class toolhost.Subcommand
---@field args? string its arguments, as usage messages and `:Toolhost help` write them
---@field desc string what it does
---@field bang? string what `:Toolhost!` changes (the others ignore the bang)
---@field run fun(args: string, opts: {bang: boolean}) `bang`: the command was `:Toolhost!`
---@field complete? fun(arg_lead: string, line: string): string[]

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('toolhost: ' .. msg, level or vim.log.levels.INFO)
end

--- The plugin's Lua API (required late: it requires nothing of this module).
local function th()
  return require('toolhost')
end

--- Words of `candidates` that start with `arg_lead`, when the argument being completed is the
--- first one (`:Toolhost {sub} {word}`).
---@param candidates string[]
---@param arg_lead string
---@param line string
---@return string[]
local function first_word(candidates, arg_lead, line)
  if line:match('^%s*%S+%s+%S+%s+%S+%s') then
    return {}
  end
  return vim.tbl_filter(function(w)
    return vim.startswith(w, arg_lead)
  end, candidates)
end

--- Completion of a call id to revert: the completed diff cards of the current server, newest
--- first.
---@param arg_lead string
---@param line string
---@return string[]
local function complete_revertible(arg_lead, line)
  if line:match('^%s*%S+%s+%S+%s+%S+%s') then
    return {}
  end
  local c = require('toolhost.client').current(0, false)
  local out = {}
  for _, card in ipairs(c and require('toolhost.cards').revertible(c.id) or {}) do
    if vim.startswith(card.callId, arg_lead) then
      table.insert(out, card.callId)
    end
  end
  return out
end

---@param sub string
---@param args string
---@return string? call_id nil when `args` has more than one word (reported)
local function one_call_id(sub, args)
  local id, extra = args:match('^(%S*)%s*(.-)$')
  if extra ~= '' then
    notify('usage: ' .. M.usage(sub), vim.log.levels.ERROR)
    return nil
  end
  return id
end

--- The one name `args` holds (empty: none given), or nil when it holds more words (reported).
---@param sub string
---@param args string
---@return string?
local function one_name(sub, args)
  local name, extra = vim.trim(args):match('^(%S*)%s*(.-)$')
  if extra ~= '' then
    notify('usage: ' .. M.usage(sub), vim.log.levels.ERROR)
    return nil
  end
  return name
end

--- Parses the arguments of `:Toolhost review-mode`: `[off|ask] [timeout={ms}] [fallback={deny|accept}]`.
---@param args string
---@return toolhost.ReviewSettings? settings nil when invalid
---@return string? problem
local function parse_review_mode(args)
  local out = {}
  for word in args:gmatch('%S+') do
    local key, value = word:match('^(%w+)=(.*)$')
    if word == 'off' or word == 'ask' then
      out.mode = word
    elseif key == 'timeout' and tonumber(value) and tonumber(value) >= 0 then
      out.timeoutMs = math.floor(tonumber(value) --[[@as number]])
    elseif key == 'fallback' and (value == 'deny' or value == 'accept') then
      out.fallback = value
    else
      return nil, ('unexpected %q; usage: %s'):format(word, M.usage('review-mode'))
    end
  end
  return out
end

---@type table<string, toolhost.Subcommand>
M.COMMANDS = {
  ask = {
    args = '[mode={mode}] [model={model}] [task]',
    desc = 'continue the chat with its agent (a new chat: toolhost’s own agent), in the chat buffer',
    bang = 'a new chat, with toolhost’s own agent',
    run = function(args, opts)
      local chat = require('toolhost.chat')
      local task, o, problem = chat.parse(args)
      if not o then
        return notify(('%s; usage: %s'):format(problem or 'invalid arguments', M.usage('ask')), vim.log.levels.ERROR)
      end
      o.new = opts.bang
      chat.ask(task, o)
    end,
    complete = function(arg_lead, line)
      return require('toolhost.chat').complete(arg_lead, line)
    end,
  },
  agent = {
    args = '{name} [task]',
    desc = 'ask a hosted ACP agent (claude, codex, …) in the chat buffer; the chat stays with it',
    bang = 'a new chat',
    run = function(args, opts)
      local chat = require('toolhost.chat')
      local name, task = chat.parse_agent(args)
      if not name then
        return notify('usage: ' .. M.usage('agent') .. ' (:Toolhost agents lists them)', vim.log.levels.ERROR)
      end
      chat.ask(task, { agent = name, new = opts.bang })
    end,
    complete = function(arg_lead, line)
      return require('toolhost.chat').complete_agent(arg_lead, line)
    end,
  },
  ['agent-options'] = {
    args = '[name]',
    desc = 'pick the mode, model or effort of the chat’s hosted agent (of {name}: in a new chat)',
    run = function(args)
      local name, extra = vim.trim(args):match('^(%S*)%s*(.-)$')
      if extra ~= '' then
        return notify('usage: ' .. M.usage('agent-options'), vim.log.levels.ERROR)
      end
      require('toolhost.agent_options').choose({ agent = name ~= '' and name or nil })
    end,
    complete = function(arg_lead, line)
      return require('toolhost.chat').complete_agent(arg_lead, line)
    end,
  },
  agents = {
    desc = 'list the ACP agents the server hosts (installed, or how to install them)',
    run = function()
      local c = require('toolhost.client').current(0, true)
      if not c then
        return notify('no toolhost server for this buffer or directory', vim.log.levels.WARN)
      end
      require('toolhost.agents').show(c)
    end,
  },
  chat = {
    args = '[new|stop]',
    desc = 'open the chat buffer; new: the next ask starts a new chat; stop: stop the prompt',
    run = function(args)
      local word = vim.trim(args)
      local chat = require('toolhost.chat')
      if word == '' then
        chat.open(true)
      elseif word == 'new' then
        chat.new()
      elseif word == 'stop' then
        chat.stop()
      else
        notify(('unexpected %q; usage: %s'):format(word, M.usage('chat')), vim.log.levels.ERROR)
      end
    end,
    complete = function(arg_lead, line)
      return first_word({ 'new', 'stop' }, arg_lead, line)
    end,
  },
  call = {
    args = '{tool} {json}',
    desc = 'run a tool and show its card',
    run = function(args)
      local tool, json = args:match('^(%S+)%s*(.*)$')
      if not tool then
        return notify('usage: ' .. M.usage('call'), vim.log.levels.ERROR)
      end
      local arguments = vim.empty_dict()
      if json ~= '' then
        local ok, decoded = pcall(vim.json.decode, json)
        if not ok or type(decoded) ~= 'table' then
          return notify('the arguments must be a JSON object: ' .. tostring(decoded), vim.log.levels.ERROR)
        end
        arguments = decoded
      end
      th().call(tool, arguments)
    end,
    complete = function(arg_lead, line)
      if line:match('^%s*%S+%s+call%s+%S+%s') then
        return {}
      end
      local c = require('toolhost.client').current(0, false)
      local names = c and require('toolhost.client').tool_names(c) or {}
      return vim.tbl_filter(function(n)
        return vim.startswith(n, arg_lead)
      end, names)
    end,
  },
  tools = {
    desc = 'list the tools',
    run = function()
      th().tools()
    end,
  },
  cards = {
    desc = 'open the cards of this session (newest first)',
    run = function()
      th().cards()
    end,
  },
  replay = {
    args = '{session}',
    desc = 'the cards of a past session',
    run = function(args)
      local id = vim.trim(args)
      if id == '' then
        local c = require('toolhost.client').current(0, false)
        id = c and require('toolhost.client').state(c.id).session_id or ''
      end
      if id == '' then
        return notify('usage: ' .. M.usage('replay'), vim.log.levels.ERROR)
      end
      th().replay(id)
    end,
    complete = function(arg_lead)
      local cl = require('toolhost.client')
      local c = cl.current(0, false)
      if not c then
        return {}
      end
      local err, res = cl.request_sync(c, 'toolhost/listSessions', vim.empty_dict(), 2000)
      local out = {}
      for _, s in ipairs((not err and res and res.sessions) or {}) do
        if vim.startswith(s.id, arg_lead) then
          table.insert(out, s.id)
        end
      end
      return out
    end,
  },
  revert = {
    args = '[call_id]',
    desc = 'undo the file changes of a call (card under the cursor, else the newest)',
    run = function(args)
      local id = one_call_id('revert', args)
      if id then
        th().revert(id)
      end
    end,
    complete = complete_revertible,
  },
  ['revert-since'] = {
    args = '[call_id]',
    desc = 'undo every file change since a call (asks first)',
    bang = 'no confirmation',
    run = function(args, opts)
      local id = one_call_id('revert-since', args)
      if id then
        th().revert_since(id, { confirm = not opts.bang })
      end
    end,
    complete = complete_revertible,
  },
  checkpoint = {
    args = '[name]',
    desc = 'name this point of the session, to go back to later (no name: asked)',
    run = function(args)
      require('toolhost.checkpoints').create(vim.trim(args))
    end,
  },
  checkpoints = {
    desc = 'list the checkpoints of the session: named ones and the start of each agent turn',
    run = function()
      require('toolhost.checkpoints').show()
    end,
  },
  ['checkpoint-restore'] = {
    args = '[name]',
    desc = 'undo every file change after a checkpoint (no name: picked; asks first; revertible)',
    bang = 'no confirmation',
    run = function(args, opts)
      require('toolhost.checkpoints').restore(vim.trim(args), { confirm = not opts.bang })
    end,
  },
  ['best-of'] = {
    args = '{N} {task}',
    desc = 'run a task by N agents at once, each in its own worktree session; a table, then apply one',
    run = function(args)
      require('toolhost.best_of').run(args)
    end,
  },
  ['worktree-new'] = {
    args = '[name]',
    desc = 'make a worktree session: an agent works in a git worktree of its own (no name: one is made)',
    run = function(args)
      local name = one_name('worktree-new', args)
      if name then
        require('toolhost.worktrees').new(name)
      end
    end,
  },
  worktrees = {
    desc = 'pick the session the cards buffer shows: this workspace or a worktree session (live)',
    run = function()
      require('toolhost.worktrees').choose()
    end,
  },
  ['worktree-apply'] = {
    args = '[name]',
    desc = 'bring a worktree session’s changes here, hunk by hunk through review (no name: picked)',
    run = function(args)
      local name = one_name('worktree-apply', args)
      if name then
        require('toolhost.worktrees').apply(name)
      end
    end,
    complete = function(arg_lead, line)
      return require('toolhost.worktrees').complete(arg_lead, line)
    end,
  },
  ['worktree-open'] = {
    args = '[name]',
    desc = 'a tab of its own for a worktree session: its chat and agents work in the worktree (no name: picked)',
    run = function(args)
      local name = one_name('worktree-open', args)
      if name then
        require('toolhost.worktrees').open(name)
      end
    end,
    complete = function(arg_lead, line)
      return require('toolhost.worktrees').complete(arg_lead, line)
    end,
  },
  ['worktree-discard'] = {
    args = '[name]',
    desc = 'remove a worktree session: its checkout, branch and log (no name: picked; asks first)',
    bang = 'no confirmation',
    run = function(args, opts)
      local name = one_name('worktree-discard', args)
      if name then
        require('toolhost.worktrees').discard(name, { confirm = not opts.bang })
      end
    end,
    complete = function(arg_lead, line)
      return require('toolhost.worktrees').complete(arg_lead, line)
    end,
  },
  review = {
    args = '[call_id]',
    desc = 'open a pending review (hunks to accept or reject before a write)',
    run = function(args)
      th().review(vim.trim(args))
    end,
    complete = function(arg_lead, line)
      return first_word(require('toolhost.review').complete(''), arg_lead, line)
    end,
  },
  ['review-mode'] = {
    args = '[off|ask] [timeout={ms}] [fallback={deny|accept}]',
    desc = 'ask before writes (no argument: show)',
    run = function(args)
      local settings, problem = parse_review_mode(args)
      if not settings then
        return notify(problem or 'invalid arguments', vim.log.levels.ERROR)
      end
      th().set_review(settings)
    end,
    complete = function(arg_lead, line)
      local words = { 'ask', 'off', 'timeout=', 'fallback=deny', 'fallback=accept' }
      local typed = line:match('^%s*%S+%s+%S+%s+(.*)$') or ''
      return vim.tbl_filter(function(w)
        local key = w:match('^(%w+)=') or ((w == 'ask' or w == 'off') and 'mode')
        -- each setting once: `ask` excludes `off`, one `timeout=`, one `fallback=`
        local used = (key == 'mode' and (typed:match('%f[%w]ask%f[%W]') or typed:match('%f[%w]off%f[%W]')))
          or (key ~= 'mode' and typed:find(key .. '=', 1, true))
        return vim.startswith(w, arg_lead) and not used
      end, words)
    end,
  },
  ['plan-mode'] = {
    args = '[on|off]',
    desc = 'refuse changes until a plan is approved (no argument: show)',
    run = function(args)
      local word = vim.trim(args)
      local active
      if word == 'on' then
        active = true
      elseif word == 'off' then
        active = false
      elseif word ~= '' then
        return notify(('unexpected %q; usage: %s'):format(word, M.usage('plan-mode')), vim.log.levels.ERROR)
      end
      th().set_plan_mode(active)
    end,
    complete = function(arg_lead, line)
      return first_word({ 'on', 'off' }, arg_lead, line)
    end,
  },
  ['mcp-servers'] = {
    desc = 'the MCP servers whose tools the server offers: state, transport, tools (kept current)',
    run = function()
      th().show_mcp_servers()
    end,
  },
  sessions = {
    desc = 'list the sessions of this workspace',
    run = function()
      th().sessions()
    end,
  },
  clear = {
    desc = 'remove the inline cards',
    run = function()
      th().clear()
    end,
  },
  start = {
    desc = 'start the server for this buffer (or the working directory)',
    run = function()
      th().start()
    end,
  },
  stop = {
    desc = 'stop the servers',
    run = function()
      th().stop()
    end,
  },
}

M.COMMANDS.help = {
  args = '[subcommand]',
  desc = 'list the subcommands, or describe one',
  run = function(args)
    M.help(vim.trim(args))
  end,
  complete = function(arg_lead, line)
    return first_word(M.names(), arg_lead, line)
  end,
}

--- The subcommands' names, sorted.
---@return string[]
function M.names()
  local names = vim.tbl_keys(M.COMMANDS)
  table.sort(names)
  return names
end

--- `:Toolhost[!] revert-since [call_id]`: how a subcommand is written.
---@param name string
---@return string
function M.usage(name)
  local entry = M.COMMANDS[name]
  local args = entry and entry.args
  return (':Toolhost%s %s%s'):format(entry and entry.bang and '[!]' or '', name, args and (' ' .. args) or '')
end

--- The listing of the subcommands: each one's usage, then what it does (and what the bang
--- changes).
---@return {[1]: string, [2]?: string}[] chunks for |nvim_echo()|
local function listing()
  local chunks = { { 'Toolhost subcommands:\n', 'Title' } }
  for _, name in ipairs(M.names()) do
    local entry = M.COMMANDS[name]
    local bang = entry.bang and (' (:Toolhost! %s: %s)'):format(name, entry.bang) or ''
    table.insert(chunks, { ('  %s\n'):format(M.usage(name)), 'Identifier' })
    table.insert(chunks, { ('      %s%s\n'):format(entry.desc, bang) })
  end
  return chunks
end

--- `:Toolhost help [subcommand]`: every subcommand with its usage and what it does, or one.
---@param name? string
function M.help(name)
  if name and name ~= '' then
    local entry = M.COMMANDS[name]
    if not entry then
      return notify(
        ('unknown subcommand %s; :Toolhost help lists them'):format(vim.inspect(name)),
        vim.log.levels.ERROR
      )
    end
    local bang = entry.bang and ('\n:Toolhost! %s: %s'):format(name, entry.bang) or ''
    return vim.api.nvim_echo({ { M.usage(name), 'Identifier' }, { '\n' .. entry.desc .. bang } }, false, {})
  end
  local chunks = listing()
  chunks[#chunks][1] = chunks[#chunks][1]:gsub('\n$', '')
  vim.api.nvim_echo(chunks, false, {})
end

--- `:Toolhost` without arguments: the subcommands and the running servers.
function M.status()
  local cl = require('toolhost.client')
  local chunks = listing()
  local clients = cl.clients()
  if #clients == 0 then
    table.insert(chunks, { 'no toolhost server running' })
  end
  for i, c in ipairs(clients) do
    table.insert(chunks, {
      ('server %d: root %s, session %s%s'):format(
        c.id,
        c.root_dir or '?',
        cl.state(c.id).session_id or '?',
        i < #clients and '\n' or ''
      ),
    })
  end
  vim.api.nvim_echo(chunks, false, {})
end

--- `:Toolhost[!] {subcommand} [args]`: runs the subcommand of the table. The bang reaches it
--- (`revert-since` skips its confirmation, `ask` starts a new chat); the others ignore it.
---@param opts {args: string, fargs: string[], bang?: boolean}
function M.command(opts)
  local sub, rest = opts.args:match('^%s*(%S+)%s*(.-)%s*$')
  if not sub then
    return M.status()
  end
  local entry = M.COMMANDS[sub]
  if not entry then
    return notify(
      ('unknown subcommand %s; one of: %s'):format(vim.inspect(sub or ''), table.concat(M.names(), ', ')),
      vim.log.levels.ERROR
    )
  end
  entry.run(rest or '', { bang = opts.bang == true })
end

--- Completion of `:Toolhost`: a subcommand's name, then what the subcommand completes.
---@param arg_lead string
---@param line string
---@return string[]
function M.complete(arg_lead, line)
  local sub = line:match('^%s*%S+%s+(%S+)%s')
  if sub then
    local entry = M.COMMANDS[sub]
    return entry and entry.complete and entry.complete(arg_lead, line) or {}
  end
  return vim.tbl_filter(function(n)
    return vim.startswith(n, arg_lead)
  end, M.names())
end

return M
