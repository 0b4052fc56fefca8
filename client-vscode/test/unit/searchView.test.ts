import assert from 'node:assert/strict';
import * as vm from 'node:vm';
import { describe, it } from 'node:test';
import { COLORS, layoutTree, measuredLabel, parseSearchResult, summarize, type SearchNode } from '../../src/searchResult';
import { SearchView, parseViewMessage, renderSearchHtml } from '../../src/searchView';
import { payload } from './fixtures';

const node = (id: number, parent: number | null, kind: SearchNode['kind'], outcome: SearchNode['outcome'], speedup: number | null = null): SearchNode => ({
    id,
    parent,
    kind,
    outcome,
    speedup,
    message: '',
});

describe('search tree model', () => {
    it('parses the notification and says how speedups were measured', () => {
        const result = parseSearchResult(payload());
        assert.ok(result);
        assert.equal(result.tree.length, 3);
        assert.deepEqual(result.spread, [3.2, 3.8]);
        assert.equal(measuredLabel('interpreter'), 'interpreter time');
        assert.equal(measuredLabel('gpu'), 'GPU time');
        // A search without a GPU ranks by the predicted time and the server says so.
        assert.equal(measuredLabel('interpreter', 'predicted sm_90 time'), 'predicted sm_90 time');
        const predicted = parseSearchResult({ ...payload(), measured: 'predicted sm_90 time' });
        assert.ok(predicted && summarize(predicted).endsWith('faster (predicted sm_90 time), 2 candidates'));
        assert.equal(summarize(result), 'add_kernel: 3.50× (95% CI 3.20–3.80×, noise floor 2%) faster (interpreter time), 2 candidates');
        assert.equal(result.confirmation?.claimed, true);
        assert.equal(result.confirmation?.noiseFloor, 0.02);
        assert.equal(parseSearchResult({ searchId: 'x' }), undefined);
        // Not confirmed: the interval and "no improvement", never a bare figure.
        const text = 'no improvement (best 1.04×, CI 0.97–1.10×, within noise; noise floor 3%)';
        const none = parseSearchResult(payload({
            improved: false, edit: null, speedup: 1.04, spread: [0.97, 1.1], result: text,
            confirmation: { speedup: 1.04, low: 0.97, high: 1.1, noiseFloor: 0.03, rounds: 6, claimed: false, text },
        }));
        assert.ok(none);
        assert.equal(summarize(none), `add_kernel: no faster verified variant (${text}, interpreter time), 2 candidates`);
        assert.match(renderSearchHtml({ result: none, running: [], pending: false }, 'N', 'c'), /no improvement \(best 1\.04×, CI 0\.97–1\.10×, within noise/);
        const html = renderSearchHtml({ result, running: [], pending: true }, 'N', 'c');
        assert.match(html, /3\.50× \(95% CI 3\.20–3\.80×, noise floor 2%\), confirmed over 8 alternating rounds/);
        // A node that is another's kernel for the timing says so.
        const same = parseSearchResult(payload({ tree: [{ id: 0, parent: null, kind: 'root', outcome: 'correct', speedup: 1, message: '' },
            { id: 1, parent: 0, kind: 'refine', outcome: 'correct', speedup: 1, message: '', sameAs: 0 }] }));
        assert.equal(same?.tree[1]?.sameAs, 0);
        assert.match(renderSearchHtml({ result: same, running: [], pending: true }, 'N', 'c'), /the same kernel as #0 \(not re-timed\)/);
    });

    it('lays the original out first, children one column right, regenerated heads off the original', () => {
        const tree = [
            node(0, null, 'root', 'correct', 1),
            node(1, 0, 'refine', 'correct', 1.5),
            node(2, 1, 'refine', 'wrong'),
            node(3, 1, 'refine', 'correct', 2.1),
            node(4, null, 'regenerate', 'not_compiled'),
        ];
        const layout = layoutTree(tree, 3);
        const at = new Map(layout.nodes.map((n) => [n.id, n]));
        assert.equal(at.get(0)?.depth, 0);
        assert.equal(at.get(1)?.depth, 1);
        assert.equal(at.get(2)?.depth, 2);
        assert.equal(at.get(4)?.depth, 1, 'a regenerated head hangs off the original');
        assert.equal(at.get(1)?.y, ((at.get(2)?.y ?? 0) + (at.get(3)?.y ?? 0)) / 2, 'a parent sits between its children');
        assert.ok(at.get(3)?.best && !at.get(2)?.best);
        assert.deepEqual(
            layout.edges.map((e) => [e.from, e.to, e.kind]),
            [
                [0, 1, 'refine'],
                [1, 2, 'refine'],
                [1, 3, 'refine'],
                [0, 4, 'regenerate'],
            ],
        );
        const ys = layout.nodes.map((n) => n.y);
        assert.ok(Math.max(...ys) <= layout.height);
    });

    it('survives broken trees: unknown parents become tops, cycles are drawn once', () => {
        const layout = layoutTree([node(5, 9, 'refine', 'correct'), node(6, 7, 'refine', null), node(7, 6, 'refine', null)]);
        assert.equal(layout.nodes.length, 1);
        assert.equal(layout.nodes[0]?.id, 5);
    });

    it('renders nodes coloured by outcome, regenerate edges dashed, the measurement, and escapes text', () => {
        const result = parseSearchResult(
            payload({
                kernel: '<img src=x>',
                tree: [
                    { id: 0, parent: null, kind: 'root', outcome: 'correct', speedup: 1, message: '' },
                    { id: 1, parent: null, kind: 'regenerate', outcome: 'wrong', speedup: null, message: '</script><b>' },
                    { id: 2, parent: 0, kind: 'refine', outcome: 'correct', speedup: 3.5, message: '' },
                ],
            }),
        );
        const html = renderSearchHtml({ result, running: [{ title: 'Optimizing k', kernel: 'k', message: 'step 1/3', percentage: 33 }], pending: true }, 'NONCE', 'vscode-csp');
        assert.ok(!html.includes('<img src=x>'));
        assert.ok(html.includes('&lt;img src=x&gt;'));
        assert.ok(!html.includes('</script><b>'), 'node messages cannot close the script');
        assert.match(html, /script-src 'nonce-NONCE'/);
        assert.match(html, /<script nonce="NONCE">/);
        assert.ok(html.includes(`fill="${COLORS.correct}"`) && html.includes(`fill="${COLORS.wrong}"`));
        assert.match(html, /class="edge regenerate"[^>]*stroke-dasharray/);
        assert.match(html, /class="edge refine"/);
        assert.ok(html.includes('interpreter time') && !html.includes('GPU time'));
        assert.ok(html.includes('data-action="accept"') && html.includes('step 1/3'));
        assert.ok(html.includes('3.50×'));
        // Fitted to the panel (scaled down, never up), with an "Actual size" that scrolls, and keys.
        assert.match(html, /<svg class="tree fit" [^>]*viewBox="0 0 \d+ \d+" preserveAspectRatio="xMinYMin meet"/);
        assert.ok(html.includes('data-zoom="fit"') && html.includes('data-zoom="actual"') && html.includes('ArrowRight'));
        assert.match(html, /\.node \{ cursor: pointer; outline: none; \}/, 'no focus box over the labels');
        // The page's script must parse: a raw newline in a string literal once broke every button.
        const script = /<script nonce="NONCE">([\s\S]*)<\/script>/.exec(html)?.[1] ?? '';
        assert.ok(script.includes('acquireVsCodeApi'));
        assert.doesNotThrow(() => new vm.Script(script), 'the webview script is valid JavaScript');
        const decided = renderSearchHtml({ result, running: [], pending: false }, 'N', 'c');
        assert.ok(!decided.includes('data-action="accept"'));
        const applied = renderSearchHtml({ result, running: [], pending: false, outcome: 'applied 3.50× at 11:02' }, 'N', 'c');
        assert.match(applied, /class="decided">applied 3\.50× at 11:02</);
        assert.match(renderSearchHtml({ result: undefined, running: [], pending: false }, 'N', 'c'), /No search result yet/);
    });

    it('accepts only the messages the page sends', () => {
        assert.deepEqual(parseViewMessage({ type: 'node', id: 2 }), { type: 'node', id: 2 });
        assert.deepEqual(parseViewMessage({ type: 'accept' }), { type: 'accept' });
        assert.equal(parseViewMessage({ type: 'node', id: '2' }), undefined);
        assert.equal(parseViewMessage({ type: 'run', command: 'rm' }), undefined);
        assert.equal(parseViewMessage(null), undefined);
    });

    it('clicking a node opens its diff against the original; a result without improvement has no accept', async () => {
        const result = parseSearchResult(payload());
        assert.ok(result);
        const opened: string[] = [];
        const view = new SearchView({
            results: () => [result],
            isPending: () => true,
            outcome: () => undefined,
            accept: () => Promise.resolve(),
            reject: () => Promise.resolve(),
            openDiff: () => Promise.resolve(opened.push('best')),
            openOriginal: () => Promise.resolve(opened.push('original')),
            openNode: (_r, id) => Promise.resolve(opened.push(`node ${id}`)),
            nodeChange: (_r, id) => {
                opened.push(`change ${id}`);
                return Promise.resolve(undefined);
            },
            running: () => [],
        });
        await view.onMessage({ type: 'node', id: 1 });
        await view.onMessage({ type: 'node', id: 2 });
        await view.onMessage({ type: 'node', id: 0 });
        assert.deepEqual(opened, ['node 1', 'change 1', 'best', 'change 2', 'original', 'change 0']);
        const none = parseSearchResult(payload({ improved: false, best: '', bestId: null, speedup: null, confirmation: null, result: '' }));
        const html = renderSearchHtml({ result: none, running: [], pending: false }, 'N', 'c');
        assert.ok(!html.includes('data-action="accept"') && !html.includes('data-action="diff"'));
        assert.match(html, /no faster verified variant/);
    });
});
