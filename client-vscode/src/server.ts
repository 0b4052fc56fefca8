/**
 * The language client: spawns `python -m tritonsmith serve` over stdio and keeps one running.
 *
 * Settings reach the server through `workspace/configuration` and `didChangeConfiguration`
 * (section `tritonsmith`; initialization options carry them too, as the fallback). The API key
 * reaches it only through the process environment.
 */
import * as vscode from 'vscode';
import {
    CloseAction,
    CodeActionRequest,
    CodeActionTriggerKind,
    DidChangeConfigurationNotification,
    ErrorAction,
    LanguageClient,
    RevealOutputChannelOn,
    State,
    WorkDoneProgressCancelNotification,
    type ErrorHandler,
    type Executable,
    type LanguageClientOptions,
    type Middleware,
    type StaticFeature,
} from 'vscode-languageclient/node';
import { TOOL_CONFIG } from './config';
import { CrashPolicy, RecentOutput, crashMessage, recording } from './crash';
import { levelled } from './serverLog';
import {
    checkInstalled,
    decide,
    ensureInstalled,
    findBundledWheel,
    offerEval,
    spawnRunner,
    type InstallState,
    type InstallUi,
    type Offer,
    type PipCommand,
    type RunResult,
} from './install';
import { resolveInterpreter, type Interpreter } from './interpreter';
import { interpreterChanged } from './restart';
import type { ProgressValue } from './progress';
import type { StatusItem } from './status';

/** What the rest of the extension plugs into the language client. */
export interface ClientHooks {
    /** `tritonsmith/searchResult` params. */
    onSearchResult(params: unknown): void;
    /** `tritonsmith/searchProgress` params: one evaluated node of a running search. */
    onSearchProgress(params: unknown): void;
    /** A work-done progress value; returns whether vscode-languageclient's display should see it too. */
    onProgress(token: string | number, value: ProgressValue, cancel: () => void): boolean;
    /** The server stopped: forget its progress. */
    onStopped(): void;
}

/** Declares `capabilities.experimental.tritonsmith` (this client reviews search results itself). */
export const experimentalFeature: StaticFeature = {
    fillClientCapabilities(capabilities) {
        capabilities.experimental = { ...(capabilities.experimental as object | undefined), ...TOOL_CONFIG.experimentalCapabilities };
    },
    initialize() {
        /* nothing to set up */
    },
    getState: () => ({ kind: 'static' }),
    clear() {
        /* nothing to clear */
    },
};

/**
 * Middleware: progress goes to the hooks first. `cancel(token)` sends
 * `window/workDoneProgress/cancel`.
 */
export function buildMiddleware(hooks: ClientHooks, cancel: (token: string | number) => void): Middleware {
    return {
        handleWorkDoneProgress(token, params, next) {
            if (hooks.onProgress(token, params, () => cancel(token))) {
                next(token, params);
            }
        },
    };
}

/** How to spawn the server: the interpreter, `-m tritonsmith serve`, and the key in the environment. */
export function buildServerOptions(
    python: string,
    cwd: string,
    apiKey: string | undefined,
    baseEnv: NodeJS.ProcessEnv = process.env,
): Executable {
    const env: NodeJS.ProcessEnv = { ...baseEnv, PYTHONUNBUFFERED: '1' };
    if (apiKey) {
        env[TOOL_CONFIG.apiKeyEnv] = apiKey;
    }
    return { command: python, args: [...TOOL_CONFIG.serverArgs], options: { cwd, env } };
}

/** The `tritonsmith` settings as plain data (a WorkspaceConfiguration's values), without the client-only ones. */
export function serverSettings(configuration: object): Record<string, unknown> {
    const plain = JSON.parse(JSON.stringify(configuration)) as Record<string, unknown>;
    const clientOnly: readonly string[] = TOOL_CONFIG.clientOnlySettings;
    return Object.fromEntries(Object.entries(plain).filter(([key]) => !clientOnly.includes(key)));
}

