/**
 * "Tritonsmith: Optimize this kernel…" and "Tritonsmith: Verify now".
 *
 * Which kernels can be optimised is the server's call: the command asks it for its "Optimize this
 * kernel" code actions (arguments [uri, kernel, mode], or a disabled one with the reason) at the
 * cursor, or at each `@triton.jit` kernel of the file when the cursor is in none. Then a proposer
 * (the setting's, or one for this search only) and a mode, and `tritonsmith.server.optimize`.
 * A proposer chosen for one search is the command's 4th argument, `{proposer}`; the user's
 * settings are never written.
 */
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';

/** One "Optimize this kernel" action as the server offered it. */
export interface KernelOffer {
    readonly uri: string;
    readonly kernel: string;
    readonly modes: readonly string[];
    /** Why it cannot be optimised (a disabled action), or a running search to cancel. */
    readonly disabled?: string;
    readonly cancelSearchId?: string;
}

export interface ActionLike {
    readonly title?: string;
    readonly kind?: { value: string } | string;
    readonly disabled?: { reason: string };
    readonly command?: { command: string; arguments?: unknown[] } | string;
    readonly arguments?: unknown[];
}

/** The server's optimize actions (CodeActions or bare Commands) folded into one offer, if any. */
export function offerFromActions(actions: readonly ActionLike[] | undefined): KernelOffer | undefined {
    let uri: string | undefined;
    let kernel: string | undefined;
    const modes: string[] = [];
    let disabled: string | undefined;
    let cancelSearchId: string | undefined;
    for (const action of actions ?? []) {
        const command =
            typeof action.command === 'object' ? action.command : typeof action.command === 'string' ? { command: action.command, arguments: action.arguments } : undefined;
        if (action.disabled) {
            disabled = action.disabled.reason;
            continue;
        }
        if (!command) {
            continue;
        }
        const args = command.arguments ?? [];
        if (command.command === TOOL_CONFIG.serverCommands.optimize) {
            const [u, k, m] = args;
            if (typeof u === 'string' && typeof k === 'string') {
                uri = u;
                kernel = k;
                modes.push(typeof m === 'string' ? m : 'auto');
            }
        } else if (command.command === TOOL_CONFIG.serverCommands.cancelSearch && typeof args[0] === 'string') {
            cancelSearchId = args[0];
            const match = /on (\S+)$/.exec(action.title ?? '');
            kernel ??= match?.[1];
        }
    }
    if (uri !== undefined && kernel !== undefined) {
        return { uri, kernel, modes };
    }
    if (cancelSearchId !== undefined) {
        return { uri: '', kernel: kernel ?? 'this kernel', modes: [], cancelSearchId };
    }
    if (disabled !== undefined) {
        return { uri: '', kernel: '', modes: [], disabled };
    }
    return undefined;
}

