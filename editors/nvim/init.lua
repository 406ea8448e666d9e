-- code_t5's suggestions in Neovim 0.12 or newer, as ghost text: the rest of the line, from
-- `python -m code_t5_session.lsp` (GENTLE_INTRO.md, "In your editor").
--
--   nvim -u editors/nvim/init.lua file.py        -- or put these lines in your own init.lua
--
-- CODE_T5_EXPORT: the export (`python -m code_t5.session_export --export_dir=...`).
-- CODE_T5_PYTHON: a Python with code_t5_session (`make editor` makes .venv-editor).
-- <Tab> in insert mode takes the suggestion shown (a <Tab> where none is).
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local repo = vim.fs.dirname(vim.fs.dirname(here))
local python = vim.env.CODE_T5_PYTHON or (repo .. "/.venv-editor/bin/python")
local export_dir = vim.env.CODE_T5_EXPORT or (repo .. "/runs/dev/session")

vim.lsp.config("code_t5", {
  cmd = { python, "-m", "code_t5_session.lsp", "--export_dir=" .. export_dir },
  filetypes = { "python", "java", "javascript", "typescript", "go", "cpp", "c", "cs",
                "php", "ruby", "rust", "kotlin" },
  root_markers = { ".git", "pyproject.toml", "setup.py", "package.json", "pom.xml" },
  -- editor.Settings: weights ("float", "int8"), threads, threshold (0..1), decoding
  -- ("consensus", "greedy"), copy_from ("file", "window"), repository (true, false).
  init_options = vim.env.CODE_T5_SETTINGS and vim.json.decode(vim.env.CODE_T5_SETTINGS) or nil,
})
vim.lsp.enable("code_t5")

vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == "code_t5" then
      vim.lsp.inline_completion.enable(true, { bufnr = args.buf })
    end
  end,
})

vim.keymap.set("i", "<Tab>", function()
  if not vim.lsp.inline_completion.get() then
    return "<Tab>"
  end
end, { expr = true, desc = "take code_t5's suggestion" })
