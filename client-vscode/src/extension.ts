/**
 * Wiring only: output, status, server, commands, the search review and view, learned rules, and
 * the events that restart the server.
 */
import * as vscode from 'vscode';
import { openRuleDocs, registerCommands, setApiKey } from './commands';
import { TOOL_CONFIG } from './config';
import { chooseInterpreter, pythonEnvironmentsApi } from './interpreter';
import { optimizeCommand, verifyNow, type ActionLike } from './optimize';
import { ProgressTracker } from './progress';
import { Debouncer, needsRestart } from './restart';
import { SearchReviews } from './review';
import { RulesCli, RulesTreeProvider, decideRule, learnRules, showLearnedRule } from './rules';
import { SearchView, pickSearch } from './searchView';
import { ServerManager } from './server';
import { StatusItem } from './status';

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const output = vscode.window.createOutputChannel(TOOL_CONFIG.outputChannel, { log: true });
    const status = new StatusItem();
    const log = (line: string) => output.info(line);
    const execute = (command: string, ...args: unknown[]) => vscode.commands.executeCommand(command, ...args);
    const progress = new ProgressTracker();
    const reviews: SearchReviews = new SearchReviews(execute, (id) => view.show(id), log);
    const view: SearchView = new SearchView({
        results: () => reviews.results(),
        isPending: (id) => reviews.isPending(id),
        outcome: (id) => reviews.outcome(id),
        accept: (id) => reviews.accept(id),
        reject: (id) => reviews.reject(id),
        openDiff: (result, column) => reviews.openDiff(result, column),
        openOriginal: (result, column) => reviews.openOriginal(result, column),
        openNode: (result, nodeId, column) => reviews.openNode(result, nodeId, column),
        nodeChange: (result, nodeId) => reviews.nodeChange(result, nodeId),
        running: () => progress.running(),
    });
    const server = new ServerManager({
        extensionPath: context.extensionPath,
        output,
        status,
        secrets: context.secrets,
        hooks: {
            onSearchResult: (params) => void reviews.receive(params),
            onProgress: (token, value, cancel) => progress.handle(token, value, cancel),
            onSearchProgress: (params) => reviews.progress(params),
            onStopped: () => progress.clear(),
        },
    });
    const folder = () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const rulesCli = new RulesCli(() => server.interpreterCommand(), context.extensionPath);
    const rules = new RulesTreeProvider(rulesCli, folder, log);
    manager = server;
    const interpreterCheck = new Debouncer(() => void server.onInterpreterMaybeChanged());
    // The key reaches the server only through its environment, so a new key needs a new process.
    const keyRestart = new Debouncer(() => void server.restart('the API key changed'), 200);

    context.subscriptions.push(
        output,
        status,
        progress,
        reviews,
        view,
        rules,
        reviews.onDidChangeResult((id) => view.update(id)),
        reviews.onDidDecide((result) => progress.settled(result.kernel)),
        progress.onDidChange(() => view.update()),
        vscode.workspace.registerTextDocumentContentProvider(TOOL_CONFIG.searchScheme, reviews),
        vscode.window.createTreeView(TOOL_CONFIG.rulesViewId, { treeDataProvider: rules, showCollapseAll: false }),
        interpreterCheck,
        keyRestart,
        ...registerCommands({
            restart: () => server.restart('the restart command'),
            showOutput: () => output.show(),
            openRuleDocs,
            setApiKey: async () => (await setApiKey(context.secrets)) && keyRestart.trigger(),
            installServer: () => server.install(),
            chooseInterpreter: () => chooseInterpreter(),
            verifyNow: () => verifyNow(execute),
            optimize: () =>
                optimizeCommand({
                    execute,
                    log,
                    codeActions: (uri, line, character) =>
                        server.codeActions(uri, line, character, TOOL_CONFIG.optimizeActionKind) as Promise<ActionLike[] | undefined>,
                }),
            acceptSearchResult: (arg) => reviews.accept(arg),
            rejectSearchResult: (arg) => reviews.reject(arg),
            showSearch: () => pickSearch(reviews, view),
            learnRules: () => learnRules(rulesCli, folder(), rules),
            refreshRules: () => rules.refresh(),
            acceptRule: (arg) => decideRule(rulesCli, folder(), rules, arg, 'accept'),
            rejectRule: (arg) => decideRule(rulesCli, folder(), rules, arg, 'reject'),
            showLearnedRule: (arg) => showLearnedRule(arg),
        }),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (needsRestart(event)) {
                interpreterCheck.trigger();
            }
        }),
        context.secrets.onDidChange((event) => {
            if (event.key === TOOL_CONFIG.apiKeySecret) {
                keyRestart.trigger();
            }
        }),
    );

    const python = await pythonEnvironmentsApi();
    if (python?.onDidChangeActiveEnvironmentPath) {
        context.subscriptions.push(python.onDidChangeActiveEnvironmentPath(() => interpreterCheck.trigger()));
    }
    // Not awaited: activation ends now, so every command works while the server starts (and
    // while a first run's install question waits for an answer).
    void server.start();
}

export async function deactivate(): Promise<void> {
    await manager?.stop();
    manager = undefined;
}
