/**
 * The extension's own commands (`tritonsmith.*`). The server's `workspace/executeCommand` ids
 * are `tritonsmith.server.*`; vscode-languageclient registers those itself, and a duplicate id
 * would stop it from starting.
 */
import * as vscode from 'vscode';
import { TOOL_CONFIG, ruleDocsUrl } from './config';

type CommandKey = keyof typeof TOOL_CONFIG.commands;

/**
 * One handler per command in TOOL_CONFIG.commands: the compiler checks none is missing. Menus
 * pass an argument (a tree node, an editor's URI); the palette passes none, so handlers check.
 */
export type CommandHandlers = { readonly [K in CommandKey]: (arg?: unknown) => unknown };

/** Registers every command; returns their disposables. */
export function registerCommands(handlers: CommandHandlers): vscode.Disposable[] {
    return (Object.keys(TOOL_CONFIG.commands) as CommandKey[]).map((key) =>
        vscode.commands.registerCommand(TOOL_CONFIG.commands[key], (arg?: unknown) => handlers[key](arg)),
    );
}

export interface RuleLink {
    readonly code: string;
    readonly url: string;
}

/** The part of a vscode.Diagnostic this module reads (P: a position). */
export interface DiagnosticLike<P> {
    readonly range: { contains(position: P): boolean };
    readonly source?: string;
    readonly code?: string | number | { value: string | number; target: { toString(): string } };
}

/** The tritonsmith rules reported at `position`, with their documentation links. */
export function ruleLinksAt<P>(diagnostics: readonly DiagnosticLike<P>[], position: P): RuleLink[] {
    const links = new Map<string, RuleLink>();
    for (const diagnostic of diagnostics) {
        // "tritonsmith", or "tritonsmith, tritonsmith-verify" where the compiler confirmed the rule.
        const ours = (diagnostic.source ?? '').split(', ').includes(TOOL_CONFIG.diagnosticSource);
        if (!ours || !diagnostic.range.contains(position)) {
            continue;
        }
        const code = diagnostic.code;
        if (code === undefined) {
            continue;
        }
        if (typeof code === 'object') {
            links.set(String(code.value), { code: String(code.value), url: code.target.toString() });
        } else {
            links.set(String(code), { code: String(code), url: ruleDocsUrl(String(code)) });
        }
    }
    return [...links.values()];
}

/** Opens the page of the rule under the cursor; asks which when several, or for a code when none. */
export async function openRuleDocs(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    let links: RuleLink[] = [];
    if (editor) {
        links = ruleLinksAt(vscode.languages.getDiagnostics(editor.document.uri), editor.selection.active);
    }
    let url: string | undefined;
    if (links.length === 1) {
        url = links[0]?.url;
    } else if (links.length > 1) {
        const picked = await vscode.window.showQuickPick(
            links.map((link) => ({ label: link.code, description: link.url, url: link.url })),
            { placeHolder: 'Which rule?' },
        );
        url = picked?.url;
    } else {
        const code = await vscode.window.showInputBox({
            prompt: 'Rule code (no tritonsmith diagnostic under the cursor)',
            placeHolder: 'TS101',
            validateInput: (value) =>
                TOOL_CONFIG.ruleCodePattern.test(value.trim()) ? undefined : 'A rule code looks like TS101.',
        });
        url = code ? ruleDocsUrl(code.trim()) : undefined;
    }
    if (url) {
        await openRulePage(url);
    }
}

/**
 * A rule's page: the server writes it on this machine (a `file:` link, which opens as a
 * Markdown preview, offline and for learned rules too); a web address opens in the browser.
 */
export async function openRulePage(url: string): Promise<void> {
    const uri = vscode.Uri.parse(url);
    if (uri.scheme === 'file') {
        await vscode.commands.executeCommand('markdown.showPreview', uri);
    } else {
        await vscode.env.openExternal(uri);
    }
}

/**
 * Stores the Anthropic API key in SecretStorage (never settings.json); an empty answer removes
 * it. Resolves to true when the stored key changed.
 */
export async function setApiKey(secrets: vscode.SecretStorage): Promise<boolean> {
    const value = await vscode.window.showInputBox({
        prompt: 'Anthropic API key for kernel search (kept in VS Code\'s secret storage; empty removes it)',
        password: true,
        ignoreFocusOut: true,
    });
    if (value === undefined) {
        return false;
    }
    const key = value.trim();
    if (key) {
        await secrets.store(TOOL_CONFIG.apiKeySecret, key);
    } else {
        await secrets.delete(TOOL_CONFIG.apiKeySecret);
    }
    return true;
}
