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
    ) {}
    static file(path: string): Uri {
        return new Uri('file', path, `file://${path}`);
    }
    static parse(text: string): Uri {
        const scheme = text.split(':')[0] ?? '';
        return new Uri(scheme, scheme === 'file' ? text.slice('file://'.length) : '', text);
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
    /** Answers the next message boxes give, in order (undefined: dismissed). */
    messageAnswers: [] as (string | undefined)[],
    inputAnswers: [] as (string | undefined)[],
    opened: [] as string[],
    reset(): void {
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
};

export const env = {
    openExternal(uri: Uri): Promise<boolean> {
        fake.opened.push(uri.toString());
        return Promise.resolve(true);
    },
};

export const languages = {};
