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
        chooseInterpreter: 'tritonsmith.chooseInterpreter',
        verifyNow: 'tritonsmith.verifyNow',
        optimize: 'tritonsmith.optimize',
        acceptSearchResult: 'tritonsmith.acceptSearchResult',
        rejectSearchResult: 'tritonsmith.rejectSearchResult',
        showSearch: 'tritonsmith.showSearch',
        learnRules: 'tritonsmith.learnRules',
        refreshRules: 'tritonsmith.refreshRules',
        acceptRule: 'tritonsmith.acceptRule',
        rejectRule: 'tritonsmith.rejectRule',
        showLearnedRule: 'tritonsmith.showLearnedRule',
    },
    serverCommandPrefix: 'tritonsmith.server.',
    /** The server's `workspace/executeCommand` ids (docs/lsp-extensions.md). */
    serverCommands: {
        /** (uri): compile (and verify) the document's kernels now. */
        verify: 'tritonsmith.server.verify',
        /** (uri, kernel, mode, {proposer}?) → search id | null. */
        optimize: 'tritonsmith.server.optimize',
        /** (searchId) → whether it was running. */
        cancelSearch: 'tritonsmith.server.cancelSearch',
        /** (searchId) → whether the edit was applied (the server asks first if the buffer changed). */
        applySearchResult: 'tritonsmith.server.applySearchResult',
        /** (journalId, nodeId) → {source, kind, outcome, speedup, message, ...} | null. */
        searchNode: 'tritonsmith.server.searchNode',
        /** (uri?) → [{id, path, uri, kernel, status, started, finished, nodes, bestSpeedup, costUsd}], newest first. */
        listSearches: 'tritonsmith.server.listSearches',
        /** (journalId) → a searchResult payload (edit null) | null. */
        searchTree: 'tritonsmith.server.searchTree',
    },
    /** Server → client notifications. */
    notifications: {
        searchResult: 'tritonsmith/searchResult',
        /** After each evaluated node: {searchId, journalId, uri, kernel, step, steps, node}. */
        searchProgress: 'tritonsmith/searchProgress',
    },
    /**
     * `capabilities.experimental` at initialize: this client reviews search results itself (diff
     * editor, accept/reject), so the server sends only `tritonsmith/searchResult`.
     */
    experimentalCapabilities: { tritonsmith: { searchResultSupport: true } },
    /** The kind of the server's "Optimize this kernel" code actions; arguments [uri, kernel, mode]. */
    optimizeActionKind: 'refactor.rewrite.optimize.tritonsmith',
    /** Search modes the server accepts, with the words the quick pick shows. */
    searchModes: [
        { mode: 'auto', label: 'auto', detail: 'refine the kernel, and regenerate it when refining stalls' },
        { mode: 'refine', label: 'refinement', detail: 'small edits of the best kernel so far' },
        { mode: 'regenerate', label: 'regeneration', detail: 'rewrite the kernel from scratch' },
    ],
    /** Proposers a search may use (the `proposer` setting's values, `auto` aside). */
    proposers: [
        { proposer: 'offline', detail: 'launch and config moves, structural transformations; no network' },
        { proposer: 'anthropic', detail: 'an Anthropic model (asks before sending code)' },
        { proposer: 'openai', detail: 'the OpenAI-compatible endpoint of tritonsmith.baseUrl' },
    ],
    /** The proposer setting (shown as the default); a per-search choice goes in optimize's options. */
    proposerSetting: 'proposer',
    /**
     * Work-done progress titles: a search's begins with this (`Optimizing <kernel>`, cancellable);
     * a save's compile job begins with `Compiling`, and reports `checking … against its
     * reference` while verifying.
     */
    searchProgressPrefix: 'Optimizing ',
    compileProgressPrefix: 'Compiling',
    verifyProgressPattern: /against its reference/,
    /** Virtual documents of search results (`tritonsmith-search:/<searchId>/<which>/<file>`). */
    searchScheme: 'tritonsmith-search',
    /** The search tree webview and the learned-rules tree view. */
    searchViewType: 'tritonsmith.searchTree',
    rulesViewId: 'tritonsmith.learnedRules',
    /** Learned rules through the command line, run by the server's interpreter in a workspace folder. */
    cli: {
        induce: ['-m', 'tritonsmith', 'adapt', 'induce', '--format', 'json'],
        review: ['-m', 'tritonsmith', 'rules', 'review', '--all', '--format', 'json'],
        accept: ['-m', 'tritonsmith', 'rules', 'review', '--accept'],
        reject: ['-m', 'tritonsmith', 'rules', 'review', '--reject'],
        timeoutMs: 120_000,
    },
    /** Rule lifecycle states in a learned pack (format 2). */
    ruleStatuses: ['pending', 'active', 'rejected'],
} as const;

export type CommandId = (typeof TOOL_CONFIG.commands)[keyof typeof TOOL_CONFIG.commands];

/** The documentation page of a rule code. */
export function ruleDocsUrl(code: string): string {
    return TOOL_CONFIG.ruleDocsUrl.replace('{code}', code.toUpperCase());
}
