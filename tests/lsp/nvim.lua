-- Opens $PK_FILE in Neovim, attaches `$PKC lsp` with the built-in client,
-- and writes what the client reads back to $PK_OUT, one fact per line:
-- the diagnostics, the hover at line 5 column 8 and the definition of the
-- name at line 6 column 16 (0-based, as LSP counts).
local out = {}
local file, pkc = vim.env.PK_FILE, vim.env.PKC
vim.cmd('edit ' .. file)
local buf = vim.api.nvim_get_current_buf()
local id = vim.lsp.start_client({
  name = 'pk',
  cmd = { pkc, 'lsp' },
  root_dir = vim.fn.fnamemodify(file, ':h'),
})
vim.lsp.buf_attach_client(buf, id)
vim.wait(30000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or '?'
  table.insert(out, string.format('diagnostic %d:%d %s %s', d.lnum, d.col, code, (d.message:gsub('\n.*', ''))))
end
local doc = { uri = vim.uri_from_bufnr(buf) }
local hover = vim.lsp.buf_request_sync(buf, 'textDocument/hover',
  { textDocument = doc, position = { line = 5, character = 8 } }, 20000)
for _, r in pairs(hover or {}) do
  if r.result then
    for _, l in ipairs(vim.split(r.result.contents.value, '\n')) do
      table.insert(out, 'hover ' .. l)
    end
  end
end
local def = vim.lsp.buf_request_sync(buf, 'textDocument/definition',
  { textDocument = doc, position = { line = 6, character = 16 } }, 20000)
for _, r in pairs(def or {}) do
  local l = r.result
  if l and l[1] then l = l[1] end
  if l and l.range then
    table.insert(out, string.format('definition %d:%d-%d:%d', l.range.start.line, l.range.start.character,
      l.range['end'].line, l.range['end'].character))
  end
end
vim.fn.writefile(out, vim.env.PK_OUT)
vim.cmd('qa!')
