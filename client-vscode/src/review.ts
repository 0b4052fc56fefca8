/**
 * Reviewing a search result in VS Code's diff editor. On `tritonsmith/searchResult` the current
 * file opens against the best variant (a virtual `tritonsmith-search:` document), with Accept and
 * Reject in a notification and in the diff editor's title. Accept calls
 * `tritonsmith.server.applySearchResult(searchId)`: the server applies its versioned edit, and
 * first asks (apply anyway, rebase, re-run, dismiss) when the buffer changed since the search
 * started. Reject forgets the result. Results of this window are kept for the search view: a
 * running search's tree grows with each `tritonsmith/searchProgress`, a search that ended without
 * improvement keeps its tree (nothing to accept), and past searches come back from the journal
 * (`tritonsmith.server.listSearches`, `searchTree`). Any node's source is fetched with
 * `tritonsmith.server.searchNode` and shown against the original in the diff editor.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';
import { outcomeText, parseSearchProgress, parseSearchResult, summarize, withProgress, type SearchResult } from './searchResult';

export type Side = 'best' | 'original' | `node-${number}`;

/** `tritonsmith-search:/<searchId>/<side>/<file name>`: the name keeps the language (Python). */
export function searchDocUri(result: Pick<SearchResult, 'searchId' | 'uri'>, side: Side): vscode.Uri {
    const name = path.posix.basename(vscode.Uri.parse(result.uri).path || 'kernel.py') || 'kernel.py';
    return vscode.Uri.parse(`${TOOL_CONFIG.searchScheme}:/${encodeURIComponent(result.searchId)}/${side}/${encodeURIComponent(name)}`);
}

/** The search id and side of a `tritonsmith-search:` URI. */
export function parseSearchDocUri(uri: { scheme: string; path: string }): { searchId: string; side: Side } | undefined {
    if (uri.scheme !== TOOL_CONFIG.searchScheme) {
        return undefined;
    }
    const [, id, side] = uri.path.split('/');
    if (!id || !side || (side !== 'best' && side !== 'original' && !/^node-\d+$/.test(side))) {
        return undefined;
    }
    return { searchId: decodeURIComponent(id), side: side as Side };
}

/** Runs a server command (vscode-languageclient registers them as VS Code commands). */
export type ExecuteCommand = (command: string, ...args: unknown[]) => PromiseLike<unknown>;

/** What a search step changed: a unified diff against node `against`. */
export interface NodeChange {
    readonly against: number;
    readonly diff: string;
}

export const ACCEPT = 'Accept';
export const REJECT = 'Reject';
export const SHOW_TREE = 'Show search tree';

/** One search of the journal, as `tritonsmith.server.listSearches` lists it. */
export interface PastSearch {
    readonly id: string;
    readonly uri: string;
    readonly kernel: string;
    readonly status: string;
    readonly started: number;
    readonly nodes: number;
    readonly bestSpeedup: number | null;
}

export function parsePastSearches(value: unknown): PastSearch[] {
    if (!Array.isArray(value)) {
        return [];
    }
    return value.flatMap((item: unknown): PastSearch[] => {
        const v = item as Record<string, unknown> | null;
        if (!v || typeof v !== 'object' || typeof v.id !== 'string') {
            return [];
        }
        const n = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);
        return [
            {
                id: v.id,
                uri: typeof v.uri === 'string' ? v.uri : '',
                kernel: typeof v.kernel === 'string' ? v.kernel : 'kernel',
                status: typeof v.status === 'string' ? v.status : '',
                started: n(v.started) ?? 0,
                nodes: n(v.nodes) ?? 0,
                bestSpeedup: n(v.bestSpeedup),
            },
        ];
    });
}

/** Keeps at most this many results per window. */
const KEEP = 20;

