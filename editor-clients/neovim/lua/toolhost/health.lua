--- toolhost.health: `:checkhealth toolhost`

local M = {}

function M.check()
  local health = vim.health
  local config = require('toolhost.config')
  local cl = require('toolhost.client')
  local cfg = config.get()

  health.start('toolhost: Neovim and configuration')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or newer is required (found ' .. tostring(vim.version()) .. ')')
  end
  local problems = config.problems(cfg)
  if #problems == 0 then
    health.ok('configuration is valid')
  else
    for _, p in ipairs(problems) do
      health.error('configuration: ' .. p)
    end
  end

  local cmd = cfg.cmd
  if cl.enabled() then
    local resolved = cl.lsp_config()
    health.ok("vim.lsp.enable('toolhost'): clients start from vim.lsp.config.toolhost (lsp/toolhost.lua)")
    if resolved and type(resolved.cmd) == 'table' then
      cmd = resolved.cmd
    end
  end

  health.start('toolhost: server binary')
  local program = type(cmd) == 'table' and cmd[1] or nil
  local path = program and vim.fn.exepath(program) or ''
  if path == '' then
    health.error(('`%s` is not executable'):format(tostring(program)), {
      'Install toolhost (cargo install --path server/server) or set `cmd` in setup()/vim.g.toolhost',
      "With vim.lsp.enable('toolhost'): vim.lsp.config('toolhost', { cmd = { '/path/to/toolhost', 'serve' } })",
    })
  else
    local res = vim.system({ path, '--version' }, { text = true }):wait(5000)
    local version = vim.trim(res.stdout or '')
    if res.code == 0 and version ~= '' then
      health.ok(('%s (%s)'):format(version, path))
    else
      health.error(('`%s --version` failed (exit %s): %s'):format(path, tostring(res.code), vim.trim(res.stderr or '')))
    end
  end

  health.start('toolhost: servers')
  local clients = cl.clients()
  if #clients == 0 then
    if cfg.auto_start then
      health.info('no server running; one starts when a file under a workspace root is opened')
    else
      health.info('no server running (auto_start is off: use `:Toolhost start`)')
    end
  end
  for _, c in ipairs(clients) do
    local st = cl.state(c.id)
    if c.initialized then
      health.ok(
        ('running (client %d): root %s, session %s, %d buffer(s) attached'):format(
          c.id,
          c.root_dir or '?',
          st.session_id or '?',
          vim.tbl_count(c.attached_buffers)
        )
      )
    else
      health.warn(('client %d for %s is still starting'):format(c.id, c.root_dir or '?'))
    end
  end

  require('toolhost.mcp').check()

  health.start('toolhost: workspace')
  local buf = vim.api.nvim_get_current_buf()
  -- :checkhealth runs in its own buffer; report for the alternate (previous) buffer if any.
  local alt = vim.fn.bufnr('#')
  if vim.bo[buf].buftype ~= '' and alt > 0 then
    buf = alt
  end
  local root = cl.find_root(buf)
  local attached = cl.buf_path(buf) and cl.for_path(cl.buf_path(buf) or '') or nil
  if attached then
    health.ok('workspace root: ' .. attached.root_dir)
  elseif root then
    health.ok('workspace root (from markers ' .. table.concat(cfg.root_markers, ', ') .. '): ' .. root)
  else
    health.info('no workspace root for the current buffer; the working directory is used: ' .. vim.fn.getcwd())
  end

  health.start('toolhost: review mode')
  if not cfg.review then
    health.info('review mode is not advertised (review = false): with it on, writes fall back at once')
  else
    health.ok(
      ('review advertised (capabilities.experimental.toolhost.review); reviews open: %s'):format(cfg.review_open)
    )
  end
  if package.loaded['toolhost.review'] then
    for _, r in ipairs(require('toolhost.review').pending()) do
      health.info(
        ('pending review: %s (%s), :Toolhost review'):format(require('toolhost.review').label(r), r.params.callId)
      )
    end
  end

  health.start('toolhost: questions (ask_user_question, plan review)')
  if not cfg.ask_user then
    health.info(
      'questions are not advertised (ask_user = false): ask_user_question and exit_plan_mode fail NO_PROVIDER'
    )
  else
    health.ok(
      'askUser advertised (capabilities.experimental.toolhost.askUser); asked with vim.ui.select / vim.ui.input'
    )
  end
  if package.loaded['toolhost.ask'] then
    for _, a in ipairs(require('toolhost.ask').pending()) do
      health.info(('pending question: %s (%s)'):format(require('toolhost.ask').label(a), a.params.callId))
    end
  end

  health.start('toolhost: chat (:Toolhost ask, toolhost’s own agent)')
  local chat_cfg = type(cfg.chat) == 'table' and cfg.chat or {}
  local xdg = vim.env.XDG_CONFIG_HOME
  local user_config = vim.fs.joinpath(
    (xdg and xdg ~= '') and xdg or vim.fs.joinpath(vim.env.HOME or '~', '.config'),
    'toolhost',
    'config.toml'
  )
  health.info(
    ('prompts run in %s with %s; the model endpoint is [agent] in the user configuration (%s)'):format(
      chat_cfg.mode and ('mode ' .. chat_cfg.mode) or 'the server’s [agent] mode',
      chat_cfg.model and ('model ' .. chat_cfg.model) or 'its [agent] model',
      user_config
    )
  )
  if package.loaded['toolhost.chat'] then
    local st = require('toolhost.chat').state()
    if st.run then
      health.info(('a prompt is running (chat %s): stop it with :Toolhost chat stop'):format(st.chat_id or 'new'))
    elseif st.chat_id then
      local with = st.agent and (' with the hosted agent ' .. st.agent) or ''
      health.info(('the next prompt continues chat %s%s (:Toolhost chat new starts another)'):format(st.chat_id, with))
    end
  end

  health.start('toolhost: language servers (editor-backed lsp provider)')
  if not cfg.lsp_provider then
    health.info('the lsp provider is disabled (lsp_provider = false)')
  else
    health.ok('lsp provider advertised (capabilities.experimental.toolhost.lspProvider)')
  end
  local seen = {}
  for _, c in ipairs(vim.lsp.get_clients()) do
    if c.name ~= cl.NAME then
      local fts = {}
      for b in pairs(c.attached_buffers) do
        if vim.api.nvim_buf_is_valid(b) and vim.bo[b].filetype ~= '' then
          fts[vim.bo[b].filetype] = true
        end
      end
      table.insert(
        seen,
        ('%s (encoding %s, filetypes: %s)'):format(c.name, c.offset_encoding, table.concat(vim.tbl_keys(fts), ', '))
      )
    end
  end
  if #seen == 0 then
    health.info('no other language server is running; `lsp` queries answer only once one is attached')
  else
    for _, s in ipairs(seen) do
      health.ok('language server: ' .. s)
    end
  end
end

return M
