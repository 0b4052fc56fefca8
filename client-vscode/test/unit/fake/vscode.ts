/**
 * A small fake of the `vscode` module for unit tests (esbuild aliases `vscode` to this file).
 * Tests script it through `fake`: settings, installed extensions, answers to prompts; and read
 * back what the code did: registered commands, shown messages, opened links.
 */
/* eslint-disable @typescript-eslint/no-extraneous-class, @typescript-eslint/no-unused-vars */

export class Disposable {
    constructor(private readonly callOnDispose: () => void = () => undefined) {}
    dispose(): void {
        this.callOnDispose();
    }
    static from(...items: { dispose(): unknown }[]): Disposable {
        return new Disposable(() => items.forEach((item) => item.dispose()));
    }
}

export type Event<T> = (listener: (value: T) => unknown) => Disposable;

export class EventEmitter<T> {
    private listeners: ((value: T) => unknown)[] = [];
    readonly event: Event<T> = (listener) => {
        this.listeners.push(listener);
        return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
    };
    fire(value: T): void {
        this.listeners.forEach((listener) => listener(value));
    }
    dispose(): void {
        this.listeners = [];
    }
}

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly fsPath: string,
        private readonly text: string,
        readonly path: string = '',
    ) {}
    static file(path: string): Uri {
        return new Uri('file', path, `file://${path}`, path);
    }
    static joinPath(base: Uri, ...parts: string[]): Uri {
        return Uri.file([base.fsPath, ...parts].join('/'));
    }
    static parse(text: string): Uri {
        const scheme = text.split(':')[0] ?? '';
        const rest = text.slice(scheme.length + 1).replace(/^\/\/[^/]*/, '');
        return new Uri(scheme, scheme === 'file' ? text.slice('file://'.length) : '', text, rest);
    }
    toString(): string {
        return this.text;
    }
}

export class Position {
    constructor(
        readonly line: number,
        readonly character: number,
    ) {}
    isBefore(other: Position): boolean {
        return this.line < other.line || (this.line === other.line && this.character < other.character);
    }
}

export class Range {
    constructor(
        readonly start: Position,
        readonly end: Position,
    ) {}
    contains(position: Position): boolean {
        return !position.isBefore(this.start) && !this.end.isBefore(position);
    }
}

export class ThemeColor {
    constructor(readonly id: string) {}
}

export class ThemeIcon {
    constructor(readonly id: string) {}
}

export enum TreeItemCollapsibleState {
    None = 0,
    Collapsed = 1,
    Expanded = 2,
}

export class TreeItem {
    description?: string;
    tooltip?: string;
    contextValue?: string;
    iconPath?: ThemeIcon;
    command?: { command: string; title: string; arguments?: unknown[] };
    constructor(
        readonly label: string,
        readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
    ) {}
}

export class TabInputTextDiff {
    constructor(
        readonly original: Uri,
        readonly modified: Uri,
    ) {}
}

export enum ViewColumn {
    Active = -1,
    Beside = -2,
    One = 1,
}

export enum StatusBarAlignment {
    Left = 1,
    Right = 2,
}

export enum ProgressLocation {
    SourceControl = 1,
    Window = 10,
    Notification = 15,
}

// Base classes vscode-languageclient extends when it loads.
export class CancellationError extends Error {}
export class CallHierarchyItem {}
export class CodeLens {}
export class CompletionItem {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}
export class CodeAction {}
export class Diagnostic {}

interface FakeExtension {
    isActive: boolean;
    exports: unknown;
    activate(): Promise<unknown>;
}

/** A status bar item's state, as the code left it. */
export interface FakeStatusBarItem {
    id: string;
    text: string;
    tooltip: unknown;
    command: unknown;
    name: string;
    visible: boolean;
    backgroundColor: unknown;
    show(): void;
    hide(): void;
    dispose(): void;
}

/** A window.withProgress call: its options, what it reported, whether it is over. */
export interface FakeProgress {
    options: { location: number; title?: string; cancellable?: boolean };
    reports: { message?: string; increment?: number }[];
    done: boolean;
    /** Presses the notification's Cancel button. */
    cancel(): void;
}

interface Message {
    readonly kind: 'info' | 'warning' | 'error';
    readonly text: string;
    readonly items: string[];
}

