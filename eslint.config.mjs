// ESLint flat config for the VS Code extension (client-vscode/).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['dist/**', 'out/**', 'bundled/**', 'node_modules/**', '.venv/**', 'client-vscode/e2e/**'] },
    js.configs.recommended,
    ...tseslint.configs.strictTypeChecked,
    {
        files: ['client-vscode/**/*.ts'],
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        rules: {
            '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
            '@typescript-eslint/no-confusing-void-expression': 'off',
            eqeqeq: 'error',
            curly: 'error',
        },
    },
    {
        // node:test's describe/it return promises the runner awaits; fakes are loosely typed.
        files: ['client-vscode/test/**/*.ts'],
        rules: {
            '@typescript-eslint/no-floating-promises': 'off',
            '@typescript-eslint/no-unsafe-member-access': 'off',
            '@typescript-eslint/no-unnecessary-condition': 'off',
        },
    },
    {
        files: ['client-vscode/**/*.mjs'],
        ...tseslint.configs.disableTypeChecked,
        languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    },
);