export class SearchReviews implements vscode.TextDocumentContentProvider, vscode.Disposable {
    private readonly byId = new Map<string, SearchResult>();
    private readonly pending = new Set<string>();
    /** Results whose "Apply the faster kernel?" notification is still on screen. */
    private readonly offered = new Set<string>();
    /** What the user decided about each result, by search id ("applied 1.83× at 11:02"). */
    private readonly outcomes = new Map<string, string>();
    private readonly decided = new vscode.EventEmitter<SearchResult>();
    /** Fires a result once it is accepted (and applied) or rejected. */
    readonly onDidDecide = this.decided.event;
    /** Node sources fetched from the server, by their `tritonsmith-search:` URI. */
    private readonly nodeSources = new Map<string, string>();
    /** What each fetched node changed against its parent, by `searchId:nodeId` (undefined: not in the journal). */
    private readonly nodeChanges = new Map<string, NodeChange | undefined>();
    private readonly changed = new vscode.EventEmitter<string>();
    /** Fires a search id when a result arrives or is decided. */
    readonly onDidChangeResult = this.changed.event;
    private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
    /** TextDocumentContentProvider's: a virtual document's text changed (a result is never updated in place). */
    readonly onDidChange = this.docChanged.event;

    constructor(
        private readonly execute: ExecuteCommand,
        private readonly showTree: (searchId: string) => void,
        private readonly log: (line: string) => void = () => undefined,
    ) {}

    results(): SearchResult[] {
        return [...this.byId.values()];
    }

    get(searchId: string): SearchResult | undefined {
        return this.byId.get(searchId);
    }

    isPending(searchId: string): boolean {
        return this.pending.has(searchId);
    }

    /** "applied 1.83× at 11:02" / "rejected at 11:02", once decided here. */
    outcome(searchId: string): string | undefined {
        return this.outcomes.get(searchId);
    }

    private decide(result: SearchResult, applied: boolean): void {
        this.pending.delete(result.searchId);
        this.outcomes.set(result.searchId, outcomeText(result, applied, new Date()));
        this.decided.fire(result);
        if (this.offered.delete(result.searchId)) {
            // Decided in the diff editor's title or the search view while the question is still
            // up. VS Code has no API to close one notification: hide the toasts (they stay in
            // the notification center, where a late click is told what happened).
            void vscode.commands.executeCommand('notifications.hideToasts');
        }
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        const parsed = parseSearchDocUri(uri);
        const result = parsed && this.byId.get(parsed.searchId);
        if (parsed?.side.startsWith('node-')) {
            return this.nodeSources.get(uri.toString()) ?? '# This candidate\'s source is no longer kept in this window.\n';
        }
        if (!parsed || !result) {
            return '# This search result is no longer kept in this window.\n';
        }
        return parsed.side === 'best' ? result.best : result.original;
    }

    private store(result: SearchResult): void {
        this.byId.delete(result.searchId);
        this.byId.set(result.searchId, result);
        while (this.byId.size > KEEP) {
            const oldest = this.byId.keys().next().value;
            if (oldest === undefined) {
                break;
            }
            this.byId.delete(oldest);
            this.pending.delete(oldest);
        }
    }

    /** `tritonsmith/searchProgress`: add the node to its running search's tree (the view redraws). */
    progress(params: unknown): void {
        const update = parseSearchProgress(params);
        if (!update) {
            this.log(`ignored a malformed ${TOOL_CONFIG.notifications.searchProgress} notification`);
            return;
        }
        const previous = this.byId.get(update.searchId);
        if (previous && !previous.live) {
            return; // the result arrived already
        }
        const next = withProgress(previous, update);
        if (previous) {
            this.byId.set(update.searchId, next); // keeps its place
        } else {
            this.store(next);
        }
        this.changed.fire(update.searchId);
    }

