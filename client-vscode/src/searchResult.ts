/**
 * The `tritonsmith/searchResult` notification as data (docs/lsp-extensions.md), and the search
 * tree's model: a layered layout and the words and colours the search view draws. No vscode
 * import: the view (searchView.ts) and the review (review.ts) render what this computes.
 */

export type Outcome = 'correct' | 'wrong' | 'not_compiled';
export type NodeKind = 'root' | 'refine' | 'regenerate';

/** One evaluated node of the search tree. */
export interface SearchNode {
    readonly id: number;
    /** null for the original (id 0) and for regenerated heads. */
    readonly parent: number | null;
    readonly kind: NodeKind;
    readonly outcome: Outcome | null;
    /** Screening: a few timed calls against the original's time from the start of the search (unconfirmed). */
    readonly speedup: number | null;
    readonly message: string;
    readonly reward?: number;
    /** The node this one is the same kernel as once hints that cannot change the time are set aside (not re-timed). */
    readonly sameAs?: number | null;
}

/**
 * The confirmation behind a result: the candidate and the original re-timed in alternating
 * rounds in fresh workers; a speedup is claimed only when `low` clears 1 + `noiseFloor`.
 */
export interface Confirmation {
    readonly speedup: number | null;
    /** The 95% interval. */
    readonly low: number | null;
    readonly high: number | null;
    /** A fraction: 0.03 is 3%. */
    readonly noiseFloor: number | null;
    readonly rounds: number;
    readonly claimed: boolean;
    /** "1.32× (95% CI 1.21–1.44×, noise floor 3%)" or "no improvement (best 1.04×, CI 0.97–1.10×, within noise; …)". */
    readonly text: string;
}

/**
 * What the server sends when a search ended: with a faster verified variant (`improved`), or
 * without one (the tree only; `best` is the fastest correct candidate or ''). Also a search
 * still running (`live`, its tree grown from `tritonsmith/searchProgress`), and a past search
 * read back from the journal (`tritonsmith.server.searchTree`).
 */
export interface SearchResult {
    readonly uri: string;
    readonly kernel: string;
    readonly searchId: string;
    readonly journalId: string | null;
    readonly mode: string;
    /** The buffer when the search started. */
    readonly original: string;
    /** The fastest verified candidate's whole file. */
    readonly best: string;
    readonly bestId: number | null;
    /** The confirmed speedup (null when none was confirmed); `spread` is its 95% interval. */
    readonly speedup: number | null;
    readonly spread: readonly [number, number] | null;
    /** The confirmation run of `best`, when one ran. */
    readonly confirmation?: Confirmation | null;
    /** The server's one line about the outcome, with the interval: never a single figure. */
    readonly result?: string;
    /** "interpreter" or "gpu". */
    readonly measuredOn: string;
    /** What the speedups are ratios of: "predicted H100 SXM time", "interpreter time", "GPU time" (newer servers). */
    readonly measured?: string;
    readonly stopped: string;
    readonly costUsd: number;
    readonly diff: string;
    readonly tree: readonly SearchNode[];
    /** false: the search ended without a faster variant (nothing to accept). */
    readonly improved: boolean;
    /** Still running: the tree grows as nodes are evaluated; original and best are not known yet. */
    readonly live?: boolean;
}

/** One `tritonsmith/searchProgress` notification: the node just evaluated. */
export interface SearchProgress {
    readonly searchId: string;
    readonly journalId: string | null;
    readonly uri: string;
    readonly kernel: string;
    readonly step: number;
    readonly steps: number;
    readonly node: SearchNode;
}

/** The notification's params, checked; undefined when malformed. */
export function parseSearchProgress(value: unknown): SearchProgress | undefined {
    if (!isRecord(value) || typeof value.searchId !== 'string' || typeof value.uri !== 'string') {
        return undefined;
    }
    const node = parseNode(value.node);
    if (!node) {
        return undefined;
    }
    return {
        searchId: value.searchId,
        journalId: typeof value.journalId === 'string' ? value.journalId : null,
        uri: value.uri,
        kernel: str(value.kernel, 'kernel'),
        step: num(value.step) ?? 0,
        steps: num(value.steps) ?? 0,
        node,
    };
}

/** A running search's result so far: `previous` (if any) with `update`'s node added or replaced. */
export function withProgress(previous: SearchResult | undefined, update: SearchProgress, measuredOn = 'interpreter'): SearchResult {
    const tree = [...(previous?.tree ?? []).filter((n) => n.id !== update.node.id), update.node].sort((a, b) => a.id - b.id);
    const correct = tree.filter((n) => n.kind !== 'root' && n.outcome === 'correct' && n.speedup !== null);
    const best = correct.reduce<SearchNode | undefined>((top, n) => (top && (top.speedup ?? 0) >= (n.speedup ?? 0) ? top : n), undefined);
    return {
        uri: update.uri,
        kernel: update.kernel,
        searchId: update.searchId,
        journalId: update.journalId ?? previous?.journalId ?? null,
        mode: previous?.mode ?? 'auto',
        original: previous?.original ?? '',
        best: '',
        bestId: best?.id ?? null,
        speedup: best?.speedup ?? null,
        spread: null,
        measuredOn: previous?.measuredOn ?? measuredOn,
        measured: previous?.measured,
        stopped: `step ${update.step}/${update.steps}`,
        costUsd: previous?.costUsd ?? 0,
        diff: '',
        tree,
        improved: false,
        live: true,
    };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
const str = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);