/** `@triton.jit` (or `@jit`, `@triton.jit(...)`) kernels of a file: name and the `def` line (0-based). */
export function findKernels(text: string): { name: string; line: number }[] {
    const lines = text.split(/\r?\n/);
    const kernels: { name: string; line: number }[] = [];
    let decorated = false;
    lines.forEach((line, index) => {
        if (/^\s*@(?:triton\.)?jit\b/.test(line)) {
            decorated = true;
            return;
        }
        const def = /^\s*(?:async\s+)?def\s+(\w+)/.exec(line);
        if (def?.[1]) {
            if (decorated) {
                kernels.push({ name: def[1], line: index });
            }
            decorated = false;
        } else if (decorated && /^[^\s@#)]/.test(line)) {
            decorated = false; // top-level code between the decorator and a def: not a kernel
        }
    });
    return kernels;
}

export interface OptimizeDeps {
    readonly execute: (command: string, ...args: unknown[]) => PromiseLike<unknown>;
    readonly log: (line: string) => void;
    /**
     * The server's `textDocument/codeAction` answer for the optimize kind at a position, raw:
     * VS Code's `vscode.executeCodeActionProvider` drops disabled actions, and their reason is
     * what the user needs to read.
     */
    readonly codeActions: (uri: string, line: number, character: number) => Promise<ActionLike[] | undefined>;
}

const DEFAULT_PROPOSER = 'settings default';

async function offerAt(
    deps: OptimizeDeps,
    document: vscode.TextDocument,
    position: vscode.Position,
): Promise<KernelOffer | undefined> {
    const actions = await deps.codeActions(document.uri.toString(), position.line, position.character);
    deps.log(
        `optimize actions at ${position.line + 1}:${position.character + 1}: ` +
            JSON.stringify((actions ?? []).map((a) => [a.title, typeof a.command === 'object' ? a.command.command : a.command, a.disabled?.reason])),
    );
    return offerFromActions(actions);
}

/** The command: pick kernel (when not under the cursor), proposer and mode; start the search. */
export async function optimizeCommand(deps: OptimizeDeps): Promise<string | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
        void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: open a Python file with a @triton.jit kernel first.`);
        return undefined;
    }
    const document = editor.document;
    let offer = await offerAt(deps, document, editor.selection.active);
    if (!offer) {
        const kernels = findKernels(document.getText());
        let target = kernels[0];
        if (kernels.length > 1) {
            const picked = await vscode.window.showQuickPick(
                kernels.map((k) => ({ label: k.name, description: `line ${k.line + 1}`, kernel: k })),
                { placeHolder: 'Which kernel?' },
            );
            target = picked?.kernel;
            if (!target) {
                return undefined;
            }
        }
        if (!target) {
            void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: no @triton.jit kernel in this file.`);
            return undefined;
        }
        offer = await offerAt(deps, document, new vscode.Position(target.line, 0));
    }
    if (!offer) {
        void vscode.window.showWarningMessage(
            `${TOOL_CONFIG.displayName}: the server offers no search here (is it running, with tritonsmith[eval] installed?).`,
        );
        return undefined;
    }
    if (offer.cancelSearchId !== undefined) {
        const cancel = 'Cancel the search';
        const choice = await vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: ${offer.kernel} is being optimised.`, cancel);
        if (choice === cancel) {
            await deps.execute(TOOL_CONFIG.serverCommands.cancelSearch, offer.cancelSearchId);
        }
        return undefined;
    }
    if (offer.disabled !== undefined || !offer.modes.length) {
        void vscode.window.showWarningMessage(`${TOOL_CONFIG.displayName}: cannot optimise here: ${offer.disabled ?? 'no mode offered'}.`);
        return undefined;
    }
    const current = vscode.workspace.getConfiguration(TOOL_CONFIG.settingsSection, document.uri).get<string>(TOOL_CONFIG.proposerSetting, 'auto');
    const proposer = await vscode.window.showQuickPick(
        [
            { label: DEFAULT_PROPOSER, description: `tritonsmith.proposer = ${current}`, proposer: undefined as string | undefined },
            ...TOOL_CONFIG.proposers.map((p) => ({ label: p.proposer, description: 'this search only', detail: p.detail, proposer: p.proposer })),
        ],
        { placeHolder: `Optimize ${offer.kernel}: who proposes variants?`, ignoreFocusOut: true },
    );
    if (!proposer) {
        return undefined;
    }
    const offered = offer.modes;
    const modes = TOOL_CONFIG.searchModes.filter((m) => offered.includes(m.mode));
    const mode = await vscode.window.showQuickPick(
        modes.map((m) => ({ label: m.label, detail: m.detail, mode: m.mode })),
        { placeHolder: `Optimize ${offer.kernel}: how?`, ignoreFocusOut: true },
    );
    if (!mode) {
        return undefined;
    }
    return startSearch(deps, offer, mode.mode, proposer.proposer);
}

/** Starts the search, with `proposer` for this search only when given (optimize's options argument). */
export async function startSearch(
    deps: Pick<OptimizeDeps, 'execute' | 'log'>,
    offer: KernelOffer,
    mode: string,
    proposer: string | undefined,
): Promise<string | undefined> {
    const args: unknown[] = [offer.uri, offer.kernel, mode];
    if (proposer !== undefined) {
        args.push({ proposer });
    }
    const id = await deps.execute(TOOL_CONFIG.serverCommands.optimize, ...args);
    deps.log(`optimize ${offer.kernel} (${mode}, proposer ${proposer ?? 'from the settings'}): search ${String(id)}`);
    return typeof id === 'string' ? id : undefined;
}

/** "Verify now": compile (and verify) the active document's kernels now. */
export async function verifyNow(execute: OptimizeDeps['execute']): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
        void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: open a Python file with kernels to verify.`);
        return;
    }
    await execute(TOOL_CONFIG.serverCommands.verify, editor.document.uri.toString());
}
