-- Headless tests of a workflow's cards in the cards buffers (|toolhost.cards.groups|): a `workflow`
-- run's `subagent` children (`parentCallId`, ids `<run>:agent:<n>`, `group: {phase, label}`)
-- drawn under the run's card with one heading line per phase, each child's title line ending with
-- its label and usage, the run's with its summed usage — live when the children arrive before
-- the run's final card (and before the run itself), in a replay in either order, a ralph run's
-- labelled rounds without phases; and a real three-phase workflow on the real server against the
-- scripted model server (tests/model_server.py), live and replayed.
-- Registered by tests/run.lua: `require('workflow_cards')(test)`.

local H = require('helpers')

local RUN = 'call_wf'

--- The run's card: pending, or completed with seven children's usage summed.
---@param status string
local function run(status)
  local card = {
    callId = RUN,
    tool = 'workflow',
    status = status,
    kind = 'generic',
    title = 'Workflow: three phases',
    text = status == 'pending' and '' or 'done',
    rendered = 'workflow Workflow: three phases · ' .. status .. (status == 'pending' and '' or '\ndone'),
    locations = {},
  }
  if status ~= 'pending' then
    card.usage = { tokens = 2135, cost = 0.00217 }
  end
  return card
end

--- Child `n` of the run, in `phase` (nil: none) with `label`: completed with 305 tokens and
--- $0.00031, or pending.
local function child(n, phase, label, status)
  status = status or 'completed'
  local title = 'Subagent: ' .. (phase and (phase .. ' · ' .. label) or label)
  local card = {
    callId = ('%s:agent:%d'):format(RUN, n),
    tool = 'subagent',
    parentCallId = RUN,
    status = status,
    kind = 'generic',
    title = title,
    text = status == 'pending' and '' or label:upper(),
    rendered = 'subagent ' .. title .. ' · ' .. status .. (status == 'pending' and '' or ('\n' .. label:upper())),
    locations = {},
    group = { phase = phase, label = label },
  }
  if status ~= 'pending' then
    card.usage = { tokens = 305, cost = 0.00031 }
  end
  return card
end

local CHILDREN = {
  { 1, 'survey', 'a' },
  { 2, 'survey', 'b' },
  { 3, 'draft', 'draft 0' },
  { 4, 'draft', 'draft 1' },
  { 5, 'draft', 'polish 0' },
  { 6, 'draft', 'polish 1' },
  { 7, 'verdict', 'judge' },
}

local function done(i)
  local c = CHILDREN[i]
  return child(c[1], c[2], c[3])
end

local function pending(i)
  local c = CHILDREN[i]
  return child(c[1], c[2], c[3], 'pending')
end

--- The buffer of the completed run with its seven children, grouped by phase.
local EXPECTED = table.concat({
  'workflow Workflow: three phases · completed · 2,135 tokens · $0.0022',
  'done',
  '  7 calls',
  '  ▸ survey',
  '  ├ subagent Subagent: survey · a · completed · a · 305 tokens · $0.00031',
  '  │ A',
  '  └ subagent Subagent: survey · b · completed · b · 305 tokens · $0.00031',
  '    B',
  '  ▸ draft',
  '  ├ subagent Subagent: draft · draft 0 · completed · draft 0 · 305 tokens · $0.00031',
  '  │ DRAFT 0',
  '  ├ subagent Subagent: draft · draft 1 · completed · draft 1 · 305 tokens · $0.00031',
  '  │ DRAFT 1',
  '  ├ subagent Subagent: draft · polish 0 · completed · polish 0 · 305 tokens · $0.00031',
  '  │ POLISH 0',
  '  └ subagent Subagent: draft · polish 1 · completed · polish 1 · 305 tokens · $0.00031',
  '    POLISH 1',
  '  ▸ verdict',
  '  └ subagent Subagent: verdict · judge · completed · judge · 305 tokens · $0.00031',
  '    JUDGE',
}, '\n')

--- A client whose store this test fills itself (the session's own cards are not drawn here).
local function empty_client()
  local ws, sessions = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup(sessions)
  vim.cmd.edit(ws .. '/a.txt')
  local c = H.client()
  local cards = require('toolhost.cards')
  cards.store(c.id).order, cards.store(c.id).by_id = {}, {}
  return c, cards
end

--- The highlight groups of the extmarks on `row` (1-based) that cover part of the line.
local function spans(buf, row)
  local ns = require('toolhost.cards.buffer').namespace
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { row - 1, 0 }, { row - 1, -1 }, { details = true })) do
    if m[4].hl_group then
      local line = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]
      table.insert(out, { m[4].hl_group, line:sub(m[3] + 1, m[4].end_col) })
    end
  end
  return out
end