function parseNode(value: unknown): SearchNode | undefined {
    if (!isRecord(value) || num(value.id) === null) {
        return undefined;
    }
    const kind = value.kind === 'refine' || value.kind === 'regenerate' ? value.kind : 'root';
    const outcome =
        value.outcome === 'correct' || value.outcome === 'wrong' || value.outcome === 'not_compiled' ? value.outcome : null;
    const reward = num(value.reward);
    const sameAs = num(value.sameAs);
    return {
        id: num(value.id) ?? 0,
        parent: num(value.parent),
        kind,
        outcome,
        speedup: num(value.speedup),
        message: str(value.message),
        ...(reward === null ? {} : { reward }),
        ...(sameAs === null ? {} : { sameAs }),
    };
}

function parseConfirmation(value: unknown): Confirmation | null {
    if (!isRecord(value) || typeof value.text !== 'string') {
        return null;
    }
    return {
        speedup: num(value.speedup),
        low: num(value.low),
        high: num(value.high),
        noiseFloor: num(value.noiseFloor),
        rounds: num(value.rounds) ?? 0,
        claimed: value.claimed === true,
        text: value.text,
    };
}

/** The notification's params, checked; undefined when they are not a search result. */
export function parseSearchResult(value: unknown): SearchResult | undefined {
    if (!isRecord(value) || typeof value.searchId !== 'string' || typeof value.uri !== 'string') {
        return undefined;
    }
    if (typeof value.original !== 'string' || typeof value.best !== 'string') {
        return undefined;
    }
    const spread =
        Array.isArray(value.spread) && value.spread.length === 2 && value.spread.every((v) => typeof v === 'number')
            ? ([value.spread[0], value.spread[1]] as [number, number])
            : null;
    const tree = Array.isArray(value.tree) ? value.tree.map(parseNode).filter((n): n is SearchNode => !!n) : [];
    return {
        uri: value.uri,
        kernel: str(value.kernel, 'kernel'),
        searchId: value.searchId,
        journalId: typeof value.journalId === 'string' ? value.journalId : null,
        mode: str(value.mode, 'auto'),
        original: value.original,
        best: value.best,
        bestId: num(value.bestId),
        speedup: num(value.speedup),
        spread,
        confirmation: parseConfirmation(value.confirmation),
        result: str(value.result),
        measuredOn: str(value.measuredOn, 'interpreter'),
        measured: str(value.measured) || undefined,
        stopped: str(value.stopped),
        costUsd: num(value.costUsd) ?? 0,
        diff: str(value.diff),
        tree,
        improved: value.improved !== false,
    };
}

/**
 * "predicted H100 SXM time", "interpreter time" or "GPU time": how a speedup was measured, as the
 * server says (never call an interpreter speedup or a prediction a GPU one).
 */
export function measuredLabel(measuredOn: string, measured?: string): string {
    if (measured) {
        return measured;
    }
    return measuredOn === 'gpu' ? 'GPU time' : 'interpreter time';
}

export function formatSpeedup(speedup: number | null): string {
    return speedup === null ? '—' : `${speedup.toFixed(2)}×`;
}

/** What the user decided about a result, with the time: "applied 1.83× at 11:02" or "rejected at 11:02". */
export function outcomeText(result: SearchResult, applied: boolean, when: Date): string {
    const time = `${String(when.getHours()).padStart(2, '0')}:${String(when.getMinutes()).padStart(2, '0')}`;
    return applied ? `applied ${formatSpeedup(result.confirmation?.speedup ?? result.speedup)} at ${time}` : `rejected at ${time}`;
}

/**
 * A result's speedup as claimed: the confirmation's interval ("1.32× (95% CI 1.21–1.44×, noise
 * floor 3%)"); a bare figure only from a server that sends no confirmation.
 */
export function formatClaim(result: SearchResult): string {
    return result.confirmation?.claimed ? result.confirmation.text : formatSpeedup(result.speedup);
}