/** The client's options: Python files, settings sync, pull diagnostics on change and save. */
export function buildClientOptions(
    outputChannel: vscode.OutputChannel,
    settings: Record<string, unknown>,
    middleware?: Middleware,
    errorHandler?: ErrorHandler,
): LanguageClientOptions {
    return {
        ...(middleware ? { middleware } : {}),
        ...(errorHandler ? { errorHandler } : {}),
        documentSelector: [
            { scheme: 'file', language: 'python' },
            { scheme: 'untitled', language: 'python' },
        ],
        // Sends didChangeConfiguration on every change of the section; the server then pulls the
        // settings with workspace/configuration (DESIGN.md, "Settings").
        // eslint-disable-next-line @typescript-eslint/no-deprecated
        synchronize: { configurationSection: TOOL_CONFIG.settingsSection },
        // vscode-languageclient 10 defaults these to false: say what we want explicitly.
        diagnosticPullOptions: { onChange: true, onSave: true },
        outputChannel,
        revealOutputChannelOn: RevealOutputChannelOn.Never, // errors show in the status bar
        // Fallback for servers that cannot pull settings; never secrets.
        initializationOptions: { settings },
    };
}

export interface ServerManagerOptions {
    readonly extensionPath: string;
    readonly output: vscode.LogOutputChannel;
    readonly status: StatusItem;
    readonly secrets: vscode.SecretStorage;
    readonly hooks: ClientHooks;
}

/** Where a line the language client logs goes: its level and text. */
export interface ClientLogLine {
    level: 'info' | 'warn' | 'error';
    text: string;
}

/**
 * A line vscode-languageclient would log, as the output channel should show it: the library
 * calls every exit an error ("Server process exited with code 0." after each restart), and its
 * own "[Error - 10:02:03]" prefix doubles the log channel's time and level.
 */
export function clientLogLine(level: ClientLogLine['level'], message: string, data?: unknown): ClientLogLine {
    if (/^Server process exited with code 0\.?$/.test(message)) {
        return { level: 'info', text: 'The server process exited normally.' };
    }
    const detail = data === undefined || data === null ? '' : `\n${typeof data === 'string' ? data : JSON.stringify(data)}`;
    return { level, text: message + detail };
}

/** The language client, logging through the output channel's own levels and times (`clientLogLine`). */
class TritonsmithLanguageClient extends LanguageClient {
    constructor(
        id: string,
        name: string,
        serverOptions: Executable,
        clientOptions: LanguageClientOptions,
        private readonly log: vscode.LogOutputChannel,
    ) {
        super(id, name, serverOptions, clientOptions);
    }

    override info(message: string, data?: unknown, showNotification?: boolean): void {
        this.write('info', message, data, showNotification);
    }

    override warn(message: string, data?: unknown, showNotification?: boolean): void {
        this.write('warn', message, data, showNotification);
    }

    override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
        this.write('error', message, data, showNotification);
    }

    private write(level: ClientLogLine['level'], message: string, data: unknown, show?: boolean | 'force'): void {
        const line = clientLogLine(level, message, data);
        this.log[line.level](line.text);
        if (show === 'force' && line.level !== 'info') {
            const open = 'Show output';
            const notify = line.level === 'error' ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
            void notify(`Tritonsmith: ${message}`, open).then((choice) => choice && this.log.show(true));
        }
    }
}

/**
 * Restarts the server after an unexpected exit (`CrashPolicy`); past the limit, `giveUp` says so.
 * Read and write errors are survived three times in a row, as vscode-languageclient does.
 */
export function crashHandler(policy: CrashPolicy, giveUp: () => void, now: () => number = Date.now): ErrorHandler {
    return {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: () => {
            if (policy.closed(now())) {
                return { action: CloseAction.Restart, handled: true };
            }
            giveUp();
            return { action: CloseAction.DoNotRestart, handled: true };
        },
    };
}

/** Starts, stops and restarts the one language client; operations run one at a time. */
const CHOOSE_INTERPRETER = 'Choose interpreter';
const NOT_NOW = 'Not now';

