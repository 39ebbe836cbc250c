--- toolhost.result_text: the text a person reads of a tool result (`toolhost/callTool`'s `result`):
--- its text blocks, joined and trimmed. Shared by the commands that echo a call's outcome.

--- The text blocks of `result`, joined.
---@param result table
---@return string
return function(result)
  local texts = {}
  for _, block in ipairs(type(result.content) == 'table' and result.content or {}) do
    if type(block) == 'table' and block.type == 'text' and type(block.text) == 'string' then
      table.insert(texts, block.text)
    end
  end
  return vim.trim(table.concat(texts, '\n'))
end
