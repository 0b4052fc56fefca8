-- Headless Neovim 0.11 drives tritonsmith as a user would: open a kernel, wait for the
-- diagnostic with its rule code, apply the quick fix, check the buffer changed and the
-- diagnostic went away. Exit code 0 = pass; messages explain failures.
local python, file = arg[1], arg[2]

local function fail(msg)
  io.stderr:write("FAIL: " .. msg .. "\n")
  os.exit(1)
end

vim.cmd.edit(file)
local buf = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start({
  name = "tritonsmith",
  cmd = { python, "-m", "tritonsmith", "serve" },
  root_dir = vim.fs.dirname(vim.fs.abspath(file)),
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
vim.lsp.get_client_by_id(client_id):stop()
os.exit(0)