export class ServerManager implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private interpreter: Interpreter | undefined;
    private stopping = false;
    private queue: Promise<unknown> = Promise.resolve();

    constructor(private readonly options: ServerManagerOptions) {}

    /** Tells the server its settings changed (it pulls them again). */
    settingsChanged(): void {
        void this.client?.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    }

    /** The server's code actions of one kind at a position (raw LSP: disabled ones included); undefined when no server runs. */
    async codeActions(uri: string, line: number, character: number, kind: string): Promise<unknown[] | undefined> {
        const client = this.client;
        if (!client?.isRunning()) {
            return undefined;
        }
        const position = { line, character };
        const result = await client.sendRequest(CodeActionRequest.type, {
            textDocument: { uri },
            range: { start: position, end: position },
            context: { diagnostics: [], only: [kind], triggerKind: CodeActionTriggerKind.Invoked },
        });
        return result ?? [];
    }

    /** The interpreter the running server uses, else the one it would use. */
    async interpreterCommand(): Promise<string> {
        return this.runningInterpreter ?? (await resolveInterpreter(this.resource())).command;
    }

    /** The interpreter the running server uses. */
    get runningInterpreter(): string | undefined {
        return this.client ? this.interpreter?.command : undefined;
    }

    start(): Promise<void> {
        return this.serialize(() => this.doStart());
    }

    restart(reason: string): Promise<void> {
        return this.serialize(async () => {
            this.options.output.info(`Restarting the server: ${reason}`);
            await this.doStop();
            this.options.status.set('starting', `restarting: ${reason}`);
            await this.doStart();
            if (this.client?.isRunning()) {
                // The status item goes back to its steady icon; say once that the restart happened.
                vscode.window.setStatusBarMessage(`$(check) ${TOOL_CONFIG.displayName}: server restarted`, 4000);
            }
        });
    }

    /** Restarts when the interpreter now resolves to another program (or nothing runs yet). */
    async onInterpreterMaybeChanged(): Promise<void> {
        const next = await resolveInterpreter(this.resource());
        if (interpreterChanged(this.runningInterpreter, next.command)) {
            await this.restart(`the interpreter is now ${next.command} (${next.source})`);
        }
    }

    /**
     * Offers the core install (when missing) and the `[eval]` extra, then restarts. The questions
     * are asked outside the queue of starts and stops: an open question never holds a command.
     */
    async install(): Promise<void> {
        const interpreter = await resolveInterpreter(this.resource());
        const state = await checkInstalled(interpreter.command, this.options.extensionPath);
        if (state.kind === 'installed') {
            const wheel = findBundledWheel(this.options.extensionPath);
            if (await offerEval(interpreter.command, wheel, this.ui())) {
                await this.restart('PyTorch and Triton were installed');
            }
            return;
        }
        await this.askToInstall(interpreter, state);
    }

    /**
     * The install question for an interpreter without tritonsmith: Install, Choose interpreter,
     * or Not now. Never awaited by a start: the server stays off until an answer (or another
     * interpreter) comes, and every command works meanwhile.
     */
    private async askToInstall(interpreter: Interpreter, state: InstallState): Promise<void> {
        const wheel = findBundledWheel(this.options.extensionPath);
        const { offer, problem } = decide(state, interpreter.command, wheel);
        if (problem) {
            this.ui().error(problem);
            return;
        }
        if (!offer) {
            return;
        }
        const choice = await vscode.window.showWarningMessage(offer.message, offer.accept, CHOOSE_INTERPRETER, NOT_NOW);
        if (choice === CHOOSE_INTERPRETER) {
            await vscode.commands.executeCommand(TOOL_CONFIG.commands.chooseInterpreter);
            return;
        }
        if (choice !== offer.accept) {
            return;
        }
        // Accepted: pip, then the start, in the queue. The [eval] offer that follows a core
        // install asks on its own, outside the queue too.
        const accepted: InstallUi = { ...this.ui(), ask: async (asked) => asked.kind === 'core' || this.ui().ask(asked) };
        await this.serialize(async () => {
            const ready = await ensureInstalled(state, interpreter.command, wheel, accepted, () => {
                void this.restart('PyTorch and Triton were installed');
            });
            if (ready) {
                await this.doStop();
                await this.doStart();
            }
        });
    }

    stop(): Promise<void> {
        return this.serialize(() => this.doStop());
    }

    dispose(): void {
        void this.stop();
    }

    private serialize<T>(operation: () => Promise<T>): Promise<T> {
        const next = this.queue.then(operation, operation);
        this.queue = next.catch(() => undefined);
        return next;
    }

    private resource(): vscode.Uri | undefined {
        return vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    }

    private async doStart(knownState?: InstallState): Promise<void> {
        const { output, status, extensionPath } = this.options;
        status.set('starting');
        const interpreter = await resolveInterpreter(this.resource());
        this.interpreter = interpreter;
        output.info(`Interpreter: ${interpreter.command} (from ${interpreter.source})`);
        // `python -m` puts the working folder first on sys.path: run from the extension's own
        // folder so that a workspace folder named `tritonsmith` cannot shadow the server.
        const state = knownState ?? (await checkInstalled(interpreter.command, extensionPath));
        if (state.kind === 'no-python') {
            output.error(`The interpreter cannot run: ${state.detail}`);
            status.set('noPython', `${interpreter.command} (from ${interpreter.source}): ${state.detail}`);
            const choose = CHOOSE_INTERPRETER;
            void vscode.window
                .showErrorMessage(`${TOOL_CONFIG.displayName} cannot run the Python interpreter ${interpreter.command} (${state.detail}).`, choose)
                .then((choice) => choice && vscode.commands.executeCommand(TOOL_CONFIG.commands.chooseInterpreter));
            return;
        }
        if (state.kind !== 'installed') {
            output.warn(`tritonsmith is not importable by ${interpreter.command}: ${state.detail}`);
            status.set('notInstalled', interpreter.command);
            void this.askToInstall(interpreter, state); // not awaited: the question holds nothing
            return;
        }
        output.info(`tritonsmith ${state.version}`);
        // Linting needs only tritonsmith; compile, verify and search need torch and triton too.
        const lintOnly = state.evalReady === false;
        if (lintOnly) {
            output.warn(`PyTorch and Triton are not installed in ${interpreter.command}: compile, verify and search are off`);
        }
        const apiKey = await this.options.secrets.get(TOOL_CONFIG.apiKeySecret);
        const settings = serverSettings(vscode.workspace.getConfiguration(TOOL_CONFIG.settingsSection));
        const hooks = this.options.hooks;
        const middleware = buildMiddleware(hooks, (token) => {
            void client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
        });
        const recent = new RecentOutput();
        const crashes = new CrashPolicy();
        const giveUp = () => {
            status.set('error', 'The server keeps stopping. See the output for why.');
            const restart = 'Restart';
            const show = 'Show output';
            void vscode.window
                .showErrorMessage(crashMessage(TOOL_CONFIG.displayName, crashes.recent, recent.last(3)), restart, show)
                .then((choice) => {
                    if (choice === restart) {
                        void this.restart('the user asked after the server stopped');
                    } else if (choice === show) {
                        output.show();
                    }
                });
        };
        const client = new TritonsmithLanguageClient(
            TOOL_CONFIG.module,
            TOOL_CONFIG.displayName,
            buildServerOptions(interpreter.command, extensionPath, apiKey),
            buildClientOptions(recording(levelled(output), recent), settings, middleware, crashHandler(crashes, giveUp)),
            output,
        );
        client.registerFeature(experimentalFeature);
        client.onNotification(TOOL_CONFIG.notifications.searchResult, (params: unknown) => hooks.onSearchResult(params));
        client.onNotification(TOOL_CONFIG.notifications.searchProgress, (params: unknown) => hooks.onSearchProgress(params));
        client.onDidChangeState((event) => {
            if (event.newState === State.Running) {
                status.set(lintOnly ? 'lintOnly' : 'ready', interpreter.command);
            } else if (event.newState === State.Starting) {
                status.set('starting', interpreter.command);
            } else {
                hooks.onStopped();
                if (!this.stopping) {
                    status.set('error', 'The server stopped; restarting it. See the output for why.');
                }
            }
        });
        this.client = client;
        try {
            await client.start();
        } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            output.error(`The server did not start: ${message}`);
            status.set('error', message);
            void vscode.window
                .showErrorMessage(`Tritonsmith: the server did not start (${message}).`, 'Show output')
                .then((choice) => choice && output.show());
        }
    }

    private async doStop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (!client) {
            return;
        }
        this.stopping = true;
        try {
            await client.stop(2000);
        } catch (error) {
            this.options.output.warn(`Stopping the server: ${String(error)}`);
        } finally {
            this.stopping = false;
            this.options.status.set('stopped');
        }
    }

    private ui(): InstallUi {
        const output = this.options.output;
        return {
            ask: async (offer: Offer) => {
                const choice = await vscode.window.showWarningMessage(offer.message, offer.accept, NOT_NOW);
                return choice === offer.accept;
            },
            run: (command: PipCommand, title: string) =>
                Promise.resolve(
                    vscode.window.withProgress(
                        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
                        (_progress, token): Promise<RunResult> => {
                            const abort = new AbortController();
                            token.onCancellationRequested(() => abort.abort());
                            output.show(true);
                            return spawnRunner((line) => output.info(line), abort.signal)(
                                command.command,
                                command.args,
                                this.options.extensionPath,
                            );
                        },
                    ),
                ),
            error: (message: string) => {
                output.error(message);
                void vscode.window.showErrorMessage(message);
            },
            info: (message: string) => {
                output.info(message);
                void vscode.window.showInformationMessage(message);
            },
        };
    }
}
