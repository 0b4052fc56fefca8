/**
 * Everything the extension knows about the tritonsmith server, in one declarative object
 * (the `BLACK_TOOL_CONFIG` pattern of Microsoft's Python tool extensions). The other modules
 * read it; none of them hard-codes a module name, a setting or a command id.
 */

export const TOOL_CONFIG = {
    /** Shown in the status bar, messages and the output channel. */
    displayName: 'Tritonsmith',
    /** The Python module (and distribution) that holds the server. */
    module: 'tritonsmith',
    /** Arguments after the interpreter: `python -m tritonsmith serve` (stdio). */
    serverArgs: ['-m', 'tritonsmith', 'serve'],
    /** The settings section the server reads through `workspace/configuration`. */
    settingsSection: 'tritonsmith',
    /** Client-only settings: they configure the extension, never reach the server. */
    clientOnlySettings: ['interpreter'],
    /** Settings whose change restarts the server; every other one reaches it via didChangeConfiguration. */
    restartSettings: ['tritonsmith.interpreter'],
    /** How long to wait for more changes before restarting. */
    restartDebounceMs: 1000,
    outputChannel: 'Tritonsmith',
    /** The wheel inside the .vsix (`bundled/tritonsmith-<version>-py3-none-any.whl`). */
    bundledDir: 'bundled',
    wheelPattern: /^tritonsmith-.+\.whl$/,
    /** The optional extra with torch and triton: compile, verify, time and search. */
    evalExtra: 'eval',
    /** The interpreter used when neither the setting nor the Python extension names one. */
    fallbackInterpreter: process.platform === 'win32' ? 'python' : 'python3',
    pythonExtensionId: 'ms-python.python',
    /** The Anthropic key: kept in SecretStorage, given to the server as this variable. */
    apiKeySecret: 'tritonsmith.anthropicApiKey',
    apiKeyEnv: 'ANTHROPIC_API_KEY',
    /** The diagnostics' `source`, and where a rule's page lives when a diagnostic carries no link. */
    diagnosticSource: 'tritonsmith',
    ruleDocsUrl: 'https://github.com/tritonsmith/tritonsmith/blob/main/docs/rules/{code}.md',
    /** Rule codes: TS + digits (builtin), TSL + digits (learned), TSA + digits (imported). */
    ruleCodePattern: /^TS[LA]?\d+$/i,
    /** How long the "is tritonsmith importable" check may take. */
    importCheckTimeoutMs: 30_000,
    /** The extension's own command ids; the server's are `tritonsmith.server.*` and never collide. */
    commands: {
        restart: 'tritonsmith.restart',
        showOutput: 'tritonsmith.showOutput',
        openRuleDocs: 'tritonsmith.openRuleDocs',
        setApiKey: 'tritonsmith.setApiKey',
        installServer: 'tritonsmith.installServer',
    },
    serverCommandPrefix: 'tritonsmith.server.',
} as const;

export type CommandId = (typeof TOOL_CONFIG.commands)[keyof typeof TOOL_CONFIG.commands];

/** The documentation page of a rule code. */
export function ruleDocsUrl(code: string): string {
    return TOOL_CONFIG.ruleDocsUrl.replace('{code}', code.toUpperCase());
}