/** The scriptable state behind the fake. */
export const fake = {
    /** Settings by full key ("tritonsmith.interpreter"). */
    settings: new Map<string, unknown>(),
    extensions: new Map<string, FakeExtension>(),
    registeredCommands: [] as string[],
    messages: [] as Message[],
    /** Answers the next message boxes give, in order (undefined: dismissed; a promise: answered when it settles). */
    messageAnswers: [] as (string | undefined | Promise<string | undefined>)[],
    inputAnswers: [] as (string | undefined)[],
    opened: [] as string[],
    /** Every vscode.commands.executeCommand call; `commandResults` answers them by id. */
    executed: [] as { command: string; args: unknown[] }[],
    commandResults: new Map<string, (...args: unknown[]) => unknown>(),
    statusItems: [] as FakeStatusBarItem[],
    progress: [] as FakeProgress[],
    /** Open tabs, as vscode.window.tabGroups lists them; `closedTabs` gets what was closed. */
    tabs: [] as { input: unknown }[],
    closedTabs: [] as { input: unknown }[],
    quickPickAnswers: [] as (number | undefined)[],
    reset(): void {
        this.executed.length = 0;
        this.commandResults.clear();
        this.statusItems.length = 0;
        this.progress.length = 0;
        this.tabs.length = 0;
        this.closedTabs.length = 0;
        this.quickPickAnswers.length = 0;
        this.settings.clear();
        this.extensions.clear();
        this.registeredCommands.length = 0;
        this.messages.length = 0;
        this.messageAnswers.length = 0;
        this.inputAnswers.length = 0;
        this.opened.length = 0;
        workspace.workspaceFolders = undefined;
    },
};

export const workspace = {
    workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
    getConfiguration(section: string, _resource?: Uri) {
        return {
            get<T>(key: string, defaultValue?: T): T | undefined {
                const full = `${section}.${key}`;
                return fake.settings.has(full) ? (fake.settings.get(full) as T) : defaultValue;
            },
            has(key: string): boolean {
                return fake.settings.has(`${section}.${key}`);
            },
        };
    },
    getWorkspaceFolder(_uri: Uri) {
        return workspace.workspaceFolders?.[0];
    },
    onDidChangeConfiguration: new EventEmitter<unknown>().event,
};

export const extensions = {
    getExtension(id: string): FakeExtension | undefined {
        return fake.extensions.get(id);
    },
};

export const commands = {
    registerCommand(id: string, _handler: (...args: unknown[]) => unknown): Disposable {
        fake.registeredCommands.push(id);
        return new Disposable(() => (fake.registeredCommands = fake.registeredCommands.filter((c) => c !== id)));
    },
    executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
        fake.executed.push({ command, args });
        const answer = fake.commandResults.get(command);
        return Promise.resolve(answer ? answer(...args) : undefined);
    },
};

function message(kind: Message['kind']) {
    return (text: string, ...items: string[]): Promise<string | undefined> => {
        fake.messages.push({ kind, text, items });
        return Promise.resolve(fake.messageAnswers.shift());
    };
}

export const window = {
    activeTextEditor: undefined as unknown,
    showInformationMessage: message('info'),
    showWarningMessage: message('warning'),
    showErrorMessage: message('error'),
    showInputBox(_options?: unknown): Promise<string | undefined> {
        return Promise.resolve(fake.inputAnswers.shift());
    },
    /** Picks the item at the next index of fake.quickPickAnswers (undefined: dismissed). */
    showQuickPick<T>(items: T[] | Promise<T[]>, _options?: unknown): Promise<T | undefined> {
        return Promise.resolve(items).then((list) => {
            const index = fake.quickPickAnswers.shift();
            return index === undefined ? undefined : list[index];
        });
    },
    createStatusBarItem(id: string, _alignment?: StatusBarAlignment, _priority?: number): FakeStatusBarItem {
        const item: FakeStatusBarItem = {
            id,
            text: '',
            tooltip: undefined,
            command: undefined,
            name: '',
            visible: false,
            backgroundColor: undefined,
            show() {
                item.visible = true;
            },
            hide() {
                item.visible = false;
            },
            dispose() {
                item.visible = false;
            },
        };
        fake.statusItems.push(item);
        return item;
    },
    withProgress<R>(
        options: FakeProgress['options'],
        task: (progress: { report(value: { message?: string; increment?: number }): void }, token: unknown) => Promise<R>,
    ): Promise<R> {
        const cancelled = new EventEmitter<void>();
        const entry: FakeProgress = { options, reports: [], done: false, cancel: () => cancelled.fire() };
        fake.progress.push(entry);
        const result = task({ report: (value) => entry.reports.push(value) }, { onCancellationRequested: cancelled.event });
        return result.finally(() => (entry.done = true));
    },
    tabGroups: {
        get all() {
            return [{ tabs: [...fake.tabs] }];
        },
        close(tabs: { input: unknown }[]): Promise<boolean> {
            for (const tab of tabs) {
                fake.closedTabs.push(tab);
                fake.tabs.splice(fake.tabs.indexOf(tab), 1);
            }
            return Promise.resolve(true);
        },
    },
};

export const env = {
    openExternal(uri: Uri): Promise<boolean> {
        fake.opened.push(uri.toString());
        return Promise.resolve(true);
    },
};

export const languages = {};