/** One line about a result: "add_kernel: 1.83× (95% CI 1.70–1.97×, noise floor 2%) faster (interpreter time), 3 candidates". */
export function summarize(result: SearchResult): string {
    const candidates = Math.max(0, result.tree.length - 1);
    const cost = result.costUsd > 0 ? `, $${result.costUsd.toFixed(2)}` : '';
    if (result.live) {
        return `${result.kernel}: running, ${result.stopped} (best ${formatSpeedup(result.speedup)} so far in screening, unconfirmed)`;
    }
    if (!result.improved) {
        const best = result.confirmation
            ? result.confirmation.text
            : result.result
            ? result.result
            : result.speedup === null
            ? 'no correct candidate'
            : `best ${formatSpeedup(result.speedup)}`;
        return (
            `${result.kernel}: no faster verified variant (${best}, ${measuredLabel(result.measuredOn, result.measured)}), ` +
            `${candidates} candidate${candidates === 1 ? '' : 's'}${cost}`
        );
    }
    return (
        `${result.kernel}: ${formatClaim(result)} faster (${measuredLabel(result.measuredOn, result.measured)}), ` +
        `${candidates} candidate${candidates === 1 ? '' : 's'}${cost}`
    );
}

export interface LaidOutNode extends SearchNode {
    readonly x: number;
    readonly y: number;
    readonly depth: number;
    readonly best: boolean;
}

export interface Edge {
    readonly from: number;
    readonly to: number;
    /** How the child came from its parent. */
    readonly kind: 'refine' | 'regenerate';
}

export interface TreeLayout {
    readonly nodes: readonly LaidOutNode[];
    readonly edges: readonly Edge[];
    readonly width: number;
    readonly height: number;
}

export const LAYOUT = { column: 150, row: 56, margin: 40 } as const;

/**
 * Left to right: the original at depth 0, each candidate one column right of its parent;
 * regenerated heads (no parent) hang off the original with a regenerate edge. Leaves take
 * consecutive rows, a parent sits at the middle of its children.
 */
export function layoutTree(tree: readonly SearchNode[], bestId: number | null = null): TreeLayout {
    const ids = new Set(tree.map((node) => node.id));
    const rootId = ids.has(0) ? 0 : undefined;
    const children = new Map<number, SearchNode[]>();
    const tops: SearchNode[] = [];
    const edges: Edge[] = [];
    for (const node of [...tree].sort((a, b) => a.id - b.id)) {
        let parent = node.parent !== null && ids.has(node.parent) ? node.parent : undefined;
        if (parent === undefined && node.id !== rootId && rootId !== undefined) {
            parent = rootId; // a regenerated head: drawn from the original
        }
        if (parent === undefined) {
            tops.push(node);
            continue;
        }
        const list = children.get(parent) ?? [];
        list.push(node);
        children.set(parent, list);
        edges.push({ from: parent, to: node.id, kind: node.kind === 'regenerate' ? 'regenerate' : 'refine' });
    }
    const placed = new Map<number, { y: number; depth: number }>();
    let nextRow = 0;
    let maxDepth = 0;
    const place = (node: SearchNode, depth: number, seen: Set<number>): number => {
        if (seen.has(node.id)) {
            return placed.get(node.id)?.y ?? 0; // a cycle in broken data: draw each node once
        }
        seen.add(node.id);
        maxDepth = Math.max(maxDepth, depth);
        const kids = children.get(node.id) ?? [];
        let y: number;
        if (kids.length === 0) {
            y = nextRow++;
        } else {
            const rows = kids.map((kid) => place(kid, depth + 1, seen));
            y = ((rows[0] ?? 0) + (rows[rows.length - 1] ?? 0)) / 2;
        }
        placed.set(node.id, { y, depth });
        return y;
    };
    const seen = new Set<number>();
    for (const top of tops) {
        place(top, 0, seen);
    }
    const nodes = tree
        .filter((node) => placed.has(node.id))
        .map((node): LaidOutNode => {
            const at = placed.get(node.id) ?? { y: 0, depth: 0 };
            return {
                ...node,
                depth: at.depth,
                x: LAYOUT.margin + at.depth * LAYOUT.column,
                y: LAYOUT.margin + at.y * LAYOUT.row,
                best: node.id === bestId,
            };
        });
    return {
        nodes,
        edges: edges.filter((edge) => placed.has(edge.from) && placed.has(edge.to)),
        width: 2 * LAYOUT.margin + maxDepth * LAYOUT.column + 60,
        height: 2 * LAYOUT.margin + Math.max(0, nextRow - 1) * LAYOUT.row,
    };
}

/** Node fill by outcome; edge stroke by how the child was made. */
export const COLORS = {
    correct: '#2ea043',
    wrong: '#da3633',
    not_compiled: '#d29922',
    unknown: '#6e7681',
    refine: '#58a6ff',
    regenerate: '#bc8cff',
    best: '#f2cc60',
} as const;

export function outcomeColor(outcome: Outcome | null): string {
    return outcome === null ? COLORS.unknown : COLORS[outcome];
}

export function outcomeLabel(outcome: Outcome | null): string {
    switch (outcome) {
        case 'correct':
            return 'correct';
        case 'wrong':
            return 'wrong result';
        case 'not_compiled':
            return 'did not compile';
        default:
            return 'not evaluated';
    }
}
