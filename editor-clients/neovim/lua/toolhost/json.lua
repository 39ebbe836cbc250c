--- toolhost.json: JSON values as pretty-printed lines for buffers: two spaces per level, object
--- keys sorted (so the same value always reads the same, whatever order the server sent).

local M = {}

local EMPTY_DICT_MT = getmetatable(vim.empty_dict())

--- The length of `t` read as a JSON array, or nil when it is an object. Neovim decodes `{}` to
--- an empty dict and `[]` to a plain empty table, so the two stay apart; a `null` inside an array
--- arrives as a hole (the LSP client decodes with `luanil`), so the largest index is the length.
---@param t table
---@return integer?
local function array_length(t)
  if getmetatable(t) == EMPTY_DICT_MT then
    return nil
  end
  local n = 0
  for k in pairs(t) do
    if type(k) ~= 'number' or k < 1 or k % 1 ~= 0 then
      return nil
    end
    n = math.max(n, k)
  end
  return n
end

---@param v any a JSON scalar as Neovim decodes it
---@return string
local function scalar(v)
  if v == nil or v == vim.NIL then
    return 'null'
  elseif type(v) == 'number' and v % 1 == 0 and math.abs(v) < 2 ^ 53 then
    -- vim.json.encode writes large integers in exponent form (`%.14g`).
    return ('%d'):format(v)
  elseif type(v) == 'number' or type(v) == 'string' or type(v) == 'boolean' then
    return vim.json.encode(v)
  end
  return vim.json.encode(tostring(v))
end

---@param v any
---@param indent string
---@param prefix string what comes before the value on its first line
---@param suffix string `,` or ``
---@param out string[]
local function emit(v, indent, prefix, suffix, out)
  if type(v) ~= 'table' then
    table.insert(out, prefix .. scalar(v) .. suffix)
    return
  end
  local inner = indent .. '  '
  local n = array_length(v)
  if n then
    if n == 0 then
      table.insert(out, prefix .. '[]' .. suffix)
      return
    end
    table.insert(out, prefix .. '[')
    for i = 1, n do
      emit(v[i], inner, inner, i < n and ',' or '', out)
    end
    table.insert(out, indent .. ']' .. suffix)
    return
  end
  local keys = vim.tbl_keys(v)
  if #keys == 0 then
    table.insert(out, prefix .. '{}' .. suffix)
    return
  end
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  table.insert(out, prefix .. '{')
  for i, k in ipairs(keys) do
    emit(v[k], inner, inner .. vim.json.encode(tostring(k)) .. ': ', i < #keys and ',' or '', out)
  end
  table.insert(out, indent .. '}' .. suffix)
end

--- A JSON value as pretty-printed lines: two spaces per level, object keys sorted (so the same
--- value always reads the same, whatever order the server sent).
---@param value any a value as |vim.json.decode()| returns it
---@return string[]
function M.lines(value)
  local out = {}
  emit(value, '', '', '', out)
  return out
end

return M
