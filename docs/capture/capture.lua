-- Used by docs/capture/capture.sh: attaches `$PKC lsp` to the buffer,
-- waits for its diagnostics, puts the cursor on the `let` of line 6 and
-- opens the hover window, as a user pressing K would.
local buf = vim.api.nvim_get_current_buf()
vim.bo.filetype = 'pk'
vim.cmd('syntax on')
local id = vim.lsp.start_client({ name = 'pk', cmd = { vim.env.PKC, 'lsp' }, root_dir = vim.fn.getcwd() })
vim.lsp.buf_attach_client(buf, id)
vim.wait(30000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
vim.api.nvim_win_set_cursor(0, { 6, 8 })
vim.lsp.buf.hover()
