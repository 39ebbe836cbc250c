--- toolhost.cards.fetch: The view of `fetch` cards (`web_search`, `web_fetch`): drawn from
--- `rendered`; its source lines and page line point at web pages (<CR> opens them).

local text = require('toolhost.cards.text')

local M = {}

--- Whether `url` is one a cards buffer may hand to |vim.ui.open()|: an absolute `http://` or
--- `https://` URL with a host and no whitespace or control characters (never `javascript:`,
--- `file:` or a path).
---@param url any
---@return boolean
function M.is_web_url(url)
  if type(url) ~= 'string' or url:find('[%s%c]') then
    return false
  end
  local scheme, rest = url:match('^(%a[%w+.-]*)://(.*)$')
  scheme = scheme and scheme:lower()
  return (scheme == 'http' or scheme == 'https') and rest:match('^[^/?#]') ~= nil
end

--- The web page a cards-buffer line of a `fetch` card (`web_search`, `web_fetch`) points at: on a
--- search card's source line (`- <title or url> <<url>>`) that source's URL, on a fetch card's
--- header line (`<url> · HTTP 200 · …`) the page it ended at (`finalUrl`, else `url`). Only
--- http(s) URLs (|M.is_web_url|); nil on any other line or card.
---@param card toolhost.Card
---@param index integer 1-based line of `rendered`
---@return string? url
function M.url(card, index)
  if index < 2 or type(card.data) ~= 'table' then
    return nil
  end
  local data = card.data
  local line = text.split(card.rendered or '')[index]
  if not line then
    return nil
  end
  if type(data.sources) == 'table' then
    -- The source whose line this is: `rendered` writes `- ` .. (title or url) .. ` <` .. url .. `>`.
    for _, source in ipairs(data.sources) do
      local url = type(source) == 'table' and source.url or nil
      if type(url) == 'string' and vim.startswith(line, '- ') and vim.endswith(line, ' <' .. url .. '>') then
        return M.is_web_url(url) and url or nil
      end
    end
    return nil
  end
  if index == 2 and card.status == 'completed' and type(data.url) == 'string' and vim.startswith(line, data.url) then
    local final = type(data.finalUrl) == 'string' and data.finalUrl ~= '' and data.finalUrl or data.url
    return M.is_web_url(final) and final or nil
  end
  return nil
end

return M