    /** The notification's handler: keep the result, open the diff, ask accept or reject. */
    async receive(params: unknown): Promise<void> {
        const result = parseSearchResult(params);
        if (!result) {
            this.log(`ignored a malformed ${TOOL_CONFIG.notifications.searchResult} notification`);
            return;
        }
        this.store(result);
        if (!result.improved) {
            // Nothing to accept: the tree is kept for the view (the server says why in a message).
            this.log(`search ${result.searchId} (${result.journalId ?? 'no journal'}): ${summarize(result)}`);
            this.changed.fire(result.searchId);
            return;
        }
        this.pending.add(result.searchId);
        this.log(`search ${result.searchId} (${result.journalId ?? 'no journal'}): ${summarize(result)}`);
        this.changed.fire(result.searchId);
        await this.openDiff(result);
        this.offered.add(result.searchId);
        const choice = await vscode.window.showInformationMessage(
            `${TOOL_CONFIG.displayName}: ${summarize(result)}. Apply the faster kernel?`,
            ACCEPT,
            REJECT,
            SHOW_TREE,
        );
        this.offered.delete(result.searchId);
        const outcome = this.outcomes.get(result.searchId);
        if ((choice === ACCEPT || choice === REJECT) && outcome !== undefined) {
            // Already decided elsewhere (the diff editor's title, the search view): say so.
            void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: ${result.kernel}: already ${outcome}.`);
            return;
        }
        if (choice === ACCEPT) {
            await this.accept(result.searchId);
        } else if (choice === REJECT) {
            await this.reject(result.searchId);
        } else if (choice === SHOW_TREE) {
            this.showTree(result.searchId);
        }
    }

    /** Current file on the left, the best variant on the right (`column`: where, e.g. beside the search view). */
    async openDiff(result: SearchResult, column?: vscode.ViewColumn): Promise<void> {
        await vscode.commands.executeCommand(
            'vscode.diff',
            vscode.Uri.parse(result.uri),
            searchDocUri(result, 'best'),
            `${result.kernel}: current ↔ faster (${summarize(result).split(': ')[1] ?? ''})`,
            { preview: false, preserveFocus: column !== undefined, ...(column === undefined ? {} : { viewColumn: column }) },
        );
    }

    /** The original as the search saw it, against the best. */
    async openOriginal(result: SearchResult, column?: vscode.ViewColumn): Promise<void> {
        await vscode.commands.executeCommand('vscode.diff', searchDocUri(result, 'original'), searchDocUri(result, 'best'),
            `${result.kernel}: original ↔ best (as searched)`, { preview: true, preserveFocus: column !== undefined,
                ...(column === undefined ? {} : { viewColumn: column }) });
    }

    /** A candidate's source: the best one from the result, any other from the journal (`searchNode`). */
    async nodeUri(result: SearchResult, nodeId: number): Promise<vscode.Uri | undefined> {
        const uri = searchDocUri(result, `node-${nodeId}`);
        if (this.nodeSources.has(uri.toString())) {
            return uri;
        }
        let source: string | undefined = nodeId === result.bestId && result.best ? result.best : undefined;
        if (source === undefined && nodeId === 0 && result.original) {
            source = result.original;
        }
        if (source === undefined) {
            if (!result.journalId) {
                return undefined;
            }
            try {
                const node = (await this.execute(TOOL_CONFIG.serverCommands.searchNode, result.journalId, nodeId)) as { source?: unknown } | null;
                source = typeof node?.source === 'string' ? node.source : undefined;
            } catch (error) {
                this.log(`searchNode(${result.journalId}, ${nodeId}) failed: ${String(error)}`);
            }
        }
        if (source === undefined) {
            return undefined;
        }
        this.nodeSources.set(uri.toString(), source);
        this.docChanged.fire(uri);
        return uri;
    }

    /** What node `nodeId` changed against its parent: the server's unified diff, from the journal. */
    async nodeChange(result: SearchResult, nodeId: number): Promise<NodeChange | undefined> {
        const key = `${result.searchId}:${nodeId}`;
        if (!this.nodeChanges.has(key)) {
            let change: NodeChange | undefined;
            if (result.journalId) {
                try {
                    const node = (await this.execute(TOOL_CONFIG.serverCommands.searchNode, result.journalId, nodeId)) as
                        | { diff?: unknown; diffAgainst?: unknown }
                        | null;
                    if (typeof node?.diff === 'string' && typeof node.diffAgainst === 'number') {
                        change = { against: node.diffAgainst, diff: node.diff };
                    }
                } catch (error) {
                    this.log(`searchNode(${result.journalId}, ${nodeId}) failed: ${String(error)}`);
                }
            }
            this.nodeChanges.set(key, change);
        }
        return this.nodeChanges.get(key);
    }

    /** The original as the search saw it ↔ node `nodeId`'s source (fetched from the server's journal). */
    async openNode(result: SearchResult, nodeId: number, column?: vscode.ViewColumn): Promise<boolean> {
        const right = await this.nodeUri(result, nodeId);
        const left = result.original ? searchDocUri(result, 'original') : await this.nodeUri(result, 0);
        if (!right || !left) {
            void vscode.window.showInformationMessage(
                `${TOOL_CONFIG.displayName}: the source of candidate #${nodeId} is not available (no journal for this search).`,
            );
            return false;
        }
        await vscode.commands.executeCommand('vscode.diff', left, right, `${result.kernel}: original ↔ #${nodeId}`, {
            preview: true,
            preserveFocus: column !== undefined,
            ...(column === undefined ? {} : { viewColumn: column }),
        });
        return true;
    }

    /** The journal's searches (`tritonsmith.server.listSearches`), newest first; [] without a server. */
    async listPast(): Promise<PastSearch[]> {
        try {
            return parsePastSearches(await this.execute(TOOL_CONFIG.serverCommands.listSearches));
        } catch (error) {
            this.log(`listSearches failed: ${String(error)}`);
            return [];
        }
    }

    /** Reads a past search back (`tritonsmith.server.searchTree`) and keeps it; returns its id here. */
    async openPast(journalId: string): Promise<string | undefined> {
        const known = [...this.byId.values()].find((r) => r.journalId === journalId && !r.live);
        if (known) {
            return known.searchId;
        }
        let payload: unknown;
        try {
            payload = await this.execute(TOOL_CONFIG.serverCommands.searchTree, journalId);
        } catch (error) {
            this.log(`searchTree(${journalId}) failed: ${String(error)}`);
        }
        const result = parseSearchResult(payload);
        if (!result) {
            void vscode.window.showWarningMessage(`${TOOL_CONFIG.displayName}: search ${journalId} is not in the journal.`);
            return undefined;
        }
        this.store(result); // never pending: a past result is applied, if at all, by re-running
        this.changed.fire(result.searchId);
        return result.searchId;
    }

    /** The search id an accept or reject is about: an id, a `tritonsmith-search:` URI (editor title), else the latest pending. */
    resolveId(arg: unknown): string | undefined {
        if (typeof arg === 'string' && this.byId.has(arg)) {
            return arg;
        }
        if (arg && typeof arg === 'object' && 'scheme' in arg && 'path' in arg) {
            const parsed = parseSearchDocUri(arg as { scheme: string; path: string });
            if (parsed) {
                return parsed.searchId;
            }
        }
        return [...this.pending].pop();
    }

    /** Asks the server to apply the result; returns whether it did. */
    async accept(arg?: unknown): Promise<boolean> {
        const searchId = this.resolveId(arg);
        const result = searchId === undefined ? undefined : this.byId.get(searchId);
        if (!result || !searchId) {
            void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: no search result waits for review.`);
            return false;
        }
        let applied = false;
        try {
            applied = (await this.execute(TOOL_CONFIG.serverCommands.applySearchResult, searchId)) === true;
        } catch (error) {
            this.log(`applySearchResult(${searchId}) failed: ${String(error)}`);
            void vscode.window.showErrorMessage(`${TOOL_CONFIG.displayName}: could not apply the result (${String(error)}).`);
            return false;
        }
        if (applied) {
            this.decide(result, true);
            await this.closeDiffs(result);
            this.changed.fire(searchId);
        }
        // Not applied: the user dismissed the server's question, or chose to re-run; the result stays.
        return applied;
    }

    async reject(arg?: unknown): Promise<void> {
        const searchId = this.resolveId(arg);
        const result = searchId === undefined ? undefined : this.byId.get(searchId);
        if (!result || !searchId) {
            return;
        }
        this.decide(result, false);
        await this.closeDiffs(result);
        this.changed.fire(searchId);
    }

    private async closeDiffs(result: SearchResult): Promise<void> {
        const ours = new Set([searchDocUri(result, 'best').toString(), searchDocUri(result, 'original').toString()]);
        const tabs = vscode.window.tabGroups.all
            .flatMap((group) => group.tabs)
            .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && ours.has(tab.input.modified.toString()));
        if (tabs.length) {
            await vscode.window.tabGroups.close(tabs);
        }
    }

    dispose(): void {
        this.changed.dispose();
        this.docChanged.dispose();
        this.decided.dispose();
    }
}
