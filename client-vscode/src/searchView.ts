/**
 * The search view: a webview panel that draws a search's tree (nodes coloured by outcome,
 * edges by refine or regenerate, speedups and how they were measured) and, above it, the
 * searches running now with their latest progress. A running search's tree grows node by node
 * (`tritonsmith/searchProgress`); a search that ended without improvement shows its tree too.
 * Clicking a node shows its details and opens its source against the original in the diff editor
 * (fetched with `tritonsmith.server.searchNode`); the best one opens against the current file.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';
import type { RunningSearch } from './progress';
import type { NodeChange, PastSearch } from './review';
import {
    COLORS,
    formatSpeedup,
    layoutTree,
    measuredLabel,
    outcomeColor,
    outcomeLabel,
    summarize,
    type SearchResult,
} from './searchResult';

/** Messages the webview posts. */
export type ViewMessage =
    | { readonly type: 'node'; readonly id: number }
    | { readonly type: 'accept' | 'reject' | 'diff' };

export function parseViewMessage(value: unknown): ViewMessage | undefined {
    if (typeof value !== 'object' || value === null) {
        return undefined;
    }
    const message = value as { type?: unknown; id?: unknown };
    if (message.type === 'node' && typeof message.id === 'number') {
        return { type: 'node', id: message.id };
    }
    if (message.type === 'accept' || message.type === 'reject' || message.type === 'diff') {
        return { type: message.type };
    }
    return undefined;
}

const escapeHtml = (text: string): string =>
    text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** JSON safe inside a <script> element. */
const scriptJson = (value: unknown): string => JSON.stringify(value).replace(/</g, '\\u003c');

export interface ViewState {
    readonly result: SearchResult | undefined;
    readonly running: readonly RunningSearch[];
    /** Whether the result still waits for accept or reject. */
    readonly pending: boolean;
    /** What the user decided, once decided ("applied 1.83× at 11:02"). */
    readonly outcome?: string;
}