return function(test)
  test('workflow cards: usage labels, and group and usage only in their shapes', function()
    local groups = require('toolhost.cards.groups')
    H.eq(groups.usage_label({ tokens = 1234, cost = 0.0123 }), '1,234 tokens · $0.01', 'tokens and cents')
    H.eq(groups.usage_label({ tokens = 1 }), '1 token', 'one token, no cost')
    H.eq(groups.usage_label({ tokens = 1234567 }), '1,234,567 tokens', 'separators')
    H.eq(
      { groups.cost_label(0.00031), groups.cost_label(0.0021700000000000005), groups.cost_label(2.5), groups.cost_label(0) },
      { '$0.00031', '$0.0022', '$2.50', '$0' },
      'dollars'
    )
    H.eq(groups.suffix({ group = { phase = 'x', label = 'a' }, usage = { tokens = 5 } }), ' · a · 5 tokens', 'suffix')
    H.eq(groups.suffix({ group = { phase = 3, label = '' }, usage = { tokens = '5' } }), '', 'malformed: nothing')
    H.eq(groups.suffix({ group = vim.NIL, usage = { tokens = 1.5 } }), '', 'null group, fractional tokens')
    H.eq(groups.usage({ usage = { tokens = 7, cost = 'free' } }), { tokens = 7 }, 'a cost that is no number')
  end)

  test('workflow cards: a three-phase run live, children before its final card, parallel ones interleaved', function()
    local c, cards = empty_client()
    local buf = assert(require('toolhost').cards())
    cards.on_card(c.id, run('pending'))
    cards.on_card(c.id, pending(1))
    cards.on_card(c.id, pending(2))
    cards.on_card(c.id, done(2))
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {
      'workflow Workflow: three phases · pending',
      '  2 calls · 1 running',
      '  ▸ survey',
      '  ├ subagent Subagent: survey · a · pending · a',
      '  └ subagent Subagent: survey · b · completed · b · 305 tokens · $0.00031',
      '    B',
    }, 'two survey children, one still running')
    cards.on_card(c.id, done(1))
    for i = 3, 7 do
      cards.on_card(c.id, pending(i))
      cards.on_card(c.id, done(i))
    end
    cards.on_card(c.id, run('completed'))
    H.eq(H.buf_text(buf), EXPECTED, 'grouped by phase, the run with its sum')
    -- the heading belongs to the run; a child's lines to the child
    H.eq(cards.card_at(buf, 4).callId, RUN, 'a phase heading is the run’s line')
    H.eq(cards.card_at(buf, 10).callId, RUN .. ':agent:3', 'a child line')
    -- the title keeps its highlights before the label and usage, which are dimmed
    H.eq(spans(buf, 1), { { 'ToolhostCardUsage', ' · 2,135 tokens · $0.0022' } }, 'the run’s usage highlighted')
    H.eq(spans(buf, 5), { { 'ToolhostCardUsage', ' · a · 305 tokens · $0.00031' } }, 'a child’s label and usage')
    -- folds: the run folds with its phases and children
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.cmd('normal! zc')
    H.eq({ vim.fn.foldclosed(1), vim.fn.foldclosedend(1) }, { 1, vim.api.nvim_buf_line_count(buf) }, 'one fold')
    vim.cmd('normal! zR')
  end)

  test('workflow cards: parallel children whose cards come in the other order, in the order the run made them', function()
    local tree = require('toolhost.cards.tree')
    H.eq(
      { tree.step(RUN, RUN .. ':agent:12'), tree.step(RUN, RUN .. ':code:3'), tree.step(RUN, 'call_x'), tree.step(RUN, RUN .. ':agent:x') },
      { 12, 3, nil, nil },
      'steps'
    )
    local c, cards = empty_client()
    local buf = assert(require('toolhost').cards())
    cards.on_card(c.id, run('pending'))
    cards.on_card(c.id, pending(2))
    cards.on_card(c.id, pending(1))
    cards.on_card(c.id, done(2))
    cards.on_card(c.id, done(1))
    H.eq(vim.api.nvim_buf_get_lines(buf, 3, 7, false), {
      '  ├ subagent Subagent: survey · a · completed · a · 305 tokens · $0.00031',
      '  │ A',
      '  └ subagent Subagent: survey · b · completed · b · 305 tokens · $0.00031',
      '    B',
    }, 'a before b')
    local rbuf = cards.open_replay('s-parallel', { run('completed'), done(2), done(1) })
    H.eq(vim.api.nvim_buf_get_lines(rbuf, 4, 5, false)[1], '  ├ subagent Subagent: survey · a · completed · a · 305 tokens · $0.00031', 'replayed alike')
  end)

  test('workflow cards: a child before its run is drawn at the top, then goes under its phase', function()
    local c, cards = empty_client()
    local buf = assert(require('toolhost').cards())
    cards.on_card(c.id, done(3))
    H.eq(H.buf_text(buf), 'subagent Subagent: draft · draft 0 · completed · draft 0 · 305 tokens · $0.00031\nDRAFT 0', 'at the top')
    cards.on_card(c.id, run('pending'))
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, 3, false), { 'workflow Workflow: three phases · pending', '  1 call', '  ▸ draft' }, 'under its phase')
  end)

  test('workflow cards: a replay groups the same, the run’s card first or last', function()
    local cards = require('toolhost.cards')
    local all = {}
    for i = 1, 7 do
      table.insert(all, done(i))
    end
    for _, order in ipairs({
      vim.list_extend({ run('completed') }, all),
      vim.list_extend(vim.list_extend({}, all), { run('completed') }),
    }) do
      local buf = cards.open_replay('s-workflow', order)
      H.eq(H.buf_text(buf), EXPECTED, 'replay')
      vim.cmd('silent! bwipeout! ' .. buf)
    end
  end)

  test('workflow cards: a ralph run’s rounds and check have labels, no phase headings', function()
    local cards = require('toolhost.cards')
    local ralph = vim.tbl_extend('force', run('completed'), {
      tool = 'ralph',
      title = 'Ralph: make it so',
      rendered = 'ralph Ralph: make it so · completed\ndone',
      usage = { tokens = 915 },
    })
    local buf = cards.open_replay('s-ralph', { ralph, child(1, nil, 'round 1'), child(2, nil, 'round 2'), child(3, nil, 'check 2') })
    H.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {
      'ralph Ralph: make it so · completed · 915 tokens',
      'done',
      '  3 calls',
      '  ├ subagent Subagent: round 1 · completed · round 1 · 305 tokens · $0.00031',
      '  │ ROUND 1',
      '  ├ subagent Subagent: round 2 · completed · round 2 · 305 tokens · $0.00031',
      '  │ ROUND 2',
      '  └ subagent Subagent: check 2 · completed · check 2 · 305 tokens · $0.00031',
      '    CHECK 2',
    }, 'rounds in order, no headings')
  end)

  test('workflow cards: a real three-phase workflow against the scripted model, live and replayed', function()
    H.with_model({}, function(record)
      local ws, sessions = H.workspace({ ['notes.txt'] = 'n\n' })
      H.setup(sessions)
      vim.cmd.edit(ws .. '/notes.txt')
      local c = H.client()
      local names = require('toolhost.client').tool_names(c)
      if not vim.tbl_contains(names, 'workflow') then
        H.skip('the server has no `workflow` tool')
      end
      local script = table.concat({
        'phase("survey");',
        'const found = await parallel([() => agent("survey one", { label: "one" }), () => agent("survey two", { label: "two" })]);',
        'phase("draft");',
        'const draft = await agent("draft it", { label: "draft" });',
        'phase("verdict");',
        'const verdict = await agent("judge it", { label: "judge" });',
        'return { found, draft, verdict };',
      }, '\n')
      local out = H.call('workflow', { meta = { name = 'three phases', description = 'a test' }, script = script }, c)
      H.eq(out.card.status, 'completed', 'the run: ' .. out.card.rendered)
      -- each child: 200 prompt and 8 completion tokens at $1 and $2 per million
      H.eq(out.card.usage, { tokens = 4 * 208, cost = out.card.usage.cost }, 'the run’s sum')
      H.check(math.abs(out.card.usage.cost - 4 * 0.000216) < 1e-9, vim.inspect(out.card.usage))
      H.eq(#H.model_requests(record), 4, 'one request per child')
      local cards = require('toolhost.cards')
      H.wait(function()
        local n = 0
        for _, card in ipairs(cards.list(c.id)) do
          if card.parentCallId == out.callId and card.status == 'completed' then
            n = n + 1
          end
        end
        return n == 4
      end, 'the four children’s final cards')
      local buf = assert(require('toolhost').cards())
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      local first = assert(cards.row_of(buf, out.callId))
      H.eq(lines[first], 'workflow Workflow: three phases · completed · 832 tokens · $0.00086', 'the run’s line')
      -- each phase's heading, then its children's labels (the two parallel ones in either order)
      local shown = {}
      for _, l in ipairs(lines) do
        local heading = l:match('^  ▸ (.*)$')
        local label = l:match('^  %S+ subagent Subagent: .* · completed · (.-) · 208 tokens · %$0%.00022$')
        if heading then
          table.insert(shown, { heading, {} })
        elseif label and #shown > 0 then
          table.insert(shown[#shown][2], label)
        end
      end
      for _, section in ipairs(shown) do
        table.sort(section[2])
      end
      H.eq(
        shown,
        { { 'survey', { 'one', 'two' } }, { 'draft', { 'draft' } }, { 'verdict', { 'judge' } } },
        'phases and labelled children:\n' .. table.concat(lines, '\n')
      )
      -- the replay draws the same
      local session = require('toolhost.client').state(c.id).session_id
      vim.cmd('Toolhost replay ' .. session)
      local rbuf
      H.wait(function()
        rbuf = vim.fn.bufnr('toolhost://replay/' .. session)
        return rbuf ~= -1 and vim.api.nvim_buf_line_count(rbuf) > 1
      end, 'replay buffer')
      -- The two parallel children may send their first cards, and be logged, in either order:
      -- both buffers draw them in the order the run made them.
      H.eq(H.buf_text(rbuf), H.buf_text(buf), 'the replay equals the live cards buffer')
    end)
  end)
end
