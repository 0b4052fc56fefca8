-- Headless Neovim 0.11 drives tritonsmith as a user would: open a kernel, wait for the
-- diagnostic with its rule code, apply the quick fix, check the buffer changed and the
-- diagnostic went away, hover a name for its inferred type, then make the server die and check
-- the editor reports it and goes on. Exit code 0 = pass; messages explain failures.
local python, file = arg[1], arg[2]

local function fail(msg)
  io.stderr:write("FAIL: " .. msg .. "\n")
  os.exit(1)
end

vim.cmd.edit(file)
local buf = vim.api.nvim_get_current_buf()
local exited = nil -- the server's exit code, once Neovim reports it
local client_id = vim.lsp.start({
  name = "tritonsmith",
  cmd = { python, "-m", "tritonsmith", "serve" },
  root_dir = vim.fs.dirname(vim.fs.abspath(file)),
  on_exit = function(code) exited = code end,
}, { bufnr = buf })
if not client_id then fail("the server did not start") end

local function find(code)
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.code == code then return d end
  end
end

if not vim.wait(15000, function() return find("TS109") ~= nil end, 50) then
  fail("no TS109 diagnostic; got " .. vim.inspect(vim.diagnostic.get(buf)))
end
local d = find("TS109")
if d.source ~= "tritonsmith" then fail("wrong source " .. tostring(d.source)) end
io.stdout:write("diagnostic: " .. d.code .. " " .. d.message .. "\n")

vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
vim.lsp.buf.code_action({
  apply = true,
  filter = function(a) return a.title:find("TS109", 1, true) ~= nil and a.isPreferred end,
})

local fixed = vim.wait(10000, function()
  local line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
  return line:find("x.to(tl.float32)", 1, true) ~= nil
end, 50)
if not fixed then
  fail("quick fix not applied: " .. vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1])
end
io.stdout:write("fixed line: " .. vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1] .. "\n")

if not vim.wait(10000, function() return find("TS109") == nil end, 50) then
  fail("TS109 still reported after the fix")
end

-- Hover `offs` (line 7): its inferred type and shape.
local client = vim.lsp.get_client_by_id(client_id)
local row = 6
local col = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]:find("offs", 1, true) - 1
vim.api.nvim_win_set_cursor(0, { row + 1, col })
local hover = client:request_sync("textDocument/hover", vim.lsp.util.make_position_params(0, client.offset_encoding), 10000, buf)
if not hover or hover.err or not hover.result then fail("no hover: " .. vim.inspect(hover)) end
local text = type(hover.result.contents) == "table" and hover.result.contents.value or tostring(hover.result.contents)
if not text:find("offs", 1, true) then fail("hover without the name: " .. text) end
io.stdout:write("hover: " .. text:gsub("\n", " ") .. "\n")

-- The server dies (exit without shutdown: status 1); the editor reports it and keeps the buffer.
client:notify("exit", vim.NIL)
if not vim.wait(10000, function() return exited ~= nil end, 50) then fail("the server's exit was not reported") end
if vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]:find("x.to(tl.float32)", 1, true) == nil then
  fail("the buffer changed when the server died")
end
io.stdout:write("server exit reported: code " .. tostring(exited) .. "; editor still running\n")
os.exit(0)