/** The whole page: header, running searches, the tree as SVG, a legend and the node details. */
export function renderSearchHtml(state: ViewState, nonce: string, cspSource: string): string {
    const csp =
        `default-src 'none'; style-src ${cspSource} 'unsafe-inline'; ` + `script-src 'nonce-${nonce}'; img-src ${cspSource} data:;`;
    const running = state.running.length
        ? `<section class="running"><h2>Running</h2><ul>${state.running
              .map(
                  (search) =>
                      `<li><b>${escapeHtml(search.title)}</b>: ${escapeHtml(search.message ?? 'starting')}` +
                      (search.percentage === undefined ? '' : ` (${search.percentage}%)`) +
                      '</li>',
              )
              .join('')}</ul></section>`
        : '';
    const result = state.result;
    let body: string;
    if (!result) {
        body =
            '<p class="empty">No search result yet. Run "Tritonsmith: Optimize this kernel…"; the tree appears here ' +
            'when the search has found a faster verified variant.</p>';
    } else {
        const layout = layoutTree(result.tree, result.bestId);
        const at = new Map(layout.nodes.map((node) => [node.id, node]));
        const edges = layout.edges
            .map((edge) => {
                const a = at.get(edge.from);
                const b = at.get(edge.to);
                if (!a || !b) {
                    return '';
                }
                const mid = (a.x + b.x) / 2;
                const dash = edge.kind === 'regenerate' ? ' stroke-dasharray="6 4"' : '';
                return (
                    `<path class="edge ${edge.kind}" d="M${a.x + 22},${a.y} C${mid},${a.y} ${mid},${b.y} ${b.x - 22},${b.y}" ` +
                    `fill="none" stroke="${COLORS[edge.kind]}" stroke-width="2"${dash}/>`
                );
            })
            .join('');
        const nodes = layout.nodes
            .map((node) => {
                const ring = node.best ? ` stroke="${COLORS.best}" stroke-width="4"` : ' stroke="#00000055" stroke-width="1"';
                const same = node.sameAs !== undefined && node.sameAs !== null ? `, the same kernel as #${node.sameAs} (not re-timed)` : '';
                const title = `#${node.id} ${node.kind}: ${outcomeLabel(node.outcome)}, ${formatSpeedup(node.speedup)} in screening${same}`;
                return (
                    `<g class="node${node.best ? ' best' : ''}" data-id="${node.id}" tabindex="0" role="button" ` +
                    `aria-label="${escapeHtml(title)}"><title>${escapeHtml(title)}</title>` +
                    `<circle cx="${node.x}" cy="${node.y}" r="20" fill="${outcomeColor(node.outcome)}"${ring}/>` +
                    `<text x="${node.x}" y="${node.y + 4}" text-anchor="middle" class="id">${node.id}</text>` +
                    `<text x="${node.x}" y="${node.y + 36}" text-anchor="middle" class="speedup">${formatSpeedup(node.speedup)}</text>` +
                    '</g>'
                );
            })
            .join('');
        const claim = result.confirmation
            ? result.measured?.startsWith('predicted')
                ? `${escapeHtml(result.confirmation.text)}, confirmed by predicting both again in fresh workers,`
                : `${escapeHtml(result.confirmation.text)}, confirmed over ${result.confirmation.rounds} alternating rounds in fresh workers,`
            : result.spread
            ? `${formatSpeedup(result.speedup)} (spread ${result.spread[0].toFixed(2)}–${result.spread[1].toFixed(2)}×)`
            : result.live
            ? `${formatSpeedup(result.speedup)} so far in screening (unconfirmed)`
            : escapeHtml(result.result || formatSpeedup(result.speedup));
        const buttons = result.live || !result.improved
            ? ''
            : state.pending
            ? '<button data-action="accept">Accept</button> <button data-action="reject" class="secondary">Reject</button> '
            : `<span class="decided">${escapeHtml(state.outcome ?? 'decided')}</span> `;
        body =
            `<header><h1>${escapeHtml(summarize(result))}</h1>` +
            `<p>${claim} measured in <b>${measuredLabel(result.measuredOn, result.measured)}</b>` +
            `${result.measuredOn === 'gpu' ? '' : result.measured?.startsWith('predicted')
                ? " (a model's estimate from a run profiled on the CPU: not a GPU measurement)"
                : ' (the Triton interpreter on the CPU: not a GPU speedup)'}; ` +
            `mode ${escapeHtml(result.mode)}; stopped: ${escapeHtml(result.stopped)}` +
            (result.journalId ? `; journal <code>${escapeHtml(result.journalId)}</code>` : '') +
            '</p>' +
            (result.live || !result.improved ? '' : `<p>${buttons}<button data-action="diff" class="secondary">Open diff</button></p>`) +
            '</header>' +
            // Fitted to the panel's width (never drawn larger than its natural size); "Actual
            // size" lets a wide tree overflow and scroll, and the keys move between nodes.
            '<p class="zoom"><button data-zoom="fit" class="secondary" aria-pressed="true">Fit</button> ' +
            '<button data-zoom="actual" class="secondary" aria-pressed="false">Actual size</button> ' +
            '<span class="hint">← → between nodes, Enter to open one</span></p>' +
            `<div class="scroller"><svg class="tree fit" width="${layout.width}" height="${layout.height}" ` +
            `viewBox="0 0 ${layout.width} ${layout.height}" preserveAspectRatio="xMinYMin meet" role="group" ` +
            `aria-label="search tree">${edges}${nodes}</svg></div>` +
            '<p class="legend">' +
            `<span><i style="background:${COLORS.correct}"></i>correct</span>` +
            `<span><i style="background:${COLORS.wrong}"></i>wrong result</span>` +
            `<span><i style="background:${COLORS.not_compiled}"></i>did not compile</span>` +
            `<span><i class="ring" style="border-color:${COLORS.best}"></i>best</span>` +
            `<span><b style="color:${COLORS.refine}">──</b> refine</span>` +
            `<span><b style="color:${COLORS.regenerate}">- -</b> regenerate</span>` +
            `<span>node speedups: screening, ${measuredLabel(result.measuredOn, result.measured)}</span></p>` +
            '<section id="details" class="details">Click a node for its details.</section>';
    }
    const data = result
        ? {
              nodes: result.tree,
              bestId: result.bestId,
              measured: measuredLabel(result.measuredOn, result.measured),
              confirmation: result.confirmation?.text ?? null,
          }
        : { nodes: [], bestId: null, measured: '', confirmation: null };
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Tritonsmith search</title>
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px 16px; }
h1 { font-size: 1.2em; margin: 12px 0 4px; } h2 { font-size: 1em; margin: 8px 0 4px; }
.running { border-left: 3px solid ${COLORS.refine}; padding-left: 8px; }
.scroller { overflow: auto; max-width: 100%; }
svg.tree { display: block; margin: 8px 0; }
svg.tree.fit { width: 100%; height: auto; }
.zoom .hint { opacity: 0.7; margin-left: 8px; }
.node { cursor: pointer; outline: none; } .node:focus circle, .node:hover circle { stroke: var(--vscode-focusBorder); stroke-width: 3; }
.node text.id { fill: #fff; font-weight: bold; font-size: 12px; pointer-events: none; }
.node text.speedup { fill: var(--vscode-foreground); font-size: 11px; pointer-events: none; }
.legend span { margin-right: 14px; white-space: nowrap; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px; }
.legend i.ring { border: 3px solid; width: 6px; height: 6px; }
.details { border-top: 1px solid var(--vscode-panel-border); padding-top: 8px; white-space: pre-wrap; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 4px 12px; cursor: pointer; }
button.secondary { background: var(--vscode-button-secondaryBackground); color: var(--vscode-button-secondaryForeground); }
.decided, .empty { opacity: 0.8; }
pre.diff { font-family: var(--vscode-editor-font-family); font-size: 12px; overflow-x: auto; margin: 4px 0; }
pre.diff .add { color: var(--vscode-gitDecoration-addedResourceForeground, #3fb950); }
pre.diff .del { color: var(--vscode-gitDecoration-deletedResourceForeground, #f85149); }
pre.diff .hunk { opacity: 0.7; }
</style></head>
<body>${running}${body}
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const data = ${scriptJson(data)};
const details = document.getElementById('details');
const label = { correct: 'correct', wrong: 'wrong result', not_compiled: 'did not compile' };
function show(id) {
  const node = data.nodes.find((n) => n.id === id);
  if (!node || !details) return;
  const speed = node.speedup === null ? '—' : node.speedup.toFixed(2) + '× (' + data.measured + ')';
  let text = '#' + node.id + ' · ' + node.kind + (node.parent === null ? '' : ' of #' + node.parent) +
    ' · ' + (label[node.outcome] || 'not evaluated') + ' · ' + speed;
  if (node.id === data.bestId && data.confirmation) text += '\\nConfirmed: ' + data.confirmation;
  if (node.sameAs !== undefined && node.sameAs !== null) text += '\\nThe same kernel as #' + node.sameAs + ' once hints are set aside (not re-timed).';
  if (node.message) text += '\\n' + node.message;
  if (node.id === 0) text += '\\nThe original kernel: opened beside.';
  else text += '\\nIts diff against the original is open beside.';
  details.textContent = text;
  details.setAttribute('data-node', String(id));
}
const nodeEls = Array.from(document.querySelectorAll('.node'));
nodeEls.forEach((el, i) => {
  const id = Number(el.getAttribute('data-id'));
  const pick = () => { show(id); vscode.postMessage({ type: 'node', id }); };
  el.addEventListener('click', pick);
  el.addEventListener('focus', () => show(id));
  el.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); }
    const step = e.key === 'ArrowRight' || e.key === 'ArrowDown' ? 1 : e.key === 'ArrowLeft' || e.key === 'ArrowUp' ? -1 : 0;
    if (step) { e.preventDefault(); nodeEls[(i + step + nodeEls.length) % nodeEls.length].focus(); }
  });
});
window.addEventListener('message', (event) => {
  const message = event.data;
  if (!message || message.type !== 'change' || !details || typeof message.diff !== 'string') return;
  const shown = details.getAttribute('data-node');
  if (shown !== null && Number(shown) !== message.id) return;  // another node was picked meanwhile
  const title = document.createElement('div');
  title.textContent = 'Change against #' + message.against + ':';
  const pre = document.createElement('pre');
  pre.className = 'diff';
  for (const line of message.diff.split('\\n')) {
    const span = document.createElement('span');
    span.className = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : '';
    span.textContent = line + '\\n';
    pre.appendChild(span);
  }
  details.appendChild(title);
  details.appendChild(pre);
});
document.querySelectorAll('button[data-zoom]').forEach((el) => {
  el.addEventListener('click', () => {
    const fit = el.getAttribute('data-zoom') === 'fit';
    document.querySelector('svg.tree')?.classList.toggle('fit', fit);
    document.querySelectorAll('button[data-zoom]').forEach((b) => b.setAttribute('aria-pressed', String(b === el)));
  });
});
document.querySelectorAll('button[data-action]').forEach((el) => {
  el.addEventListener('click', () => vscode.postMessage({ type: el.getAttribute('data-action') }));
});
</script></body></html>`;
}

/** What the view asks of the review (review.ts). */
export interface SearchViewHost {
    results(): readonly SearchResult[];
    isPending(searchId: string): boolean;
    /** "applied 1.83× at 11:02" / "rejected at 11:02" once decided. */
    outcome(searchId: string): string | undefined;
    accept(searchId: string): Promise<unknown>;
    reject(searchId: string): Promise<unknown>;
    openDiff(result: SearchResult, column?: vscode.ViewColumn): Promise<unknown>;
    openOriginal(result: SearchResult, column?: vscode.ViewColumn): Promise<unknown>;
    /** The original ↔ node `nodeId`'s source (fetched from the server). */
    openNode(result: SearchResult, nodeId: number, column?: vscode.ViewColumn): Promise<unknown>;
    /** What node `nodeId` changed against its parent (a unified diff), when the journal has it. */
    nodeChange(result: SearchResult, nodeId: number): Promise<NodeChange | undefined>;
    running(): readonly RunningSearch[];
}

/** The one search panel; shows the latest result unless told which. */
export class SearchView implements vscode.Disposable {
    private panel: vscode.WebviewPanel | undefined;
    private shown: string | undefined;

    constructor(private readonly host: SearchViewHost) {}

    get isOpen(): boolean {
        return this.panel !== undefined;
    }

    /** Opens (or reveals) the panel on `searchId`, else on the latest result. */
    show(searchId?: string): void {
        if (searchId !== undefined) {
            this.shown = searchId;
        }
        if (!this.panel) {
            this.panel = vscode.window.createWebviewPanel(
                TOOL_CONFIG.searchViewType,
                'Tritonsmith search',
                { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
                { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] },
            );
            this.panel.onDidDispose(() => (this.panel = undefined));
            this.panel.webview.onDidReceiveMessage((message: unknown) => void this.onMessage(message));
        } else {
            this.panel.reveal(undefined, false);
        }
        this.render();
    }

    /** Re-renders when open (a new result, progress, a decision). */
    update(searchId?: string): void {
        if (searchId !== undefined) {
            this.shown = searchId;
        }
        if (this.panel) {
            this.render();
        }
    }

    private current(): SearchResult | undefined {
        const results = this.host.results();
        return results.find((r) => r.searchId === this.shown) ?? results[results.length - 1];
    }

    private render(): void {
        if (!this.panel) {
            return;
        }
        const result = this.current();
        this.panel.title = result ? `Search: ${result.kernel}` : 'Tritonsmith search';
        const nonce = randomBytes(16).toString('hex');
        this.panel.webview.html = renderSearchHtml(
            {
                result,
                running: this.host.running(),
                pending: result ? this.host.isPending(result.searchId) : false,
                outcome: result ? this.host.outcome(result.searchId) : undefined,
            },
            nonce,
            this.panel.webview.cspSource,
        );
    }

    /** A message from the page (public for tests). */
    async onMessage(value: unknown): Promise<void> {
        const message = parseViewMessage(value);
        const result = this.current();
        if (!message || !result) {
            return;
        }
        switch (message.type) {
            case 'accept':
                await this.host.accept(result.searchId);
                this.render();
                break;
            case 'reject':
                await this.host.reject(result.searchId);
                this.render();
                break;
            case 'diff':
                await this.host.openDiff(result, vscode.ViewColumn.One);
                break;
            case 'node':
                // Beside the view (in the first column), which stays visible.
                if (message.id === result.bestId && result.improved && !result.live) {
                    await this.host.openDiff(result, vscode.ViewColumn.One);
                } else if (message.id === 0 && result.improved && !result.live) {
                    await this.host.openOriginal(result, vscode.ViewColumn.One);
                } else {
                    await this.host.openNode(result, message.id, vscode.ViewColumn.One);
                }
                await this.showChange(result, message.id);
                break;
        }
    }

    /** What the node changed against its parent, in the page's details (from the server's journal). */
    private async showChange(result: SearchResult, nodeId: number): Promise<void> {
        const change = await this.host.nodeChange(result, nodeId);
        if (change && this.panel && this.current()?.searchId === result.searchId) {
            await this.panel.webview.postMessage({ type: 'change', id: nodeId, against: change.against, diff: change.diff });
        }
    }

    dispose(): void {
        this.panel?.dispose();
        this.panel = undefined;
    }
}

/** Where "Show search tree" finds searches: this window's results and the journal's past searches. */
export interface SearchSource {
    results(): readonly SearchResult[];
    listPast(): Promise<readonly PastSearch[]>;
    openPast(journalId: string): Promise<string | undefined>;
}

/** "Show search tree": this window's searches and the journal's past ones; a pick when more than one. */
export async function pickSearch(source: SearchSource, view: SearchView): Promise<void> {
    const results = source.results();
    const here = new Set(results.map((r) => r.journalId).filter((id): id is string => id !== null));
    const past = (await source.listPast()).filter((p) => !here.has(p.id));
    const items = [
        ...[...results].reverse().map((r) => ({ label: r.kernel, description: summarize(r), detail: r.searchId, id: r.searchId, past: false })),
        ...past.map((p) => ({
            label: p.kernel,
            description: `${p.status}, ${p.nodes} node${p.nodes === 1 ? '' : 's'}, best ${formatSpeedup(p.bestSpeedup)} · ${new Date(p.started * 1000).toLocaleString()}`,
            detail: `${p.id} (journal) · ${p.uri}`,
            id: p.id,
            past: true,
        })),
    ];
    if (items.length === 0) {
        view.show();
        return;
    }
    const picked =
        items.length === 1
            ? items[0]
            : await vscode.window.showQuickPick(items, { placeHolder: 'Which search? (this window\'s, then the journal\'s)' });
    if (!picked) {
        return;
    }
    const id = picked.past ? await source.openPast(picked.id) : picked.id;
    if (id !== undefined) {
        view.show(id);
    }
}
