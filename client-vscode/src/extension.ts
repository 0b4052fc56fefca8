/** Wiring only: output, status, server, commands and the events that restart the server. */
import * as vscode from 'vscode';
import { openRuleDocs, registerCommands, setApiKey } from './commands';
import { TOOL_CONFIG } from './config';
import { pythonEnvironmentsApi } from './interpreter';
import { Debouncer, needsRestart } from './restart';
import { ServerManager } from './server';
import { StatusItem } from './status';

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const output = vscode.window.createOutputChannel(TOOL_CONFIG.outputChannel, { log: true });
    const status = new StatusItem();
    const server = new ServerManager({ extensionPath: context.extensionPath, output, status, secrets: context.secrets });
    manager = server;
    const interpreterCheck = new Debouncer(() => void server.onInterpreterMaybeChanged());
    // The key reaches the server only through its environment, so a new key needs a new process.
    const keyRestart = new Debouncer(() => void server.restart('the API key changed'), 200);

    context.subscriptions.push(
        output,
        status,
        interpreterCheck,
        keyRestart,
        ...registerCommands({
            restart: () => server.restart('the restart command'),
            showOutput: () => output.show(),
            openRuleDocs,
            setApiKey: async () => (await setApiKey(context.secrets)) && keyRestart.trigger(),
            installServer: () => server.install(),
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
    await server.start();
}

export async function deactivate(): Promise<void> {
    await manager?.stop();
    manager = undefined;
}
